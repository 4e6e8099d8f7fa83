"""The never-silent block (doctor/playbook/unexplained.py) for people: the text screen and Markdown.

It takes the place of "No findings" when a reported symptom has no cause: first the verdict (cause not found),
then the log lines nobody placed, quoted as the engine printed them, then what is still possible — each cause
with the one input that decides it. Possible causes are never shown as findings.
"""

from __future__ import annotations

from doctor.render.style import style
from doctor.render.text import labelled, width, wrap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.playbook.unexplained import Unexplained

#: unplaced lines shown on the one-screen text; -v and Markdown show them all
SCREEN_LINES = 6
#: inputs (each deciding one or more possible causes) shown on the one-screen text
SCREEN_GROUPS = 4


def unexplained_text(u: Unexplained, *, verbose: bool = False) -> list[str]:
    cols = width()
    out = [style("Cause not found", bold=True, fg="red") + " for "
           + ", ".join(f"{s} (reported by {by})" for s, by in u.symptoms.items())]
    lines = u.lines if verbose else u.lines[:SCREEN_LINES]
    if u.lines:
        out.append(style("Log lines no rule placed", bold=True) + " (quoted as printed)")
        for item in lines:
            where = f"   [{item.source}]" if item.source else ""
            out += wrap(f"{item.level.upper():<7} {item.line}{where}", cols, "  ", "          ")
        if len(u.lines) > len(lines):
            out.append(f"  … {len(u.lines) - len(lines)} more (-v)")
    if u.possible:
        out.append(style("Possible causes", bold=True) + " (not findings: the facts do not rule them out),"
                   " by the input that decides them")
        groups = u.by_input()
        for decided_by, causes in groups if verbose else groups[:SCREEN_GROUPS]:
            names = ", ".join(p.cause for p in causes) if verbose or len(causes) <= 4 else \
                ", ".join(p.cause for p in causes[:4]) + f", … ({len(causes)} causes)"
            out += wrap(f"{decided_by}: {names}", cols, "  ? ", "    ")
        if not verbose and len(groups) > SCREEN_GROUPS:
            out.append(f"  … {len(groups) - SCREEN_GROUPS} more inputs (-v)")
    else:
        out += labelled("possible", "none: every known cause of this symptom is ruled out by the facts — the cause is "
                        "one llmdoctor does not know yet; the quoted lines are the evidence", cols, indent=0)
    return out


def unexplained_markdown(u: Unexplained) -> str:
    out = ["### Cause not found", "",
           "Reported: " + ", ".join(f"`{s}` (by {by})" for s, by in u.symptoms.items()), ""]
    if u.lines:
        out += ["#### Log lines no rule placed", ""]
        out += [f"- **{i.level}** `{i.line}`" + (f" — {i.source}" if i.source else "") for i in u.lines]
        out.append("")
    out += ["#### Possible causes (not findings)", ""]
    if u.possible:
        for decided_by, causes in u.by_input():
            out.append(f"- {decided_by}: " + ", ".join(f"*possible* `{p.cause}` ({p.title})" for p in causes))
    else:
        out.append("- none: every known cause of this symptom is ruled out by the facts")
    out.append("")
    return "\n".join(out)
