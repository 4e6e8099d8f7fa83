"""``launch.*`` facts from a parsed launch command (docs/facts.md), driven by semantics.yaml.

Every fact carries the place it came from: ``argv --tp-size`` (or ``argv --tp (abbreviation of
--tp-size)``), ``env VLLM_BATCH_INVARIANT``, ``default of vllm 0.13.0``, ``derived: launch.tp ×
launch.dp``. The engine-specific → neutral mapping lives in semantics.yaml, not here.
"""

from __future__ import annotations

from doctor.engines.catalog import default_hedge
from doctor.engines.command import FlagValue, LaunchCommand
from doctor.engines.semantics import load_semantics
from doctor.facts import Facts
from doctor.humanize import readable
from doctor.playbook.conditions import evaluate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PROBLEM_FACTS = {
    "unknown_flag": "launch.unknown_flags",
    "other_engine_flag": "launch.other_engine_flags",
    "invalid_value": "launch.invalid_values",
    "deprecated_flag": "launch.deprecated_flags",
    "too_new_flag": "launch.too_new_flags",
    "abbreviated_flag": "launch.abbreviated_flags",
    "ambiguous_flag": "launch.ambiguous_flags",
    "missing_value": "launch.missing_values",
    "unexpected_positional": "launch.unexpected_positionals",
    "duplicate_flag": "launch.duplicate_flags",
    "removed_flag": "launch.removed_flags",
    "renamed_flag": "launch.renamed_flags",
}


def launch_facts(cmd: LaunchCommand) -> Facts:
    facts = Facts()
    cat = cmd.catalog
    label = f"launch command ({cmd.entry})"
    facts.set("launch.engine", cmd.engine, label)
    if cmd.version is not None:
        facts.set("launch.version", cmd.version, cmd.version_source)
    else:
        facts.error("launch.version", f"no version given and no image tag: flags read with the newest "
                                      f"{cmd.engine} catalog ({cat.version}); version-dependent findings "
                                      f"say which releases they hold for")
    facts.set("launch.catalog_version", cat.version,
              cat.note or f"catalog history doctor/engines/catalogs/{cat.engine}.json, release {cat.version}")
    holes = _placeholder_reasons(cmd)
    model_hole = holes.get("model") or holes.get("model_path")
    if cmd.model is None and model_hole:
        facts.error("launch.model", model_hole)
    else:
        facts.set("launch.model", cmd.model, f"argv {cmd.model_source}" if cmd.model_source else label)
    for dest, fv in cmd.by_dest().items():
        facts.set(f"launch.flags.{dest}", _merged(cmd, dest, fv), _argv_source(fv))
    for dest, why in holes.items():
        if dest not in cmd.by_dest():
            facts.error(f"launch.flags.{dest}", why)
    env_holes = {p["flag"][4:]: p for p in cmd.placeholders if p["flag"].startswith("env ")}
    for name, value in cmd.env.items():
        hole = env_holes.get(name)
        if hole is not None and hole["default"] is None:
            facts.error(f"launch.env.{name}", f"env {name}={hole['word']} is a placeholder in the launch command: "
                                              "its value is unknown")
            continue
        facts.set(f"launch.env.{name}", hole["default"] if hole else value, f"env {name}")
    facts.set("launch.placeholders", list(cmd.placeholders), f"{label}: values the paste does not have")

    for key, rule in load_semantics()["facts"].items():
        cases = rule.get(cmd.engine)
        if cases is None:
            continue
        hidden = _hidden_by(cases, holes, cmd)
        if hidden is not None:
            facts.error(key, hidden)
            continue
        found = _first(cases, cmd, facts)
        if found is None:
            facts.error(key, f"{cmd.engine} {cat.version}: {rule.get('unknown', 'no rule matched')}")
        else:
            facts.set(key, found[0], found[1])

    by_kind: dict[str, list[dict[str, Any]]] = {k: [] for k in _PROBLEM_FACTS.values()}
    secret_flags: list[str] = []
    # `HF_TOKEN=… vllm serve` / `export HF_TOKEN=…`: in the process environment, not in argv — another exposure
    # (and another fix) than a flag or a `docker run -e`, which the process table shows.
    secret_env: list[str] = []
    for problem in cmd.problems:
        if problem.kind == "secret_flag":
            names = secret_env if problem.detail.get("env") and cmd.shape in ("shell", "argv") else secret_flags
            if problem.flag not in names:
                names.append(problem.flag)
        elif problem.kind in _PROBLEM_FACTS:
            by_kind[_PROBLEM_FACTS[problem.kind]].append({"flag": problem.flag, **problem.detail})
    for key, items in by_kind.items():
        facts.set(key, items, f"{label} checked against catalog {cat.engine} {cat.version}")
    facts.set("launch.secret_flags", secret_flags, label)
    facts.set("launch.secret_env", secret_env, f"{label}: environment assignments before the command")
    facts.set("engine.tool_parsers", list(cat.tool_parsers), f"catalog {cat.engine} {cat.version}")
    facts.set("engine.reasoning_parsers", list(cat.reasoning_parsers), f"catalog {cat.engine} {cat.version}")
    return facts


def _placeholder_reasons(cmd: LaunchCommand) -> dict[str, str]:
    """dest -> why its value is unknown, for each flag whose value is a placeholder without a default."""
    return {p["dest"]: f"{p['flag']} {p['word']} is a placeholder in the launch command: its value is unknown "
                       f"(pass the command with the value filled in)"
            for p in cmd.placeholders if p["dest"] and p["default"] is None}


def _hidden_by(cases: list[dict[str, Any]], holes: dict[str, str], cmd: LaunchCommand) -> str | None:
    """Why a semantics.yaml fact is unknown when a flag it reads is a placeholder (None: it is not)."""
    if not holes:
        return None
    for case in cases:
        dests = case.get("from") or (case["json"][0] if "json" in case else None) or []
        for dest in [dests] if isinstance(dests, str) else dests:
            if dest in holes and dest not in cmd.by_dest():
                return holes[dest]
    return None


def _merged(cmd: LaunchCommand, dest: str, last: FlagValue) -> Any:
    """A JSON flag given as several dotted keys (vLLM ``--eplb-config.x 1 --eplb-config.y 2``) is one dict."""
    if last.subkey is None:
        return last.value
    merged: dict[str, Any] = {}
    for fv in cmd.flags:
        if fv.dest == dest and isinstance(fv.value, dict):
            merged.update(fv.value)
    return merged


def _argv_source(fv: FlagValue) -> str:
    token = fv.token + (f".{fv.subkey}" if fv.subkey else "")
    if fv.abbreviated:
        return f"argv {token} (abbreviation of {fv.option})"
    return f"argv {token}"


def _first(cases: list[dict[str, Any]], cmd: LaunchCommand, facts: Facts) -> tuple[Any, str] | None:
    for case in cases:
        evidence = ""
        if "when" in case:
            ok, evidence = _condition(case["when"], facts)
            if not ok:
                continue
        found = _produce(case, cmd, facts)
        if found is None:
            continue
        value, source = found
        if case.get("invert") and isinstance(value, bool):
            value = not value
        if evidence and source.startswith("engine behaviour"):
            source = f"derived: {evidence}" + (f" ({case['why']})" if case.get("why") else "")
        elif evidence:
            source = f"{source} (as {evidence})"
        return value, source
    return None


def _produce(case: dict[str, Any], cmd: LaunchCommand, facts: Facts) -> tuple[Any, str] | None:
    cat = cmd.catalog
    by_dest = cmd.by_dest()
    if "from" in case:
        dests = case["from"] if isinstance(case["from"], list) else [case["from"]]
        for dest in dests:
            if dest in by_dest:
                return _merged(cmd, dest, by_dest[dest]), _argv_source(by_dest[dest])
        return None
    if "json" in case:
        dest, key = case["json"]
        if dest in by_dest:
            value = _merged(cmd, dest, by_dest[dest])
            if isinstance(value, dict) and key in value:
                return value[key], f"{_argv_source(by_dest[dest])} [{key}]"
        return None
    if "env" in case:
        name = case["env"]
        if name not in cmd.env or f"launch.env.{name}" not in facts:  # absent, or a placeholder without a value
            return None
        value: Any = facts.get(f"launch.env.{name}")
        if case.get("type") == "int":
            try:
                value = int(value)
            except ValueError:
                return None
        return value, f"env {name}"
    if "fact" in case:
        if case["fact"] not in facts:
            return None
        return facts.get(case["fact"]), f"derived: = {case['fact']}"
    if "product" in case:
        values = [facts.get(k) for k in case["product"]]
        if not all(isinstance(v, int) for v in values):
            return None
        product = 1
        for v in values:
            product *= v
        return product, "derived: " + " × ".join(case["product"])
    if "default" in case:
        spec = cat.flag(case["default"])
        if spec is None or not spec.default_known or spec.default is None:
            return None
        return spec.default, (f"default of {cat.engine} {cat.version} ({spec.name})"
                              + default_hedge(cat, spec.dest))
    if "engine_default" in case:
        entry = cat.defaults.get(case["engine_default"], {})
        if entry.get("default") is None:
            return None
        return entry["default"], (f"default of {cat.engine} {cat.version}"
                                  + default_hedge(cat, f"defaults.{case['engine_default']}"))
    if "const" in case:
        why = case.get("why")
        return case["const"], (f"engine behaviour: {why}" if why else
                               f"engine behaviour: {readable(case['const'])} unless the launch command says otherwise")
    if case.get("unset"):
        return None, f"not in the launch command ({cmd.entry})"
    return None


def _condition(cond: dict[str, Any], facts: Facts) -> tuple[bool, str]:
    """(holds, evidence text) for a semantics.yaml ``when``: the playbooks' condition language and evaluator
    (doctor/playbook/conditions.py) over the facts read so far; a case applies only when it is true."""
    outcome = evaluate(cond, facts)
    if outcome.value is not True:
        return False, ""
    return True, " and ".join(f"{_label(e.fact, e.source)} = {readable(e.value)}" for e in outcome.support)


def _label(key: str, source: str) -> str:
    """How evidence names a flag (its argv token), an environment variable (``env NAME``) or another fact."""
    return source if key.startswith(("launch.flags.", "launch.env.")) else key
