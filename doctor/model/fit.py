"""Memory arithmetic: do the weights fit, how many KV tokens remain, how many users of N tokens that is.

This is the seed's "KV Cache Sizing" done with the engines' layout rules, from facts alone (model.*, gpu.*,
launch.*, workload.*), so that `plan`, `lint` and `check` share one calculation:

* weights are sharded by TP and PP; with expert parallelism the expert weights are sharded by the EP size
  instead, and DP replicas each hold a full copy of everything else;
* KV for GQA/MHA is split across the TP ranks that share a request's attention, but only down to one KV head
  per rank: past that (TP > KV heads) heads are replicated. MLA/DSA keep the whole latent on every rank (the
  seed's "redundant storage"); DP attention gives each rank its own requests instead;
* what the engine may allocate is the memory fraction of each GPU; the KV pool is that minus the weights and
  minus what the engine release holds besides them (``engine.non_kv_bytes_per_gpu``: the profile run's
  activation peak, V1's sampler pass, non-torch allocations — doctor/model/memory.py) when that is known.
  CUDA graph pools are not modelled, so the numbers stay upper bounds.
"""

from __future__ import annotations

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
    #: GPUs the experts are split over by tensor parallelism when EP is off; 0: attn_tp. SGLang's DP attention keeps
    #: the MoE layers tensor-parallel over the whole --tp-size while attention runs per DP rank
    #: (sglang 0.4.3 srt/layers/dp_attention.py:16 attn_tp_size = tp_size // dp_size; the fused MoE layer takes the
    #: whole TP group, srt/layers/moe/fused_moe_triton/layer.py:272)
    moe_tp: int = 0


def layout_from_facts(facts: Facts) -> Layout | None:
    """Read the parallel layout from launch.* facts (engine flags differ: SGLang's DP attention lives inside TP)."""
    engine = facts.get("launch.engine")
    # No launch command read (launch.tp is then absent, even where a log named the engine): the fit question is "on
    # these GPUs", so spread the model over all of them (TP).
    tp_fact = facts.get("launch.tp") or (facts.get("gpu.count") if "launch.tp" not in facts else None) or 1
    tp, dp, pp = _size(tp_fact), _size(facts.get("launch.dp")), _size(facts.get("launch.pp"))
    if tp is None or dp is None or pp is None:
        return None
    dp_attention = bool(facts.get("launch.dp_attention"))
    if engine == "sglang" and dp_attention:
        # SGLang: --tp-size is the whole instance; --dp-size (with --enable-dp-attention) or, from 0.5.23,
        # --attn-dp-size splits attention inside it (sglang 0.5.23 srt/server_args.py:418 deprecates the pair).
        attn_dp = facts.get("launch.flags.attn_dp_size")
        if isinstance(attn_dp, int) and attn_dp > 1:
            dp = attn_dp
        gpus, attn_tp, groups, moe_tp = tp * pp, max(1, tp // dp), dp, tp
    else:
        # vLLM (-dp D -tp T: D engine ranks of T GPUs) and SGLang without DP attention (D replicas of T GPUs).
        gpus, attn_tp, groups, moe_tp = tp * dp * pp, tp, dp, 0
    ep = (_size(facts.get("launch.ep")) or 1) if facts.get("launch.expert_parallel") is True else 1
    return Layout(gpus=gpus, attn_tp=attn_tp, kv_groups=groups, pp=pp, ep=ep, moe_tp=moe_tp)


#: More GPUs in one parallel dimension than any deployment has: a typo (or a corrupt report), not a layout.
_MAX_PARALLEL = 1 << 20


def _size(value: object) -> int | None:
    """A parallel size: unset is 1; anything but a whole number from 1 up is no layout at all."""
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= _MAX_PARALLEL:
        return None
    return value


def kv_bytes_per_token_per_gpu(facts: Facts, layout: Layout) -> float | None:
    """Bytes one GPU stores per token of a request it holds."""
    per_token = facts.get("model.kv_bytes_per_token")
    if not isinstance(per_token, (int, float)):
        return None
    attention = facts.get("model.full_attention") or facts.get("model.attention")
    if facts.get("model.kv_layout") == "per_head":  # an MLA model on a release that cached every head
        split = max(1, min(layout.attn_tp, int(facts.get("model.attention_heads") or 1)))
    elif attention in ("mla", "dsa"):
        split = 1  # the latent is not split by head: every rank holds all of it
    else:
        kv_heads = int(facts.get("model.kv_heads") or 1)
        split = max(1, min(layout.attn_tp, kv_heads))
    return per_token / split / layout.pp


def weights_per_gpu(facts: Facts, layout: Layout) -> float | None:
    total = facts.get("model.weight_bytes")
    if not isinstance(total, (int, float)):
        return None
    # what every TP rank holds whole (SGLang's Gemma embedding, doctor/model/memory.py replicated_weight_facts)
    replicated = facts.get("model.replicated_weight_bytes")
    whole = replicated * (1 - 1 / layout.attn_tp) / layout.pp if isinstance(replicated, int) and 0 < replicated < total else 0.0
    # beside the weights on every rank (SGLang's rotary cos/sin tables, doctor/model/rope.py)
    rope = facts.get("model.rope_table_bytes")
    whole += rope if isinstance(rope, int) and rope > 0 else 0
    experts = facts.get("model.expert_weight_bytes")
    if layout.ep > 1 and isinstance(experts, (int, float)) and 0 < experts <= total:
        redundant = facts.get("launch.ep_redundant_experts") or 0
        routed = facts.get("model.moe.experts") or 0
        expert_copies = 1 + (redundant / routed if routed else 0)
        dense_part = (total - experts) / (layout.attn_tp * layout.pp)
        return whole + dense_part + experts * expert_copies / (layout.ep * layout.pp)
    if layout.moe_tp > layout.attn_tp and isinstance(experts, (int, float)) and 0 < experts <= total:
        # the dense part (attention, embeddings, dense MLPs) counted whole per attention group: an upper bound
        return whole + (total - experts) / (layout.attn_tp * layout.pp) + experts / (layout.moe_tp * layout.pp)
    return whole + total / (layout.attn_tp * layout.pp)


@dataclass(frozen=True)
class LayoutFit:
    """One layout's memory arithmetic on one GPU model: what `derive_fit` writes as facts and `plan` compares.

    ``weights_per_gpu_bytes`` / ``kv_bytes_per_token_per_gpu`` are None when the model facts do not give them.
    """

    layout: Layout
    fraction: float
    usable_bytes_per_gpu: float
    weights_per_gpu_bytes: float | None
    kv_bytes_per_token_per_gpu: float | None
    #: what the engine holds besides weights and KV (activation peak, sampler, non-torch); 0 when not estimated
    reserved_bytes_per_gpu: float = 0.0
    #: the share of what is left that the KV pool gets (SGLang's Mamba state pool takes the rest); 1 when none
    kv_share: float = 1.0

    @property
    def weights_fit(self) -> bool | None:
        return None if self.weights_per_gpu_bytes is None else self.weights_per_gpu_bytes < self.usable_bytes_per_gpu

    @property
    def kv_budget_per_gpu_bytes(self) -> float | None:
        return None if self.weights_per_gpu_bytes is None else max(
            0.0, self.usable_bytes_per_gpu - self.weights_per_gpu_bytes - self.reserved_bytes_per_gpu) * self.kv_share

    @property
    def kv_tokens_per_group(self) -> int | None:
        """Every GPU of an attention group holds its share of the same tokens: the group's capacity is one
        GPU's budget over one GPU's bytes per token."""
        budget = self.kv_budget_per_gpu_bytes
        if budget is None or not self.kv_bytes_per_token_per_gpu:
            return None
        return int(budget / self.kv_bytes_per_token_per_gpu)

    def sequences_per_group(self, bytes_per_sequence: float, kv_bytes_per_token: float) -> int | None:
        """Sequences of ``bytes_per_sequence`` (KV + state of one request, whole model, one copy) a group holds.

        Each GPU stores the same share of a sequence as of a token (the head split of
        ``kv_bytes_per_token_per_gpu``), so one GPU's budget over its share of the sequence is the answer.
        """
        budget = self.kv_budget_per_gpu_bytes
        if budget is None or not self.kv_bytes_per_token_per_gpu or bytes_per_sequence <= 0 or kv_bytes_per_token <= 0:
            return None
        share = self.kv_bytes_per_token_per_gpu / kv_bytes_per_token
        return int(budget // (bytes_per_sequence * share))


def mem_fraction(facts: Facts) -> float | None:
    """The memory fraction the launch gives, else the engine's usual default (DEFAULT_MEM_FRACTION); None when the
    launch gives one no engine accepts (outside (0, 1]: the engine refuses to start, and `lint` says so)."""
    engine = facts.get("launch.engine") or "vllm"
    given = facts.get("launch.mem_fraction")
    if given is None:
        return DEFAULT_MEM_FRACTION.get(engine, 0.9)
    if isinstance(given, bool) or not isinstance(given, (int, float)) or not 0 < given <= 1:
        return None
    return float(given)


def fit_layout(facts: Facts, layout: Layout, memory: float, fraction: float, reserved: float = 0.0) -> LayoutFit:
    """The arithmetic for ``layout`` on GPUs of ``memory`` bytes at ``fraction``, from the model facts;
    ``reserved`` is the engine's non-KV memory per GPU (doctor/model/memory.py), 0 when not estimated."""
    share = facts.get("engine.kv_pool_share")
    share = float(share) if isinstance(share, float) and 0 < share <= 1 else 1.0
    return LayoutFit(layout, fraction, memory * fraction, weights_per_gpu(facts, layout),
                     kv_bytes_per_token_per_gpu(facts, layout), reserved + state_pool_per_gpu(facts, layout), share)


def state_pool_per_gpu(facts: Facts, layout: Layout) -> float:
    """SGLang's Mamba state pool sized by slots (engine.state_pool_bytes, doctor/model/memory.py), per GPU: the
    recurrent state is split over the TP ranks like the heads it holds; 0 when the pool is not sized by slots."""
    pool = facts.get("engine.state_pool_bytes")
    return pool / (layout.attn_tp * layout.pp) if isinstance(pool, int) and pool > 0 else 0.0
