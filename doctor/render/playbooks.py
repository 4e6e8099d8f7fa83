"""`llmdoctor playbook list` and `show` for people: the symptoms with their causes, one tree as indented
conditions, one cause's texts, the metric traps."""

from __future__ import annotations

import json

from doctor.render.style import style

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def listing_text(rows: list[dict[str, Any]], causes: int) -> str:
    """Each symptom (bold) with its title and the causes it can reach, then the counts."""
    lines = [line for row in rows for line in (f"{style(row['symptom'], bold=True)}  {row['title']}",
                                                f"    causes: {', '.join(row['causes'])}")]
    lines.append(f"\n{len(rows)} playbooks, {causes} causes. `llmdoctor playbook show ID` for one of them.")
    return "\n".join(lines)


def traps_text(traps: Any) -> str:
    """The metric traps: what a metric seems to say, why it does not, and what to read instead."""
    return "\n".join(f"{style(trap.id, bold=True)}  {trap.metric} ({trap.engine})\n  {trap.why}\n"
                     f"  instead: {trap.instead}" for trap in traps)


def playbook_text(playbook: Any) -> str:
    """One symptom's tree: its title, when it runs unasked, its source, then each node as ``if COND → cause``."""
    lines = [f"{style(playbook.symptom, bold=True)}: {playbook.title}"]
    if playbook.description:
        lines.append(f"  {playbook.description}")
    if playbook.applies_when:
        lines.append(f"  runs without --symptom when: {_cond(playbook.applies_when)}")
    lines.append(f"  source: {playbook.source}")
    return "\n".join(lines + _tree_lines(playbook.tree, 1))


def cause_text(cause: Any) -> str:
    """One cause: severity and title, what happens and why, the fix per engine, its evidence and sources."""
    lines = [f"{style(cause.id, bold=True)}  [{cause.severity}]  {cause.title}",
             f"what: {cause.what}\n\nwhy: {cause.why}"]
    lines += [f"fix ({engine}): {text}" for engine, text in cause.fix.items()]
    lines.append(f"\nevidence: {', '.join(cause.evidence) or '—'}\nref: {cause.ref}\nsource: {cause.source}")
    return "\n".join(lines)


def _tree_lines(nodes: list[dict[str, Any]], depth: int) -> list[str]:
    lines: list[str] = []
    pad = "  " * depth
    for node in nodes:
        cond = _cond(node["when"]) if "when" in node else "always"
        target = f"→ {node['cause']}" if "cause" in node else "→"
        extras = [f"{k}={node[k]}" for k in ("severity", "confidence") if k in node]
        if node.get("stop"):
            extras.append("stop")
        lines.append(f"{pad}if {cond} {target}" + (f"  ({', '.join(extras)})" if extras else ""))
        if "note" in node:
            lines.append(f"{pad}  # {node['note']}")
        if "then" in node:
            lines.extend(_tree_lines(node["then"], depth + 1))
    return lines


def _cond(cond: dict[str, Any]) -> str:
    if "all" in cond:
        return "(" + " ∧ ".join(_cond(c) for c in cond["all"]) + ")"
    if "any" in cond:
        return "(" + " ∨ ".join(_cond(c) for c in cond["any"]) + ")"
    if "not" in cond:
        return "¬" + _cond(cond["not"])
    rhs = cond.get("ref", json.dumps(cond.get("value"))) if ("ref" in cond or "value" in cond) else ""
    return f"{cond['fact']} {cond['op']} {rhs}".rstrip()
