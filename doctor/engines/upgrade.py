"""`--target-version V`: will this command still start, and behave the same, on release V?

Everything here is read from the release catalogs (every wheel read, doctor/engines/catalogs/):

* **refused** — the command parsed with V's catalog: flags V does not have (removed, renamed, unknown), values
  V rejects; only what V refuses and the release in use does not (a problem already there is the ordinary
  lint's finding).
* **parsers** — the tool-call and reasoning parser named: not registered in V's wheel (V refuses it at
  start-up), or deprecated in V (parser_deprecations.json, read from the engines' own mapping of old names).
* **defaults** — settings the command leaves to the engine whose default differs between the release in use
  and V (``catalog.default_changes``), for the settings whose change alters what a server does
  (doctor/engines/upgrade.yaml says how; defaults computed at start-up, such as vLLM's memory-based
  ``max_num_seqs``, are not in the catalogs and not compared).

The result is facts (``upgrade.*``, playbooks/facts/upgrade.yaml) that the ``upgrade`` tree's causes read, so
the upgrade report is findings like any other: in text, JSON, SARIF and JUnit, and fixable with ``--fix``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.engines.command import LaunchCommand
    from doctor.facts import Facts

HERE = Path(__file__).resolve().parent
DEPRECATIONS = HERE / "catalogs" / "parser_deprecations.json"
CONSEQUENCES = HERE / "upgrade.yaml"
#: problem kinds that make a release refuse the command at start-up
REFUSALS = ("unknown_flag", "removed_flag", "renamed_flag", "too_new_flag", "invalid_value", "ambiguous_flag",
            "missing_value")
_WHY = {"unknown_flag": "no release read has it", "removed_flag": "removed", "renamed_flag": "renamed",
        "too_new_flag": "newer than this release", "invalid_value": "value refused", "ambiguous_flag": "ambiguous",
        "missing_value": "needs a value"}


@cache
def deprecations() -> dict[str, Any]:
    return json.loads(DEPRECATIONS.read_text(encoding="utf-8"))


def deprecated_parser(engine: str, kind: str, name: str, version: str) -> dict[str, str] | None:
    """``{replacement, source, since, until}`` when release ``version`` of ``engine`` deprecates parser ``name``
    (``kind``: tool_parsers / reasoning_parsers), else None."""
    from doctor.playbook.conditions import in_run

    return next((run for run in deprecations().get(engine, {}).get(kind, {}).get(name, [])
                 if in_run(version, run["since"], run["until"])), None)


def upgrade_facts(text: str | list[str], current: LaunchCommand, target: str, facts: Facts) -> None:
    """Set the ``upgrade.*`` facts for moving ``current`` (the command as read for the release in use) to
    release ``target``."""
    from doctor.engines.catalog import choose_version
    from doctor.engines.command import parse_command

    engine = current.engine
    choose_version(engine, target)   # an unusable version is one InputError line naming it
    moved = parse_command(text, engine_version=target, engine=engine)
    where = f"{engine} {target} catalog (doctor/engines/catalogs/{engine}.json)"
    facts.set("upgrade.target", target, f"--target-version {target}")
    facts.set("upgrade.from", current.version, current.version_source if current.version else
              "the version in use is unknown (--engine-version, or the image tag)")
    before = {(p.kind, p.flag) for p in current.problems} if current.version else set()
    refused = [{"flag": p.flag, "why": _WHY[p.kind], **{k: v for k, v in p.detail.items() if isinstance(v, str)},
                **({"remedy": "drop it"} if p.kind == "removed_flag" else {})}
               for p in moved.problems if p.kind in REFUSALS and (p.kind, p.flag) not in before]
    facts.set("upgrade.refused", refused, where)
    facts.set("upgrade.renamed", [r for r in refused if r["why"] == "renamed" and r.get("replacement")], where)
    facts.set("upgrade.removed", [r for r in refused if r["why"] == "removed"], where)
    _parser_facts(moved, target, facts)
    _default_facts(current, moved, target, facts)


def _parser_facts(moved: LaunchCommand, target: str, facts: Facts) -> None:
    from doctor.engines.catalog import registered_runs
    from doctor.playbook.conditions import in_run

    gone, deprecated = [], []
    for dest, kind, flag in (("tool_call_parser", "tool_parsers", "--tool-call-parser"),
                             ("reasoning_parser", "reasoning_parsers", "--reasoning-parser")):
        name = moved.get(dest)
        if not isinstance(name, str) or not name or name.startswith("<"):
            continue
        runs = registered_runs(moved.engine, kind, name)
        if runs and not any(in_run(target, a, b) for a, b in runs):
            gone.append({"flag": flag, "name": name, "registered": ", ".join(f"{a}–{b}" for a, b in runs)})
        found = deprecated_parser(moved.engine, kind, name, target)
        if found is not None:
            deprecated.append({"flag": flag, "name": name, "replacement": found["replacement"],
                               "source": f"{moved.engine} {target} {found['source']}"})
    facts.set("upgrade.parsers_gone", gone, f"{moved.engine} wheel parser registries (catalog history)")
    facts.set("upgrade.parsers_deprecated", deprecated, "doctor/engines/catalogs/parser_deprecations.json")


def _default_facts(current: LaunchCommand, moved: LaunchCommand, target: str, facts: Facts) -> None:
    from doctor.engines.catalog import default_changes
    from doctor.yamlsafe import load_packaged

    if current.version is None:
        facts.set("upgrade.defaults_changed", None, "the version in use is unknown: defaults cannot be compared "
                                                    "(pass --engine-version)")
        return
    consequences = load_packaged(CONSEQUENCES).get(current.engine, {})
    changed = []
    for key, runs in default_changes(current.engine).items():
        if key not in consequences:
            continue
        entry = consequences[key]
        option = entry.get("flag") if isinstance(entry, dict) else None
        consequence = entry["consequence"] if isinstance(entry, dict) else entry
        spec = moved.catalog.resolve(option) if option else moved.catalog.flag(key) or current.catalog.flag(key)
        if spec is not None and moved.has(spec.dest):
            continue   # the command sets it: the default does not apply
        old, new = _default_at(runs, current.version), _default_at(runs, target)
        if old is None or new is None or old == new:
            continue
        changed.append({"flag": spec.name if spec is not None else option or key, "from": json.dumps(old),
                        "to": json.dumps(new), "consequence": " ".join(consequence.split())})
    facts.set("upgrade.defaults_changed", changed,
              f"{current.engine} {current.version} → {target} defaults (catalog history) and doctor/engines/upgrade.yaml")


def _default_at(runs: list[tuple[str, str, Any]], version: str) -> Any:
    from doctor.playbook.conditions import in_run

    return next((default for since, until, default in runs if in_run(version, since, until)), None)
