"""The analyzer registry: every analyzer declares the facts it reads and the facts it produces, and the order
they run in follows from those declarations — a producer before each of its readers — never from a hand-kept
list (k8sgpt's analyzer registry is the model: one analyzer per concern, one uniform shape).

A key is a dotted fact name (``gpu.util``) or a family (``launch.env.*``: every key under ``launch.env``). A fact
produced by two analyzers, or analyzers that wait on each other, is an error when the registry is ordered
(importing doctor.derive orders it), so a new analyzer cannot silently change what another one computed. What
an analyzer writes includes what it makes unknown (``facts.forget``) and the reasons it records
(``facts.error``); reading a fact it produces itself (refining it, or filling only a gap) is no dependency.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeVar

from doctor.facts import Facts

Run = Callable[[Facts], None]
F = TypeVar("F", bound=Run)


class RegistryError(Exception):
    """The declarations contradict each other: a fact with two producers, or a cycle."""


@dataclass(frozen=True)
class Analyzer:
    """One concern: the facts it reads, the facts it produces, and the function that does it."""

    name: str
    run: Run
    reads: tuple[str, ...]
    produces: tuple[str, ...]


ANALYZERS: list[Analyzer] = []


def analyzer(*, reads: Iterable[str], produces: Iterable[str]) -> Callable[[F], F]:
    """Register the decorated function as an analyzer (its name is the function's)."""

    def register(run: F) -> F:
        ANALYZERS.append(Analyzer(run.__name__, run, tuple(reads), tuple(produces)))
        return run

    return register


def covers(pattern: str, key: str) -> bool:
    """``launch.env.*`` covers ``launch.env.X``; any other key covers only itself."""
    if pattern.endswith(".*"):
        return key.startswith(pattern[:-1]) or key == pattern[:-2]
    return pattern == key


def _overlap(a: str, b: str) -> bool:
    return covers(a, b) or covers(b, a)


def ordered(analyzers: Iterable[Analyzer]) -> tuple[Analyzer, ...]:
    """The analyzers in an order where each runs after the producers of what it reads (ties by name, so the
    order depends on the declarations alone); RegistryError for a fact produced twice or a cycle."""
    pending = sorted(analyzers, key=lambda a: a.name)
    for i, a in enumerate(pending):
        for b in pending[i + 1:]:
            twice = [p for p in a.produces if any(_overlap(p, q) for q in b.produces)]
            if twice:
                raise RegistryError(f"{', '.join(twice)} produced by both {a.name} and {b.name}")
    after = {a.name: {b.name for b in pending if b is not a and any(_overlap(r, p) for r in a.reads
                                                                   for p in b.produces)} for a in pending}
    done: list[Analyzer] = []
    while pending:
        ready = next((a for a in pending if after[a.name] <= {d.name for d in done}), None)
        if ready is None:
            cycle = ", ".join(f"{a.name} (waits on {', '.join(sorted(after[a.name] - {d.name for d in done}))})"
                              for a in pending)
            raise RegistryError(f"analyzers wait on each other: {cycle}")
        done.append(ready)
        pending.remove(ready)
    return tuple(done)
