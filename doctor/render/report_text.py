"""The fleet report for chat and tickets (Markdown) and for the terminal (one screen).

Markdown carries everything but the charts: summary, ranked findings, each instance's key facts and findings
(the shared findings block of doctor/render/findings.py), the folded "could not check" lines, the query count.
The terminal summary is what a nightly job's log or an on-call engineer's shell needs: one line per finding,
worst first, cut to a screen, and where the full report went.
"""

from __future__ import annotations

import shutil

from doctor.render.style import style
from doctor.report.view import ENGINE_NAMES, SEVERITY_ORDER, finding, key_facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_COLORS = {"critical": "red", "warning": "yellow", "info": "cyan"}


def markdown_report(doc: dict[str, Any]) -> str:
    from doctor.render.findings import findings_markdown

    w, s, q = doc["window"], doc["summary"], doc["queries"]
    out = [f"# Fleet report · {w['end']}", "",
           f"Prometheus `{doc['prometheus']}` · last {w['since']} ({w['start']} to {w['end']})"
           + (f" · selector `{w['selector']}`" if w["selector"] else "")
           + f" · {q['count']} PromQL queries in {q['seconds']:.1f} s", "", "## Summary", "",
           f"- **{s['instances']}** instances ({_engines(s)}), **{s['with_findings']}** with findings: "
           + ", ".join(f"{s['findings'][sev]} {sev}" for sev in SEVERITY_ORDER),
           f"- healthy: {', '.join(f'`{i}`' for i in s['healthy']) or 'none'}"]
    if s["no_data"]:
        out.append(f"- no data: {', '.join(f'`{i}`' for i in s['no_data'])}")
    out += [f"- `{cause}`: {', '.join(f'`{i}`' for i in insts)}" for cause, insts in s["causes"].items()]
    out += ["", "## Findings, ranked across the fleet", ""]
    if doc["findings"]:
        out += ["| # | severity | cause | instance | what |", "|---|---|---|---|---|"]
        out += [f"| {n} | {f['severity']} | `{f['id']}` | `{f['instance']}` | {_cell(f['title'])} |"
                for n, f in enumerate(doc["findings"], 1)]
    else:
        out.append("No findings: nothing in the history matches a known cause.")
    by_instance: dict[str, list[dict[str, Any]]] = {}
    for f in doc["findings"]:
        by_instance.setdefault(f["instance"], []).append(f)
    for inst in doc["instances"]:
        state = inst["worst"] or ("ok" if inst["has_data"] else "no data")
        out += ["", f"## `{inst['instance']}` · {state}", ""]
        if inst["live"] and inst["live"]["note"]:
            out += [f"> {inst['live']['note']}", ""]
        rows = key_facts(inst["facts"])
        if rows:
            out += ["| fact | value |", "|---|---|"] + [f"| {label} | {_cell(text)} |" for label, text, _ in rows]
            out.append("")
        found = [finding(f) for f in by_instance.get(inst["instance"], [])]
        out.append(findings_markdown(found).rstrip() if found else
                   "No findings." if inst["has_data"] else "Nothing observed: no history and no live answer.")
    if doc["unchecked"]:
        out += ["", "## Could not check", "",
                "Branches the history cannot decide (pass `--targets` with a launch command, config and GPU):", ""]
        out += [f"- `{u['cause']}` ({u['symptom']}): needs {', '.join(f'`{m}`' for m in u['missing'])}: "
                f"{u['reason']} ({len(u['instances'])} instances)" for u in doc["unchecked"]]
    if doc["problems"]:
        out += ["", "## Problems while reading", ""] + [f"- {p}" for p in doc["problems"]]
    return "\n".join(out) + "\n"


def text_summary(doc: dict[str, Any], *, written: str | None = None, height: int | None = None) -> str:
    """One screen: the window, the fleet's count, the worst findings first, where the report went."""
    w, s, q = doc["window"], doc["summary"], doc["queries"]
    rows = height or shutil.get_terminal_size((100, 24)).lines
    lines = [style("llmdoctor report", bold=True) + f" · {doc['prometheus']} · last {w['since']} to {w['end']}"
             + (f" · {w['selector']}" if w["selector"] else ""),
             f"{s['instances']} instances ({_engines(s)}) · {s['with_findings']} with findings: "
             + ", ".join(f"{s['findings'][sev]} {sev}" for sev in SEVERITY_ORDER)
             + f" · {q['count']} PromQL queries in {q['seconds']:.1f} s" + (f" ({q['failed']} failed)" if q["failed"]
                                                                           else ""),
             ""]
    tail = []
    if s["healthy"]:
        tail.append("healthy: " + ", ".join(s["healthy"]))
    if s["no_data"]:
        tail.append("no data: " + ", ".join(s["no_data"]))
    if doc["problems"]:
        tail.append(f"{len(doc['problems'])} problems while reading (first: {doc['problems'][0]})")
    if doc["unchecked"]:
        tail.append(f"{len(doc['unchecked'])} causes could not be checked from history alone "
                    "(see the full report; --targets adds launch command, config and GPU)")
    if written:
        tail.append(f"report written to {written}")
    room = max(3, rows - len(lines) - len(tail) - 2)
    findings = doc["findings"]
    width_cause = max((len(f["id"]) for f in findings[:room]), default=0)
    width_inst = max((len(f["instance"]) for f in findings[:room]), default=0)
    for f in findings[:room]:
        sev = style(f"{f['severity'].upper():<9}", fg=_COLORS[f["severity"]], bold=True)
        lines.append(f"{sev}{f['id']:<{width_cause}}  {f['instance']:<{width_inst}}  {f['title']}")
    if len(findings) > room:
        lines.append(f"… and {len(findings) - room} more findings")
    if not findings:
        lines.append("No findings: nothing in the history matches a known cause.")
    return "\n".join([*lines, "", *tail]) + "\n"


def _engines(summary: dict[str, Any]) -> str:
    return ", ".join(f"{n} {ENGINE_NAMES.get(e, e)}" for e, n in sorted(summary["engines"].items())) or "none"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
