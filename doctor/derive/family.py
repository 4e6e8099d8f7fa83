"""The model family (by name, architectures, model_type) and the parsers, reasoning and thinking behaviour it
expects on this engine and release (doctor/engines/families.yaml): one analyzer, read from facts alone."""

from __future__ import annotations

import functools

from doctor.derive.registry import analyzer
from doctor.facts import Facts
from doctor.versions import orderable_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: What derive_family reads: the model's identity (the command's, the server's, the config's) and the engine release.
_READS = ("launch.model", "server.model_path", "model.name", "model.architectures", "server.architectures",
          "model.model_type", "server.model_type", "launch.engine", "launch.version")


@analyzer(reads=_READS, produces=("model.family", "model.family_variant", "model.family_alternatives", "expect.*"))
def derive_family(facts: Facts) -> None:
    """The model family and what it expects (``expect.*``), where no source said so already (gap filling: a value
    a source or a scenario gave wins)."""
    facts.update(family_facts(facts), overwrite=False)


def family_facts(facts: Facts) -> Facts:
    """The model family (by name, architectures, model_type) and the parsers it expects on this engine.

    Read from six facts only, and the same for every target of a fleet that serves one model on one release:
    worked out once per distinct set (``check --targets``), the Facts returned are the one shared answer
    (its Fact objects are immutable; callers merge it, never change it)."""
    architectures = facts.get("model.architectures") or facts.get("server.architectures")
    key = (facts.get("launch.model") or facts.get("server.model_path") or facts.get("model.name"),
           tuple(architectures) if isinstance(architectures, list) else architectures,
           facts.get("model.model_type") or facts.get("server.model_type"), facts.get("launch.engine"),
           facts.get("launch.version"), "model.architectures" in facts)
    try:
        hash(key)
    except TypeError:  # a value no cache can hold (a list where a name belongs): worked out for this one alone
        return _family_facts.__wrapped__(*key)
    return _family_facts(*key)


@functools.lru_cache(maxsize=256)
def _family_facts(name: Any, architectures: Any, model_type: Any, engine: Any, version: Any,
                  has_config: bool) -> Facts:
    from doctor.engines.families import expected_facts, match_family

    found = match_family(architectures=list(architectures) if isinstance(architectures, tuple) else architectures,
                         model_type=model_type, name=name)
    out = Facts()
    if found is None:
        out.error("expect", f"no model family matches {name or 'this model'} (doctor/engines/families.yaml)")
        return out
    if engine is None:
        out.set("model.family", found.id, "doctor/engines/families.yaml")
        out.error("expect", "the engine is not known, so neither are its parser names")
    else:
        out = expected_facts(found, engine, orderable_version(version))
    if not has_config and (found.matched_by or "").startswith("name "):
        from doctor.model.names import NAME_ONLY

        for key in ("model.family", "model.family_variant", "model.family_alternatives"):
            if key in out:  # no config to confirm it: the name alone decided
                out.set(key, out.get(key), f"{NAME_ONLY} ({found.matched_by}); low confidence: no config.json",
                        learnt="guessed")
    return out
