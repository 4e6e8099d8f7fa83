"""The fit.* facts: do the weights fit, how many KV tokens remain, how many users of the context that is — the
arithmetic of doctor/model/fit.py over the facts of this launch."""

from __future__ import annotations

from doctor.derive.registry import analyzer
from doctor.facts import Facts
from doctor.model.fit import Layout, fit_layout, layout_from_facts, mem_fraction

#: what the fit reads: the parallel layout (layout_from_facts), the GPU memory and fraction, the model's sizes
_READS = ("launch.engine", "launch.tp", "launch.dp", "launch.pp", "launch.dp_attention", "launch.flags.attn_dp_size",
          "launch.ep", "launch.expert_parallel", "launch.ep_redundant_experts", "launch.mem_fraction",
          "launch.max_model_len", "gpu.count", "gpu.memory_bytes", "engine.non_kv_bytes_per_gpu",
          "engine.kv_pool_share", "engine.state_pool_bytes", "model.replicated_weight_bytes", "model.rope_table_bytes",
          "model.kv_bytes_per_token", "model.full_attention", "model.attention", "model.kv_layout",
          "model.attention_heads", "model.kv_heads", "model.weight_bytes", "model.expert_weight_bytes",
          "model.moe.experts", "model.max_context", "model.state_bytes_per_sequence", "workload.context",
          # the band of comparable predictions (doctor/model/band.py) and the weights margin
          "gpu.sm", "launch.quantization", "model.moe", "model.quantization",
          # the user's own measured runs of this model, GPU and engine (doctor/model/calibration.py)
          "model.name", "launch.model", "server.model", "server.version", "log.started", "gpu.name",
          # vLLM's own count of full-length requests its KV pool holds, when the arithmetic cannot be done
          "log.max_concurrency", "log.max_concurrency_tokens")


@analyzer(reads=_READS, produces=("fit.*",))
def derive_fit(facts: Facts) -> None:
    """Write the fit.* facts that the trees and `plan` read; silently skip what the inputs do not allow."""
    layout = layout_from_facts(facts)
    memory = facts.get("gpu.memory_bytes")
    fraction = mem_fraction(facts)
    if layout is None or fraction is None or not isinstance(memory, (int, float)) or not 0 < memory < 1e18:
        # (not for a server that answers or whose log says it started: its weights fit; its check loads no GPU
        # catalog, whose YAML is parsed only by the commands that name a GPU)
        if layout is not None and fraction is not None and memory is None and "launch.tp" in facts \
                and "server.model" not in facts and "server.version" not in facts and facts.get("log.started") is not True:
            _derive_beyond_every_gpu(facts, layout, fraction)
        _derive_context(facts)
        _derive_users_from_log(facts)
        return
    reserved = facts.get("engine.non_kv_bytes_per_gpu")
    reserved = float(reserved) if isinstance(reserved, (int, float)) and not isinstance(reserved, bool) else 0.0
    result = fit_layout(facts, layout, memory, fraction, reserved)
    src = "derived: fit (docs/facts.md)"
    facts.set("fit.shards", layout.attn_tp * layout.pp, src)
    facts.set("fit.gpus", layout.gpus, src)
    facts.set("fit.usable_bytes_per_gpu", int(result.usable_bytes_per_gpu), f"derived: gpu.memory_bytes × {fraction}")
    facts.set("fit.kv_bytes_per_gpu_per_5pct", int(memory * 0.05), "derived: 5% of gpu.memory_bytes")
    if result.weights_per_gpu_bytes is not None:
        facts.set("fit.weights_per_gpu_bytes", int(result.weights_per_gpu_bytes), "derived: model.weight_bytes / shards"
                  + (", model.replicated_weight_bytes whole on each" if facts.get("model.replicated_weight_bytes") else "")
                  + (", + model.rope_table_bytes" if facts.get("model.rope_table_bytes") else ""))
        facts.set("fit.weights_fit", result.weights_fit, "derived: weights_per_gpu < usable_bytes_per_gpu")
        if not result.weights_fit:
            _derive_weights_margin(facts, result.weights_per_gpu_bytes, result.usable_bytes_per_gpu)
        facts.set("fit.kv_budget_per_gpu_bytes", int(result.kv_budget_per_gpu_bytes or 0),
                  ("derived: usable − weights − engine.non_kv_bytes_per_gpu" if reserved else
                   "derived: usable − weights per GPU")
                  + (" − engine.state_pool_bytes per GPU" if facts.get("engine.state_pool_bytes") else "")
                  + (" × engine.kv_pool_share" if result.kv_share < 1 else ""))
        group_tokens = result.kv_tokens_per_group
        if group_tokens is not None:
            facts.set("fit.kv_tokens_per_group", group_tokens, "derived: kv budget / per-GPU bytes per token")
            facts.set("fit.kv_tokens", group_tokens * layout.kv_groups, "derived: per group × KV groups")
            _derive_band(facts)
    routed = facts.get("model.moe.experts")
    redundant = facts.get("launch.ep_redundant_experts")
    if isinstance(routed, int) and routed and isinstance(redundant, int):
        facts.set("fit.eplb_extra_fraction", redundant / routed, "derived: redundant / routed experts")
    _derive_context(facts)
    _derive_users_from_log(facts)


def _derive_beyond_every_gpu(facts: Facts, layout: Layout, fraction: float) -> None:
    """With no GPU known, the weights per GPU of the launch's own layout against the largest GPU of the catalog:
    when not even that one holds them (DeepSeek-V3 at `--tp 1`), the answer does not depend on the GPU. Only for a
    layout a launch command gave (launch.tp): without one the fit spreads the model over GPUs it does not know."""
    from doctor.hardware.catalog import all_gpus

    largest = max(all_gpus(), key=lambda g: g.memory_bytes)
    result = fit_layout(facts, layout, largest.memory_bytes, fraction)
    if result.weights_per_gpu_bytes is None or result.weights_fit is not False:
        return
    src = f"derived: the largest GPU of the catalog ({largest.name}, {largest.memory_gb:g} GB; no GPU given)"
    facts.set("fit.shards", layout.attn_tp * layout.pp, src)
    facts.set("fit.largest_gpu", f" ({largest.name}, {largest.memory_gb:g} GB: no GPU was given, and none holds more)",
              src)
    facts.set("fit.usable_bytes_per_gpu", int(result.usable_bytes_per_gpu), f"{src} × {fraction}")
    facts.set("fit.weights_per_gpu_bytes", int(result.weights_per_gpu_bytes), "derived: model.weight_bytes / shards")
    facts.set("fit.weights_fit", False, f"derived: weights_per_gpu ≥ usable_bytes_per_gpu of {src}")
    _derive_weights_margin(facts, result.weights_per_gpu_bytes, result.usable_bytes_per_gpu)


def _derive_band(facts: Facts) -> None:
    """fit.kv_tokens_band(_text): how far the comparable predictions landed — the user's own runs of this model,
    GPU and engine (`llmdoctor calibrate`), else the record's (doctor/model/band.py)."""
    from doctor.model.band import RECORD_PATH, band_from_facts

    band = band_from_facts(facts)
    source = (f"derived: your own runs in {band.own} (llmdoctor calibrate)" if band.own else
              f"derived: {RECORD_PATH.name} (tests/data/kv_datapoints.yaml, docs/plan.md error record)")
    if band.error is not None:
        facts.set("fit.kv_tokens_band", band.error, source)
    facts.set("fit.kv_tokens_band_text", band.text(), source)


def _derive_weights_margin(facts: Facts, weights: float, usable: float) -> None:
    """fit.weights_margin_note: whether "the weights do not fit" is decided by more than the weights' band."""
    from doctor.model.band import WEIGHTS_SETTLED_BY, margin_note, weights_band

    quant = str(facts.get("launch.quantization") or facts.get("model.quantization") or "16-bit")
    note = margin_note((weights - usable) / weights, weights_band(quant), facts.get("launch.engine"), "weights",
                       settled_by=WEIGHTS_SETTLED_BY)
    facts.set("fit.weights_margin_note", note, "derived: (weights − usable) / weights against the record's "
              "weights band (doctor/model/capacity_record.json)")


def _derive_max_len_margin(facts: Facts) -> None:
    """fit.max_len_margin_note: whether "one request of max_model_len fits" is inside the prediction's band."""
    from doctor.model.band import band_from_facts, margin_note

    tokens, limit = facts.get("fit.kv_tokens_per_group"), facts.get("fit.max_model_len")
    if not isinstance(tokens, int) or not isinstance(limit, int) or tokens <= 0:
        return
    note = margin_note(abs(tokens - limit) / tokens, band_from_facts(facts), facts.get("launch.engine"), "capacity")
    facts.set("fit.max_len_margin_note", note, "derived: |fit.kv_tokens_per_group − fit.max_model_len| / "
              "fit.kv_tokens_per_group against fit.kv_tokens_band")


def _derive_context(facts: Facts) -> None:
    # The longest request the engine must be able to hold: --max-model-len, else the model's own maximum (both
    # engines default to it). vLLM refuses to start when not even one such request fits the KV pool.
    limit = facts.fact("launch.max_model_len")
    if limit is None or not isinstance(limit.value, int):
        limit = facts.fact("model.max_context")
    if limit is not None and isinstance(limit.value, int):
        facts.set("fit.max_model_len", limit.value, limit.source)
        _derive_max_len_margin(facts)
    context = facts.fact("workload.context") or facts.fact("launch.max_model_len")
    if context is None or not isinstance(context.value, int):
        return
    facts.set("fit.context", context.value, context.source)
    per_token = facts.get("model.kv_bytes_per_token")
    if isinstance(per_token, (int, float)):
        state = facts.get("model.state_bytes_per_sequence") or 0
        facts.set("fit.kv_bytes_per_sequence", int(per_token * context.value + state),
                  "derived: kv_bytes_per_token × context + state_bytes_per_sequence")
    tokens = facts.get("fit.kv_tokens")
    if isinstance(tokens, int) and context.value > 0:
        facts.set("fit.users_fit", tokens // context.value, "derived: fit.kv_tokens ÷ fit.context")


def _derive_users_from_log(facts: Facts) -> None:
    """fit.users_fit (and fit.context) from vLLM's boot line when the fit arithmetic gave none (no config or GPU):
    "Maximum concurrency for N tokens per request: X" is how many requests of max_model_len (N) the KV pool
    holds — blocks per request summed over the KV groups, against the pool (vllm 0.33.0
    vllm/v1/core/kv_cache_utils.py:1061-1090, logged at :1147-1150). Only at that context: a shorter workload
    context would hold more, by an amount the line does not give (hybrid groups are not linear)."""
    concurrency, at = facts.fact("log.max_concurrency"), facts.fact("log.max_concurrency_tokens")
    if concurrency is None or at is None or "fit.users_fit" in facts:
        return
    if not isinstance(concurrency.value, (int, float)) or not isinstance(at.value, int):
        return
    context = facts.get("fit.context")
    if context is not None and context != at.value:
        return
    if context is None:
        facts.set("fit.context", at.value, at.source)
    facts.set("fit.users_fit", int(concurrency.value), f"{concurrency.source} (the engine's own count, rounded down)")
