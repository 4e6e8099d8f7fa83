"""JSON Schemas for playbook files, cause files and the fact registry.

The schema is the contract for users who write their own trees: it is what `llmdoctor playbook validate`
checks, and its errors are reported with the file, the line and the offending key.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Comparison operators a condition may use (see docs/playbooks.md for their meaning).
VALUE_OPS = ("eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "contains", "not_contains", "matches",
             "version_lt", "version_ge", "version_le")
#: Operators that test the fact itself and take no value.
UNARY_OPS = ("set", "unset", "exists", "missing", "is_true", "is_false", "empty", "nonempty", "truthy",
             "all_zero")

KEBAB = r"^[a-z0-9]+(-[a-z0-9]+)*$"
#: What an engine does about a launch-failure cause (a cause file's `behaviour.effect`), from the engine's source:
#: refuses to start (critical), crashes on the first request, runs degraded, or runs (llmdoctor's data is off).
EFFECTS = ("refuses-to-start", "crashes-on-first-request", "runs-degraded", "depends", "runs")
FACT_KEY = r"^[a-z][a-z0-9_]*(\.[A-Za-z0-9_]+)*$"
#: The value types a fact registry entry may declare (docs/facts.md).
FACT_TYPES = ("bool", "int", "float", "fraction", "bytes", "tokens", "seconds", "str", "version", "list", "dict",
              "any")
#: How a fact was learnt; confidence follows: observed → high, configured/derived → medium, guessed → low.
LEARNT = ("observed", "configured", "derived", "guessed")

_CONDITION: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "required": ["fact", "op"],
            "additionalProperties": False,
            "properties": {
                "fact": {"type": "string", "pattern": FACT_KEY},
                "op": {"enum": list(VALUE_OPS + UNARY_OPS)},
                "value": {},
                "ref": {"type": "string", "pattern": FACT_KEY},
                "label": {"type": "string"},
            },
        },
        {
            "type": "object", "required": ["all"], "additionalProperties": False,
            "properties": {"all": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/condition"}}},
        },
        {
            "type": "object", "required": ["any"], "additionalProperties": False,
            "properties": {"any": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/condition"}}},
        },
        {
            "type": "object", "required": ["not"], "additionalProperties": False,
            "properties": {"not": {"$ref": "#/$defs/condition"}},
        },
    ]
}

_NODE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": KEBAB},
        "note": {"type": "string"},
        "when": {"$ref": "#/$defs/condition"},
        "cause": {"type": "string", "pattern": KEBAB},
        "then": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
        "stop": {"type": "boolean"},
        "severity": {"enum": ["info", "warning", "critical"]},
        "confidence": {"enum": ["low", "medium", "high"]},
        "hint": {"type": "string"},
        "fix": {"type": "string", "minLength": 1},
        # where the nodes generated from the causes' log signatures go (doctor/playbook/lognodes.py)
        "generate": {"enum": ["log-signatures"]},
    },
    "oneOf": [{"required": ["cause"]}, {"required": ["then"]}, {"required": ["generate"]}],
}

PLAYBOOK_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["symptom", "title", "tree"],
    "additionalProperties": False,
    "properties": {
        "symptom": {"type": "string", "pattern": KEBAB},
        "title": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "aliases": {"type": "array", "items": {"type": "string"}},
        "applies_when": {"$ref": "#/$defs/condition"},
        "tree": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/node"}},
    },
    "$defs": {"condition": _CONDITION, "node": _NODE},
}

#: Where a log line was seen: a regular expression searched per line, for one engine or any, and the source of the
#: wording (wheel file:line, an issue, a real capture).
_SIGNATURE_PATTERN: dict[str, Any] = {
    "type": "object", "required": ["pattern", "seen"], "additionalProperties": False,
    "properties": {"pattern": {"type": "string", "minLength": 1}, "engine": {"enum": ["any", "vllm", "sglang"]},
                   "seen": {"type": "string", "minLength": 1}},
}
#: An error-catalog template (issue 22: the engines' own error messages, enumerated from their wheels) by id, or a
#: class of them by a selector (its keys are the catalog's to define); matched by doctor/logs/catalog.py.
_SIGNATURE_CATALOG: dict[str, Any] = {
    "type": "object", "required": ["catalog"], "additionalProperties": False,
    "oneOf": [{"required": ["template"]}, {"required": ["select"]}],
    "properties": {"catalog": {"enum": ["vllm", "sglang", "lower"]},
                   "template": {"type": "string", "minLength": 1},
                   "select": {"type": "object", "minProperties": 1},
                   "seen": {"type": "string", "minLength": 1}},
}

_CASE: dict[str, Any] = {
    "type": "object",
    "required": ["facts", "evidence"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "symptom": {"type": "string", "pattern": KEBAB},
        "facts": {"type": "object", "minProperties": 1, "propertyNames": {"pattern": FACT_KEY}},
        "evidence": {"type": "array", "items": {"type": "string", "pattern": FACT_KEY}},
        "negative": {"type": "object", "propertyNames": {"pattern": FACT_KEY}},
        "negative_symptom": {"enum": ["none"]},
        "severity": {"enum": ["info", "warning", "critical"]},
        "confidence": {"enum": ["low", "medium", "high"]},
    },
}

#: One flag operation of a cause's fix (doctor/fix/plan.py): ``<field>`` reads an item of ``each``, ``{fact}`` a fact.
_EDIT: dict[str, Any] = {
    "type": "object",
    "required": ["op", "flag"],
    "additionalProperties": False,
    "properties": {
        "op": {"enum": ["remove", "replace", "set", "add"]},
        "flag": {"type": "string", "minLength": 1},
        "to": {"type": "string", "minLength": 1},
        "value": {"type": ["string", "integer"]},
        "each": {"type": "string", "pattern": FACT_KEY},
        "engine": {"enum": ["vllm", "sglang"]},
        "class": {"enum": ["print-only"]},
    },
    "allOf": [{"if": {"properties": {"op": {"const": "replace"}}}, "then": {"required": ["to"]}},
              {"if": {"properties": {"op": {"const": "set"}}}, "then": {"required": ["value"]}}],
}

#: One cause, one file: ``playbooks/causes/<id>.yaml`` (or ``causes/<id>.yaml`` in a user's directory).
CAUSE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["id", "title", "severity", "what", "why", "fix", "ref"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string", "pattern": KEBAB},
        "title": {"type": "string", "minLength": 1},
        "severity": {"enum": ["info", "warning", "critical"]},
        "what": {"type": "string", "minLength": 1},
        "why": {"type": "string", "minLength": 1},
        "fix": {
            "type": "object",
            "minProperties": 1,
            "additionalProperties": False,
            "properties": {"any": {"type": "string"}, "vllm": {"type": "string"}, "sglang": {"type": "string"}},
        },
        "ref": {"type": "string", "minLength": 1},
        "evidence": {"type": "array", "items": {"type": "string", "pattern": FACT_KEY}},
        "behaviour": {
            "type": "object",
            "required": ["effect"],
            "additionalProperties": False,
            "properties": {"effect": {"enum": list(EFFECTS)}, "vllm": {"type": "string"},
                           "sglang": {"type": "string"}},
        },
        # lines of a server log that name this cause by themselves (doctor/logs)
        "log_signatures": {"type": "array", "minItems": 1,
                           "items": {"oneOf": [_SIGNATURE_PATTERN, _SIGNATURE_CATALOG]}},
        # how the tree node generated from the signatures reads (doctor/playbook/lognodes.py)
        "log_node": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "symptom": {"type": "string", "pattern": KEBAB},
                # further symptom trees the same node goes in (a GPU refusal also answers hardware-fit)
                "also": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": KEBAB}},
                "yields_to": {"type": "array", "minItems": 1, "items": {"type": "string", "pattern": KEBAB}},
                # a cause named only by the start-up stage that raised: after the others of its rank (playbook/engine.py)
                "stage": {"type": "boolean"},
                "when": {"$ref": "#/$defs/condition"},
                "note": {"type": "string", "minLength": 1},
            },
        },
        "cases": {"type": "array", "items": _CASE},
        # the fix as flag operations `lint --fix` applies (doctor/fix/plan.py)
        "edits": {"type": "array", "minItems": 1, "items": _EDIT},
    },
    "$defs": {"condition": _CONDITION},
}

#: One namespace of the fact registry: ``playbooks/facts/<namespace>.yaml``.
FACTS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["facts"],
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "notes": {"type": "string", "minLength": 1},
        "facts": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["key", "type", "producer", "learnt", "meaning"],
                "additionalProperties": False,
                "properties": {
                    "key": {"type": "string", "pattern": r"^[a-z][a-z0-9_]*(\.[A-Za-z0-9_*]+)*$"},
                    "type": {"enum": list(FACT_TYPES)},
                    "unit": {"type": "string"},
                    "producer": {"type": "string", "minLength": 1},
                    "learnt": {"enum": list(LEARNT)},
                    "meaning": {"type": "string", "minLength": 1},
                    "signals": {"enum": ["problem"]},
                },
            },
        },
    },
}

TRAPS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["traps"],
    "additionalProperties": False,
    "properties": {
        "traps": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "metric", "why", "instead"],
                "additionalProperties": False,
                "properties": {
                    "id": {"type": "string", "pattern": KEBAB},
                    "metric": {"type": "string"},
                    "engine": {"enum": ["vllm", "sglang", "any"]},
                    "why": {"type": "string"},
                    "instead": {"type": "string"},
                    "ref": {"type": "string"},
                },
            },
        },
    },
}
