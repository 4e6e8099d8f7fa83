"""From findings to concrete, classed edits: what `lint --fix` applies, marks or only explains.

A cause's ``edits`` (its file under playbooks/causes/) are templates over the finding's facts:

```yaml
edits:
  - {op: replace, each: launch.renamed_flags, flag: "<flag>", to: "<replacement>"}
  - {op: set, flag: --max-model-len, value: "{model.max_len_derived}", engine: vllm}
  - {op: add, flag: --tool-call-parser, value: "{expect.tool_parser}", engine: vllm}
  - {op: remove, flag: --kv-cache-dtype}
```

``each`` repeats the edit for every item of a list fact, ``<field>`` (``<a|b>``: the first field with a value)
reading the item; ``{fact}`` reads a fact. The class, as ruff classes its fixes:

* **safe** — every template filled: applied.
* **needs a value** — a ``value`` whose fact is unknown: applied with the marked placeholder ``<fact?>`` (the
  command will not start until it is replaced, which is the point of marking it); a ``flag`` or ``to`` that
  cannot be filled (an unknown flag with no known equivalent) is left out, and said so.
* **print-only** — a cause without edits, or with ``class: print-only`` (its fix is a decision the command
  cannot make: where a secret should live, how much load to shed): explained, never applied.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from doctor.fix.argv import Edit

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.facts import Facts
    from doctor.findings import Finding
    from doctor.playbook.loader import Cause

SAFE, NEEDS_VALUE, PRINT_ONLY = "safe", "needs-value", "print-only"
CLASSES = (SAFE, NEEDS_VALUE, PRINT_ONLY)
_FACT = re.compile(r"\{([a-z][a-z0-9_]*(?:\.[A-Za-z0-9_]+)*)\}")
_FIELD = re.compile(r"<([A-Za-z0-9_|]+)>")


@dataclass
class Planned:
    """The fixes of one finding: the edits to apply, with their class, and what was left out and why."""

    finding: str
    severity: str
    fix_class: str
    edits: list[Edit] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"cause": self.finding, "severity": self.severity, "class": self.fix_class,
                "edits": [e.describe() for e in self.edits], "left_out": self.left_out, "fix": self.text}


def plan(findings: list[Finding], causes: dict[str, Cause], facts: Facts, engine: str | None) -> list[Planned]:
    """One Planned per finding, most severe first (the order the findings already have)."""
    out = []
    for finding in findings:
        cause = causes.get(finding.id)
        specs = [s for s in (cause.edits if cause is not None else ())
                 if s.get("engine") in (None, "any", engine)]
        if not specs or any(s.get("class") == PRINT_ONLY for s in specs):
            out.append(Planned(finding.id, finding.severity, PRINT_ONLY, text=finding.fix))
            continue
        planned = Planned(finding.id, finding.severity, SAFE, text=finding.fix)
        for spec in specs:
            _expand(spec, facts, planned)
        if not planned.edits:
            planned.fix_class = PRINT_ONLY
        out.append(planned)
    return out


def _expand(spec: dict[str, Any], facts: Facts, planned: Planned) -> None:
    items: list[Any] = [None]
    if "each" in spec:
        value = facts.get(spec["each"])
        items = [i for i in value if isinstance(i, dict)] if isinstance(value, (list, tuple)) else []
    for item in items:
        flag = _fill(spec["flag"], facts, item)
        to = _fill(spec["to"], facts, item) if "to" in spec else None
        if flag is None or ("to" in spec and to is None):
            planned.left_out.append(f"{spec['op']} {_fill_loose(spec['flag'], item)}: "
                                    f"no {'replacement' if to is None else 'flag'} is known")
            continue
        words: tuple[str, ...] = ()
        if "value" in spec:
            filled = _fill(str(spec["value"]), facts, item)
            if filled is None:
                planned.fix_class = NEEDS_VALUE
                filled = _FACT.sub(lambda m: f"<{m.group(1)}?>", str(spec["value"]))
            words = (filled,)
        planned.edits.append(Edit(spec["op"], flag, to, words))


def _fill(template: str, facts: Facts, item: dict[str, Any] | None) -> str | None:
    """The template with every fact and field filled, or None when one is unknown."""
    missing = False

    def fact(m: re.Match[str]) -> str:
        nonlocal missing
        value = facts.get(m.group(1))
        if value is None or value is False or value == "":
            missing = True
            return ""
        return str(value)

    def item_field(m: re.Match[str]) -> str:
        nonlocal missing
        for name in m.group(1).split("|"):
            value = (item or {}).get(name)
            if value not in (None, "", []):
                return str(value)
        missing = True
        return ""

    text = _FIELD.sub(item_field, _FACT.sub(fact, template))
    return None if missing else text


def _fill_loose(template: str, item: dict[str, Any] | None) -> str:
    return _FIELD.sub(lambda m: str((item or {}).get(m.group(1).split("|")[0], m.group(0))), template)
