"""`lint` output for people: the command, each flag explained, then the findings."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

import click

from doctor.render.findings import _width, findings_markdown, findings_text

if TYPE_CHECKING:
    from doctor.lint import LintResult


def _header(result: LintResult) -> list[str]:
    cmd = result.gathered.command
    facts = result.facts
    lines = []
    if cmd is not None:
        version = cmd.version or "unknown version"
        lines.append(f"{cmd.engine} {version} (flags read with the {cmd.engine} {cmd.catalog_version} catalog)"
                     f" · model {facts.get('launch.model') or '?'}")
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
    width = _width()
    out = _header(result)
    cmd = result.gathered.command
    notes = (list(cmd.notes) if cmd is not None else []) + list(result.gathered.notes)
    out += [f"note: {n}" for n in notes]
    if result.flags:
        out.append("")
        out.append(click.style("Flags", bold=True))
        for note in result.flags:
            head = f"{note.flag} {_value(note.value)}".rstrip()
            if note.canonical and note.canonical != note.flag:
                head += f"   (= {note.canonical})"
            out.append(f"  {click.style(head, bold=True)}")
            out.extend(textwrap.wrap(note.explain, width=width, initial_indent="      ", subsequent_indent="      "))
    out.append("")
    out.append(click.style("Findings", bold=True))
    out.append(findings_text(result.diagnosis.findings, result.diagnosis.unchecked, verbose=verbose))
    if verbose:
        out.append(click.style("Facts", bold=True))
        out.extend(f"  {f.key} = {_value(f.value)}  ({f.source})" for f in sorted(result.facts, key=lambda f: f.key))
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
