"""JSON Schemas for playbook files and the causes catalog.

The schema is the contract for users who write their own trees: it is what `llmdoctor playbook validate`
checks, and its errors are reported with the file, the line and the offending key.
"""

from __future__ import annotations

from typing import Any

#: Comparison operators a condition may use (see docs/playbooks.md for their meaning).
VALUE_OPS = ("eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "contains", "not_contains", "matches",
             "version_lt", "version_ge")
#: Operators that test the fact itself and take no value.
UNARY_OPS = ("set", "unset", "exists", "missing", "is_true", "is_false", "empty", "nonempty")

KEBAB = r"^[a-z0-9]+(-[a-z0-9]+)*$"
#: What an engine does about a launch-failure cause (causes.yaml `behaviour.effect`), from the engine's source:
#: refuses to start (critical), crashes on the first request, runs degraded, or runs (llmdoctor's data is off).
EFFECTS = ("refuses-to-start", "crashes-on-first-request", "runs-degraded", "depends", "runs")
FACT_KEY = r"^[a-z][a-z0-9_]*(\.[A-Za-z0-9_]+)*$"

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
    },
    "oneOf": [{"required": ["cause"]}, {"required": ["then"]}],
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

CAUSES_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["causes"],
    "additionalProperties": False,
    "properties": {
        "causes": {
            "type": "object",
            "propertyNames": {"pattern": KEBAB},
            "additionalProperties": {
                "type": "object",
                "required": ["title", "severity", "what", "why", "fix", "ref"],
                "additionalProperties": False,
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "severity": {"enum": ["info", "warning", "critical"]},
                    "what": {"type": "string", "minLength": 1},
                    "why": {"type": "string", "minLength": 1},
                    "fix": {
                        "type": "object",
                        "minProperties": 1,
                        "additionalProperties": False,
                        "properties": {"any": {"type": "string"}, "vllm": {"type": "string"},
                                       "sglang": {"type": "string"}},
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
                    # lines of a server log that name this cause by themselves (doctor/logs): a regular
                    # expression searched per line, for one engine or any, and where the line was seen
                    "log_signatures": {
                        "type": "array",
                        "items": {"oneOf": [
                            {
                                "type": "object",
                                "required": ["pattern", "seen"],
                                "additionalProperties": False,
                                "properties": {"pattern": {"type": "string", "minLength": 1},
                                               "engine": {"enum": ["any", "vllm", "sglang"]},
                                               "seen": {"type": "string", "minLength": 1}},
                            },
                            # an error-catalog template by id, or a class of them (doctor/logs/catalog_map.py)
                            {
                                "type": "object",
                                "required": ["catalog"],
                                "additionalProperties": False,
                                "properties": {
                                    "catalog": {"enum": ["vllm", "sglang", "lower"]},
                                    "template": {"type": "string", "pattern": "^(vllm|sglang|lower)-[0-9a-f]{10}$"},
                                    "select": {
                                        "type": "object", "minProperties": 1, "additionalProperties": False,
                                        "properties": {k: {"anyOf": [{"type": "string"},
                                                                     {"type": "array", "items": {"type": "string"}}]}
                                                       for k in ("module", "function", "type", "kind", "startup",
                                                                 "words")},
                                    },
                                    "seen": {"type": "string"},
                                },
                                "oneOf": [{"required": ["template"]}, {"required": ["select"]}],
                            },
                        ]},
                    },
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
