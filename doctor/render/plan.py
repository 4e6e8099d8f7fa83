"""`plan` output for people: the verdict first, then per engine the layout and why, the memory arithmetic,
the users it holds at each KV dtype, the flags set and the command; then what is left to the engine, the
playbook findings, and (when it does not run) what would."""

from __future__ import annotations

from doctor.model.band import approx_tokens
from doctor.model.units import format_bytes, format_tokens
from doctor.redact import redact_text
from doctor.render.findings import findings_markdown, findings_text
from doctor.render.style import style
from doctor.render.text import fit_line, width, wrap

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.plan.planner import EnginePlan, Plan

_STATUS = {"runs": ("RUNS", "green"), "runs-degraded": ("RUNS DEGRADED", "yellow"),
           "does-not-run": ("DOES NOT RUN", "red")}


def _headline(plan: Plan) -> list[str]:
    card, demand = plan.card, plan.demand
    moe = f"MoE {card.moe.experts} experts ({card.moe.active} active)" if card.moe else "dense"
    users = f"{demand.users} concurrent requests" if demand.users else "concurrency not given (--users or --rps)"
    lines = [
        f"plan: {redact_text(plan.model_path)} on {plan.gpu.count}× {plan.gpu.gpu.name}"
        + (f" (sm_{plan.gpu.gpu.sm})" if plan.gpu.gpu.sm else f" ({plan.gpu.gpu.gfx or 'not in the GPU catalog'})"),
        f"model    {card.attention.upper()}" + (f" ({card.full_attention.upper()} full attention)"
                                                 if card.attention == "hybrid" else "")
        + f" · {moe}" + (" · multimodal" if card.multimodal else "")
        + (f" · family {plan.family.id}" if plan.family else ""),
        f"weights  {format_bytes(plan.weights.total_bytes)} at {plan.weights.detail}"
        + (" (quantized while loading)" if plan.weights.online else "")
        + (" (another checkpoint)" if plan.weights.other_checkpoint else "")
        + (f"; assumed: {plan.weights.assumed}" if plan.weights.assumed else "")
        + (" (exact: safetensors headers)" if plan.weights.stored else ""),
        f"traffic  {format_tokens(demand.context)} tokens per request · {users} · latency {demand.latency}",
    ]
    if plan.gpu.assumed:
        lines.append(f"gpu      {plan.gpu.assumed}")
    if not plan.gpu.known:
        lines.append(f"gpu      not in the GPU catalog: sized with {plan.gpu.gpu.memory_basis} per GPU; FP8/FP4 "
                     "support, kernels and interconnect unknown (PCIe assumed)")
    if demand.users_source.startswith("Little"):
        lines.append(f"         {demand.users_source}")
    if demand.context_source != "--context":
        lines.append(f"         context: {demand.context_source}")
    return lines


def _verdict_line(plan: Plan, color: bool = True) -> str:
    label, fg = _STATUS[plan.status]
    head = style(label, fg=fg, bold=True) if color else label
    parts = []
    for p in plan.engines.values():
        causes = ", ".join(f.id for f in p.check.gating)
        parts.append(f"{p.label}: {_STATUS[p.status][0].lower()}" + (f" ({causes})" if causes else ""))
    parts += [f"{name}: does not run ({why})" for name, why in plan.unsupported.items()]
    return f"verdict  {head} — " + "; ".join(parts)


def _users_table(plan: Plan, p: EnginePlan) -> list[str]:
    users = plan.demand.users
    head = f"    {'KV dtype':<9}{'per replica':>12}{'total':>8}"
    if users:
        head += f"{'max ctx for ' + str(users):>20}"
    out = [head]
    for row in p.rows:
        mark = " *" if row.kv_dtype == p.capacity.kv_dtype else ""
        line = f"    {row.kv_dtype + mark:<9}{row.users_per_instance:>12}{row.users_total:>8}"
        if users:
            line += f"{_floor_k(row.max_context(users)):>20}"
        out.append(line)
    return out


def _floor_k(tokens: int) -> str:
    """Whole thousands of tokens, rounded down (a capacity must not be overstated)."""
    return f"{tokens // 1024}k" if tokens >= 1024 else str(tokens)


def _engine_text(plan: Plan, p: EnginePlan, cols: int, *, verbose: bool,
                 said: dict[str, str] | None = None) -> list[str]:
    """One engine's design: layout, why, the fit and users, the command; -v adds each flag's reason and notes.

    ``said`` (reason → the engine that gave it first): by default a reason another engine already gave is not
    repeated, only pointed at."""
    from doctor.plan.planner import seed_method

    par, cap, fit = p.decision.parallelism, p.capacity, p.capacity.fit
    out = [style(p.label, bold=True) + f" · {par.label()}"
           + f" · {_STATUS[p.status][0].lower()}"]
    out.append("  why")
    repeated = []
    for reason in p.decision.reasons:
        if said is not None and not verbose and reason in said:
            repeated.append(said[reason])
            continue
        out.extend(wrap(reason, cols, "    - ", "      "))
        if said is not None:
            said.setdefault(reason, p.label)
    if repeated:
        out.append(f"    - the other {len(repeated)} as for {', '.join(dict.fromkeys(repeated))} above (-v repeats them)")
    out.append("  fit")
    out.extend(wrap(f"weights {format_bytes(fit.weights_per_gpu_bytes or 0)}/GPU of "
                    f"{format_bytes(fit.usable_bytes_per_gpu)} usable (memory fraction {p.fraction}: "
                    f"{p.fraction_source})", cols, "    ", "      "))
    out.extend(wrap(f"KV budget {format_bytes(fit.kv_budget_per_gpu_bytes or 0)}/GPU · {cap.kv_dtype} KV "
                    f"{format_bytes(cap.kv.bytes_per_token)}/token"
                    + (f" + {format_bytes(cap.kv.state_bytes_per_sequence)} state/request"
                       if cap.kv.state_bytes_per_sequence else "")
                    + f" → ≈ {approx_tokens(cap.kv_tokens_per_group)} tokens per KV pool"
                    + (f" × {cap.groups * cap.replicas} pools" if cap.groups * cap.replicas > 1 else "")
                    + f" ({p.band(plan).text()})",
                    cols, "    ", "      "))
    if p.status == "does-not-run" and not p.decision.fits:
        out.append("  command  withheld: " + p.decision.reasons[-1])
        return out
    out.append(f"  users at {format_tokens(cap.context)} (* = this plan's KV dtype, "
               f"{'set by the plan' if p.kv.set_by_plan and p.decision.kv_dtype != 'auto' else 'the engine default'})")
    out += _users_table(plan, p)
    seed = seed_method(plan, p)
    if seed and verbose:
        out.append(f"    seed's method: {seed['users_per_replica']} per replica = {seed['formula']}")
    if p.status == "does-not-run":
        causes = ", ".join(f.id for f in p.check.gating) or "no room for one request beside the weights"
        out.append(f"  command  withheld: does not run ({causes})")
        return out
    if verbose:
        out.append("  set")
        for flag in p.flags:
            out.extend(wrap(f"{p.flag_text(flag):<34} {flag.why}", cols, "    ", " " * 39))
    out.append("  command" + ("" if verbose else " (-v: why each flag)"))
    out.extend("    " + line for line in p.command.render().splitlines())
    if verbose:
        for note in p.notes:
            out.extend(wrap(note, cols, "  note: ", "        "))
    return out


def _shortfalls(plan: Plan) -> list[str]:
    """Under the verdict: each engine that serves fewer users than were asked, with the replicas that would hold
    them (a plan that "runs" for 15 of 100 users must say so on the first screen)."""
    from doctor.plan.flags import users_note

    found = {engine: users_note(p.capacity, plan.demand) for engine, p in plan.engines.items()}
    notes = {note for note in found.values() if note}
    if len(notes) == 1 and len(found) > 1 and all(found.values()):
        return [f"users    {notes.pop()}"]
    return [f"users    {p.label}: {found[engine]}" if len(found) > 1 else f"users    {found[engine]}"
            for engine, p in plan.engines.items() if found[engine]]


def plan_text(plan: Plan, *, verbose: bool = False) -> str:
    """The verdict and each engine's design and command; -v adds each flag's reason, the notes, what is left to
    the engine and the findings in full (by default they are one line each)."""
    cols = width()
    out = [line for head in _headline(plan) for line in wrap(head, cols, "", "         ")]
    out.extend(wrap(_verdict_line(plan), cols, "", "         "))
    out += [line for text in _shortfalls(plan) for line in wrap(text, cols, "", "         ")]
    said: dict[str, str] = {}
    for p in plan.engines.values():
        out.append("")
        out += _engine_text(plan, p, cols, verbose=verbose, said=said)
    delegated = {d.flag + d.why: d for p in plan.engines.values() for d in p.delegated}
    if delegated and verbose:
        out.append("")
        out.append(style("Left to the engine", bold=True))
        for d in delegated.values():
            out.extend(wrap(f"{d.flag} — {d.why} ({d.ref})", cols, "  ", "    "))
    if plan.instead:
        out.append("")
        out.append(style("What would run", bold=True))
        for line in plan.instead:
            out.extend(wrap(line, cols, "  - ", "    "))
    findings = [f for f, _ in plan.findings()]
    out.append("")
    if verbose:
        out.append(style("Findings (the playbooks over this plan)", bold=True))
        out.append(findings_text(findings, verbose=True).rstrip())
    elif findings:
        out.append(style("Findings", bold=True) + " (the playbooks over this plan; -v: each in full)")
        id_col = max(len(f.id) for f in findings)
        out += [fit_line(f"  {f.severity.upper():<9}{f.id:<{id_col}}  {f.title}", cols) for f in findings]
    else:
        out.append("Findings: none (the playbooks over this plan)")
    if not verbose:
        out.append(style("-v", bold=True) + ": why each flag is set, notes, what is left to the engine, "
                   "the findings in full")
    return "\n".join(out)


def plan_markdown(plan: Plan) -> str:
    from doctor.plan.planner import seed_method

    out = ["## llmdoctor plan", ""]
    out += [f"- {line.strip()}" for line in _headline(plan)]
    out += [f"- {_verdict_line(plan, color=False)}", ""]
    for p in plan.engines.values():
        par, cap = p.decision.parallelism, p.capacity
        out += [f"### {p.label} — {par.label()} ({_STATUS[p.status][0].lower()})", ""]
        out += [f"- {reason}" for reason in p.decision.reasons]
        out += ["", "| KV dtype | users per replica | total |", "|---|---|---|"]
        out += [f"| {row.kv_dtype}{' (plan)' if row.kv_dtype == cap.kv_dtype else ''} | {row.users_per_instance} | "
                f"{row.users_total} |" for row in p.rows]
        seed = seed_method(plan, p)
        if seed:
            out += ["", f"Seed's method: {seed['users_per_replica']} per replica ({seed['formula']})."]
        out.append("")
        if p.status == "does-not-run":
            out += ["Command withheld: it does not run.", ""]
            continue
        out += ["| flag | why |", "|---|---|"]
        out += [f"| `{p.flag_text(f)}` | {f.why.replace('|', '/')} |" for f in p.flags]
        out += ["", "```sh", p.command.render(), "```", ""]
        out += [f"- note: {n}" for n in p.notes]
        out.append("")
    delegated = {d.flag + d.why: d for p in plan.engines.values() for d in p.delegated}
    if delegated:
        out += ["### Left to the engine", ""]
        out += [f"- `{d.flag}` — {d.why} ({d.ref})" for d in delegated.values()]
        out.append("")
    if plan.instead:
        out += ["### What would run", ""] + [f"- {line}" for line in plan.instead] + [""]
    out += ["### Findings", "", findings_markdown([f for f, _ in plan.findings()])]
    return "\n".join(out)
