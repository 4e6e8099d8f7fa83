"""llmdoctor: what a senior LLM-serving engineer does when a vLLM or SGLang deployment misbehaves.

Sources produce facts, playbooks turn facts into findings, renderers show findings (DESIGN.md).
Keep this module import-free: every command's start-up time begins here.
"""

__version__ = "0.1.0"
