"""`lint` output for people: the command, each flag explained, then the findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from doctor.humanize import readable
from doctor.render.findings import findings_markdown, findings_text, verdict_line
from doctor.render.text import labelled, width, wrap

if TYPE_CHECKING:
    from doctor.commands.lint import LintResult


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
    return lines


def lint_text(result: LintResult, *, verbose: bool = False) -> str:
    """One screen: what was read, the verdict, the flags named, the findings; -v explains every flag too."""
    cols = width()
    head = _header(result) or ["no launch command"]
    out = wrap("llmdoctor lint · " + head[0], cols, "", "  ")
    out[0] = out[0].replace("llmdoctor lint", click.style("llmdoctor lint", bold=True), 1)
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
        out.append(click.style("Flags", bold=True))
        for note in result.flags:
            head = f"{note.flag} {_value(note.value)}".rstrip()
            if note.canonical and note.canonical != note.flag:
                head += f"   (= {note.canonical})"
            out.append(f"  {click.style(head, bold=True)}")
            out.extend(wrap(note.explain, cols, "      "))
    out.append("")
    if verbose:
        out.append(click.style("Findings", bold=True))
    out.append(findings_text(result.diagnosis.findings, result.diagnosis.unchecked, verbose=verbose).rstrip())
    if verbose:
        out.append("")
        out.append(click.style("Facts", bold=True))
        out.extend(f"  {f.key} = {readable(f.value, 100)}  ({f.source})" for f in sorted(result.facts, key=lambda f: f.key))
    elif result.diagnosis.findings or result.diagnosis.unchecked:
        out.append(click.style("-v", bold=True) + ": each flag explained, why, the evidence with its sources, every "
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
