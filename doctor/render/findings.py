"""Findings for people: the terminal block and the Markdown block every command shares.

Order is the reader's: most severe first, then most certain; each finding says what, why, the evidence
(fact = value (source) test), the fix and the playbook/seed reference. "Could not check" lines follow, so an
on-call engineer sees what is still unknown and which flag would tell.
"""

from __future__ import annotations

import shutil
import textwrap

import click

from doctor.findings import Finding, Unchecked

_COLORS = {"critical": "red", "warning": "yellow", "info": "cyan"}


def _width() -> int:
    return max(60, min(110, shutil.get_terminal_size((100, 24)).columns))


def _wrap(label: str, text: str, width: int) -> list[str]:
    prefix = f"  {label:<9}"
    lines: list[str] = []
    for i, paragraph in enumerate(text.splitlines() or [""]):
        lines.extend(textwrap.wrap(paragraph, width=width, initial_indent=prefix if i == 0 else " " * len(prefix),
                                   subsequent_indent=" " * len(prefix)) or [prefix.rstrip()])
    return lines


def findings_text(findings: list[Finding], unchecked: list[Unchecked] = (), *, verbose: bool = False) -> str:
    width = _width()
    out: list[str] = []
    if not findings:
        out.append("No findings: nothing in the facts matches a known cause.")
    for finding in findings:
        head = click.style(f"{finding.severity.upper():<9}", fg=_COLORS[finding.severity], bold=True)
        out.append(f"{head}{click.style(finding.id, bold=True)}  {finding.title}  "
                   f"[{finding.confidence} confidence{', symptom ' + finding.symptom if finding.symptom else ''}]")
        out.extend(_wrap("what", finding.what, width))
        if verbose:
            out.extend(_wrap("why", finding.why, width))
        out.append("  evidence")
        for item in finding.evidence:
            mark = " (observed)" if item.observed else ""
            out.extend(textwrap.wrap(item.sentence() + mark, width=width, initial_indent="    • ",
                                     subsequent_indent="      "))
        out.extend(_wrap("fix", finding.fix, width))
        out.extend(_wrap("ref", finding.ref, width))
        out.append("")
    if unchecked:
        out.append(click.style("Could not check", bold=True))
        for causes, missing, reason, hint in group_unchecked(unchecked):
            line = f"{', '.join(causes)}: needs {', '.join(missing)} — {reason}; {hint}"
            out.extend(textwrap.wrap(line, width=width, initial_indent="  - ", subsequent_indent="    "))
    return "\n".join(out).rstrip() + "\n"


def group_unchecked(unchecked: list[Unchecked]) -> list[tuple[list[str], list[str], str, str]]:
    """One line per missing input (same reason and hint), listing every cause it leaves undecided."""
    groups: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for item in unchecked:
        causes, missing = groups.setdefault((item.reason, item.hint), ([], []))
        if item.cause not in causes:
            causes.append(item.cause)
        missing.extend(m for m in item.missing if m not in missing)
    return [(causes, missing, reason, hint) for (reason, hint), (causes, missing) in groups.items()]


def findings_markdown(findings: list[Finding], unchecked: list[Unchecked] = ()) -> str:
    out: list[str] = []
    if not findings:
        out.append("No findings: nothing in the facts matches a known cause.\n")
    for finding in findings:
        out.append(f"### {finding.severity.upper()} · `{finding.id}` — {finding.title}")
        out.append("")
        out.append(f"*{finding.confidence} confidence*" + (f" · symptom `{finding.symptom}`" if finding.symptom else ""))
        out.append("")
        out.append(f"**What:** {finding.what}")
        out.append("")
        out.append(f"**Why:** {finding.why}")
        out.append("")
        out.append("**Evidence:**")
        out.append("")
        for item in finding.evidence:
            observed = " *(observed)*" if item.observed else ""
            out.append(f"- `{item.fact}` = `{item.value}` ({item.source}) {item.test}{observed}")
        out.append("")
        fix_lines = finding.fix.splitlines()
        out.append("**Fix:** " + (fix_lines[0] if len(fix_lines) == 1 else ""))
        if len(fix_lines) > 1:
            out.append("")
            out.extend(f"- {line}" for line in fix_lines)
        out.append("")
        out.append(f"**Ref:** {finding.ref}")
        out.append("")
    if unchecked:
        out.append("#### Could not check")
        out.append("")
        for causes, missing, reason, hint in group_unchecked(unchecked):
            out.append(f"- {', '.join(f'`{c}`' for c in causes)}: needs {', '.join(f'`{m}`' for m in missing)} — "
                       f"{reason}; {hint}")
        out.append("")
    return "\n".join(out)
