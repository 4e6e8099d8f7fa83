"""The fact registry (``playbooks/facts/<namespace>.yaml``): every fact a source or analyzer produces, once.

Fact names are bare strings in trees, cause texts, evidence lists and cases; a typo in one (``metrics.kv_usgae``)
would make a branch unknown forever, so every name is looked up here when playbooks load and an unknown one is
an error with the file, the line and the nearest registered names. The registry also says how each fact is
learnt — observed, configured, derived or guessed — which is what a finding's confidence follows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property


@dataclass(frozen=True)
class FactSpec:
    """One registry entry; ``key`` may end in ``*`` for a family (``launch.flags.*``: one fact per flag)."""

    key: str
    type: str
    producer: str
    learnt: str
    meaning: str
    unit: str = ""
    signals: str = ""
    source: str = ""


class Registry:
    """Registered facts by key, and the families (``*`` patterns) that cover a whole namespace of keys."""

    def __init__(self, specs: Mapping[str, FactSpec]) -> None:
        self.specs = specs

    @cached_property
    def _families(self) -> list[tuple[re.Pattern[str], FactSpec]]:
        # by key first: the specs may be built on demand (doctor.playbook.loader.LazyEntries)
        return [(re.compile(re.escape(k).replace(r"\*", r"[A-Za-z0-9_.]+") + "$"), self.specs[k])
                for k in self.specs if "*" in k]

    def spec(self, key: str) -> FactSpec | None:
        """The entry that covers ``key``: its own, or its family's."""
        if key in self.specs:
            return self.specs[key]
        return next((s for pattern, s in self._families if pattern.match(key)), None)

    def unknown(self, key: str) -> str | None:
        """None for a registered fact; else the error text, with a did-you-mean where a name is close."""
        if self.spec(key) is not None:
            return None
        import difflib  # only for a misspelt key

        near = difflib.get_close_matches(key, list(self.specs), n=3, cutoff=0.75)
        hint = f" (did you mean {' or '.join(repr(n) for n in near)}?)" if near else \
            " (see docs/facts.md; a new fact needs an entry in playbooks/facts/<namespace>.yaml)"
        return f"fact '{key}' is not in the fact registry{hint}"

    def guessed(self, key: str) -> bool:
        """Whether ``key`` is learnt by guessing (from a model's name alone): findings resting on it are low."""
        spec = self.spec(key)
        return spec is not None and spec.learnt == "guessed"
