"""``llmdoctor inspect``'s text card, built to be read in five seconds during an incident."""

from __future__ import annotations

import json

from doctor.model.card import ModelCard
from doctor.model.units import format_bytes, format_count, format_tokens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def render_text(card: ModelCard, report: dict[str, Any]) -> str:
    kv = report["kv_cache"]
    lines = [_title(card)]
    row = lines.append
    row(f"  attention   {_attention_line(card)}")
    row(f"  layers      {_layers_line(card)}")
    if card.moe is not None:
        m = card.moe
        row(f"  experts     {m.experts} routed · {m.active} per token · "
            + (f"{m.shared} shared" if m.shared else "no shared") + f" · {m.layers} MoE layers")
    else:
        row("  experts     dense (no routed experts)")
    weights = format_bytes(card.weight_bytes)
    quant = card.quantization.detail if card.quantization else card.dtype
    exact = card.weight_source == "safetensors"
    row(f"  params      {format_count(card.params)} total · {format_count(card.active_params)} active · "
        f"weights {'=' if exact else '≈'} {weights} ({quant}; "
        + ("safetensors headers)" if exact else "estimate from layer shapes)"))
    row(f"  KV/token    {_kv_line(card, kv)}")
    row(f"  state/seq   {_state_line(kv)}")
    ctx = format_tokens(kv["context"])
    row(f"  {ctx + ' ctx':<11} ≈ {format_bytes(kv['bytes_per_sequence'])} per user")
    if report["capacity"] is not None:
        row(f"  capacity    {_capacity_line(report['capacity'])}")
    row(f"  multimodal  {' + '.join(card.modalities) if card.multimodal else 'no'}")
    found = report.get("resolution")
    if found is not None and found["origin"] != "example":
        row(f"  found       {found['origin']}: {found['where']}")
    lines.append("")
    lines.append("Evidence")
    lines.append(f"  - weights: {card.weight_detail}")
    for item in report["evidence"]:
        fields = ", ".join(f"{k}={_short(v)}" for k, v in item["fields"].items())
        lines.append(f"  - {item['claim']}" + (f"  [{fields}]" if fields else ""))
    for note in report["notes"]:
        lines.append(f"  ! {note}")
    return "\n".join(lines)


def _title(card: ModelCard) -> str:
    arch = ", ".join(card.architectures) or "no architectures field"
    known = "" if card.known else "  [unknown architecture: best-effort]"
    return f"{card.name} · {arch} ({card.model_type or 'no model_type'}){known}"


def _attention_line(card: ModelCard) -> str:
    kind = card.attention.upper()
    if card.attention == "hybrid":
        kind = f"HYBRID ({card.full_attention.upper()} + {card.states[0].label if card.states else 'linear'})"
    if card.full_attention in ("mla", "dsa") and card.kv_lora_rank:
        detail = (f"{card.attention_heads} query heads, one {card.head_dim}-wide latent per layer "
                  f"(kv_lora_rank {card.kv_lora_rank} + rope {card.qk_rope_head_dim})")
    elif card.full_attention == "dsa":
        detail = f"{card.attention_heads} query heads, one {card.head_dim}-wide KV row (compressed + windowed)"
    else:
        detail = f"{card.attention_heads} query heads · {card.kv_heads} KV heads × head_dim {card.head_dim}"
    if card.index_topk:
        detail += f" · indexer top-{card.index_topk} on {card.layers.indexer} layers"
    if card.sliding_window and card.layers.sliding:
        detail += f" · sliding window {card.sliding_window}"
    if card.chunk_size and card.layers.chunked:
        detail += f" · chunked {card.chunk_size}"
    return f"{kind} · {detail}"


def _layers_line(card: ModelCard) -> str:
    lay = card.layers
    parts = [f"{lay.total} total", f"{lay.kv} hold KV"]
    for count, what in ((lay.linear, "linear/SSM"), (lay.sliding, "sliding"), (lay.chunked, "chunked"),
                        (lay.no_attention, "without attention")):
        if count:
            parts.append(f"{count} {what}")
    if card.mtp_layers:
        parts.append(f"+{card.mtp_layers} MTP")
    return " · ".join(parts)


def _kv_line(card: ModelCard, kv: dict[str, Any]) -> str:
    line = f"{format_bytes(kv['bytes_per_token'])} at {kv['dtype']} ({_ENGINE_NAMES[kv['engine']]} layout)"
    if kv["growing_bytes_per_token"] != kv["bytes_per_token"]:
        line += f" · {format_bytes(kv['growing_bytes_per_token'])} beyond the windows"
    if kv["mtp_bytes_per_token"]:
        line += f" · +{format_bytes(kv['mtp_bytes_per_token'])} when MTP drafts"
    other = {n: v for n, v in kv["by_engine"].items() if n != kv["engine"] and "bytes_per_token" in v}
    for name, values in other.items():
        if values["bytes_per_token"] != kv["bytes_per_token"]:
            line += f" · {_ENGINE_NAMES[name]}: {format_bytes(values['bytes_per_token'])}"
    return line


def _state_line(kv: dict[str, Any]) -> str:
    if not kv["states"]:
        return "none (no linear/SSM layers)"
    line = f"{format_bytes(kv['state_bytes_per_sequence'])} per sequence, any length"
    for name, values in kv["by_engine"].items():
        if name != kv["engine"] and values.get("state_bytes_per_sequence", kv["state_bytes_per_sequence"]) \
                != kv["state_bytes_per_sequence"]:
            line += f" · {_ENGINE_NAMES[name]}: {format_bytes(values['state_bytes_per_sequence'])}"
    return line


def _capacity_line(cap: dict[str, Any]) -> str:
    gpu, weights = format_bytes(cap["gpu_memory_bytes"]), format_bytes(cap["weight_bytes"])
    if cap["users"] is None:
        return (f"weights {weights} do not fit one {gpu} GPU: shard over ≥ {cap['min_gpus_for_weights']} "
                "GPUs before any KV")
    return (f"one {gpu} GPU − {weights} weights leaves {format_bytes(cap['kv_budget_bytes'])} → "
            f"≈ {cap['users']} users at {format_tokens(cap['context'])} (upper bound: no activation reserve; "
            f"full predictions: {cap['band']['text']})")


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:59] + "…"
