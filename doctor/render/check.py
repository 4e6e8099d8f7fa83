"""`check` output: what was examined, how each probe went, the findings, and (on -v) every fact."""

from __future__ import annotations

import re

from doctor.humanize import readable
from doctor.model.band import capacity_summary
from doctor.render.findings import findings_markdown, findings_text, verdict_line
from doctor.render.style import style
from doctor.render.text import labelled, width, wrap
from doctor.render.unexplained import unexplained_markdown, unexplained_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.commands.check import CheckRun
    from doctor.probes.base import ProbeResult


def _identity(run: CheckRun) -> list[str]:
    """Target, engine and version, model: what was examined, in the words a ticket title uses."""
    facts = run.facts
    engine = facts.get("launch.engine") or facts.get("server.engine") or facts.get("engine.name")
    version = facts.get("server.version") or facts.get("launch.version")
    model = facts.get("server.model") or facts.get("launch.model") or facts.get("model.name")
    where = run.target.display() if run.target else "offline inputs"
    return [where, f"{engine} {version or '(version unknown)'}" if engine else "", str(model) if model else ""]


def _summary(run: CheckRun) -> str:
    where, engine, model = _identity(run)
    what = ", ".join(x for x in (engine, f"model {model}" if model else "") if x)
    return f"llmdoctor check — {where}" + (f" ({what})" if what else "") + f" in {run.elapsed_ms:.0f} ms"


def _verdict(run: CheckRun) -> str:
    findings = run.diagnosis.findings
    if run.unreachable:
        return ("NOT EXAMINED — no LLM server answered; the reason is the `llmdoctor:` line on stderr"
                + (f"; {len(findings)} finding(s) from the offline inputs" if findings else ""))
    if run.diagnosis.unexplained is not None:
        head = run.diagnosis.unexplained.headline()
        return head if not findings else f"{verdict_line(findings)}; {head}"
    return verdict_line(findings)


def _probe_summary(run: CheckRun) -> str:
    """Every probe on one line; a failure's reason shown once, here (the unreachable reason goes to stderr)."""
    from doctor.commands.check import probe_not_applicable

    parts = []
    for probe in run.probes:
        moot = probe_not_applicable(probe, run.facts)
        if probe.ok:
            refused = refused_requests(probe.name, run.facts)
            parts.append(f"{probe.name} ok {probe.elapsed_ms:.0f} ms" + (f" but {refused}" if refused else ""))
        elif moot:  # nothing to read here (the GPU probe on a CPU server): not a failure
            parts.append(f"{probe.name} n/a ({moot})")
        elif run.unreachable:
            parts.append(f"{probe.name} failed")
        else:
            parts.append(f"{probe.name} failed ({probe.error})")
    return " · ".join(parts)


_REFUSED = re.compile(r"^(?:GET|POST) \S+?(?P<path>/[^\s:]*): HTTP (?P<status>401|403)\b.*?(?P<fix>pass --[a-z-]+ NAME)?$")


def refused_requests(probe: str, facts: Any) -> str:
    """A probe that answered while the server refused some of its requests (an API key is required: /metrics
    is open, /v1/models is not): which, and the flag that fixes it — on the first screen, not under -v."""
    refused = []
    for key, reason in facts.errors.items():
        match = _REFUSED.match(str(reason)) if key.startswith(f"{probe}.") else None
        if match:
            refused.append((match["path"], match["status"], match["fix"]))
    if not refused:
        return ""
    paths = ", ".join(dict.fromkeys(f"{path} (HTTP {status})" for path, status, _fix in refused))
    fix = next((fix for _path, _status, fix in refused if fix), None)
    return f"refused {paths}" + (f": {fix}" if fix else "")


def _probe_lines(run: CheckRun) -> list[str]:
    from doctor.commands.check import probe_not_applicable

    lines = []
    for probe in run.probes:
        moot = probe_not_applicable(probe, run.facts)
        state = style("ok", fg="green") if probe.ok else style("failed", fg="red")
        detail = "" if probe.ok else f": {probe.error}"
        if moot:
            state, detail = style("n/a", fg="cyan"), f": {moot}"
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
    """What the active probes sent (not what they would have: a probe stops at its first failed request);
    every request is fixed (docs/active.md)."""
    observed = [_active(p) for p in run.probes if _is_active(p)]
    if not observed:
        return None
    sent = [r for o in observed for r in o["requests"]]
    requests = len(sent)
    tokens = sum(int((r.get("request") or {}).get("max_tokens") or 0) for r in sent)
    return f"active probes: {requests} requests, at most {tokens} generated tokens (fixed prompts: docs/active.md)"


def check_text(run: CheckRun, *, verbose: bool = False) -> str:
    """One screen: headline (target, engine, model, verdict), probes on one line, the findings; -v: everything."""
    cols = width()
    head = " · ".join(x for x in (*_identity(run), f"{run.elapsed_ms:.0f} ms") if x)
    out = wrap("llmdoctor check · " + head, cols, "", "  ")
    out[0] = out[0].replace("llmdoctor check", style("llmdoctor check", bold=True), 1)
    out += labelled("verdict", _verdict(run), cols, indent=0)
    if run.probes and not verbose:
        out += labelled("probes", _probe_summary(run), cols, indent=0)
    elif run.probes:
        out.append("probes")
        out.extend(_probe_lines(run))
    if run.probes:
        budget = _active_budget(run)
        if budget:
            out += labelled("active", budget.removeprefix("active probes: "), cols, indent=0)
    summary = capacity_summary(run.facts)
    if summary:
        out += labelled("capacity", summary, cols, indent=0)
    out += [line for n in run.gathered.notes for line in labelled("note", n, cols, indent=0)]
    findings, unchecked = run.diagnosis.findings, run.diagnosis.unchecked
    if run.unreachable:
        # The reason is printed once, on stderr; with nothing examined, every cause is "unchecked" and saying
        # so (or suggesting --active) would only repeat it.
        unchecked = []
        if not findings:
            return "\n".join(out)
    out.append("")
    unexplained = run.diagnosis.unexplained
    if unexplained is not None:  # never silent: this block, and no "No findings"
        out += [*unexplained_text(unexplained, verbose=verbose), ""]
    rest = findings_text(findings, unchecked if verbose or unexplained is None else [], verbose=verbose,
                         silent_empty=unexplained is not None).rstrip()
    if rest:
        out.append(rest)
    if verbose:
        out.append("")
        out.append(style("Facts", bold=True))
        for fact in sorted(run.facts, key=lambda f: f.key):
            mark = " (observed)" if fact.observed else ""
            out.append(f"  {fact.key} = {readable(fact.value, 100)}  ({fact.source}){mark}")
        for key, why in sorted(run.facts.errors.items()):
            out.append(f"  {key}: unknown — {why}")
    elif findings or unchecked:
        out.append(style("-v", bold=True) + ": why, the evidence with its sources, every fix, every fact")
    return "\n".join(out)


def _probe_row(p: ProbeResult, moot: str | None) -> str:
    if moot:
        return f"| {p.name} | n/a | {p.elapsed_ms:.0f} | {moot} |"
    return (f"| {p.name} | {'yes' if p.ok else 'no'} | {p.elapsed_ms:.0f} | "
            f"{p.error or (_active(p)['summary'] if _is_active(p) else '')} |")


def check_markdown(run: CheckRun) -> str:
    from doctor.commands.check import probe_not_applicable

    out = [f"## {_summary(run)}", ""]
    if run.probes:
        out += ["| probe | ok | ms | error or observation |", "|---|---|---|---|"]
        out += [_probe_row(p, probe_not_applicable(p, run.facts)) for p in run.probes]
        out.append("")
        budget = _active_budget(run)
        if budget:
            out += [budget, ""]
    if run.unreachable:
        out += [f"**Target unreachable:** {run.unreachable}", ""]
    unexplained = run.diagnosis.unexplained
    out += ["### Findings", ""]
    if unexplained is not None:
        out += [f"**{unexplained.headline()}**", "", unexplained_markdown(unexplained)]
    out.append(findings_markdown(run.diagnosis.findings, run.diagnosis.unchecked,
                                 silent_empty=unexplained is not None))
    return "\n".join(out)
