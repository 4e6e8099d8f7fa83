"""Findings for people: the terminal block and the Markdown block every command shares.

Order is the reader's: most severe first, then most certain. The text is for someone in an incident: by
default one screen — the top cause with its fix first, what happens, the facts it rests on and the reference;
the other findings one line each; "could not check" as one line naming the input that would decide the most.
``verbose`` shows every finding in full (why, the evidence chain: fact = value (source) test) and every
undecided cause with its reason. Markdown (tickets) always has the full detail.
"""

from __future__ import annotations

import re

from doctor.findings import NOT_SAID, Evidence, Finding, Unchecked
from doctor.humanize import readable
from doctor.render.style import style
from doctor.render.text import fit_line, labelled, width, wrap

_COLORS = {"critical": "red", "warning": "yellow", "info": "cyan"}
_FLAG = re.compile(r"--[a-z][a-z0-9-]*")
NO_FINDINGS = "No findings: nothing in the facts matches a known cause."


def verdict_line(findings: list[Finding]) -> str:
    """The one-line verdict of check and lint: the worst severity first, then the count of each."""
    if not findings:
        return "no findings"
    counts = {s: sum(f.severity == s for f in findings) for s in ("critical", "warning", "info")}
    return f"{findings[0].severity.upper()} — " + ", ".join(f"{n} {s}" for s, n in counts.items() if n)


def findings_text(findings: list[Finding], unchecked: list[Unchecked] = (), *, verbose: bool = False,
                  silent_empty: bool = False) -> str:
    """One screen by default (the top cause in full, the others one line each, one "could not check" line);
    ``verbose``: every finding with its mechanism and evidence chain, and every undecided cause.
    ``silent_empty``: no "No findings" line (the never-silent block said what is known instead)."""
    cols = width()
    out: list[str] = []
    if not findings and not silent_empty:
        out.append(NO_FINDINGS)
    if verbose:
        for finding in findings:
            out += _finding_block(finding, cols, verbose=True)
            out.append("")
        if unchecked:
            out.append(style("Could not check", bold=True))
            for causes, missing, reason, hint in group_unchecked(unchecked):
                out += wrap(f"{', '.join(causes)}: needs {', '.join(missing)} — {reason}; {hint}", cols, "  - ", "    ")
        return "\n".join(out).rstrip() + "\n"
    if findings:
        out += _finding_block(findings[0], cols, verbose=False)
    if len(findings) > 1:
        out.append("")
        out.append(style("Also found", bold=True) + " (-v: the evidence and fix of each)")
        id_col = max(len(f.id) for f in findings[1:])
        for finding in findings[1:]:
            out.append("  " + _severity(finding.severity)
                       + fit_line(f"{finding.id:<{id_col}}  {finding.title}", cols - 11))
    if unchecked:
        out.append("")
        out += wrap(unchecked_line(unchecked), cols)
    return "\n".join(out).rstrip() + "\n"


def _severity(severity: str) -> str:
    return style(f"{severity.upper():<9}", fg=_COLORS[severity], bold=True)


def _finding_block(finding: Finding, cols: int, *, verbose: bool) -> list[str]:
    """The top finding: headline, then the fix first (what to do now), what happens, the evidence, the reference."""
    symptom = f", symptom {finding.symptom}" if finding.symptom and verbose else ""
    out = wrap(f"{finding.id}  {finding.title}  [{finding.confidence} confidence{symptom}]", cols, " " * 9)
    out[0] = _severity(finding.severity) + style(finding.id, bold=True) + out[0][9 + len(finding.id):]
    out += labelled("fix", finding.fix, cols)
    out += labelled("what", finding.what, cols)
    if verbose:
        out += labelled("why", finding.why, cols)
        out.append("  evidence")
        for item in finding.evidence:
            out += wrap(item.sentence() + (" (observed)" if item.observed else ""), cols, "    • ", "      ")
    else:
        facts = ", ".join(f"{e.fact} = {readable(e.value, 60)}" for e in _distinct(finding))
        seen = " (observed)" if any(e.observed for e in finding.evidence) else ""
        out += labelled("evidence", f"{facts}{seen}", cols)
    out += labelled("ref", finding.ref, cols)
    return out


def _distinct(finding: Finding) -> list[Evidence]:
    """Each fact once (a chain may test one fact twice: "is known", then "< 0.78")."""
    seen: dict[str, Evidence] = {}
    for item in finding.evidence:
        seen.setdefault(item.fact, item)
    return list(seen.values())


def unchecked_line(unchecked: list[Unchecked]) -> str:
    """"Could not check" as one line: how many causes, and the single input that would decide the most of them."""
    causes = list(dict.fromkeys(u.cause for u in unchecked))
    # Hints are grouped by the flag they name ("pass --config PATH|REPO …" and "pass --config of the served
    # checkpoint …" are one input); the first wording seen is shown.
    decides: dict[str, tuple[str, set[str]]] = {}
    for item in unchecked:
        for hint in item.hint.split("; "):
            flag = _FLAG.search(hint)
            decides.setdefault(flag.group(0) if flag else hint, (hint, set()))[1].add(item.cause)
    # "the inputs given do not say" is no input to ask for: it leads only when nothing else would decide.
    asked = {flag: entry for flag, entry in decides.items() if entry[0] != NOT_SAID} or decides
    best, covered = max(asked.values(), key=lambda entry: len(entry[1]))
    if len(causes) == 1:
        return f"Could not check {causes[0]}: {unchecked[0].reason if best == NOT_SAID else best} (-v: why)"
    share = "all" if len(covered) == len(causes) else f"{len(covered)}"
    return f"Could not check {len(causes)} causes; most useful next input: {best} (decides {share}; -v lists them)"


def group_unchecked(unchecked: list[Unchecked]) -> list[tuple[list[str], list[str], str, str]]:
    """One line per missing input (same reason and hint), listing every cause it leaves undecided."""
    groups: dict[tuple[str, str], tuple[list[str], list[str]]] = {}
    for item in unchecked:
        causes, missing = groups.setdefault((item.reason, item.hint), ([], []))
        if item.cause not in causes:
            causes.append(item.cause)
        missing.extend(m for m in item.missing if m not in missing)
    return [(causes, missing, reason, hint) for (reason, hint), (causes, missing) in groups.items()]


def findings_markdown(findings: list[Finding], unchecked: list[Unchecked] = (), *, silent_empty: bool = False) -> str:
    """``silent_empty``: no "No findings" line (the never-silent block said what is known instead)."""
    out: list[str] = []
    if not findings and not silent_empty:
        out.append(NO_FINDINGS + "\n")
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
            out.append(f"- `{item.fact}` = `{readable(item.value)}` ({item.source}) {item.test}{observed}")
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
