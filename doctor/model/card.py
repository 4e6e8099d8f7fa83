"""The architecture card: what ``analyze`` concludes about a model, as plain frozen dataclasses.

Kept apart from the analysis so that the other parts (plan, lint, check) can import the types
without the parsing code, and so the JSON shape lives next to the fields it serialises.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from doctor.model.fields import shown

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class Evidence:
    """One conclusion and the config fields (path -> value) that decided it."""

    claim: str
    fields: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"claim": self.claim, "fields": {k: shown(v) for k, v in self.fields.items()}}


@dataclass(frozen=True)
class KVGroup:
    """Layers that store the same thing per token, laid out identically.

    ``kind`` is ``attention`` (K and V per KV head), ``mla`` (one latent vector), ``indexer`` (DSA
    indexer keys) or ``dsv4`` (DeepSeek V4 rows: one 512-wide row per ``tokens_per_entry`` tokens).
    A ``window`` means the layers keep only the last ``window`` tokens (sliding or chunked attention).
    """

    kind: str
    label: str
    layers: int
    kv_heads: int = 1
    head_dim: int = 0
    v_head_dim: int = 0
    window: int | None = None
    tokens_per_entry: int = 1
    sparse: bool = False


@dataclass(frozen=True)
class StateGroup:
    """Fixed-size per-sequence state of linear-attention / SSM layers (independent of length).

    Element counts are per layer and per sequence, for the whole model (not divided by TP).
    ``config_ssm_dtype`` is the config field that pins the SSM/temporal dtype when there is one.
    """

    kind: str
    label: str
    layers: int
    conv_elems: int
    ssm_elems: int
    config_ssm_dtype: str | None = None
    config_ssm_cache_dtype: str | None = None


@dataclass(frozen=True)
class Layers:
    """How many decoder layers the model has, and how many of each attention kind."""

    total: int
    kv: int
    linear: int = 0
    sliding: int = 0
    chunked: int = 0
    no_attention: int = 0
    indexer: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"total": self.total, "kv": self.kv, "linear": self.linear, "sliding": self.sliding,
                "chunked": self.chunked, "no_attention": self.no_attention, "indexer": self.indexer}


@dataclass(frozen=True)
class MoE:
    """The mixture of experts: routed experts, experts active per token, shared experts, MoE layers."""

    experts: int
    active: int
    shared: int
    layers: int

    def to_dict(self) -> dict[str, int]:
        return {"experts": self.experts, "active": self.active, "shared": self.shared, "layers": self.layers}


@dataclass(frozen=True)
class Quantization:
    """How the checkpoint's weights are stored.

    ``method`` is the facts vocabulary (``fp8``, ``mxfp4``, ``nvfp4``, ``compressed-tensors``, ``awq``…);
    ``weight_format`` is the element format of the quantized weights; ``bytes_per_param`` includes
    the scales; ``unquantized`` names the parts the checkpoint keeps in 16-bit.
    """

    method: str
    detail: str
    weight_format: str
    bytes_per_param: float
    unquantized: tuple[str, ...] = ()
    expert_bytes_per_param: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "detail": self.detail, "weight_format": self.weight_format,
                "bytes_per_param": round(self.bytes_per_param, 5), "unquantized": list(self.unquantized)}


@dataclass(frozen=True)
class ParamEstimate:
    """Parameter counts estimated from the shapes, by part (so weights can be priced per part)."""

    parts: dict[str, int]
    active: int
    vision: int = 0

    @property
    def total(self) -> int:
        return sum(self.parts.values())


@dataclass(frozen=True)
class ModelCard:
    """Everything ``inspect`` says about a model; every field is derived from config.json alone."""

    name: str
    source: str
    architectures: tuple[str, ...]
    model_type: str
    known: bool
    dtype: str
    attention: str
    full_attention: str
    attention_heads: int
    kv_heads: int
    head_dim: int
    layers: Layers
    kv_groups: tuple[KVGroup, ...]
    states: tuple[StateGroup, ...]
    mtp_kv_groups: tuple[KVGroup, ...]
    moe: MoE | None
    mtp_layers: int
    multimodal: bool
    modalities: tuple[str, ...]
    quantization: Quantization | None
    hidden_size: int
    vocab_size: int | None
    max_context: int | None
    params: int
    active_params: int
    vision_params: int
    weight_bytes: int
    #: bytes of the routed experts alone (sharded by EP rather than TP)
    expert_weight_bytes: int
    param_parts: dict[str, int]
    evidence: tuple[Evidence, ...]
    notes: tuple[str, ...] = ()
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    #: an MLA model's per-head query/key width without RoPE, and its value width (what a release that caches every
    #: head computes per head)
    qk_nope_head_dim: int | None = None
    mla_v_head_dim: int | None = None
    index_topk: int | None = None
    index_head_dim: int | None = None
    sliding_window: int | None = None
    chunk_size: int | None = None
    text_prefix: str = ""
    sglang_supported: bool = True
    #: (engine, its (positions, rotary_dim) rotary cos/sin tables) for vllm and sglang (doctor/model/rope.py)
    rope_tables: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()
    #: card attribute -> the config field path(s) that gave it (the ``source`` of each model.* fact)
    sources: dict[str, str] = field(default_factory=dict)
    #: where ``weight_bytes`` comes from: "estimate" (layer shapes) or "safetensors" (the checkpoint's headers)
    weight_source: str = "estimate"
    #: how ``weight_bytes`` was reached, and any assumption it rests on (doctor/model/weights.py)
    weight_detail: str = "derived: estimate from layer shapes (doctor/model/params.py) at the checkpoint quantization"

    def rope_tables_for(self, engine: str) -> tuple[tuple[int, int], ...]:
        """The (positions, rotary_dim) rotary tables ``engine`` builds for this model (() when none is known)."""
        return next((tables for name, tables in self.rope_tables if name == engine), ())

    def to_dict(self) -> dict[str, Any]:
        """The card as JSON-able data (the ``model``/``attention``/… parts of ``llmdoctor.inspect/1``)."""
        return {
            "model": {
                "name": self.name, "source": self.source, "architectures": list(self.architectures),
                "model_type": self.model_type, "known": self.known, "dtype": self.dtype,
                "hidden_size": self.hidden_size, "vocab_size": self.vocab_size,
                "max_context": self.max_context, "params": self.params,
                "active_params": self.active_params, "vision_params": self.vision_params,
                "weight_bytes": self.weight_bytes, "weight_source": self.weight_source,
                "weight_detail": self.weight_detail,
            },
            "attention": {
                "kind": self.attention, "full_attention": self.full_attention,
                "heads": self.attention_heads, "kv_heads": self.kv_heads, "head_dim": self.head_dim,
                "kv_lora_rank": self.kv_lora_rank, "qk_rope_head_dim": self.qk_rope_head_dim,
                "index_topk": self.index_topk, "index_head_dim": self.index_head_dim,
                "sliding_window": self.sliding_window, "chunk_size": self.chunk_size,
            },
            "layers": self.layers.to_dict(),
            "moe": None if self.moe is None else self.moe.to_dict(),
            "mtp_layers": self.mtp_layers,
            "multimodal": self.multimodal,
            "modalities": list(self.modalities),
            "quantization": None if self.quantization is None else self.quantization.method,
            "quantization_detail": None if self.quantization is None else self.quantization.to_dict(),
            "evidence": [e.to_dict() for e in self.evidence],
            "notes": list(self.notes),
        }
