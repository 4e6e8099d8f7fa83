"""`check` output: what was examined, how each probe went, the findings, and (on -v) every fact."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from doctor.render.findings import findings_markdown, findings_text

if TYPE_CHECKING:
    from doctor.check import CheckRun
    from doctor.probes.base import ProbeResult


def _summary(run: CheckRun) -> str:
    facts = run.facts
    engine = facts.get("launch.engine") or facts.get("server.engine")
    version = facts.get("server.version") or facts.get("launch.version")
    model = facts.get("server.model") or facts.get("launch.model") or facts.get("model.name")
    what = ", ".join(x for x in (f"{engine} {version or ''}".strip() if engine else "", f"model {model}"
                                 if model else "") if x)
    where = run.target.display() if run.target else "offline inputs"
    return f"llmdoctor check — {where}" + (f" ({what})" if what else "") + f" in {run.elapsed_ms:.0f} ms"


def _probe_lines(run: CheckRun) -> list[str]:
    lines = []
    for probe in run.probes:
        state = click.style("ok", fg="green") if probe.ok else click.style("failed", fg="red")
        detail = "" if probe.ok else f": {probe.error}"
        lines.append(f"  {probe.name:<8} {state} {probe.elapsed_ms:.0f} ms{detail}")
        if probe.ok and _is_active(probe):
            lines.append(f"      {_active(probe)['summary']}")
    return lines


def _is_active(probe: ProbeResult) -> bool:
    if not probe.name.startswith("active."):
        return False
    from doctor.probes.active import is_active

    return is_active(probe.name)


def _active(probe: ProbeResult) -> dict[str, Any]:
    from doctor.probes.active import observation

    return observation(probe)


def _active_budget(run: CheckRun) -> str | None:
    """What the active probes were allowed to send: every request is fixed (docs/active.md)."""
    budgets = [_active(p)["budget"] for p in run.probes if _is_active(p)]
    if not budgets:
        return None
    requests = sum(b.get("requests", 0) for b in budgets)
    tokens = sum(b.get("max_tokens", 0) for b in budgets)
    return f"active probes: {requests} requests, at most {tokens} generated tokens (fixed prompts: docs/active.md)"


def check_text(run: CheckRun, *, verbose: bool = False) -> str:
    out = [click.style(_summary(run), bold=True)]
    if run.probes:
        out.append("probes")
        out.extend(_probe_lines(run))
        budget = _active_budget(run)
        if budget:
            out.append(budget)
    if run.unreachable:
        out.append(click.style(f"target unreachable: {run.unreachable}", fg="red"))
    out += [f"note: {n}" for n in run.gathered.notes]
    out.append("")
    out.append(findings_text(run.diagnosis.findings, run.diagnosis.unchecked, verbose=verbose))
    if verbose:
        out.append(click.style("Facts", bold=True))
        for fact in sorted(run.facts, key=lambda f: f.key):
            mark = " (observed)" if fact.observed else ""
            out.append(f"  {fact.key} = {_short(fact.value)}  ({fact.source}){mark}")
        for key, why in sorted(run.facts.errors.items()):
            out.append(f"  {key}: unknown — {why}")
    return "\n".join(out)


def check_markdown(run: CheckRun) -> str:
    out = [f"## {_summary(run)}", ""]
    if run.probes:
        out += ["| probe | ok | ms | error or observation |", "|---|---|---|---|"]
        out += [f"| {p.name} | {'yes' if p.ok else 'no'} | {p.elapsed_ms:.0f} | "
                f"{p.error or (_active(p)['summary'] if _is_active(p) else '')} |" for p in run.probes]
        out.append("")
        budget = _active_budget(run)
        if budget:
            out += [budget, ""]
    if run.unreachable:
        out += [f"**Target unreachable:** {run.unreachable}", ""]
    out += ["### Findings", "", findings_markdown(run.diagnosis.findings, run.diagnosis.unchecked)]
    return "\n".join(out)


def _short(value: object, limit: int = 100) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
