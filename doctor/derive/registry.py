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

from doctor.facts import Facts

Run = Callable[[Facts], None]

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeVar

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


def ordered(analyzers: Iterable[Analyzer]) -> tuple[Analyzer, ...]:
    """The analyzers in an order where each runs after the producers of what it reads (ties by name, so the
    order depends on the declarations alone); RegistryError for a fact produced twice or a cycle.

    Runs at every start of a command that derives, so it indexes the produced keys instead of comparing every
    pair: exact keys in a dict, and the few families (``fit.*``) in a list."""
    pending = sorted(analyzers, key=lambda a: a.name)
    exact: dict[str, Analyzer] = {}
    families: dict[str, Analyzer] = {}  # "fit" for the family fit.*
    for a in pending:
        for key in a.produces:
            other = _producer(key, exact, families)
            if other is not None:
                raise RegistryError(f"{key} produced by both {other.name} and {a.name}")
            if key.endswith(".*"):
                families[key[:-2]] = a
            else:
                exact[key] = a
    after: dict[str, set[str]] = {}
    for a in pending:
        waits = set()
        for key in a.reads:
            found = _producer(key, exact, families)
            if found is not None:
                waits.add(found.name)
            if key.endswith(".*"):  # a family read waits on every producer of a key in it
                waits.update(b.name for k, b in exact.items() if covers(key, k))
        waits.discard(a.name)
        after[a.name] = waits
    done: list[Analyzer] = []
    names: set[str] = set()
    while pending:
        ready = next((a for a in pending if after[a.name] <= names), None)
        if ready is None:
            cycle = ", ".join(f"{a.name} (waits on {', '.join(sorted(after[a.name] - names))})" for a in pending)
            raise RegistryError(f"analyzers wait on each other: {cycle}")
        done.append(ready)
        names.add(ready.name)
        pending.remove(ready)
    return tuple(done)


def _producer(key: str, exact: dict[str, Analyzer], families: dict[str, Analyzer]) -> Analyzer | None:
    """The analyzer registered so far that produces ``key`` (or a key of the family ``key``), if any: the key
    itself, else a family one of its dotted prefixes names (each a dict lookup, however many families there
    are), else for a family read a family or a key inside it."""
    found = exact.get(key)
    if found is not None:
        return found
    stem = key[:-2] if key.endswith(".*") else key
    end = len(stem)
    while end > 0:  # fit.kv_tokens: "fit.kv_tokens", then "fit"
        found = families.get(stem[:end])
        if found is not None:
            return found
        end = stem.rfind(".", 0, end)
    if key.endswith(".*"):
        inside = stem + "."
        found = next((a for family, a in families.items() if family.startswith(inside)), None)
        if found is None:
            found = next((a for k, a in exact.items() if k.startswith(inside) or k == stem), None)
    return found
