"""The Facts namespace: what every source produces, every playbook reads and every finding cites.

A fact is a dotted key (``model.attention``, ``launch.tp``, ``metrics.kv_usage``) with a JSON-able value
and the place it came from (``config.json:num_key_value_heads``, ``argv --tp-size``,
``/metrics vllm:kv_cache_usage_perc``). The full vocabulary is documented in docs/facts.md.

Three states matter to the playbooks, so they are kept apart here:

* known with a value (``launch.tool_call_parser = "qwen3_coder"``),
* known to be unset (``launch.tool_call_parser = None``: the command was read and has no such flag),
* unknown (no fact at all), optionally with the reason a probe recorded (``facts.error("metrics", ...)``),
  so a tree can say "could not check metrics.kv_usage: connection refused" instead of guessing.

Probes never raise: they call :meth:`Facts.error` and carry on (DESIGN.md "Facts").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Fact:
    """One value with its provenance.

    ``observed`` marks a direct observation of the running system (a metric, an NVML reading, an
    active probe's answer) as opposed to configuration or arithmetic: findings resting on observed
    facts rank above those inferred from configuration alone. ``learnt`` is how this value was learnt when
    its producer knows it weaker than the fact registry's entry says (``guessed``: from a model's name, with no
    config.json behind it); empty, the registry's ``learnt`` for the key holds (playbooks/facts/).
    """

    key: str
    value: Any
    source: str
    observed: bool = False
    learnt: str = ""

    def to_dict(self) -> dict[str, Any]:
        out = {"value": self.value, "source": self.source, "observed": self.observed}
        if self.learnt:  # only where a producer said so: the registry gives every other fact's
            out["learnt"] = self.learnt
        return out


class Facts:
    """A flat mapping of dotted keys to :class:`Fact`, plus the errors that left keys unknown."""

    def __init__(self) -> None:
        self._facts: dict[str, Fact] = {}
        self._errors: dict[str, str] = {}

    # -- writing ---------------------------------------------------------------------------
    def set(self, key: str, value: Any, source: str, *, observed: bool = False, learnt: str = "") -> None:
        """Record ``key`` (replacing an earlier value: the latest, most specific source wins).

        A reason recorded earlier for ``key`` itself being unknown is dropped: a later source (the server's
        resolved value after a launch command that left it to the engine) answered it, and a key must not
        read as both known and unknown. Errors of a whole prefix (``gpu``) stay: they explain its other keys.
        """
        self._facts[key] = Fact(key, value, source, observed, learnt)
        self._errors.pop(key, None)

    def set_default(self, key: str, value: Any, source: str, *, observed: bool = False, learnt: str = "") -> None:
        """Record ``key`` only if nothing knows it yet: offline inputs fill what live probes missed."""
        if key not in self._facts:
            self.set(key, value, source, observed=observed, learnt=learnt)

    def error(self, key: str, message: str) -> None:
        """Say why ``key`` (a fact or a whole prefix such as ``metrics``) could not be learnt (the first reason
        wins; a known key keeps none)."""
        if key not in self._facts:
            self._errors.setdefault(key, message)

    def forget(self, key: str, message: str) -> None:
        """Make ``key`` unknown again, saying why (a fact that turned out not to apply, e.g. a GPU memory
        fraction on a server that runs on CPU)."""
        self._facts.pop(key, None)
        self._errors[key] = message

    def update(self, other: Facts, *, overwrite: bool = True) -> None:
        """Merge ``other`` in; with ``overwrite=False`` existing facts win (gap filling)."""
        for key, fact in other._facts.items():
            if overwrite or key not in self._facts:
                self._facts[key] = fact
                self._errors.pop(key, None)
        for key, message in other._errors.items():
            if key not in self._facts:
                self._errors.setdefault(key, message)

    # -- reading ---------------------------------------------------------------------------
    def __contains__(self, key: object) -> bool:
        return key in self._facts

    def __iter__(self) -> Iterator[Fact]:
        return iter(self._facts.values())

    def __len__(self) -> int:
        return len(self._facts)

    def get(self, key: str, default: Any = None) -> Any:
        fact = self._facts.get(key)
        return default if fact is None else fact.value

    def fact(self, key: str) -> Fact | None:
        return self._facts.get(key)

    def under(self, prefix: str) -> dict[str, Fact]:
        """Every fact whose key is ``prefix`` or starts with ``prefix.``."""
        dotted = prefix + "."
        return {k: f for k, f in self._facts.items() if k == prefix or k.startswith(dotted)}

    def unknown_reason(self, key: str) -> str | None:
        """Why ``key`` is unknown: the error recorded for it or for its nearest dotted prefix."""
        parts = key.split(".")
        for end in range(len(parts), 0, -1):
            message = self._errors.get(".".join(parts[:end]))
            if message is not None:
                return message
        return None

    @property
    def errors(self) -> dict[str, str]:
        return dict(self._errors)

    # -- serialisation (snapshots, JSON output) -------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "facts": {k: self._facts[k].to_dict() for k in sorted(self._facts)},
            "errors": dict(sorted(self._errors.items())),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Facts:
        facts = cls()
        for key, item in (data.get("facts") or {}).items():
            facts.set(key, item.get("value"), str(item.get("source", "")), observed=bool(item.get("observed")),
                      learnt=str(item.get("learnt") or ""))
        for key, message in (data.get("errors") or {}).items():
            facts.error(key, str(message))
        return facts
