"""``llmdoctor inspect``'s document: the architecture card of a model, its KV cache per engine, and a quick
capacity line (the ``llmdoctor.inspect/1`` schema, docs/inspect.md)."""

from __future__ import annotations

import math

from doctor.errors import InputError
from doctor.model.card import ModelCard
from doctor.model.kvcache import ENGINES, KVLayout, kv_layout

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "llmdoctor.inspect/1"


class Sizing:
    """What the card's KV and capacity lines are sized for, as `inspect`'s flags give them (--kv-dtype, --engine,
    --context, --gpu-mem): :meth:`keywords` are ``build_report``'s. (A plain class: a NamedTuple is built by
    exec'ing code, a cost on the path of the command.)"""

    __slots__ = ("kv_dtype", "engine", "context", "gpu_mem")

    def __init__(self, kv_dtype: str = "auto", engine: str | None = None, context: int = 32768,
                 gpu_mem: int | None = None) -> None:
        self.kv_dtype, self.engine, self.context, self.gpu_mem = kv_dtype, engine, context, gpu_mem

    def keywords(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


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
        "capacity": _capacity(card, layout, context, gpu_mem, engine),
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


def _capacity(card: ModelCard, layout: KVLayout, context: int, gpu_mem: int | None,
              engine: str | None) -> dict[str, Any] | None:
    if gpu_mem is None:
        return None
    from doctor.model.band import band_from_card

    per_seq = layout.bytes_per_sequence(context)
    budget = gpu_mem - card.weight_bytes
    # --gpu-mem names no GPU kind: the band is that of the engine's runs on any GPU (docs/plan.md error record)
    band = band_from_card(card, engine or "vllm", None)
    return {
        "gpu_memory_bytes": gpu_mem,
        "weight_bytes": card.weight_bytes,
        "kv_budget_bytes": max(budget, 0),
        "context": context,
        "bytes_per_sequence": per_seq,
        "users": budget // per_seq if budget > 0 and per_seq else (None if budget <= 0 else 0),
        "min_gpus_for_weights": math.ceil(card.weight_bytes / gpu_mem),
        "band": band.to_dict(),
    }


# -- the text card -------------------------------------------------------------------------------
