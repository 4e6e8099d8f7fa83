"""`lint` output for people: the command, each flag explained, then the findings."""

from __future__ import annotations

from doctor.humanize import readable
from doctor.model.band import capacity_summary
from doctor.render.findings import findings_markdown, findings_text, verdict_line
from doctor.render.style import style
from doctor.render.text import labelled, width, wrap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.commands.lint import LintResult
    from doctor.commands.lint_files import FilesResult
    from doctor.findings import Finding
    from doctor.fix.apply import FixResult


def _header(result: LintResult) -> list[str]:
    cmd = result.gathered.command
    facts = result.facts
    lines = []
    if cmd is not None:
        version = cmd.version or "(version unknown)"
        catalog = (f" · flags read with the {cmd.engine} {cmd.catalog_version} catalog"
                   if cmd.version and cmd.catalog_version != cmd.version else "")
        lines.append(f"{cmd.engine} {version} · model {facts.get('launch.model') or '?'}{catalog}")
    if "model.attention" in facts:
        moe = f", MoE {facts.get('model.moe.experts')} experts" if facts.get("model.moe") else ", dense"
        lines.append(f"model: {facts.get('model.name')} — {str(facts.get('model.attention')).upper()}{moe}"
                     + (f", family {facts.get('model.family')}" if facts.get("model.family") else ""))
        weights = facts.fact("model.weight_bytes")
        if weights is not None and isinstance(weights.value, int):
            how = "exact, safetensors headers" if facts.get("model.weight_source") == "safetensors" else "estimate"
            lines.append(f"weights: {weights.value / 2**30:.1f} GiB ({how})"
                         + (f" — {weights.source[weights.source.index('assumed'):]}" if "assumed" in weights.source
                            else ""))
    elif facts.unknown_reason("model"):
        lines.append(f"model: unknown — {facts.unknown_reason('model')}")
    if "gpu.name" in facts:
        lines.append(f"gpus: {facts.get('gpu.count') or '?'}× {facts.get('gpu.name')} (sm_{facts.get('gpu.sm')})")
    summary = capacity_summary(facts)
    if summary:
        lines.append(f"fit: {summary}")
    return lines


def lint_text(result: LintResult, *, verbose: bool = False) -> str:
    """One screen: what was read, the verdict, the flags named, the findings; -v explains every flag too."""
    cols = width()
    head = _header(result) or ["no launch command"]
    out = wrap("llmdoctor lint · " + head[0], cols, "", "  ")
    out[0] = out[0].replace("llmdoctor lint", style("llmdoctor lint", bold=True), 1)
    out += [line for extra in head[1:] for line in wrap(extra, cols, "", "  ")]
    out += labelled("verdict", verdict_line(result.diagnosis.findings), cols, indent=0)
    cmd = result.gathered.command
    notes = (list(cmd.notes) if cmd is not None else []) + list(result.gathered.notes)
    out += [line for n in notes for line in labelled("note", n, cols, indent=0)]
    if result.flags and not verbose:
        named = ", ".join(f"{note.flag} {_value(note.value)}".rstrip() for note in result.flags)
        out += labelled("flags", f"{named} (-v explains each)", cols, indent=0)
    elif result.flags:
        out.append("")
        out.append(style("Flags", bold=True))
        for note in result.flags:
            head = f"{note.flag} {_value(note.value)}".rstrip()
            if note.canonical and note.canonical != note.flag:
                head += f"   (= {note.canonical})"
            out.append(f"  {style(head, bold=True)}")
            out.extend(wrap(note.explain, cols, "      "))
    out.append("")
    if verbose:
        out.append(style("Findings", bold=True))
    out.append(findings_text(result.diagnosis.findings, result.diagnosis.unchecked, verbose=verbose).rstrip())
    if verbose:
        out.append("")
        out.append(style("Facts", bold=True))
        out.extend(f"  {f.key} = {readable(f.value, 100)}  ({f.source})" for f in sorted(result.facts, key=lambda f: f.key))
    elif result.diagnosis.findings or result.diagnosis.unchecked:
        out.append(style("-v", bold=True) + ": each flag explained, why, the evidence with its sources, every "
                   "fix, every fact")
    return "\n".join(out)


def lint_markdown(result: LintResult) -> str:
    out = ["## llmdoctor lint", ""]
    out += [f"- {line}" for line in _header(result)]
    cmd = result.gathered.command
    if cmd is not None:
        out += ["", "```sh", cmd.render(), "```", ""]
    if result.flags:
        out += ["| flag | value | why |", "|---|---|---|"]
        for note in result.flags:
            out.append(f"| `{note.flag}` | `{_value(note.value)}` | {note.explain.replace('|', '/')} |")
        out.append("")
    out += ["### Findings", "", findings_markdown(result.diagnosis.findings, result.diagnosis.unchecked)]
    return "\n".join(out)


def _value(value: object) -> str:
    if value is None or value is True:
        return ""
    text = str(value)
    return text if len(text) <= 60 else text[:59] + "…"


# ------------------------------------------------------------------------------------- lint --fix
_CLASS_LABEL = {"safe": "applied", "needs-value": "applied, needs a value", "print-only": "not applied"}


def fix_text(fixed: FixResult, remaining: list[Finding], output: str | None) -> str:
    """The corrected command, its diff, and what each finding's fix became."""
    out = [style("Fixed command", bold=True) + (f" (written to {output})" if output else "")]
    if fixed.changed:
        out += ["  " + line for line in fixed.masked(fixed.fixed).rstrip("\n").splitlines()]
        out += ["", style("Diff", bold=True)]
        out += ["  " + line for line in fixed.diff().rstrip("\n").splitlines()]
    else:
        out.append("  (unchanged: no finding has a fix that can be applied to the command)")
    out += [f"  note: {n}" for n in fixed.notes]
    out += ["", fix_summary(fixed, remaining)]
    return "\n".join(out)


def fix_summary(fixed: FixResult, remaining: list[Finding]) -> str:
    """One line per finding's fix, then what a new lint of the fixed command still finds."""
    cols = width()
    out = [style("Fixes", bold=True)]
    for p in fixed.planned:
        what = "; ".join(e.describe() for e in p.edits) or " ".join(p.text.split())
        out += wrap(f"{p.finding} [{_CLASS_LABEL[p.fix_class]}]: {what}", cols, "  - ", "    ")
        out += wrap("left out: " + "; ".join(p.left_out), cols, "    ", "    ") if p.left_out else []
    after = ", ".join(f.id for f in remaining) or "none"
    out += labelled("after", f"a new lint of the fixed command finds: {after}", cols, indent=0)
    return "\n".join(out)


# ------------------------------------------------------------------------------------- lint --files
def files_text(result: FilesResult) -> str:
    """ruff's shape: ``path:line: SEVERITY cause-id title`` per finding, then one summary line."""
    out: list[str] = []
    counts = {"files": 0, "skipped": 0, "errors": 0, "findings": 0}
    for item in result.files:
        if item.skipped:
            counts["skipped"] += 1
            continue
        counts["files"] += 1
        if item.error:
            counts["errors"] += 1
            out.append(f"{item.path}: error: {item.error}")
            continue
        assert item.result is not None
        where = f"{item.path}:{item.line}" if item.line else item.path
        for finding in item.result.diagnosis.findings:
            counts["findings"] += 1
            out.append(f"{where}: {finding.severity.upper()} {finding.id} {finding.title}")
        out += [f"{item.path}: note: {n}" for n in item.notes]
    out.append(f"{counts['files']} launch file(s) linted, {counts['findings']} finding(s), "
               f"{counts['skipped']} file(s) without a launch skipped, {counts['errors']} unreadable")
    return "\n".join(out)


def files_markdown(result: FilesResult) -> str:
    out = ["## llmdoctor lint", ""]
    for item in result.files:
        if item.skipped:
            continue
        out.append(f"### `{item.path}`" + (f" (line {item.line})" if item.line else ""))
        out.append("")
        if item.error:
            out += [f"Could not be read: {item.error}", ""]
        elif item.result is not None:
            out += [findings_markdown(item.result.diagnosis.findings, item.result.diagnosis.unchecked), ""]
    return "\n".join(out)
