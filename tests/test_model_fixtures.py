"""Every real config under fixtures/configs classified and sized, against hand arithmetic.

The expected KV bytes per token are written as the engine formula with the config's numbers
(default KV dtype = the checkpoint's bf16; DeepSeek V4 defaults to fp8 in both engines):

  GQA/MHA/MQA   2 × kv_layers × kv_heads × head_dim × 2 B
  MLA           layers × (kv_lora_rank + qk_rope_head_dim) × 2 B
  DSA           MLA latent + indexer layers × (128 fp8 + 4 B scale)
  DeepSeek V4   584-byte fp8 rows: window rows on every layer, c4 rows /4, c4 indexer keys (132 B) /4,
                c128 rows /128
  hybrid        full-attention layers only; state per sequence = linear layers × (conv + SSM state)

Notes on the files (SOURCES.md): gemma-3-27b-it is rebuilt from a test config (status C) without
layer_types, so its sliding layers come from the transformers default pattern (every 6th layer
full); the two ``.reconstructed`` files are transformers defaults, not checkpoints (status F): the
Kimi-Linear one says 6 full-attention layers where the real checkpoint has 7 (docs/inspect.md).
"""

from __future__ import annotations

import pytest
from conftest import SHARED_FIXTURES, requires_shared, shared_config

from doctor.model.architecture import analyze
from doctor.model.config import load_config
from doctor.model.kvcache import kv_layout

GDN = "gdn"
# name -> expectations. layers = (total, kv, linear, sliding); moe = (experts, active, shared)
CASES: dict[str, dict] = {
    "MiniMaxAI__MiniMax-M2.7.json": dict(
        kind="gqa", layers=(62, 62, 0, 0), moe=(256, 8, 0), mtp=3, mm=False, quant="fp8",
        kv=2 * 62 * 8 * 128 * 2),
    "Qwen__Qwen2.5-72B.json": dict(kind="gqa", layers=(80, 80, 0, 0), moe=None, kv=2 * 80 * 8 * 128 * 2),
    "Qwen__Qwen2.5-7B.json": dict(kind="gqa", layers=(28, 28, 0, 0), moe=None, kv=2 * 28 * 4 * 128 * 2),
    "Qwen__Qwen3-235B-A22B.json": dict(kind="gqa", layers=(94, 94, 0, 0), moe=(128, 8, 0), kv=2 * 94 * 4 * 128 * 2),
    "Qwen__Qwen3-30B-A3B.json": dict(kind="gqa", layers=(48, 48, 0, 0), moe=(128, 8, 0), kv=2 * 48 * 4 * 128 * 2),
    "Qwen__Qwen3-32B.json": dict(kind="gqa", layers=(64, 64, 0, 0), moe=None, kv=2 * 64 * 8 * 128 * 2),
    "Qwen__Qwen3-8B.json": dict(kind="gqa", layers=(36, 36, 0, 0), moe=None, kv=2 * 36 * 8 * 128 * 2),
    "Qwen__Qwen3-Coder-480B-A35B-Instruct.json": dict(
        kind="gqa", layers=(62, 62, 0, 0), moe=(160, 8, 0), kv=2 * 62 * 8 * 128 * 2),
    "Qwen__Qwen3-Next-80B-A3B-Thinking.json": dict(
        kind="hybrid", full="gqa", layers=(48, 12, 36, 0), moe=(512, 10, 1), kv=2 * 12 * 2 * 256 * 2,
        # GDN conv (2·16·128 + 32·128) × 3 taps in bf16; recurrent 32×128×128: bf16 in vLLM
        # (auto = model dtype, no mamba_ssm_dtype in this config), float32 in SGLang.
        state=36 * ((2 * 16 * 128 + 32 * 128) * 3 * 2 + 32 * 128 * 128 * 2),
        sglang_state=36 * ((2 * 16 * 128 + 32 * 128) * 3 * 2 + 32 * 128 * 128 * 4)),
    "Qwen__Qwen3-VL-235B-A22B-Instruct.json": dict(
        kind="gqa", layers=(94, 94, 0, 0), moe=(128, 8, 0), mm=True, kv=2 * 94 * 4 * 128 * 2),
    "Qwen__Qwen3-VL-30B-A3B-Instruct.json": dict(
        kind="gqa", layers=(48, 48, 0, 0), moe=(128, 8, 0), mm=True, kv=2 * 48 * 4 * 128 * 2),
    "Qwen__Qwen3-VL-8B-Instruct.json": dict(kind="gqa", layers=(36, 36, 0, 0), moe=None, mm=True,
                                            kv=2 * 36 * 8 * 128 * 2),
    # Qwen3.5/3.6: mamba_ssm_dtype float32 pins the recurrent state in both engines.
    "Qwen__Qwen3.5-122B-A10B.json": dict(
        kind="hybrid", full="gqa", layers=(48, 12, 36, 0), moe=(256, 8, 1), mtp=1, mm=True,
        kv=2 * 12 * 2 * 256 * 2, state=36 * ((2 * 16 * 128 + 64 * 128) * 3 * 2 + 64 * 128 * 128 * 4)),
    "Qwen__Qwen3.5-27B.json": dict(
        kind="hybrid", full="gqa", layers=(64, 16, 48, 0), moe=None, mtp=1, mm=True,
        kv=2 * 16 * 4 * 256 * 2, state=48 * ((2 * 16 * 128 + 48 * 128) * 3 * 2 + 48 * 128 * 128 * 4)),
    "Qwen__Qwen3.5-35B-A3B.json": dict(
        kind="hybrid", full="gqa", layers=(40, 10, 30, 0), moe=(256, 8, 1), mtp=1, mm=True,
        kv=2 * 10 * 2 * 256 * 2, state=30 * ((2 * 16 * 128 + 32 * 128) * 3 * 2 + 32 * 128 * 128 * 4)),
    "Qwen__Qwen3.5-397B-A17B.json": dict(
        kind="hybrid", full="gqa", layers=(60, 15, 45, 0), moe=(512, 10, 1), mtp=1, mm=True,
        kv=2 * 15 * 2 * 256 * 2, state=45 * ((2 * 16 * 128 + 64 * 128) * 3 * 2 + 64 * 128 * 128 * 4)),
    "Qwen__Qwen3.6-35B-A3B.json": dict(
        kind="hybrid", full="gqa", layers=(40, 10, 30, 0), moe=(256, 8, 1), mtp=1, mm=True,
        kv=2 * 10 * 2 * 256 * 2, state=30 * ((2 * 16 * 128 + 32 * 128) * 3 * 2 + 32 * 128 * 128 * 4)),
    # MiMo-V2-Flash: K heads 192 wide, V heads 128; 9 full layers × 4 KV heads, 39 SWA layers × 8.
    "XiaomiMiMo__MiMo-V2-Flash.json": dict(
        kind="gqa", layers=(48, 48, 0, 39), window=128, moe=(256, 8, 0), quant="fp8",
        kv=9 * 4 * (192 + 128) * 2 + 39 * 8 * (192 + 128) * 2),
    # Jamba: attention every 8th layer from 4; Mamba-1 conv 8192 × 3 and SSM 8192 × 16, both bf16 (vLLM).
    "ai21labs__Jamba-v0.1.json": dict(
        kind="hybrid", full="gqa", layers=(32, 4, 28, 0), moe=(16, 2, 0), kv=2 * 4 * 8 * 128 * 2,
        state=28 * (2 * 4096 * 3 * 2 + 2 * 4096 * 16 * 2), sglang_state=None),
    "deepseek-ai__DeepSeek-R1.json": dict(
        kind="mla", layers=(61, 61, 0, 0), moe=(256, 8, 1), mtp=1, quant="fp8", kv=61 * (512 + 64) * 2),
    "deepseek-ai__DeepSeek-V2-Lite.json": dict(kind="mla", layers=(27, 27, 0, 0), moe=(64, 6, 2),
                                               kv=27 * (512 + 64) * 2),
    "deepseek-ai__DeepSeek-V2.json": dict(kind="mla", layers=(60, 60, 0, 0), moe=(160, 6, 2), kv=60 * (512 + 64) * 2),
    "deepseek-ai__DeepSeek-V3.1.json": dict(kind="mla", layers=(61, 61, 0, 0), moe=(256, 8, 1), mtp=1, quant="fp8",
                                            kv=61 * (512 + 64) * 2),
    "deepseek-ai__DeepSeek-V3.2-Exp.reconstructed.json": dict(
        kind="dsa", layers=(61, 61, 0, 0), moe=(256, 8, 1), indexer=61, known=True,
        kv=61 * (512 + 64) * 2 + 61 * (128 + 4)),
    "deepseek-ai__DeepSeek-V3.2.json": dict(
        kind="dsa", layers=(61, 61, 0, 0), moe=(256, 8, 1), mtp=1, quant="fp8", indexer=61,
        kv=61 * (512 + 64) * 2 + 61 * (128 + 4)),
    "deepseek-ai__DeepSeek-V3.json": dict(kind="mla", layers=(61, 61, 0, 0), moe=(256, 8, 1), mtp=1, quant="fp8",
                                          kv=61 * (512 + 64) * 2),
    # V4-Flash: compress_ratios (main 43) = 2 × 0, 21 × 4, 20 × 128.
    "deepseek-ai__DeepSeek-V4-Flash.json": dict(
        kind="dsa", layers=(43, 43, 0, 2), window=128, moe=(256, 6, 1), mtp=1, quant="fp8", indexer=21,
        kv_exact=43 * 584 + 21 * 584 / 4 + 21 * 132 / 4 + 20 * 584 / 128,
        # compressor rings (float32): c4 8 × (2·2·512 + 2·2·128), c128 128 × 2·512
        state=21 * 8 * (2 * 2 * 512 + 2 * 2 * 128) * 4 + 20 * 128 * 2 * 512 * 4),
    # V4-Pro: 30 × 4, 31 × 128.
    "deepseek-ai__DeepSeek-V4-Pro.json": dict(
        kind="dsa", layers=(61, 61, 0, 0), window=128, moe=(384, 6, 1), mtp=1, quant="fp8", indexer=30,
        kv_exact=61 * 584 + 30 * 584 / 4 + 30 * 132 / 4 + 31 * 584 / 128,
        state=30 * 8 * (2 * 2 * 512 + 2 * 2 * 128) * 4 + 31 * 128 * 2 * 512 * 4),
    "google__gemma-3-27b-it.json": dict(
        kind="gqa", layers=(62, 62, 0, 52), window=1024, moe=None, mm=True, kv=2 * 62 * 16 * 128 * 2),
    # Gemma 4: 25 sliding layers 8 KV heads × 256, 5 full layers 2 global KV heads × 512.
    "google__gemma-4-26B-A4B.json": dict(
        kind="gqa", layers=(30, 30, 0, 25), window=1024, moe=(128, 8, 0), mm=True,
        kv=2 * 25 * 8 * 256 * 2 + 2 * 5 * 2 * 512 * 2),
    "meta-llama__Llama-2-7b-hf.json": dict(kind="mha", layers=(32, 32, 0, 0), moe=None, kv=2 * 32 * 32 * 128 * 2),
    "meta-llama__Llama-3.3-70B-Instruct.json": dict(kind="gqa", layers=(80, 80, 0, 0), moe=None,
                                                    kv=2 * 80 * 8 * 128 * 2),
    "meta-llama__Llama-4-Maverick-17B-128E-Instruct.json": dict(
        kind="gqa", layers=(48, 48, 0, 0), chunked=36, moe=(128, 1, 1), moe_layers=24, mm=True,
        kv=2 * 48 * 8 * 128 * 2),
    "meta-llama__Llama-4-Scout-17B-16E-Instruct.json": dict(
        kind="gqa", layers=(48, 48, 0, 0), chunked=36, moe=(16, 1, 1), moe_layers=48, mm=True,
        kv=2 * 48 * 8 * 128 * 2),
    "meta-llama__Meta-Llama-3.1-405B.json": dict(kind="gqa", layers=(126, 126, 0, 0), moe=None,
                                                 kv=2 * 126 * 8 * 128 * 2),
    "meta-llama__Meta-Llama-3.1-70B.json": dict(kind="gqa", layers=(80, 80, 0, 0), moe=None, kv=2 * 80 * 8 * 128 * 2),
    "meta-llama__Meta-Llama-3.1-8B.json": dict(kind="gqa", layers=(32, 32, 0, 0), moe=None, kv=2 * 32 * 8 * 128 * 2),
    "mistralai__Mistral-7B-v0.1.json": dict(kind="gqa", layers=(32, 32, 0, 32), window=4096, moe=None,
                                            kv=2 * 32 * 8 * 128 * 2),
    "mistralai__Mixtral-8x22B-v0.1.json": dict(kind="gqa", layers=(56, 56, 0, 0), moe=(8, 2, 0),
                                               kv=2 * 56 * 8 * 128 * 2),
    "mistralai__Mixtral-8x7B-v0.1.json": dict(kind="gqa", layers=(32, 32, 0, 0), moe=(8, 2, 0),
                                              kv=2 * 32 * 8 * 128 * 2),
    "moonshotai__Kimi-K2-Instruct.json": dict(kind="mla", layers=(61, 61, 0, 0), moe=(384, 8, 1), quant="fp8",
                                              kv=61 * (512 + 64) * 2),
    "moonshotai__Kimi-K2.5.json": dict(kind="mla", layers=(61, 61, 0, 0), moe=(384, 8, 1), mm=True,
                                       quant="compressed-tensors", kv=61 * (512 + 64) * 2),
    # Kimi K3: 24 MLA layers, 69 KDA layers (96 heads × 128): 3 convs bf16 + float32 recurrent.
    "moonshotai__Kimi-K3.json": dict(
        kind="hybrid", full="mla", layers=(93, 24, 69, 0), moe=(896, 16, 2), mm=True, quant="compressed-tensors",
        kv=24 * (512 + 64) * 2, state=69 * (3 * 96 * 128 * 3 * 2 + 96 * 128 * 128 * 4)),
    "moonshotai__Kimi-Linear-48B-A3B-Instruct.reconstructed.json": dict(
        kind="hybrid", full="mla", layers=(27, 6, 21, 0), moe=(256, 8, 1),
        kv=6 * (512 + 64) * 2, state=21 * (3 * 32 * 128 * 3 * 2 + 32 * 128 * 128 * 4)),
    # Nemotron Super: 49 attention blocks with n_heads_in_group 8 (64 / 8 = 8 KV heads), 31 no-op.
    "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json": dict(
        kind="gqa", layers=(80, 49, 0, 0), no_attention=31, moe=None, kv=2 * 49 * 8 * 128 * 2),
    # Nemotron-H: Mamba-2 conv (heads·head_dim + 2·groups·state) × 3 bf16, SSM heads×head_dim×state float32.
    "nvidia__NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.json": dict(
        kind="hybrid", full="gqa", layers=(52, 6, 23, 0), no_attention=23, moe=(128, 6, 1),
        kv=2 * 6 * 2 * 128 * 2, state=23 * ((64 * 64 + 2 * 8 * 128) * 3 * 2 + 64 * 64 * 128 * 4)),
    # Nemotron-3-Super (NVFP4 export): 40 Mamba-2 + 40 MoE + 8 attention blocks, one MTP block ("*E"); its NVFP4
    # format is in hf_quant_config.json, so config.json itself names no quantization.
    "nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4.json": dict(
        kind="hybrid", full="gqa", layers=(88, 8, 40, 0), no_attention=40, moe=(512, 22, 1), mtp=1,
        kv=2 * 8 * 2 * 128 * 2, state=40 * ((128 * 64 + 2 * 8 * 128) * 3 * 2 + 128 * 64 * 128 * 4)),
    "nvidia__Nemotron-H-56B-Base-8K.json": dict(
        kind="hybrid", full="gqa", layers=(118, 10, 54, 0), no_attention=54, moe=None,
        kv=2 * 10 * 8 * 128 * 2, state=54 * ((256 * 64 + 2 * 8 * 256) * 3 * 2 + 256 * 64 * 256 * 4)),
    "openai__gpt-oss-120b.json": dict(kind="gqa", layers=(36, 36, 0, 18), window=128, moe=(128, 4, 0),
                                      quant="mxfp4", kv=2 * 36 * 8 * 64 * 2),
    "openai__gpt-oss-20b.json": dict(kind="gqa", layers=(24, 24, 0, 12), window=128, moe=(32, 4, 0),
                                     quant="mxfp4", kv=2 * 24 * 8 * 64 * 2),
    # Falcon-7B: multi_query -> one KV head; head_dim = 4544 / 71 = 64.
    "tiiuae__falcon-7b.json": dict(kind="mqa", layers=(32, 32, 0, 0), moe=None, kv=2 * 32 * 1 * 64 * 2),
    "zai-org__GLM-4.5-Air.json": dict(kind="gqa", layers=(46, 46, 0, 0), moe=(128, 8, 1), mtp=1,
                                      kv=2 * 46 * 8 * 128 * 2),
    "zai-org__GLM-4.5.json": dict(kind="gqa", layers=(92, 92, 0, 0), moe=(160, 8, 1), mtp=1, kv=2 * 92 * 8 * 128 * 2),
    "zai-org__GLM-5.1.json": dict(kind="dsa", layers=(78, 78, 0, 0), moe=(256, 8, 1), mtp=1, indexer=78,
                                  kv=78 * (512 + 64) * 2 + 78 * (128 + 4)),
    # GLM-5.2 IndexShare: indexer_types lists 21 "full" layers; the 57 "shared" ones cache no keys.
    "zai-org__GLM-5.2.json": dict(kind="dsa", layers=(78, 78, 0, 0), moe=(256, 8, 1), mtp=1, indexer=21,
                                  kv=78 * (512 + 64) * 2 + 21 * (128 + 4)),
    "zai-org__GLM-5.json": dict(kind="dsa", layers=(78, 78, 0, 0), moe=(256, 8, 1), mtp=1, indexer=78,
                                kv=78 * (512 + 64) * 2 + 78 * (128 + 4)),
}


def _card(name: str):
    loaded = load_config(str(shared_config(name)))
    return analyze(loaded.raw, name=loaded.name, source=str(loaded.path))


@requires_shared
def test_every_fixture_config_is_covered() -> None:
    on_disk = {p.name for p in (SHARED_FIXTURES / "configs").glob("*.json")}
    assert on_disk == set(CASES), f"uncovered: {on_disk - set(CASES)}, missing: {set(CASES) - on_disk}"


@requires_shared
@pytest.mark.parametrize("name", sorted(CASES))
def test_classification(name: str) -> None:
    want = CASES[name]
    card = _card(name)
    assert card.attention == want["kind"]
    assert card.full_attention == want.get("full", want["kind"])
    lay = card.layers
    assert (lay.total, lay.kv, lay.linear, lay.sliding) == want["layers"]
    assert lay.chunked == want.get("chunked", 0)
    assert lay.no_attention == want.get("no_attention", 0)
    assert lay.indexer == want.get("indexer", 0)
    if want["layers"][3]:
        assert card.sliding_window == want["window"]
    moe = None if card.moe is None else (card.moe.experts, card.moe.active, card.moe.shared)
    assert moe == want["moe"]
    if "moe_layers" in want:
        assert card.moe.layers == want["moe_layers"]
    assert card.mtp_layers == want.get("mtp", 0)
    assert card.multimodal == want.get("mm", False)
    assert (card.quantization.method if card.quantization else None) == want.get("quant")
    assert card.known is want.get("known", True)
    assert card.evidence, "every card carries its evidence"


@requires_shared
@pytest.mark.parametrize("name", sorted(CASES))
def test_kv_bytes_per_token(name: str) -> None:
    want = CASES[name]
    layout = kv_layout(_card(name))
    if "kv_exact" in want:
        assert layout.bytes_per_token == pytest.approx(want["kv_exact"], abs=1)
    else:
        assert layout.bytes_per_token == want["kv"]
    assert layout.state_bytes_per_sequence == want.get("state", 0)


@requires_shared
@pytest.mark.parametrize("name", sorted(n for n, w in CASES.items() if "sglang_state" in w))
def test_sglang_state_where_engines_differ(name: str) -> None:
    want = CASES[name]["sglang_state"]
    card = _card(name)
    if want is None:
        with pytest.raises(Exception, match="SGLang"):
            kv_layout(card, engine="sglang")
    else:
        assert kv_layout(card, engine="sglang").state_bytes_per_sequence == want


@requires_shared
def test_qwen25_is_not_called_sliding() -> None:
    card = _card("Qwen__Qwen2.5-72B.json")
    assert card.layers.sliding == 0 and card.sliding_window is None
    claims = " ".join(e.claim for e in card.evidence)
    assert "use_sliding_window is false" in claims
