"""`lint`: read a handed-over launch command like a senior serving engineer.

The command (plus the model config and GPU when given) becomes facts through doctor.sources.offline; the playbooks
decide what is missing, wrong, harmful or overriding the engine (every lint finding is a cause from
playbooks/causes/, so `lint` and `check` can never disagree); and each flag is explained — what it does
and why it is or is not needed for this model — from doctor/engines/explain.yaml and the engine's own help.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from doctor.facts import Facts
from doctor.playbook.engine import Diagnosis
from doctor.sources.offline import Gathered, OfflineInputs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "llmdoctor.lint/1"
#: What lint never gathers (there is no server, no GPU to read): trees unknown only for want of these stay quiet.
UNREACHABLE = ("metrics", "active", "capacity", "server", "process", "gpu.util", "gpu.util_skew", "gpu.memory_used",
               "gpu.util_max", "log")
EXPLAIN_PATH = Path(__file__).parents[1] / "engines" / "explain.yaml"


@dataclass(frozen=True)
class FlagNote:
    flag: str  # as typed (redacted)
    canonical: str  # the engine's option it resolves to
    dest: str
    value: Any
    explain: str

    def to_dict(self) -> dict[str, Any]:
        return {"flag": self.flag, "canonical": self.canonical, "dest": self.dest, "value": self.value,
                "explain": self.explain}


@dataclass
class LintResult:
    gathered: Gathered
    diagnosis: Diagnosis
    flags: list[FlagNote]

    @property
    def facts(self) -> Facts:
        return self.gathered.facts

    def to_dict(self) -> dict[str, Any]:
        cmd = self.gathered.command
        facts = self.facts
        return {
            "schema": SCHEMA,
            "engine": cmd.engine if cmd else None,
            "engine_version": cmd.version if cmd else None,
            "catalog_version": cmd.catalog_version if cmd else None,
            "model": facts.get("launch.model") or facts.get("model.name"),
            "command": cmd.render() if cmd else None,
            "notes": (list(cmd.notes) if cmd else []) + list(self.gathered.notes),
            "flags": [f.to_dict() for f in self.flags],
            **self.diagnosis.to_dict(),
        }


def lint(inputs: OfflineInputs, *, symptoms: Iterable[str] = (), playbook_dirs: Iterable[str] = (),
         target_version: str | None = None) -> LintResult:
    """``target_version``: also read the command as that release would (doctor/engines/upgrade.py)."""
    from doctor.derive import derive_all
    from doctor.derive.analyzers import absent_on_this_device
    from doctor.playbook.engine import diagnose
    from doctor.playbook.loader import load_playbooks
    from doctor.sources.offline import gather

    gathered = gather(inputs)
    if target_version and gathered.command is not None and inputs.command is not None:
        from doctor.engines.upgrade import upgrade_facts

        upgrade_facts(inputs.command, gathered.command, target_version, gathered.facts)
    derive_all(gathered.facts)
    diagnosis = diagnose(load_playbooks(playbook_dirs), gathered.facts, symptoms,
                         unreachable=UNREACHABLE + absent_on_this_device(gathered.facts))
    return LintResult(gathered, diagnosis, explain_flags(gathered))


def explain_flags(gathered: Gathered) -> list[FlagNote]:
    command = gathered.command
    if command is None:
        return []
    from doctor.playbook.conditions import evaluate
    from doctor.playbook.template import render

    by_dest = _explanations_by_dest(command.engine)
    notes = []
    for fv in command.flags:
        entry = by_dest.get(fv.dest)
        if entry is None:
            spec = command.catalog.flag(fv.dest)
            text = _first_sentence(getattr(spec, "help", "") or "") or "(no help text in this engine version)"
        else:
            text = entry["what"]
            for case in entry.get("cases", ()):
                if "when" not in case or evaluate(case["when"], gathered.facts).value is True:
                    text = f"{text} {render(case['why'], gathered.facts)}"
                    break
        notes.append(FlagNote(fv.token, fv.option, fv.dest, fv.value, text))
    return notes


@lru_cache(maxsize=2)
def _explanations_by_dest(engine: str) -> dict[str, dict[str, Any]]:
    """explain.yaml keyed by the engine's flag destinations, via semantics.yaml's `from:` cases."""
    from doctor.engines.semantics import load_semantics
    from doctor.yamlsafe import load_packaged

    explain = load_packaged(EXPLAIN_PATH)
    out: dict[str, dict[str, Any]] = {}
    for key, cases in load_semantics()["facts"].items():
        if key not in explain:
            continue
        for case in cases.get(engine, ()):
            sources = case.get("from")
            for dest in [sources] if isinstance(sources, str) else sources or ():
                out.setdefault(dest, explain[key])
    return out


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return text if end < 0 else text[: end + 1]
