"""The ``llmdoctor.plan/1`` JSON document (docs/plan.md): one builder, so the schema lives in one place."""

from __future__ import annotations

from doctor.redact import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.plan.planner import EnginePlan, Plan


def plan_document(plan: Plan) -> dict[str, Any]:
    from doctor.plan.planner import SCHEMA

    card, gpu = plan.card, plan.gpu.gpu
    engines = plan.engines
    return {
        "schema": SCHEMA,
        "model": {
            "name": card.name, "source": card.source, "served_as": redact_text(plan.model_path),
            "architectures": list(card.architectures), "known": card.known, "attention": card.attention,
            "full_attention": card.full_attention, "kv_heads": card.kv_heads,
            "moe": card.moe.to_dict() if card.moe else None, "multimodal": card.multimodal,
            "max_context": card.max_context, "family": plan.family.id if plan.family else None,
        },
        "gpu": {"name": gpu.name, "count": plan.gpu.count, "sm": gpu.sm, "gfx": gpu.gfx,
                "memory_bytes": gpu.memory_bytes, "memory_basis": gpu.memory_basis, "fp8": gpu.fp8,
                "nvfp4": gpu.nvfp4, "nvlink_domain": gpu.nvlink_domain, "known": plan.gpu.known,
                "assumed": plan.gpu.assumed},
        "workload": {**plan.demand.to_dict(), "rps": plan.request.rps, "text_only": plan.request.text_only},
        "weights": plan.weights.to_dict(),
        "fit": {name: _fit(plan, p) for name, p in engines.items()},
        "concurrency": {name: _concurrency(plan, p) for name, p in engines.items()},
        "parallelism": {name: {**p.decision.parallelism.to_dict(), "reasons": list(p.decision.reasons)}
                        for name, p in engines.items()},
        "flags": {
            "set": {name: [{"flag": p.flag_text(f).split(" ")[0], "dest": f.dest, "value": f.value, "why": f.why}
                           for f in p.flags] for name, p in engines.items()},
            "delegate": _delegations(plan),
        },
        "commands": {name: _command(engines[name]) if name in engines else
                     {"engine": name, "command": None, "withheld": plan.unsupported[name]}
                     if name in plan.unsupported else None for name in ("vllm", "sglang")},
        "verdict": {
            "status": plan.status,
            "engines": {**{name: {"status": p.status, "causes": [f.id for f in p.check.gating]}
                           for name, p in engines.items()},
                        **{name: {"status": "does-not-run", "causes": [], "why": why}
                           for name, why in plan.unsupported.items()}},
            "instead": list(plan.instead),
        },
        "findings": [{**finding.to_dict(), "engines": names} for finding, names in plan.findings()],
    }


def _fit(plan: Plan, p: EnginePlan) -> dict[str, Any]:
    fit = p.capacity.fit
    return {
        "memory_fraction": p.fraction,
        "memory_fraction_source": p.fraction_source,
        "usable_bytes_per_gpu": int(fit.usable_bytes_per_gpu),
        "weights_per_gpu_bytes": int(fit.weights_per_gpu_bytes or 0),
        "weights_fit": bool(fit.weights_fit),
        "kv_budget_per_gpu_bytes": int(fit.kv_budget_per_gpu_bytes or 0),
        "kv_dtype": p.capacity.kv_dtype,
        "kv_bytes_per_token": p.capacity.kv.bytes_per_token,
        "state_bytes_per_sequence": p.capacity.kv.state_bytes_per_sequence,
        "kv_tokens_per_group": p.capacity.kv_tokens_per_group,
        "kv_groups_per_replica": p.capacity.groups,
        "replicas": p.capacity.replicas,
        "kv_tokens_total": p.capacity.kv_tokens_per_group * p.capacity.groups * p.capacity.replicas,
        "kv_tokens_band": p.band(plan).to_dict(),
    }


def _concurrency(plan: Plan, p: EnginePlan) -> dict[str, Any]:
    from doctor.plan.flags import users_note
    from doctor.plan.planner import seed_method

    users = plan.demand.users
    cap = p.capacity
    return {
        "context": plan.demand.context,
        "users": users,
        "kv_dtype": cap.kv_dtype,
        "kv_dtype_set_by": "plan" if p.kv.set_by_plan and p.decision.kv_dtype != "auto" else "engine",
        "users_per_replica": cap.users_per_instance,
        "users_total": cap.users_total,
        "max_context_for_users": cap.max_context(users) if users else None,
        "shortfall": users_note(cap, plan.demand),
        "by_kv_dtype": [row.to_dict(users) for row in p.rows],
        "seed_method": seed_method(plan, p),
    }


def _command(p: EnginePlan) -> dict[str, Any]:
    runs = p.status != "does-not-run"
    withheld = None
    if not runs:
        causes = ", ".join(f.id for f in p.check.gating)
        withheld = "does not run: " + (causes or "the weights leave no room for one request's KV")
    return {
        "engine": p.engine,
        "version": p.version,
        "catalog_version": p.catalog.version,
        "command": p.command.render() if runs else None,
        "argv": [redact_text(a) for a in p.argv] if runs else None,
        "withheld": withheld,
        "notes": list(p.notes),
    }


def _delegations(plan: Plan) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for name, p in plan.engines.items():
        for d in p.delegated:
            seen.setdefault(d.flag + d.why, {**d.to_dict(), "engines": []})["engines"].append(name)
    return list(seen.values())
