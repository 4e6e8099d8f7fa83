"""Filling a cause's text and fix from facts: ``add --ep-size {launch.tp}`` → ``add --ep-size 8``.

A deliberately tiny language (no expressions, no code): ``{fact.key}`` inserts a value and an optional
filter formats it:

* ``{key|gib}`` bytes as GiB, ``{key|pct}`` a 0..1 ratio as a percentage, ``{key|join}`` a list joined
  with ", ",
* ``{key|each:<flag> → <nearest>}`` one line fragment per item of a list of objects, ``<field>`` being
  the item's field (``<a|b>``: the first of the fields that has a value), joined with "; ",
* ``{key|or:TEXT}`` the value, or TEXT when the fact is unknown or unset; ``{key|gib|or:TEXT}`` (also
  ``pct``, ``join``) formats the value and falls back to TEXT the same way.

A fact a cause's text needs but its conditions do not guarantee must have an ``or:`` fallback that says in
words what is unknown (tests/test_cause_render.py renders every cause with only the facts its conditions
guarantee). An unknown key without one renders as ``<key?>`` so a template never fails and the gap is visible.
"""

from __future__ import annotations

import re

from doctor.facts import Facts
from doctor.humanize import percent, readable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PLACEHOLDER = re.compile(r"\{([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+)*)(?:\|(gib|pct|join)(?=\|or:))?"
                          r"(?:\|([a-z]+)(?::([^{}]*))?)?\}")
_FIELD = re.compile(r"<([A-Za-z0-9_|]+)>")


def placeholders(template: str) -> list[str]:
    """The fact keys a template reads (the loader checks them against the fact registry)."""
    return [m.group(1) for m in _PLACEHOLDER.finditer(template)]


def render(template: str, facts: Facts) -> str:
    def _sub(m: re.Match[str]) -> str:
        key, shape, flt, arg = m.group(1), m.group(2), m.group(3), m.group(4)
        fact = facts.fact(key)
        if flt == "or" and (fact is None or fact.value is None):
            return arg or ""
        if fact is None:
            return f"<{key}?>"
        return _format(fact.value, shape or flt, arg)

    return _PLACEHOLDER.sub(_sub, template)


def _format(value: Any, flt: str | None, arg: str | None) -> str:
    if flt == "gib" and isinstance(value, (int, float)):
        return f"{value / 2**30:.1f} GiB"
    if flt == "pct" and isinstance(value, (int, float)):
        return percent(value)
    if flt == "pct" and isinstance(value, (list, tuple)) and all(isinstance(v, (int, float)) for v in value):
        return ", ".join(percent(v) for v in value)   # per-GPU ratios: "0%, 0%, 100%", not "0.0, 0.0, 1.0"
    if flt == "join" and isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if flt == "each" and isinstance(value, (list, tuple)):
        pattern = arg or ""
        parts = []
        for item in value:
            if isinstance(item, dict):
                parts.append(_FIELD.sub(lambda f, item=item: _first_field(item, f.group(1)), pattern).strip())
            else:
                parts.append(_plain(item))
        return "; ".join(parts)
    return _plain(value)


def _first_field(item: dict[str, Any], names: str) -> str:
    """``<equivalent|nearest>``: the first of these fields the item has (a non-empty value)."""
    for name in names.split("|"):
        value = item.get(name)
        if value not in (None, "", []):
            return _plain(value)
    return ""


def _plain(value: Any) -> str:
    return readable(value, limit=1000)
