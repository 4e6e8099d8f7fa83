"""The longest context vLLM lets a model be served with, from its config.json — vLLM's own rule.

vLLM refuses ``--max-model-len`` above this length unless ``VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`` (then it only
warns, and positions past it give NaN with RoPE or out-of-bounds reads with absolute positions):
vllm/config/model.py:2527-2667 ``_get_and_verify_max_len`` in the vllm 0.32.0 wheel. The length is the smallest
of the config's length keys (vllm/transformers_utils/model_arch_config_convertor.py:394-425), times the RoPE
scaling factor unless the RoPE type already scales ``max_position_embeddings`` (su, longrope, llama3, yarn,
deepseek_yarn, deepseek_llama_scaling; model.py:2583-2610; Gemma 3 is already scaled). The tokenizer's
``model_max_length`` and a disabled sliding window can lower it further: not read here, so this is an upper
bound of what vLLM derives — a launch above it is refused for certain.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: vllm/transformers_utils/model_arch_config_convertor.py:396-412, in vLLM's order
LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
               "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")
#: RoPE types whose max_position_embeddings is already the scaled length (vllm/config/model.py:2595-2602)
_PRESCALED = frozenset({"su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling"})


def derived_max_len(config: dict[str, Any]) -> tuple[int, str] | None:
    """(length, how it was derived) the way vLLM derives it, or None when no length key is present."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    found = [(text[k], k) for k in LENGTH_KEYS if _number(text.get(k))]
    if not found:
        return None
    length, key = min(found, key=lambda item: item[0])
    if _number(text.get("model_max_length")):  # Command-R / Cohere: model_max_length wins (convertor.py:418-420)
        length, key = text["model_max_length"], "model_max_length"
    factor, how = 1.0, f"config.json:{key}"
    if "gemma3" not in str(text.get("model_type") or config.get("model_type") or ""):
        for rope in _rope_parameters(text):
            kind = rope.get("rope_type") or rope.get("type") or "default"
            if kind not in _PRESCALED and kind != "default" and _number(rope.get("factor")):
                factor = float(rope["factor"])
                how += f" × rope factor {factor:g} ({kind})"
    return int(length * factor), how


def _rope_parameters(config: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for key in ("rope_scaling", "rope_parameters"):
        value = config.get(key)
        if isinstance(value, dict):
            nested = [v for v in value.values() if isinstance(v, dict)]  # per-layer-type parameters
            out.extend(nested if nested and not any(k in value for k in ("rope_type", "type")) else [value])
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
