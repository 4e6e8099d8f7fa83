"""KV cache and state sizing: the seed's worked examples, KV dtypes, engine layouts, windows, MTP.

Bundled scenarios (doctor/examples) stand in for the seed's described models; real configs come
from fixtures and skip when absent.
"""

from __future__ import annotations

import pytest
from conftest import requires_shared, shared_config

from doctor.errors import InputError
from doctor.model.architecture import analyze
from doctor.model.config import load_config
from doctor.model.kvcache import (
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    kv_layout,
    normalize_kv_dtype,
    state_bytes_per_sequence,
)

GiB = 2**30


def card_of(spec: str):
    loaded = load_config(spec)
    return analyze(loaded.raw, name=loaded.name, source=str(loaded.path))


def real(name: str):
    return card_of(str(shared_config(name)))


# -- the seed's worked examples ------------------------------------------------------------------
def test_seed_mha_27b_is_384_kib_per_token_at_fp8() -> None:
    card = card_of("example:seed-mha-27b")
    assert card.attention == "mha"
    assert kv_bytes_per_token(card, "fp8") == 2 * 48 * 32 * 128 * 1 == 393_216
    # One 32k user: 384 KiB × 32768 = exactly 12 GiB (the seed prints "≈ 12.6 GB", see docs/inspect.md).
    assert kv_bytes_per_sequence(card, 32_768, "fp8") == 12 * GiB


def test_seed_gqa_27b_is_96_kib_per_token_at_fp8() -> None:
    card = card_of("example:seed-gqa-27b")
    assert card.attention == "gqa"
    assert kv_bytes_per_token(card, "fp8") == 2 * 48 * 8 * 128 * 1 == 98_304
    assert kv_bytes_per_sequence(card, 32_768, "fp8") == 3 * GiB


def test_seed_dsa_61_layers_1m_context_is_83_9_gib_with_a_bf16_indexer() -> None:
    card = card_of("example:seed-dsa-moe")
    seed = kv_layout(card, "bf16", indexer_dtype="bf16")
    assert seed.bytes_per_token == 61 * ((512 + 64) * 2 + 128 * 2)
    assert round(seed.bytes_per_sequence(2**20) / GiB, 1) == 83.9
    # The engines store indexer keys as fp8 + an fp32 scale (132 B), not bf16 (256 B).
    engine = kv_layout(card, "bf16")
    assert engine.bytes_per_token == 61 * ((512 + 64) * 2 + 132)
    assert round(engine.bytes_per_sequence(2**20) / GiB, 1) == 76.5


@requires_shared
def test_seed_deepseek_v4_1m_context_is_9_62_gib_at_bf16() -> None:
    card = real("deepseek-ai__DeepSeek-V4-Pro.json")
    layout = kv_layout(card, "bf16", indexer_dtype="bf16")
    kv_only = layout.bytes_per_sequence(2**20) - layout.state_bytes_per_sequence
    # 30 c4 layers × (1024 + 256) / 4 + 31 c128 layers × 1024 / 128 per token, plus a 128-token window on 61 layers.
    assert kv_only == (30 * (1024 + 256) // 4 + 31 * 1024 // 128) * 2**20 + 61 * 1024 * 128
    assert round(kv_only / GiB, 2) == 9.62
    v32 = kv_layout(card_of("example:seed-dsa-moe"), "bf16", indexer_dtype="bf16").bytes_per_sequence(2**20)
    assert round(v32 / kv_only, 1) == 8.7


def test_seed_hybrid_full_attention_layer_is_2_kib_per_token() -> None:
    layout = kv_layout(card_of("example:seed-hybrid-moe"))
    (full,) = layout.components
    assert full.layers == 12 and full.bytes_per_token == 2 * 2 * 256 * 2 == 2048


# -- KV dtypes ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "checkpoint", "want"), [
    ("auto", "bfloat16", "bf16"), ("auto", "float16", "fp16"), ("auto", "float32", "bf16"),
    ("bfloat16", "bfloat16", "bf16"), ("FP8_E4M3", "bfloat16", "fp8"), ("fp8_e5m2", "bfloat16", "fp8"),
    ("fp8_ds_mla", "bfloat16", "fp8"), ("nvfp4", "bfloat16", "fp4"), ("half", "bfloat16", "fp16"),
])
def test_kv_dtype_names_normalise(name: str, checkpoint: str, want: str) -> None:
    assert normalize_kv_dtype(name, checkpoint) == want


def test_unknown_kv_dtype_names_the_flag() -> None:
    with pytest.raises(InputError, match="--kv-dtype: unknown KV cache dtype 'int3'"):
        normalize_kv_dtype("int3")


@requires_shared
def test_fp16_checkpoint_auto_is_fp16_and_still_two_bytes() -> None:
    card = real("meta-llama__Llama-2-7b-hf.json")
    layout = kv_layout(card)
    assert layout.kv_dtype == "fp16" and layout.bytes_per_token == 2 * 32 * 32 * 128 * 2


@requires_shared
def test_gqa_fp4_is_nvfp4_data_plus_scales() -> None:
    card = real("meta-llama__Meta-Llama-3.1-8B.json")
    # Per head and side: 128 / 2 bytes of fp4 + 128 / 16 fp8 scales = 72 bytes.
    assert kv_bytes_per_token(card, "fp4") == 32 * 8 * (72 + 72)
    assert kv_bytes_per_token(card, "fp4", "sglang") == kv_bytes_per_token(card, "fp4", "vllm")


# -- MLA / DSA / V4 engine layouts ------------------------------------------------------------------
@requires_shared
def test_dense_mla_fp8_is_one_byte_per_latent_value() -> None:
    card = real("deepseek-ai__DeepSeek-V3.json")
    assert kv_bytes_per_token(card, "fp8", "vllm") == 61 * 576
    assert kv_bytes_per_token(card, "fp8", "sglang") == 61 * 576
    # The MLA latent is not split by TP: the number does not depend on any parallel setting.
    assert kv_layout(card).components[0].layers == 61


@requires_shared
def test_dsa_fp8_uses_the_656_byte_ds_mla_layout_in_both_engines() -> None:
    card = real("zai-org__GLM-5.2.json")
    for engine in ("vllm", "sglang"):
        assert kv_bytes_per_token(card, "fp8", engine) == 78 * 656 + 21 * 132


@requires_shared
def test_fp4_mla_differs_by_engine() -> None:
    v3 = real("deepseek-ai__DeepSeek-V3.json")
    with pytest.raises(InputError, match="vLLM 0.33.0 has no fp4 KV layout for dense MLA"):
        kv_bytes_per_token(v3, "fp4", "vllm")
    assert kv_bytes_per_token(v3, "fp4", "sglang") == 61 * (576 // 2 + 576 // 16)
    # No engine given: the layout of the engine that has one.
    fallback = kv_layout(v3, "fp4")
    assert fallback.engine == "sglang" and fallback.bytes_per_token == 61 * 324
    v32 = real("deepseek-ai__DeepSeek-V3.2.json")
    assert kv_bytes_per_token(v32, "fp4", "vllm") == 61 * 352 + 61 * 132
    with pytest.raises(InputError, match="SGLang 0.5.23 stores DSA KV only as bf16 or fp8_e4m3"):
        kv_bytes_per_token(v32, "fp4", "sglang")


@requires_shared
def test_deepseek_v4_defaults_to_fp8_rows_and_accepts_bf16() -> None:
    card = real("deepseek-ai__DeepSeek-V4-Flash.json")
    assert kv_layout(card).kv_dtype == "fp8"
    bf16 = kv_layout(card, "bf16")
    assert bf16.bytes_per_token * 128 == 43 * 1024 * 128 + 21 * 1024 * 32 + 21 * 132 * 32 + 20 * 1024
    with pytest.raises(InputError, match="DeepSeek V4 caches only fp8 or bf16"):
        kv_layout(card, "fp4")


# -- windows, state, MTP ---------------------------------------------------------------------------
@requires_shared
def test_sliding_layers_stop_growing_at_their_window() -> None:
    card = real("openai__gpt-oss-120b.json")
    per_layer = 2 * 8 * 64 * 2
    layout = kv_layout(card)
    assert layout.growing_bytes_per_token == 18 * per_layer
    assert layout.bytes_per_sequence(32_768) == 18 * per_layer * 32_768 + 18 * per_layer * 128


@requires_shared
def test_llama4_chunked_layers_keep_one_chunk() -> None:
    card = real("meta-llama__Llama-4-Scout-17B-16E-Instruct.json")
    per_layer = 2 * 8 * 128 * 2
    assert kv_bytes_per_sequence(card, 32_768) == 12 * per_layer * 32_768 + 36 * per_layer * 8192


@requires_shared
def test_hybrid_sequence_is_full_layers_plus_fixed_state() -> None:
    card = real("Qwen__Qwen3.5-27B.json")
    state = state_bytes_per_sequence(card)
    assert kv_bytes_per_sequence(card, 1000) == 2 * 16 * 4 * 256 * 2 * 1000 + state
    assert kv_bytes_per_sequence(card, 100_000) - kv_bytes_per_sequence(card, 99_999) == 2 * 16 * 4 * 256 * 2


@requires_shared
def test_mtp_layers_are_reported_apart_from_the_main_number() -> None:
    v3 = kv_layout(real("deepseek-ai__DeepSeek-V3.json"))
    assert v3.bytes_per_token == 61 * 576 * 2 and v3.mtp_bytes_per_token == 576 * 2
    v32 = kv_layout(real("deepseek-ai__DeepSeek-V3.2.json"))
    assert v32.mtp_bytes_per_token == 576 * 2 + 132
    qwen = kv_layout(real("Qwen__Qwen3.5-27B.json"))
    assert qwen.mtp_bytes_per_token == 2 * 4 * 256 * 2
    assert kv_layout(real("Qwen__Qwen3-8B.json")).mtp_bytes_per_token == 0


def test_unknown_engine_is_refused() -> None:
    with pytest.raises(InputError, match="--engine: unknown engine 'trt'"):
        kv_layout(card_of("example:seed-gqa-27b"), engine="trt")


def test_default_engine_is_vllm() -> None:
    assert kv_layout(card_of("example:seed-gqa-27b")).engine == "vllm"
