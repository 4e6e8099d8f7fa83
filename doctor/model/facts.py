"""The card as ``model.*`` facts (docs/facts.md), each with the config field it came from.

Sources read ``config.json:<field path>`` for values taken from the config and
``derived: <arithmetic>`` for computed sizes, so a finding that cites ``model.kv_bytes_per_token``
can show how the number was reached.
"""

from __future__ import annotations

from doctor.facts import Facts
from doctor.model.card import ModelCard
from doctor.model.kvcache import kv_layout


def model_facts(card: ModelCard, kv_dtype: str = "auto", engine: str | None = None) -> Facts:
    facts = Facts()
    src = card.sources

    def cfg(attr: str) -> str:
        return f"config.json:{src.get(attr, attr)}"

    facts.set("model.name", card.name, f"argument {card.source}")
    facts.set("model.architectures", list(card.architectures), "config.json:architectures")
    facts.set("model.model_type", card.model_type, f"config.json:{card.text_prefix}model_type")
    facts.set("model.known", card.known, "llmdoctor architecture table (doctor/model/known.json)")
    facts.set("model.attention", card.attention, cfg("attention"))
    facts.set("model.full_attention", card.full_attention, cfg("attention"))
    facts.set("model.attention_heads", card.attention_heads, cfg("attention_heads"))
    facts.set("model.kv_heads", card.kv_heads, cfg("kv_heads"))
    facts.set("model.head_dim", card.head_dim, cfg("head_dim"))
    if card.kv_lora_rank is not None:
        facts.set("model.kv_lora_rank", card.kv_lora_rank, cfg("kv_lora_rank"))
    if card.qk_rope_head_dim is not None:
        facts.set("model.qk_rope_head_dim", card.qk_rope_head_dim, cfg("qk_rope_head_dim"))
    if card.index_topk is not None:
        facts.set("model.index_topk", card.index_topk, cfg("index_topk"))
    if card.index_head_dim is not None:
        facts.set("model.index_head_dim", card.index_head_dim, cfg("index_head_dim"))
    layers = card.layers
    facts.set("model.layers.total", layers.total, cfg("layers"))
    for key in ("kv", "linear", "sliding", "chunked", "no_attention", "indexer"):
        facts.set(f"model.layers.{key}", getattr(layers, key), cfg("layer_plan"))
    facts.set("model.sliding_window", card.sliding_window, cfg("sliding_window"))
    facts.set("model.chunk_size", card.chunk_size, cfg("layer_plan"))
    facts.set("model.moe", card.moe is not None, cfg("moe"))
    if card.moe is not None:
        facts.set("model.moe.experts", card.moe.experts, cfg("moe_experts"))
        facts.set("model.moe.active", card.moe.active, cfg("moe_active"))
        facts.set("model.moe.shared", card.moe.shared, cfg("moe_shared"))
        facts.set("model.moe.layers", card.moe.layers, cfg("layer_plan"))
    facts.set("model.mtp_layers", card.mtp_layers, cfg("mtp_layers"))
    facts.set("model.multimodal", card.multimodal, cfg("multimodal"))
    facts.set("model.quantization", card.quantization.method if card.quantization else None, cfg("quantization"))
    facts.set("model.dtype", card.dtype, cfg("dtype"))
    if card.max_context is not None:
        facts.set("model.max_context", card.max_context, cfg("max_context"))
    shapes = "derived: estimate from layer shapes (doctor/model/params.py)"
    facts.set("model.params", card.params, shapes)
    facts.set("model.active_params", card.active_params, shapes)
    facts.set("model.vision_params", card.vision_params, shapes)
    facts.set("model.weight_bytes", card.weight_bytes, card.weight_detail)
    facts.set("model.weight_source", card.weight_source, card.weight_detail)
    facts.set("model.expert_weight_bytes", card.expert_weight_bytes, f"{card.weight_detail}: routed experts only")

    layout = kv_layout(card, kv_dtype, engine)
    arithmetic = " + ".join(f"{c.layers} × [{c.formula}]" for c in layout.components)
    facts.set("model.kv_dtype", layout.kv_dtype, f"--kv-dtype {kv_dtype}")
    facts.set("model.kv_engine", layout.engine, f"--engine {engine or 'default'}")
    facts.set("model.kv_bytes_per_token", layout.bytes_per_token, f"derived: {arithmetic}")
    facts.set("model.kv_bytes_per_token_growing", layout.growing_bytes_per_token,
              "derived: layers without a sliding/chunk window")
    facts.set("model.mtp_kv_bytes_per_token", layout.mtp_bytes_per_token,
              "derived: MTP layers' KV when they run as speculative-decoding drafts")
    states = " + ".join(f"{s.layers} × [{s.formula}]" for s in layout.states) or "no linear/SSM layers"
    facts.set("model.state_bytes_per_sequence", layout.state_bytes_per_sequence, f"derived: {states}")
    return facts
