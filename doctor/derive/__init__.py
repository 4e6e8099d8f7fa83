"""Derivation: facts computed from other facts, once every source has spoken and before the playbooks run.

Every analyzer registers itself with the facts it reads and produces (registry.py); ``derive_all`` runs them in
the order those declarations give, computed when this package is imported — a fact produced twice or a cycle
fails the import. analyzers.py holds the small ones, fit.py the memory fit, health.py the process and GPU
faults, family.py the model family and what it expects.

This package holds registry analyzers only: a function whose input is no fact — the parsed launch command and
the catalog it was read with, the model card and the files beside its config.json — cannot declare what it reads,
so the registry could not order it. Those read inputs, and live with the source that gathers them
(doctor/sources/launch.py, doctor/sources/card.py, doctor/model/memory.py), which runs them as it reads the
command and the model; what they write is a fact like any source's, which analyzers then read.
"""

from __future__ import annotations

import functools

from doctor.derive import analyzers, family, fit, health  # noqa: F401 - importing them registers their analyzers
from doctor.derive.registry import ANALYZERS, Analyzer, covers, ordered
from doctor.facts import Facts

#: The analyzers in dependency order (a producer before its readers).
ORDER = ordered(ANALYZERS)


def derive_all(facts: Facts) -> Facts:
    """Run every analyzer over ``facts``, in ORDER; returns ``facts`` for chaining."""
    for item in ORDER:
        item.run(facts)
    return facts


def derive(facts: Facts, wanted: tuple[str, ...]) -> Facts:
    """Run only the analyzers that produce a key of ``wanted`` (a key, or a family such as ``expect.*``) and those
    they wait on, in ORDER: for a caller that needs a few derived facts before the whole derivation (the active
    probes ask what the model's family expects). Returns ``facts``."""
    for item in _needed(wanted):
        item.run(facts)
    return facts


@functools.lru_cache(maxsize=8)
def _needed(wanted: tuple[str, ...]) -> tuple[Analyzer, ...]:
    keys: list[str] = list(wanted)
    chosen: list[Analyzer] = []
    for item in reversed(ORDER):  # a producer comes before its readers: walking back meets each reader first
        if any(covers(k, p) or covers(p, k) for k in keys for p in item.produces):
            chosen.append(item)
            keys.extend(item.reads)
    return tuple(reversed(chosen))
