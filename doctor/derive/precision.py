"""The model's memory under the launch's precision flags: `--quantization fp8` on a 16-bit checkpoint, `--dtype
float32`. Gathering runs these as soon as the model and the command are both known, before the memory model
(doctor/model/memory.py non_kv_facts) reads the sizes."""

from __future__ import annotations

from typing import Any

from doctor.facts import Facts


def online_fp8_facts(card: Any, facts: Facts) -> Facts:
    """`--quantization fp8` on a 16-bit checkpoint: the engine quantizes while loading, so the GPUs hold FP8."""
    out = Facts()
    if card is None or facts.get("model.quantization") is not None or facts.get("launch.quantization") != "fp8" \
            or facts.get("model.same_checkpoint") is False:  # then the served checkpoint was sized already
        return out
    from doctor.model.weights import plan_weights

    weights = plan_weights(card, "fp8", model_path=None)
    out.set("model.weight_bytes", weights.total_bytes, f"{weights.source} (--quantization fp8)")
    out.set("model.expert_weight_bytes", weights.expert_bytes, f"{weights.source} (--quantization fp8)")
    return out


#: --dtype spellings that mean 32-bit floats (vllm 0.32.0 vllm/config/model.py:2369 maps "float" and "float32")
FLOAT32_DTYPES = ("float32", "float")


def float32_facts(card: Any, facts: Facts) -> Facts:
    """`--dtype float32` on an unquantized checkpoint: the engine holds every weight in 4 bytes, and its KV too
    unless --kv-cache-dtype says otherwise (``auto`` follows the model's dtype)."""
    out = Facts()
    dtype = str(facts.get("launch.flags.dtype") or "").lower()
    if card is None or dtype not in FLOAT32_DTYPES or facts.get("model.quantization") is not None:
        return out
    weights, per_token = facts.get("model.weight_bytes"), facts.get("model.kv_bytes_per_token")
    if isinstance(weights, int) and card.dtype in ("bfloat16", "float16"):
        out.set("model.weight_bytes", weights * 2, f"derived: {card.dtype} weights held in float32 (--dtype {dtype})")
    if isinstance(per_token, int) and str(facts.get("launch.kv_cache_dtype") or "auto") == "auto" \
            and facts.get("model.kv_dtype") in ("bf16", "fp16"):
        why = f"derived: KV in float32, the model's dtype (--dtype {dtype}, --kv-cache-dtype auto)"
        out.set("model.kv_bytes_per_token", per_token * 2, why)
        growing = facts.get("model.kv_bytes_per_token_growing")
        if isinstance(growing, (int, float)):
            out.set("model.kv_bytes_per_token_growing", growing * 2, why)
        out.set("model.kv_dtype", "fp32", f"--dtype {dtype} with --kv-cache-dtype auto")
    return out
