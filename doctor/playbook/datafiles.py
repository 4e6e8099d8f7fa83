"""The data files the code reads besides the playbooks, each with its JSON schema, checked like the playbooks.

`llmdoctor playbook validate` checks every built-in one (and, with ``--data FILE``, a user's copy): an error
names the file, the line and the key, and the command exits 2. A condition anywhere is the playbooks' condition
language (the ``condition`` definition of doctor/playbook/schema.py), its fact names checked against the fact
registry, so a flag rule that tests ``launch.flags.tp_sise`` fails here instead of never applying. A release
rule list (``since`` a release, then what holds from it until the next rule) is checked for order: rules out
of order would make ``doctor.versions.rule_for`` answer with the wrong release's rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from doctor.playbook.schema import FACT_KEY, PLAYBOOK_SCHEMA, VALUE_OPS

_PACKAGE = Path(__file__).resolve().parents[1]

#: a release as the catalogs spell it ("0.5.23", "0.10.1.1", "0.3.1.post2", "0.0" for "every release")
_RELEASE = {"type": "string", "pattern": r"^\d+(\.\d+)*(\.post\d+)?$"}

#: engine → rules sorted by ``since``; each rule holds from its release until the next one's
_RELEASE_RULES: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"enum": ["vllm", "sglang"]},
    "additionalProperties": {
        "type": "array", "minItems": 1,
        "items": {"type": "object", "required": ["since", "evidence"],
                  "properties": {"since": _RELEASE, "evidence": {"type": "string", "minLength": 1}}},
    },
}

_SEMANTICS_CASE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "from": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]},
        "json": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
        "env": {"type": "string"},
        "fact": {"type": "string", "pattern": FACT_KEY},
        "product": {"type": "array", "items": {"type": "string", "pattern": FACT_KEY}, "minItems": 2},
        "default": {"type": "string"},
        "engine_default": {"type": "string"},
        "const": {},
        "unset": {"const": True},
        "when": {"$ref": "#/$defs/condition"},
        "invert": {"type": "boolean"},
        "truthy": {"type": "boolean"},
        "type": {"enum": ["int", "float", "str", "bool"]},
        "why": {"type": "string"},
    },
}

_SCHEMAS: dict[str, dict[str, Any]] = {
    "engines/semantics.yaml": {
        "type": "object", "required": ["facts"],
        "properties": {
            "facts": {"type": "object", "propertyNames": {"pattern": FACT_KEY},
                      "additionalProperties": {
                          "type": "object",
                          "properties": {"vllm": {"type": "array", "items": _SEMANTICS_CASE},
                                         "sglang": {"type": "array", "items": _SEMANTICS_CASE},
                                         "unknown": {"type": "string"}},
                          "additionalProperties": False}},
            "equivalents": {"type": "array", "items": {"type": "object"}},
            "folk_flags": {"type": "object"},
        },
    },
    "hardware/kernels.yaml": {
        "type": "object", "required": ["kernels"], "additionalProperties": False,
        "properties": {"kernels": {"type": "object", "additionalProperties": {
            "type": "object", "required": ["meaning"],
            "properties": {"meaning": {"type": "string"}, "vllm": {"$ref": "#/$defs/release_rules"},
                           "sglang": {"$ref": "#/$defs/release_rules"}},
            "additionalProperties": False}}},
    },
    "model/engine_memory.yaml": {
        "type": "object", "additionalProperties": {"$ref": "#/$defs/release_rules_by_engine"},
    },
    "engines/dsa_kv.yaml": {
        "type": "object", "propertyNames": {"enum": ["vllm", "sglang"]},
        "additionalProperties": {
            "type": "object", "required": ["at_or_above", "below", "source"], "additionalProperties": False,
            "properties": {"min_sm": {"type": "integer", "minimum": 0}, "at_or_above": {"type": "string"},
                           "below": {"type": "string"}, "source": {"type": "string", "minLength": 1}}},
    },
}
# kernels.yaml keeps one rule list per engine under each kernel; engine_memory.yaml one per engine per section
_DEFS = {"condition": PLAYBOOK_SCHEMA["$defs"]["condition"],
         "release_rules": _RELEASE_RULES["additionalProperties"],
         "release_rules_by_engine": _RELEASE_RULES}

#: The built-in data files this module checks, by their path under doctor/.
BUILTIN = tuple(_SCHEMAS)


def kind_of(path: Path) -> str | None:
    """Which schema a file takes, by its name (a user's copy of ``semantics.yaml`` is checked as the built-in)."""
    return next((kind for kind in _SCHEMAS if Path(kind).name == path.name), None)


def validate_builtin() -> list[str]:
    """Every built-in data file's problems, FILE:LINE: KEY: message each."""
    return [error for kind in BUILTIN for error in validate_file(_PACKAGE / kind)]


def validate_file(path: Path) -> list[str]:
    """One data file's problems; a file no schema is for, or one that cannot be read, is one problem."""
    from doctor.errors import InputError
    from doctor.yamlsafe import line_of, load_yaml

    kind = kind_of(path)
    if kind is None:
        known = ", ".join(Path(k).name for k in BUILTIN)
        return [f"{path}: no schema for a file of this name (data files: {known})"]
    try:
        data, node = load_yaml(path.read_bytes(), str(path))
    except (OSError, InputError) as exc:
        return [f"{path}: {exc}"]
    errors = _schema_errors(data, {"$defs": _DEFS, **_SCHEMAS[kind]}, node, path)
    if errors:
        return errors
    where = lambda location: f"{path}:{line_of(node, location)}"  # noqa: E731 - a short local alias
    return _condition_errors(data, [], where) + _order_errors(data, [], where)


def _schema_errors(data: Any, schema: dict[str, Any], node: Any, path: Path) -> list[str]:
    import jsonschema

    from doctor.yamlsafe import line_of

    out = []
    for error in sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path)):
        best = jsonschema.exceptions.best_match([error]) if error.context else error
        location = list(best.absolute_path)
        out.append(f"{path}:{line_of(node, location)}: {'.'.join(map(str, location)) or '(top level)'}: "
                   f"{best.message}")
    return out


def _condition_errors(obj: Any, location: list[Any], where: Any) -> list[str]:
    """Under every ``when``: each fact named is registered, and each comparison has its value."""
    out: list[str] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "when":
                out += [f"{where([*location, key, *at])}: {message}" for at, message in _leaf_errors(value, [])]
            else:
                out += _condition_errors(value, [*location, key], where)
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += _condition_errors(value, [*location, index], where)
    return out


def _leaf_errors(cond: dict[str, Any], at: list[Any]) -> list[tuple[list[Any], str]]:
    from doctor.playbook.loader import load_playbooks

    for key in ("all", "any"):
        if key in cond:
            return [e for i, sub in enumerate(cond[key]) for e in _leaf_errors(sub, [*at, key, i])]
    if "not" in cond:
        return _leaf_errors(cond["not"], [*at, "not"])
    out = []
    unknown = load_playbooks().registry.unknown(cond["fact"])
    if unknown:
        out.append(([*at, "fact"], unknown))
    if cond["op"] in VALUE_OPS and "value" not in cond and "ref" not in cond:
        out.append(([*at, "op"], f"op '{cond['op']}' needs a 'value' or a 'ref'"))
    return out


def _order_errors(obj: Any, location: list[Any], where: Any) -> list[str]:
    """Release rules whose ``since`` does not rise: the later rule would never be reached, or the wrong one."""
    from doctor.versions import version_key

    out: list[str] = []
    if isinstance(obj, list) and obj and all(isinstance(r, dict) and "since" in r for r in obj):
        for i in range(1, len(obj)):
            if version_key(obj[i]["since"]) <= version_key(obj[i - 1]["since"]):
                out.append(f"{where([*location, i, 'since'])}: since {obj[i]['since']} does not follow "
                           f"{obj[i - 1]['since']}: release rules go oldest first, each until the next")
    elif isinstance(obj, dict):
        for key, value in obj.items():
            out += _order_errors(value, [*location, key], where)
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += _order_errors(value, [*location, index], where)
    return out
