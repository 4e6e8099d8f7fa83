"""The data files the code reads besides the playbooks, each with its JSON schema, checked like the playbooks.

Each schema is a file: ``doctor/playbook/schemas/<dir>/<file>.schema.yaml`` is the schema of ``doctor/<dir>/<file>``
(the hand-written tables and the generated catalogs alike). `llmdoctor playbook validate` checks every built-in
data file (and, with ``--data FILE``, a user's copy, by its name): an error names the file, the line and the key,
with a did-you-mean for a misspelt one, and the command exits 2. A condition anywhere is the playbooks' condition
language (the ``condition`` definition of doctor/playbook/schema.py), its fact names checked against the fact
registry, so a flag rule that tests ``launch.flags.tp_sise`` fails here instead of never applying. A release
rule list (``since`` a release, then what holds from it until the next rule) is checked for order: rules out
of order would make ``doctor.versions.rule_for`` answer with the wrong release's rule.
"""

from __future__ import annotations

import functools
from pathlib import Path

from doctor.playbook.schema import FACT_KEY, PLAYBOOK_SCHEMA, UNARY_OPS, VALUE_OPS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PACKAGE = Path(__file__).resolve().parents[1]
SCHEMA_DIR = Path(__file__).with_name("schemas")
_SUFFIX = ".schema.yaml"

#: a release as the catalogs spell it ("0.5.23", "0.10.1.1", "0.3.1.post2", "0.0" for "every release")
_RELEASE = {"type": "string", "pattern": r"^\d+(\.\d+)*(\.post\d+)?$"}
_TEXT = {"type": "string", "minLength": 1}

#: engine → rules sorted by ``since``; each rule holds from its release until the next one's
_RELEASE_RULES: dict[str, Any] = {
    "type": "object",
    "propertyNames": {"$ref": "#/$defs/engine"},
    "additionalProperties": {"$ref": "#/$defs/release_rules"},
}

#: the definitions every schema file may name (``$ref: "#/$defs/<name>"``)
_DEFS: dict[str, Any] = {
    "condition": PLAYBOOK_SCHEMA["$defs"]["condition"],
    "condition_op": {"enum": list(VALUE_OPS + UNARY_OPS)},
    # a fact's name: of the fact registry's (the ``registered`` keyword, checked by _registered)
    "fact_key": {"type": "string", "pattern": FACT_KEY, "registered": True},
    "release": _RELEASE,
    "release_rules": {
        "type": "array", "minItems": 1,
        "items": {"type": "object", "required": ["since", "evidence"],
                  "properties": {"since": _RELEASE, "evidence": _TEXT}},
    },
    "release_rules_by_engine": _RELEASE_RULES,
    "engine": {"enum": ["vllm", "sglang"]},
    "text": _TEXT,
    "strings": {"type": "array", "items": {"type": "string"}},
    # the generated catalogs: their readers check the format version in header.schema
    "history": {"type": "object", "required": ["header", "releases", "flags"],
                "properties": {"header": {"type": "object", "required": ["schema", "engine", "generator"],
                                          "properties": {"schema": {"const": "llmdoctor.catalog-history/1"}}},
                               "releases": {"type": "array", "minItems": 1,
                                            "items": {"type": "object", "required": ["version"]}}}},
    "error_catalog": {"type": "object", "required": ["header", "templates"], "additionalProperties": False,
                      "properties": {"header": {"type": "object", "required": ["schema", "engine", "releases"],
                                                "properties": {"schema": {"const": "llmdoctor.errors/1"}}},
                                     "templates": {"type": "object", "additionalProperties": {
                                         "type": "object", "required": ["parts", "sites"]}}}},
}


@functools.cache
def _schemas() -> dict[str, Path]:
    """data path under doctor/ → its schema file."""
    return {str(p.relative_to(SCHEMA_DIR))[: -len(_SUFFIX)]: p for p in sorted(SCHEMA_DIR.rglob(f"*{_SUFFIX}"))}


def builtin() -> tuple[str, ...]:
    """The built-in data files this module checks, by their path under doctor/."""
    return tuple(_schemas())


def kind_of(path: Path) -> str | None:
    """Which schema a file takes, by its name (a user's copy of ``semantics.yaml`` is checked as the built-in)."""
    return next((kind for kind in _schemas() if Path(kind).name == path.name), None)


@functools.cache
def schema(kind: str) -> dict[str, Any]:
    """The schema of the data file ``kind`` (its path under doctor/), with the shared definitions."""
    from doctor.yamlsafe import load_packaged

    loaded = load_packaged(_schemas()[kind])
    return {**loaded, "$defs": {**_DEFS, **loaded.get("$defs", {})}}


def validate_builtin() -> list[str]:
    """Every built-in data file's problems, FILE:LINE: KEY: message each."""
    return [error for kind in builtin() for error in validate_file(_PACKAGE / kind)]


def validate_file(path: Path) -> list[str]:
    """One data file's problems; a file no schema is for, or one that cannot be read, is one problem."""
    from doctor.errors import InputError

    kind = kind_of(path)
    if kind is None:
        known = ", ".join(Path(k).name for k in builtin())
        return [f"{path}: no schema for a file of this name (data files: {known})"]
    try:
        data, line_at = _read(path)
    except (OSError, InputError, ValueError) as exc:
        return [f"{path}: {exc}"]
    errors = _schema_errors(data, schema(kind), line_at, path)
    if errors:
        return errors
    if not path.name.endswith(".yaml"):  # the JSON files are tables and generated catalogs: no rules in them
        return []
    where = lambda location: f"{path}:{line_at(location)}"  # noqa: E731 - a short local alias
    return _condition_errors(data, [], where) + _order_errors(data, [], where)


#: files this large are read as JSON, their lines found by searching the text (YAML's node tree costs seconds)
_BIG = 256 * 1024


def _read(path: Path) -> tuple[Any, Any]:
    """The file's data and a function from a location (keys and indices) to its line."""
    import gzip
    import json

    from doctor.yamlsafe import line_of, load_yaml

    raw = path.read_bytes()
    if path.suffix == ".gz":
        raw = gzip.decompress(raw)
    if path.name.endswith((".json", ".json.gz")) and len(raw) > _BIG:
        text = raw.decode("utf-8")
        return json.loads(text), lambda location: _json_line(text, location)
    data, node = load_yaml(raw, str(path), max_bytes=max(len(raw), _BIG))
    return data, lambda location: line_of(node, location)


def _json_line(text: str, location: list[Any]) -> int:
    """The line of the innermost key of ``location`` in a JSON text (each key searched after the one before)."""
    at = 0
    for part in location:
        if isinstance(part, str):
            found = text.find(f'"{part}"', at)
            if found < 0:
                break
            at = found
    return text.count("\n", 0, at) + 1


def _schema_errors(data: Any, schema: dict[str, Any], line_at: Any, path: Path) -> list[str]:
    """Each schema error as FILE:LINE: KEY: message, the line and key being the offending one's own."""
    import jsonschema

    errors = sorted(_validator()(schema).iter_errors(data), key=lambda e: list(e.absolute_path))
    found = [(jsonschema.exceptions.best_match([e]) if e.context else e, "propertyNames" in e.schema_path)
             for e in errors]
    misspelt = {(tuple(e.absolute_path), near) for e, _ in found for key in _unexpected_keys(e)
                for near in _near(key, e.schema.get("properties") or {})}
    out = []
    for best, of_a_key in found:
        if best.validator == "required" and any((tuple(best.absolute_path), missing) in misspelt
                                                for missing in best.validator_value):
            continue  # the misspelt key's own error says which key it should be
        location, message = list(best.absolute_path), best.message
        unexpected = _unexpected_keys(best)
        if unexpected:  # point at the misspelt key itself, and say what it may have meant
            location = [*location, unexpected[0]]
            message = f"unknown key{_did_you_mean(unexpected[0], best.schema.get('properties') or {})} ({message})"
        elif of_a_key:  # a key of the wrong form: its error is the mapping's, the line the key's
            location = [*location, best.instance]
        out.append(f"{path}:{line_at(location)}: {'.'.join(map(str, location)) or '(top level)'}: {message}")
    return out


@functools.cache
def _validator() -> Any:
    """Draft 2020-12 plus ``registered``: a string that must be a key of the fact registry (playbooks/facts/), so a
    data file naming ``metrics.kv_usgae`` fails with the registry's did-you-mean, like a playbook does."""
    import jsonschema

    return jsonschema.validators.extend(jsonschema.Draft202012Validator, {"registered": _registered})


def _registered(validator: Any, wanted: Any, instance: Any, schema: dict[str, Any]) -> Any:
    if wanted and isinstance(instance, str) and (message := _unknown_fact(instance)):
        import jsonschema

        yield jsonschema.ValidationError(message[0])


def _unexpected_keys(error: Any) -> list[str]:
    if error.validator != "additionalProperties" or not isinstance(error.instance, dict):
        return []
    allowed = error.schema.get("properties") or {}
    return [key for key in error.instance if key not in allowed]


def _near(key: Any, allowed: dict[str, Any]) -> list[str]:
    import difflib

    return difflib.get_close_matches(str(key), list(allowed), n=2, cutoff=0.6)


def _did_you_mean(key: Any, allowed: dict[str, Any]) -> str:
    near = _near(key, allowed)
    return f" {key!r}: did you mean {' or '.join(repr(n) for n in near)}?" if near else f" {key!r}"


#: the keys whose mapping is a condition (server_fields.yaml's ``as``/``null_when`` test the field, not a fact)
_CONDITION_KEYS = ("when", "as", "null_when")


def _condition_errors(obj: Any, location: list[Any], where: Any) -> list[str]:
    """Under every condition: each fact named is registered, and each comparison has its value."""
    out: list[str] = []
    if isinstance(obj, dict):
        if isinstance(obj.get("fact"), str) and "op" in obj:  # a test whose values come from elsewhere (families.yaml)
            out += [f"{where([*location, 'fact'])}: {message}" for message in _unknown_fact(obj["fact"])]
        for key, value in obj.items():
            if key in _CONDITION_KEYS and isinstance(value, dict):
                out += [f"{where([*location, key, *at])}: {message}" for at, message in _leaf_errors(value, [])]
            else:
                out += _condition_errors(value, [*location, key], where)
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += _condition_errors(value, [*location, index], where)
    return out


def _leaf_errors(cond: dict[str, Any], at: list[Any]) -> list[tuple[list[Any], str]]:
    for key in ("all", "any"):
        if key in cond:
            return [e for i, sub in enumerate(cond[key]) for e in _leaf_errors(sub, [*at, key, i])]
    if "not" in cond:
        return _leaf_errors(cond["not"], [*at, "not"])
    out = [([*at, "fact"], message) for message in _unknown_fact(cond["fact"])] if "fact" in cond else []
    if cond["op"] in VALUE_OPS and "value" not in cond and "ref" not in cond:
        out.append(([*at, "op"], f"op '{cond['op']}' needs a 'value' or a 'ref'"))
    return out


def _unknown_fact(key: str) -> list[str]:
    """The registry's error for a fact name it does not know (with its did-you-mean), or none."""
    from doctor.playbook.loader import load_playbooks

    unknown = load_playbooks().registry.unknown(key)
    return [unknown] if unknown else []


def _order_errors(obj: Any, location: list[Any], where: Any) -> list[str]:
    """Release rules whose ``since`` does not rise: the later rule would never be reached, or the wrong one."""
    from doctor.versions import version_key

    out: list[str] = []
    if isinstance(obj, list) and obj and all(isinstance(r, dict) and "since" in r and "until" not in r
                                             and version_key(str(r["since"])) for r in obj):
        for i in range(1, len(obj)):
            if version_key(str(obj[i]["since"])) <= version_key(str(obj[i - 1]["since"])):
                out.append(f"{where([*location, i, 'since'])}: since {obj[i]['since']} does not follow "
                           f"{obj[i - 1]['since']}: release rules go oldest first, each until the next")
    elif isinstance(obj, dict):
        earlier = obj.get("earlier")
        if "since" in obj and isinstance(earlier, list) and earlier and isinstance(earlier[-1], dict) \
                and version_key(str(earlier[-1].get("since"))) and version_key(str(obj["since"])) \
                and version_key(str(obj["since"])) <= version_key(str(earlier[-1]["since"])):
            # a parser's earlier names are release rules before its own: [*earlier, itself] must rise too
            out.append(f"{where([*location, 'since'])}: since {obj['since']} does not follow "
                       f"{earlier[-1]['since']} (its earlier names come first, each until the next)")
        for key, value in obj.items():
            out += _order_errors(value, [*location, key], where)
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            out += _order_errors(value, [*location, index], where)
    return out
