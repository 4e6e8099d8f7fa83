"""llmdoctor: what a senior LLM-serving engineer does when a vLLM or SGLang deployment misbehaves.

Sources produce facts, playbooks turn facts into findings, renderers show findings (DESIGN.md).
Keep this module import-free: every command's start-up time begins here. For the same reason llmdoctor's modules
name typing's types only for annotations, under ``TYPE_CHECKING = False`` / ``if TYPE_CHECKING:`` (importing
``typing`` is ~13 M instructions, 4 % of a `check --endpoint`; ruff's TID253 and TC004 keep it so, and
tests/test_fastcheck.py checks that a check imports none). A thread must not be the first to import it either
(doctor/model/resolve.py ``_import_typing_whole`` says why).
"""

__version__ = "0.1.0"
