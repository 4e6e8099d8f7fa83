"""The rotary embeddings a model builds, as the cos/sin caches an engine keeps next to the weights.

vLLM and SGLang register each distinct rotary embedding's cos/sin table as a buffer of the model (one table per
RoPE configuration, keyed in _ROPE_DICT: vllm 0.17.0 model_executor/layers/rotary_embedding/__init__.py:25-77,
sglang 0.5.12 srt/layers/rotary_embedding/factory.py:60-107), so the table is part of the memory the weights are
measured in and sits on every TP rank whole: [positions, rotary_dim] values, positions being
max_position_embeddings, times the factor for linear scaling (sglang base.py:488-492) and
original_max_position_embeddings times the factor for YaRN (yarn.py:125-129, rope_variant.py:405-409).
engine_memory.yaml ``rope_cache`` says in what precision; doctor/model/memory.py prices it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: config keys that say the model rotates positions (a model without any has no RoPE table)
ROPE_KEYS = ("rope_theta", "rope_scaling", "rope_parameters", "rotary_dim", "partial_rotary_factor",
             "rotary_emb_base", "qk_rope_head_dim")


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _positions(max_position: int, scaling: dict[str, Any]) -> int:
    """The table's rows for one RoPE: max_position, scaled as the engine's scaling class builds it."""
    kind = scaling.get("rope_type") or scaling.get("type")
    factor = _number(scaling.get("factor"))
    if factor and kind == "linear":
        return int(max_position * factor)
    if factor and kind in ("yarn", "deepseek_yarn"):
        original = _number(scaling.get("original_max_position_embeddings")) or max_position
        return int(original * factor)
    return max_position


def rope_tables(text: dict[str, Any], head_dim: int, rope_head_dim: int | None = None,
                engine: str = "sglang") -> tuple[tuple[int, int], ...]:
    """(positions, rotary_dim) of each rotary table ``engine`` builds for this (language-model) config; () for a
    model without RoPE or without max_position_embeddings.

    Gemma 3 and 4 build two: the sliding layers' (head_dim, default RoPE) and the global layers' (Gemma 3: head_dim,
    with the config's scaling on vLLM, vllm 0.17.0 models/gemma3.py:168-186, default RoPE on SGLang, sglang 0.5.12
    models/gemma3_causal.py:185-217; Gemma 4: its global_head_dim whole, the "proportional" RoPE rotating the full
    head, gemma4_causal.py:305-318, rotary_embedding/rope_variant.py:882-899, vllm 0.33.0 models/gemma4.py:493-498).
    """
    max_position = _number(text.get("max_position_embeddings"))
    if not max_position or not any(text.get(k) is not None for k in ROPE_KEYS):
        return ()
    positions = int(max_position)
    params = text.get("rope_parameters")
    params = params if isinstance(params, dict) else {}
    if isinstance(params.get("full_attention"), dict) or text.get("rope_local_base_freq") is not None:
        full = params.get("full_attention") if isinstance(params.get("full_attention"), dict) else {}
        local_dim = int(_number(text.get("head_dim")) or head_dim)
        global_dim = int(_number(text.get("global_head_dim")) or local_dim)
        if full.get("rope_type") == "proportional":
            return (positions, local_dim), (positions, global_dim)
        scaling = text.get("rope_scaling") if isinstance(text.get("rope_scaling"), dict) else full
        return (positions, local_dim), (_positions(positions, scaling) if engine == "vllm" else positions, local_dim)
    scaling = text.get("rope_scaling")
    scaling = scaling if isinstance(scaling, dict) else params
    partial = _number(text.get("partial_rotary_factor")) or _number(params.get("partial_rotary_factor")) or 1.0
    rotary = rope_head_dim or int(_number(text.get("rotary_dim")) or head_dim * min(partial, 1.0))
    return ((_positions(positions, scaling), rotary),)
