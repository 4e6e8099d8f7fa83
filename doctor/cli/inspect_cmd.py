"""``llmdoctor inspect CONFIG``: the architecture card of a model, from its config.json alone.

The text card is built to be read in five seconds during an incident (kind, layers, experts,
KV/token, state/sequence, what one user at the chosen context costs), followed by the evidence.
``--format json`` emits the versioned ``llmdoctor.inspect/1`` document described in docs/inspect.md.
"""

from __future__ import annotations

import json
import math
from typing import Any

import click

from doctor.cli.common import emit, format_option
from doctor.cli.options import offline_option
from doctor.errors import EXIT_OK, EXIT_USAGE, InputError
from doctor.model.card import ModelCard
from doctor.model.kvcache import ENGINES, KVLayout, kv_layout
from doctor.model.units import format_bytes, format_count, format_tokens, parse_bytes, parse_tokens

SCHEMA = "llmdoctor.inspect/1"
_KV_CHOICES = ("auto", "bf16", "fp16", "fp8", "fp4")
_ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


EPILOG = """\b
Examples:
  llmdoctor inspect example:seed-gqa-27b
  llmdoctor inspect ~/models/Qwen3-8B --context 128k --gpu-mem 80G
  llmdoctor inspect deepseek-ai/DeepSeek-V3 --kv-dtype fp8 --engine sglang --format json
  HF_TOKEN=hf_... llmdoctor inspect meta-llama/Llama-3.3-70B-Instruct   # a gated repo, from the Hub
  llmdoctor inspect Qwen/Qwen3-8B --offline   # only this machine: a path or the HF cache

\b
Exit codes: 0 the card is printed; 2 the config cannot be read or has a bad field, the model is not found
(locally, in the HF cache, or on the Hub: gated without HF_TOKEN, no such repo, Hub unreachable, --offline),
or its architecture is not known (the card is still printed, best-effort, with model.known = false).
"""


@click.command("inspect", epilog=EPILOG)
@click.argument("config", metavar="CONFIG")
@format_option("text", "json")
@click.option("--kv-dtype", type=click.Choice(_KV_CHOICES), default="auto", show_default=True,
              help="KV cache dtype to size for (auto: the checkpoint's dtype, as the engines default).")
@click.option("--engine", type=click.Choice(ENGINES), default=None,
              help="Size the cache with this engine's layout where vLLM and SGLang differ (default: vLLM).")
@click.option("--context", default="32k", show_default=True,
              help="Tokens per request for the per-user line (32768, 32k, 1M).")
@click.option("--gpu-mem", default=None,
              help="One GPU's memory for a quick capacity line (80G = 80e9, 80GiB, 141GB).")
@offline_option
def inspect(config: str, fmt: str, kv_dtype: str, engine: str | None, context: str, gpu_mem: str | None,
            offline: bool) -> int:
    """Show the architecture card of CONFIG and the config fields behind every answer.

    CONFIG is a config.json, a model directory, a Hugging Face repo id — from the local cache (HF_HUB_CACHE /
    HF_HOME), else from the Hub (HF_ENDPOINT, HF_TOKEN; config, tokenizer config and safetensors headers, never
    weights) unless --offline or HF_HUB_OFFLINE=1 — or example:NAME for a bundled scenario. Weights are exact
    when the checkpoint's safetensors headers can be read (model.weight_source = safetensors), else estimated.
    """
    from doctor.model.resolve import model_card

    tokens = parse_tokens(context)
    gpu = parse_bytes(gpu_mem) if gpu_mem else None
    sized = model_card(config, offline=offline)
    card = sized.card
    report = build_report(card, kv_dtype=kv_dtype, engine=engine, context=tokens, gpu_mem=gpu)
    report["resolution"] = {"origin": sized.resolved.origin, "where": sized.resolved.where,
                            "weights_note": sized.resolved.weights_note or None,
                            "chat_template": sized.resolved.chat_template}
    emit(json.dumps(report, indent=2) if fmt == "json" else render_text(card, report))
    if not card.known:
        what = ", ".join(card.architectures) or card.model_type or "none given"
        field = "architectures" if card.architectures else "model_type"
        click.echo(f"llmdoctor: {card.source}: {field}: {what} is not a known architecture; "
                   "the card above is best-effort (model.known = false)", err=True)
        return EXIT_USAGE
    return EXIT_OK


# -- the JSON document ---------------------------------------------------------------------------
def build_report(card: ModelCard, *, kv_dtype: str = "auto", engine: str | None = None,
                 context: int = 32768, gpu_mem: int | None = None) -> dict[str, Any]:
    """The ``llmdoctor.inspect/1`` document (docs/inspect.md)."""
    layout = kv_layout(card, kv_dtype, engine)
    by_engine: dict[str, Any] = {}
    for name in ENGINES:
        try:
            other = kv_layout(card, kv_dtype, name)
        except InputError as exc:
            by_engine[name] = {"error": str(exc)}
            continue
        by_engine[name] = {"bytes_per_token": other.bytes_per_token,
                           "state_bytes_per_sequence": other.state_bytes_per_sequence,
                           "bytes_per_sequence": other.bytes_per_sequence(context)}
    card_dict = card.to_dict()
    return {
        "schema": SCHEMA,
        **{k: card_dict[k] for k in ("model", "attention", "layers", "moe", "mtp_layers", "multimodal",
                                     "modalities", "quantization", "quantization_detail")},
        "kv_cache": _kv_dict(layout, context, by_engine),
        "capacity": _capacity(card, layout, context, gpu_mem),
        "evidence": card_dict["evidence"],
        "notes": card_dict["notes"],
    }


def _kv_dict(layout: KVLayout, context: int, by_engine: dict[str, Any]) -> dict[str, Any]:
    return {
        "engine": layout.engine,
        "dtype": layout.kv_dtype,
        "bytes_per_token": layout.bytes_per_token,
        "growing_bytes_per_token": layout.growing_bytes_per_token,
        "state_bytes_per_sequence": layout.state_bytes_per_sequence,
        "mtp_bytes_per_token": layout.mtp_bytes_per_token,
        "context": context,
        "bytes_per_sequence": layout.bytes_per_sequence(context),
        "components": [
            {"label": c.label, "layers": c.layers, "bytes_per_token_per_layer": round(float(c.bytes_per_token), 4),
             "window": c.window, "formula": c.formula} for c in layout.components],
        "states": [{"label": s.label, "layers": s.layers, "bytes_per_sequence_per_layer": s.bytes_per_sequence,
                    "formula": s.formula} for s in layout.states],
        "by_engine": by_engine,
    }


def _capacity(card: ModelCard, layout: KVLayout, context: int, gpu_mem: int | None) -> dict[str, Any] | None:
    if gpu_mem is None:
        return None
    per_seq = layout.bytes_per_sequence(context)
    budget = gpu_mem - card.weight_bytes
    return {
        "gpu_memory_bytes": gpu_mem,
        "weight_bytes": card.weight_bytes,
        "kv_budget_bytes": max(budget, 0),
        "context": context,
        "bytes_per_sequence": per_seq,
        "users": budget // per_seq if budget > 0 and per_seq else (None if budget <= 0 else 0),
        "min_gpus_for_weights": math.ceil(card.weight_bytes / gpu_mem),
    }


# -- the text card -------------------------------------------------------------------------------
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
            f"≈ {cap['users']} users at {format_tokens(cap['context'])} (upper bound: no activation reserve)")


def _short(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:59] + "…"
