"""KV cache bytes per token and recurrent state bytes per sequence, laid out the way vLLM 0.33.0 and
SGLang 0.5.23 lay them out.

Every number is a whole-model figure for one copy of the cache (not divided by TP: an MLA latent
or an indexer key is held whole by every TP rank, and GQA heads split across ranks sum back to the
same total). Formulas, with the engine source they were checked against:

  attention      kv_heads × (head_dim + v_head_dim) × bytes per layer
                 (vllm v1/kv_cache_interface.py:586-590; K and V widths differ for MiMo-V2);
                 fp4 is NVFP4: d/2 data + d/16 fp8 scales per head and side
                 (vllm utils/torch_utils.py:542-544; sglang mem_cache/memory_pool.py:3621-3680)
  MLA            one latent of kv_lora_rank + qk_rope_head_dim values per layer, num_kv_heads = 1
                 (vllm model_executor/layers/attention/mla_attention.py:1371-1400)
  MLA under DSA  the sparse kernels' fp8 layout: 512 fp8 + 4 fp32 scales + 64 bf16 RoPE = 656 bytes
                 (vllm mla_attention.py:1384-1388 fp8_ds_mla; sglang kv_cache_configurator.py:3458-3472);
                 vLLM's fp4 layout nvfp4_ds_mla is 352 bytes (vllm flashmla_sparse.py:111-123)
  DSA indexer    fp8 keys + one fp32 scale per 128 values: 128 + 4 = 132 bytes per indexer layer,
                 whatever the KV dtype (vllm model_executor/models/deepseek_v2.py:727-735;
                 sglang mem_cache/index_key_cache.py:40-47)
  DeepSeek V4    584-byte fp8 rows (448 fp8 NoPE + 64 bf16 RoPE + 8 scale bytes) or 1024-byte bf16
                 rows; a 128-token window on every layer plus rows compressed 4:1 / 128:1
                 (vllm models/deepseek_v4/attention.py:860-883; sglang deepseek_v4_memory_pool.py:313)
  linear / SSM   conv state + SSM/recurrent state per layer, per sequence; dtypes as each engine picks
                 them (see ``_state_dtypes``)

Numbers are the cache *content*; vLLM rounds DeepSeek V4 pages up to a 576-byte multiple and both
engines round to whole blocks, which adds a little on top. Compressed rows make per-token shares
fractional (a c128 row is 584/128 bytes per token); the divisors are powers of two, so the float
arithmetic below is exact and the totals are rounded up once, at the end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from doctor.errors import InputError
from doctor.model.card import KVGroup, ModelCard, StateGroup

ENGINES = ("vllm", "sglang")
KV_DTYPES = ("bf16", "fp16", "fp32", "fp8", "fp4")
_ALIASES = {
    "auto": "auto",
    "bf16": "bf16", "bfloat16": "bf16",
    "fp16": "fp16", "float16": "fp16", "half": "fp16",
    "fp32": "fp32", "float32": "fp32", "float": "fp32",
    "fp8": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "fp8_inc": "fp8", "fp8_ds_mla": "fp8",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "e4m3": "fp8", "e5m2": "fp8",
    "fp4": "fp4", "nvfp4": "fp4", "nvfp4_ds_mla": "fp4", "fp4_e2m1": "fp4", "float4_e2m1fn_x2": "fp4",
}
_ELEM_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}
_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4}

DS_MLA_FP8 = 656   # vllm mla_attention.py:1386; sglang kv_cache_configurator.py:3468-3472
DS_MLA_FP4 = 352   # vllm flashmla_sparse.py:111-123 (nvfp4_ds_mla)
DSV4_FP8_ROW = 584  # vllm flashmla_sparse.py:89-97; sglang deepseek_v4_memory_pool.py:313-316
INDEX_QUANT_BLOCK = 128


def normalize_kv_dtype(name: str, checkpoint_dtype: str = "bfloat16") -> str:
    """Canonical KV dtype (bf16, fp16, fp32, fp8, fp4); ``auto`` is the checkpoint's 16-bit dtype.

    A float32 checkpoint is served in bfloat16 (vllm config/model.py:2440-2442), so ``auto`` gives bf16.
    """
    canonical = _ALIASES.get(str(name).strip().lower())
    if canonical is None:
        raise InputError(f"--kv-dtype: unknown KV cache dtype {name!r} "
                         f"(expected auto, {', '.join(KV_DTYPES)} or an engine spelling like fp8_e4m3)")
    if canonical == "auto":
        return {"float16": "fp16"}.get(checkpoint_dtype, "bf16")
    return canonical


@dataclass(frozen=True)
class KVComponent:
    """One group of layers' share: ``bytes_per_token`` is per layer (fractional for compressed rows)."""

    label: str
    layers: int
    bytes_per_token: float
    window: int | None
    formula: str

    @property
    def total_per_token(self) -> float:
        return self.bytes_per_token * self.layers


@dataclass(frozen=True)
class StateComponent:
    """One part of the fixed per-sequence state (linear-attention/SSM layers): its size and how it was worked out."""

    label: str
    layers: int
    bytes_per_sequence: int
    formula: str


@dataclass(frozen=True)
class KVLayout:
    """Everything one engine stores for a model at one KV dtype: per-token KV and per-sequence state."""

    engine: str
    kv_dtype: str
    components: tuple[KVComponent, ...]
    states: tuple[StateComponent, ...]
    mtp: tuple[KVComponent, ...]

    @property
    def bytes_per_token(self) -> int:
        """KV bytes per token over every KV-holding layer of the main model (windowed layers included)."""
        return math.ceil(sum(c.total_per_token for c in self.components))

    @property
    def growing_bytes_per_token(self) -> int:
        """The part that keeps growing with context (layers without a sliding/chunk window)."""
        return math.ceil(sum(c.total_per_token for c in self.components if c.window is None))

    @property
    def state_bytes_per_sequence(self) -> int:
        return sum(s.bytes_per_sequence * s.layers for s in self.states)

    @property
    def mtp_bytes_per_token(self) -> int:
        """Extra KV per token when the MTP layers run as speculative-decoding drafts."""
        return math.ceil(sum(c.total_per_token for c in self.mtp))

    def bytes_per_sequence(self, context: int) -> int:
        """KV + state for one sequence of ``context`` tokens: windowed layers stop at their window."""
        kv = sum(c.total_per_token * (min(context, c.window) if c.window else context) for c in self.components)
        return math.ceil(kv) + self.state_bytes_per_sequence


def kv_layout(card: ModelCard, kv_dtype: str = "auto", engine: str | None = None, *,
              indexer_dtype: str = "fp8") -> KVLayout:
    """The KV/state layout of ``card`` under ``engine`` (None: vLLM, or SGLang where only it can).

    ``indexer_dtype`` overrides the DSA indexer-key dtype (the engines always use fp8 with fp32
    scales; ``bf16`` reproduces estimates that assume a 16-bit indexer, like the seed's V3.2 figure).
    """
    if engine is not None and engine not in ENGINES:
        raise InputError(f"--engine: unknown engine {engine!r} (expected vllm or sglang)")
    candidates = (engine,) if engine else ENGINES
    failure: InputError | None = None
    for name in candidates:
        try:
            return _layout(card, kv_dtype, name, indexer_dtype)
        except InputError as exc:
            failure = failure or exc
    assert failure is not None
    raise failure


def kv_bytes_per_token(card: ModelCard, kv_dtype: str = "auto", engine: str | None = None) -> int:
    return kv_layout(card, kv_dtype, engine).bytes_per_token


def state_bytes_per_sequence(card: ModelCard, engine: str | None = None) -> int:
    return kv_layout(card, "auto", engine).state_bytes_per_sequence


def kv_bytes_per_sequence(card: ModelCard, context: int, kv_dtype: str = "auto",
                          engine: str | None = None) -> int:
    return kv_layout(card, kv_dtype, engine).bytes_per_sequence(context)


def resolve_kv_dtype(card: ModelCard, kv_dtype: str) -> str:
    """``auto`` as the engines resolve it: DeepSeek V4 defaults to fp8 in both engines
    (vllm models/deepseek_v4/attention.py:108-110; sglang arg_groups/overrides.py:892-905)."""
    if str(kv_dtype).strip().lower() == "auto" and any(g.kind == "dsv4" for g in card.kv_groups):
        return "fp8"
    return normalize_kv_dtype(kv_dtype, card.dtype)


def _layout(card: ModelCard, kv_dtype: str, engine: str, indexer_dtype: str) -> KVLayout:
    dtype = resolve_kv_dtype(card, kv_dtype)
    if engine == "sglang" and not card.sglang_supported:
        raise InputError(f"{card.source}: model_type: SGLang 0.5.23 has no {card.model_type} model")
    components = tuple(_component(g, dtype, engine, indexer_dtype) for g in card.kv_groups)
    mtp = tuple(_component(g, dtype, engine, indexer_dtype) for g in card.mtp_kv_groups)
    states = tuple(_state(s, card, engine) for s in card.states)
    return KVLayout(engine, dtype, components, states, mtp)


def _nvfp4(width: int) -> int:
    return width // 2 + width // 16


def _component(g: KVGroup, dtype: str, engine: str, indexer_dtype: str) -> KVComponent:
    per, formula = _bytes_per_entry(g, dtype, engine, indexer_dtype)
    if g.tokens_per_entry > 1:
        formula = f"({formula}) / {g.tokens_per_entry} tokens"
    return KVComponent(g.label, g.layers, per / g.tokens_per_entry, g.window, formula)


def _bytes_per_entry(g: KVGroup, dtype: str, engine: str, indexer_dtype: str) -> tuple[int, str]:
    if g.kind == "attention":
        if dtype == "fp4":
            per = g.kv_heads * (_nvfp4(g.head_dim) + _nvfp4(g.v_head_dim))
            return per, f"{g.kv_heads} KV heads × (NVFP4 K {g.head_dim}/2+{g.head_dim}/16 + V {g.v_head_dim}/2+{g.v_head_dim}/16)"
        b = _ELEM_BYTES[dtype]
        if g.head_dim == g.v_head_dim:
            return 2 * g.kv_heads * g.head_dim * b, f"2 × {g.kv_heads} KV heads × {g.head_dim} × {b} B"
        return (g.kv_heads * (g.head_dim + g.v_head_dim) * b,
                f"{g.kv_heads} KV heads × (K {g.head_dim} + V {g.v_head_dim}) × {b} B")
    if g.kind == "mla":
        return _mla_bytes(g, dtype, engine)
    if g.kind == "indexer":
        d = g.head_dim
        if indexer_dtype == "fp8":
            return d + d // INDEX_QUANT_BLOCK * 4, f"{d} fp8 + {d // INDEX_QUANT_BLOCK} fp32 scale(s)"
        if indexer_dtype == "fp4":
            return d // 2 + d // 32, f"{d}/2 mxfp4 + {d // 32} UE8M0 scales"
        b = _ELEM_BYTES[normalize_kv_dtype(indexer_dtype)]
        return d * b, f"{d} × {b} B"
    if g.kind == "dsv4":
        if dtype == "fp8":
            return DSV4_FP8_ROW, "448 fp8 NoPE + 64 bf16 RoPE + 8 scale bytes"
        if dtype == "bf16":
            return g.head_dim * 2, f"{g.head_dim} × 2 B"
        raise InputError(f"--kv-dtype {dtype}: DeepSeek V4 caches only fp8 or bf16 rows in vLLM 0.33.0 and "
                         "SGLang 0.5.23")
    raise AssertionError(f"unknown KV group kind {g.kind}")


def _mla_bytes(g: KVGroup, dtype: str, engine: str) -> tuple[int, str]:
    width = g.head_dim
    if dtype == "fp4":
        if g.sparse:
            if engine == "sglang":
                raise InputError("--kv-dtype fp4: SGLang 0.5.23 stores DSA KV only as bf16 or fp8_e4m3 "
                                 "(arg_groups/overrides.py:541-544)")
            return DS_MLA_FP4, "nvfp4_ds_mla: 256 fp4 NoPE + 64 fp8 RoPE + 32 scales"
        if engine == "vllm":
            raise InputError("--kv-dtype fp4: vLLM 0.33.0 has no fp4 KV layout for dense MLA "
                             "(only nvfp4_ds_mla for DSA models)")
        return _nvfp4(width), f"NVFP4 latent {width}/2 + {width}/16 scales"
    if dtype == "fp8" and g.sparse:
        return DS_MLA_FP8, "fp8_ds_mla: 512 fp8 + 4 fp32 scales + 64 bf16 RoPE (656 B)"
    b = _ELEM_BYTES[dtype]
    return width * b, f"latent {width} × {b} B"


#: vLLM's default SSM-state dtype per family when the user leaves --mamba-ssm-cache-dtype at auto
#: (vllm model_executor/models/config.py:812-833: NemotronH defaults to float32).
_VLLM_SSM_DEFAULT = {"nemotron_h": "float32"}


def _state_dtypes(s: StateGroup, card: ModelCard, engine: str) -> tuple[str, str]:
    """(conv dtype, SSM/recurrent dtype) for one engine.

    vLLM: conv follows the model dtype (mamba_cache_dtype auto); the SSM state follows
    --mamba-ssm-cache-dtype, whose auto is the conv dtype, except that Qwen3.5 pins it to the
    config's mamba_ssm_dtype (config.py:953-978), NemotronH to mamba_ssm_cache_dtype or float32
    (config.py:812-833), and KDA always uses float32 (layers/mamba/mamba_utils.py:133-150).
    SGLang: conv is bfloat16 and the SSM state float32 unless the config's mamba_ssm_dtype says
    otherwise (configs/mamba_utils.py:46-104); KDA ignores the config (kimi_linear.py:173-182).
    """
    if s.kind == "dsv4_compressor":
        return "float32", "float32"
    if engine == "vllm":
        conv = card.dtype if card.dtype != "float32" else "bfloat16"
        if s.kind == "kda":
            return conv, "float32"
        if s.kind == "mamba2" and card.model_type in _VLLM_SSM_DEFAULT:
            return conv, s.config_ssm_cache_dtype or _VLLM_SSM_DEFAULT[card.model_type]
        if s.kind == "gdn" and s.config_ssm_dtype:
            return conv, s.config_ssm_dtype
        return conv, conv
    if s.kind == "lightning":
        raise InputError(f"{card.source}: SGLang 0.5.23 state layout for lightning attention is not modelled")
    if s.kind == "kda":
        return "bfloat16", "float32"
    return "bfloat16", s.config_ssm_dtype or "float32"


def _state(s: StateGroup, card: ModelCard, engine: str) -> StateComponent:
    conv_dtype, ssm_dtype = _state_dtypes(s, card, engine)
    try:
        conv_b, ssm_b = _DTYPE_BYTES[conv_dtype], _DTYPE_BYTES[ssm_dtype]
    except KeyError as exc:
        raise InputError(f"{card.source}: mamba_ssm_dtype: unknown dtype {exc.args[0]!r}") from None
    per = s.conv_elems * conv_b + s.ssm_elems * ssm_b
    formula = (f"conv {s.conv_elems} × {conv_b} B ({conv_dtype}) + " if s.conv_elems else "") + \
        f"state {s.ssm_elems} × {ssm_b} B ({ssm_dtype})"
    return StateComponent(s.label, s.layers, per, formula)
