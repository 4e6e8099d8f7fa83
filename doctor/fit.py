"""Memory arithmetic: do the weights fit, how many KV tokens remain, how many users of N tokens that is.

This is the seed's "KV Cache Sizing" done with the engines' layout rules, from facts alone (model.*, gpu.*,
launch.*, workload.*), so that `plan`, `lint` and `check` share one calculation:

* weights are sharded by TP and PP; with expert parallelism the expert weights are sharded by the EP size
  instead, and DP replicas each hold a full copy of everything else;
* KV for GQA/MHA is split across the TP ranks that share a request's attention, but only down to one KV head
  per rank: past that (TP > KV heads) heads are replicated. MLA/DSA keep the whole latent on every rank (the
  seed's "redundant storage"); DP attention gives each rank its own requests instead;
* what the engine may allocate is the memory fraction of each GPU; the KV pool is that minus the weights.
  Activation peaks and CUDA graphs are not modelled, so the numbers are upper bounds (a few percent high).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from doctor.facts import Facts

#: Engines' defaults when the command does not say (vLLM --gpu-memory-utilization default; SGLang picks a
#: value per GPU size and TP, typically 0.85-0.9 on 80-141 GB GPUs).
DEFAULT_MEM_FRACTION = {"vllm": 0.9, "sglang": 0.88}


@dataclass(frozen=True)
class Layout:
    """How one engine instance spreads a model over its GPUs (engine-neutral)."""

    gpus: int  # GPUs in the instance
    attn_tp: int  # GPUs that share one request's attention (its KV is split across them)
    kv_groups: int  # independent KV pools (DP attention ranks or DP replicas)
    pp: int
    ep: int  # 1 when experts are not sharded


def layout_from_facts(facts: Facts) -> Layout | None:
    """Read the parallel layout from launch.* facts (engine flags differ: SGLang's DP attention lives inside TP)."""
    engine = facts.get("launch.engine")
    tp = int(facts.get("launch.tp") or 1)
    dp = int(facts.get("launch.dp") or 1)
    pp = int(facts.get("launch.pp") or 1)
    if tp < 1 or dp < 1 or pp < 1:
        return None
    dp_attention = bool(facts.get("launch.dp_attention"))
    if engine == "sglang" and dp_attention:
        # SGLang: --tp-size is the whole instance; --dp-size splits attention inside it.
        gpus, attn_tp, groups = tp * pp, max(1, tp // dp), dp
    else:
        # vLLM (-dp D -tp T: D engine ranks of T GPUs) and SGLang without DP attention (D replicas of T GPUs).
        gpus, attn_tp, groups = tp * dp * pp, tp, dp
    ep = int(facts.get("launch.ep") or 1) if facts.get("launch.expert_parallel") else 1
    return Layout(gpus=gpus, attn_tp=attn_tp, kv_groups=groups, pp=pp, ep=max(1, ep))


def kv_bytes_per_token_per_gpu(facts: Facts, layout: Layout) -> float | None:
    """Bytes one GPU stores per token of a request it holds."""
    per_token = facts.get("model.kv_bytes_per_token")
    if not isinstance(per_token, (int, float)):
        return None
    attention = facts.get("model.full_attention") or facts.get("model.attention")
    if attention in ("mla", "dsa"):
        split = 1  # the latent is not split by head: every rank holds all of it
    else:
        kv_heads = int(facts.get("model.kv_heads") or 1)
        split = max(1, min(layout.attn_tp, kv_heads))
    return per_token / split / layout.pp


def weights_per_gpu(facts: Facts, layout: Layout) -> float | None:
    total = facts.get("model.weight_bytes")
    if not isinstance(total, (int, float)):
        return None
    experts = facts.get("model.expert_weight_bytes")
    if layout.ep > 1 and isinstance(experts, (int, float)) and 0 < experts <= total:
        redundant = facts.get("launch.ep_redundant_experts") or 0
        routed = facts.get("model.moe.experts") or 0
        expert_copies = 1 + (redundant / routed if routed else 0)
        dense_part = (total - experts) / (layout.attn_tp * layout.pp)
        return dense_part + experts * expert_copies / (layout.ep * layout.pp)
    return total / (layout.attn_tp * layout.pp)


def derive_fit(facts: Facts) -> None:
    """Write the fit.* facts that the trees and `plan` read; silently skip what the inputs do not allow."""
    layout = layout_from_facts(facts)
    memory = facts.get("gpu.memory_bytes")
    if layout is None or not isinstance(memory, (int, float)):
        _derive_context(facts)
        return
    engine = facts.get("launch.engine") or "vllm"
    fraction = facts.get("launch.mem_fraction") or DEFAULT_MEM_FRACTION.get(engine, 0.9)
    src = "derived: fit (docs/facts.md)"
    facts.set("fit.shards", layout.attn_tp * layout.pp, src)
    facts.set("fit.gpus", layout.gpus, src)
    usable = memory * fraction
    facts.set("fit.usable_bytes_per_gpu", int(usable), f"derived: gpu.memory_bytes × {fraction}")
    facts.set("fit.kv_bytes_per_gpu_per_5pct", int(memory * 0.05), "derived: 5% of gpu.memory_bytes")
    weights = weights_per_gpu(facts, layout)
    if weights is not None:
        facts.set("fit.weights_per_gpu_bytes", int(weights), "derived: model.weight_bytes / shards")
        facts.set("fit.weights_fit", weights < usable, "derived: weights_per_gpu < usable_bytes_per_gpu")
        budget = max(0.0, usable - weights)
        facts.set("fit.kv_budget_per_gpu_bytes", int(budget), "derived: usable − weights per GPU")
        per_gpu_token = kv_bytes_per_token_per_gpu(facts, layout)
        if per_gpu_token:
            # Every GPU of an attention group holds its share of the same tokens: the group's capacity is one
            # GPU's budget over one GPU's bytes per token.
            group_tokens = int(budget / per_gpu_token)
            facts.set("fit.kv_tokens_per_group", group_tokens, "derived: kv budget / per-GPU bytes per token")
            facts.set("fit.kv_tokens", group_tokens * layout.kv_groups, "derived: per group × KV groups")
    routed = facts.get("model.moe.experts")
    redundant = facts.get("launch.ep_redundant_experts")
    if isinstance(routed, int) and routed and isinstance(redundant, int):
        facts.set("fit.eplb_extra_fraction", redundant / routed, "derived: redundant / routed experts")
    _derive_context(facts)


def _derive_context(facts: Facts) -> None:
    context = facts.fact("workload.context") or facts.fact("launch.max_model_len")
    if context is None or not isinstance(context.value, int):
        return
    facts.set("fit.context", context.value, context.source)
    per_token = facts.get("model.kv_bytes_per_token")
    if isinstance(per_token, (int, float)):
        state = facts.get("model.state_bytes_per_sequence") or 0
        facts.set("fit.kv_bytes_per_sequence", int(per_token * context.value + state),
                  "derived: kv_bytes_per_token × context + state_bytes_per_sequence")


def users_at(tokens: int, context: int, state_bytes: int = 0, per_token_bytes: float = 0) -> int:
    """Concurrent sequences of ``context`` tokens that fit in ``tokens`` KV tokens (state counted as tokens)."""
    if context <= 0:
        return 0
    state_tokens = math.ceil(state_bytes / per_token_bytes) if state_bytes and per_token_bytes else 0
    return max(0, tokens // (context + state_tokens))
