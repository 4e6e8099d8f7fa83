"""llmdoctor: what a senior LLM-serving engineer does when a vLLM or SGLang deployment misbehaves.

Sources produce facts, playbooks turn facts into findings, renderers show findings (DESIGN.md).
Keep this module import-free: every command's start-up time begins here. For the same reason the modules `check`
imports name typing's types only for annotations, under ``TYPE_CHECKING = False`` / ``if TYPE_CHECKING:``
(importing ``typing`` itself is ~13 M instructions, 4 % of a `check --endpoint`; tests/test_fastcheck.py).
"""

__version__ = "0.1.0"
