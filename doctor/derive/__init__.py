"""Derivation: facts computed from other facts, once every source has spoken and before the playbooks run.

Every analyzer registers itself with the facts it reads and produces (registry.py); ``derive_all`` runs them in
the order those declarations give, computed when this package is imported — a fact produced twice or a cycle
fails the import. analyzers.py holds the small ones, fit.py the memory fit. What gathering needs between two
inputs (the model's precision under the launch flags, the parsers the model family expects, the flag spellings
of the engine release) is in precision.py, parsers.py and spelling.py, which doctor/sources runs.
"""

from __future__ import annotations

from doctor.derive import analyzers, fit, health  # noqa: F401 - importing them registers their analyzers
from doctor.derive.registry import ANALYZERS, ordered
from doctor.facts import Facts

#: The analyzers in dependency order (a producer before its readers).
ORDER = ordered(ANALYZERS)


def derive_all(facts: Facts) -> Facts:
    """Run every analyzer over ``facts``, in ORDER; returns ``facts`` for chaining."""
    for item in ORDER:
        item.run(facts)
    return facts
