"""Parameter and weight estimates from shapes, against the totals the model makers publish.

Totals are checked within 2% (most land within 0.5%); active counts follow OpenAI's gpt-oss
convention (every weight a token's forward pass multiplies by, so the input embedding is left out)
and are checked within 6%, since vendors count embeddings differently.
"""

from __future__ import annotations

import pytest
from conftest import requires_shared, shared_config

from doctor.model.architecture import analyze
from doctor.model.config import load_config

GiB = 2**30

# file -> (published total, published active or None), both in parameters.
PUBLISHED = {
    "deepseek-ai__DeepSeek-V3.json": (671e9, 37e9),             # main model, MTP excluded
    "Qwen__Qwen3-235B-A22B.json": (235e9, 22e9),
    "Qwen__Qwen3-30B-A3B.json": (30.5e9, None),
    "openai__gpt-oss-120b.json": (116.83e9, 5.13e9),
    "openai__gpt-oss-20b.json": (20.91e9, 3.61e9),
    "meta-llama__Meta-Llama-3.1-8B.json": (8.03e9, None),
    "meta-llama__Meta-Llama-3.1-70B.json": (70.6e9, None),
    "meta-llama__Meta-Llama-3.1-405B.json": (405.9e9, None),
    "mistralai__Mixtral-8x7B-v0.1.json": (46.7e9, 12.9e9),
    "moonshotai__Kimi-K2-Instruct.json": (1.04e12, 32e9),
    "meta-llama__Llama-4-Maverick-17B-128E-Instruct.json": (400e9, 17e9),
    "deepseek-ai__DeepSeek-V4-Flash.json": (284e9, 13e9),    # the seed's figures
    "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json": (31.6e9, 3.2e9),
    "nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4.json": (120e9, 12e9),  # the name's; experts at moe_latent_size
    "XiaomiMiMo__MiMo-V2-Flash.json": (309e9, 15e9),
    "google__gemma-4-26B-A4B.json": (25.2e9, None),
}


def card(name: str):
    loaded = load_config(str(shared_config(name)))
    return analyze(loaded.raw, name=loaded.name, source=str(loaded.path))


@requires_shared
@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_params_match_published_totals(name: str) -> None:
    total, active = PUBLISHED[name]
    c = card(name)
    assert c.params == pytest.approx(total, rel=0.02)
    if active is not None:
        assert c.active_params == pytest.approx(active, rel=0.06)
    assert sum(c.param_parts.values()) == c.params


@requires_shared
def test_gpt_oss_weight_bytes_match_the_published_checkpoint_size() -> None:
    # OpenAI's model card: 60.8 GiB and 12.8 GiB (experts MXFP4, the rest bf16).
    assert card("openai__gpt-oss-120b.json").weight_bytes / GiB == pytest.approx(60.8, rel=0.01)
    assert card("openai__gpt-oss-20b.json").weight_bytes / GiB == pytest.approx(12.8, rel=0.01)


@requires_shared
def test_fp8_checkpoint_is_about_one_byte_per_parameter() -> None:
    c = card("deepseek-ai__DeepSeek-V3.json")
    # Linear weights at 1 byte + a float32 scale per 128×128 block; embeddings, lm_head, routers bf16.
    sixteen_bit = c.param_parts["embed"] + c.param_parts["lm_head"] + c.param_parts["router"]
    quantized = c.params - sixteen_bit
    assert c.weight_bytes == int(quantized * (1 + 4 / 128**2) + sixteen_bit * 2)


@requires_shared
def test_int4_checkpoint_quantizes_only_the_routed_experts() -> None:
    c = card("moonshotai__Kimi-K2.5.json")
    assert c.quantization.weight_format == "int4"
    assert set(c.quantization.unquantized) >= {"attention", "shared_experts", "dense_mlp", "lm_head"}
    experts = c.param_parts["experts"]
    rest = c.params - experts
    # int4 with a 16-bit scale per group of 32; the vision tower in 16-bit on top.
    assert c.weight_bytes == int(experts * (0.5 + 2 / 32) + rest * 2 + c.vision_params * 2)


@requires_shared
def test_deepseek_v4_experts_are_fp4_and_the_rest_fp8() -> None:
    c = card("deepseek-ai__DeepSeek-V4-Flash.json")
    assert c.quantization.expert_bytes_per_param == 0.5 + 1 / 32
    assert c.weight_bytes / GiB == pytest.approx(145, rel=0.02)


def test_bundled_gqa_scenario_is_27b_class() -> None:
    loaded = load_config("example:seed-gqa-27b")
    c = analyze(loaded.raw, name=loaded.name)
    assert 26e9 < c.params < 29e9
    assert c.active_params == c.params - c.param_parts["embed"]
