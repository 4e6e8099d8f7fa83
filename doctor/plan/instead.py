"""When the plan does not run: what would — more GPUs, smaller weights, or another architecture class.

No model database: the "instead" line is the seed's architecture rule (§ SM, § Selection by Scenario) with the
sizes computed from these GPUs: how many parameters fit at FP8 / BF16 with room left for KV, and which
architecture classes the hardware rules out (DSA without its kernels).
"""

from __future__ import annotations

from collections.abc import Callable

from doctor.hardware.catalog import GpuModel
from doctor.model.card import ModelCard
from doctor.model.units import format_bytes
from doctor.model.weights import WeightPlan, plan_weights
from doctor.plan.parallelism import Decision
from doctor.plan.rules import rules

Replan = Callable[[int, WeightPlan], Decision]
#: Whether the plan with that many GPUs and those weights passes the plan's own gates (the playbooks' verdict).
Runs = Callable[[int, WeightPlan], bool]


def alternatives(card: ModelCard, gpu: GpuModel, count: int, weights: WeightPlan, fraction: float, *,
                 weights_short: bool, replan: Replan, runs: Runs) -> list[str]:
    """``weights_short``: the weights (or one request's KV beside them) do not fit ``count`` GPUs. More of these
    GPUs, or smaller weights on them, are proposed only where they pass the same gates as the plan: a model whose
    attention has no kernel on this GPU (DSA on sm_89), or whose checkpoint's format it cannot run (FP8 on sm_70),
    runs on no number of them."""
    out: list[str] = []
    if weights_short:
        out += _more_gpus(gpu, count, weights, replan, runs) + _smaller_weights(card, gpu, count, weights, replan,
                                                                                runs)
    out.append(architecture_line(card, gpu, count, fraction))
    return out


def _more_gpus(gpu: GpuModel, count: int, weights: WeightPlan, replan: Replan, runs: Runs) -> list[str]:
    for more in (2, 4, 8, 16, 32, 64, 128):
        if more <= count:
            continue
        decision = replan(more, weights)
        if decision.fits:
            if not runs(more, weights):  # a gate that more of the same GPUs do not lift
                return []
            par = decision.parallelism
            across = " (pipeline stages across nodes)" if par.pp > 1 else ""
            return [f"more GPUs: {par.instance_gpus}× {gpu.name} as {par.label()}{across}"]
    return []


def _smaller_weights(card: ModelCard, gpu: GpuModel, count: int, weights: WeightPlan, replan: Replan,
                     runs: Runs) -> list[str]:
    out = []
    for dtype, native in (("fp8", gpu.fp8), ("nvfp4", gpu.nvfp4)):
        if not native:
            continue
        smaller = plan_weights(card, dtype, model_path="(another checkpoint)")
        if smaller.total_bytes >= weights.total_bytes:
            continue
        decision = replan(count, smaller)
        if decision.fits and runs(count, smaller):
            how = ("quantized while loading: --weights-dtype fp8" if smaller.online else
                   f"an {dtype.upper()} checkpoint: --weights-dtype {dtype} --model-path <its repo>")
            out.append(f"smaller weights: {dtype.upper()} ({format_bytes(smaller.total_bytes)}) fits {count}× "
                       f"{gpu.name} as {decision.parallelism.label()} ({how})")
    return out


def architecture_line(card: ModelCard, gpu: GpuModel, count: int, fraction: float) -> str:
    """The seed's "what fits this hardware" rule with numbers: weights may use all but ``kv_share`` of memory."""
    budget = count * gpu.memory_bytes * fraction * (1 - rules()["instead"]["kv_share"])
    sizes = (f"up to ~{budget / 1e9:.0f}B parameters at FP8 (~{budget / 2e9:.0f}B at BF16)" if gpu.fp8
             else f"up to ~{budget / 2e9:.0f}B parameters at BF16")
    line = (f"what fits {count}× {gpu.name} instead: a GQA dense model {sizes}, or a small hybrid "
            "(linear-attention) model")
    from doctor.hardware.gating import kernel_support

    if gpu.sm is not None and not kernel_support(gpu).get("dsa_kernels", True):
        line += f"; no DSA model on any number of them (no sparse-attention kernels for sm_{gpu.sm})"
    return line
