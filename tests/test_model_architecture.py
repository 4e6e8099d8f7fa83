"""Classification rules and bad-input handling on scenario configs written here.

Every dict below is a scenario (a shape a family uses), not a copy of a published config; the real
configs are covered in test_model_fixtures.py.
"""

from __future__ import annotations

import copy
import math

import pytest

from doctor.errors import InputError
from doctor.model.architecture import analyze
from doctor.model.kvcache import kv_layout

BASE = {"_scenario": "scenario for tests, not a real checkpoint", "architectures": ["LlamaForCausalLM"],
        "model_type": "llama", "torch_dtype": "bfloat16", "num_hidden_layers": 8, "hidden_size": 1024,
        "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 2816, "vocab_size": 32000}


def cfg(**changes: object) -> dict:
    out = copy.deepcopy(BASE)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def evidence_fields(card) -> set[str]:
    return {k for e in card.evidence for k in e.fields}


# -- the attention kinds ---------------------------------------------------------------------
def test_gqa_mqa_mha() -> None:
    assert analyze(cfg()).attention == "gqa"
    assert analyze(cfg(num_key_value_heads=1)).attention == "mqa"
    assert analyze(cfg(num_key_value_heads=16)).attention == "mha"
    mha = analyze(cfg(num_key_value_heads=None))
    assert mha.attention == "mha" and mha.kv_heads == 16
    assert any("num_key_value_heads absent" in e.claim for e in mha.evidence)


def test_head_dim_from_config_wins_over_hidden_over_heads() -> None:
    card = analyze(cfg(head_dim=128))  # 1024 / 16 would be 64
    assert card.head_dim == 128
    assert kv_layout(card).bytes_per_token == 2 * 8 * 4 * 128 * 2
    assert analyze(cfg()).head_dim == 64


def test_mla_when_a_latent_rank_is_present() -> None:
    card = analyze(cfg(kv_lora_rank=256, qk_rope_head_dim=32, qk_nope_head_dim=64, v_head_dim=64))
    assert card.attention == "mla" and card.kv_heads == 1 and card.head_dim == 288
    assert {"kv_lora_rank", "qk_rope_head_dim"} <= evidence_fields(card)
    assert card.sources["kv_lora_rank"] == "kv_lora_rank"


def test_dsa_when_an_indexer_is_present_and_index_share_by_frequency() -> None:
    base = dict(kv_lora_rank=512, qk_rope_head_dim=64, q_lora_rank=1024, index_topk=2048, index_head_dim=128,
                index_n_heads=32, num_hidden_layers=78)
    card = analyze(cfg(**base))
    assert card.attention == "dsa" and card.layers.indexer == 78
    # index_topk_freq 4 from offset 3: layers 0, 1, 2 then every 4th from 6 compute the top-k
    # (same rule as vllm deepseek_v2.py:1150-1153 and sglang model_config.py:514-519).
    shared = analyze(cfg(**base, index_topk_freq=4, index_skip_topk_offset=3))
    want = sum(1 for i in range(78) if max(i - 3 + 1, 0) % 4 == 0)
    assert shared.layers.indexer == want == 21
    pattern = analyze(cfg(**base, index_topk_pattern="FS" * 39))
    assert pattern.layers.indexer == 39


def test_dsa_from_indexed_layer_types() -> None:
    card = analyze(cfg(kv_lora_rank=512, qk_rope_head_dim=64, index_head_dim=128,
                       layer_types=["indexed_attention"] * 8))
    assert card.attention == "dsa" and card.layers.indexer == 8


def test_hybrid_kinds_and_their_full_attention() -> None:
    gdn = dict(linear_num_key_heads=4, linear_key_head_dim=64, linear_num_value_heads=8, linear_value_head_dim=64)
    interval = analyze(cfg(full_attention_interval=4, **gdn))
    assert interval.attention == "hybrid" and interval.full_attention == "gqa"
    assert (interval.layers.kv, interval.layers.linear) == (2, 6)
    types = analyze(cfg(layer_types=["linear_attention", "full_attention"] * 4, **gdn))
    assert (types.layers.kv, types.layers.linear) == (4, 4)
    # vLLM gated_delta_net_state_shape: conv (2·4·64 + 8·64) × 3, recurrent 8 × 64 × 64 (bf16 in vLLM).
    assert kv_layout(types).state_bytes_per_sequence == 4 * ((2 * 4 * 64 + 8 * 64) * 3 * 2 + 8 * 64 * 64 * 2)


def test_mamba_hybrids() -> None:
    nemotron = analyze(cfg(model_type="nemotron_h", architectures=["NemotronHForCausalLM"],
                           hybrid_override_pattern="M*M-ME*M", mamba_num_heads=8, mamba_head_dim=32,
                           n_groups=2, ssm_state_size=16, conv_kernel=4))
    assert nemotron.attention == "hybrid"
    assert (nemotron.layers.kv, nemotron.layers.linear, nemotron.layers.no_attention) == (2, 4, 2)
    jamba = analyze(cfg(model_type="jamba", architectures=["JambaForCausalLM"],
                        layers_block_type=["mamba", "attention"] * 4, mamba_d_state=16))
    assert (jamba.layers.kv, jamba.layers.linear) == (4, 4) and jamba.states[0].kind == "mamba1"


def test_lightning_linear_layers_from_attn_type_list() -> None:
    card = analyze(cfg(attn_type_list=[0, 0, 0, 1] * 2, model_type="minimax_m2",
                       architectures=["MiniMaxM2ForCausalLM"]))
    assert card.attention == "hybrid" and card.layers.linear == 6
    assert kv_layout(card).state_bytes_per_sequence == 6 * 16 * 64 * 64 * 2


# -- sliding and chunked are properties, not kinds ---------------------------------------------
def test_sliding_window_everywhere_and_by_pattern() -> None:
    mistral = analyze(cfg(sliding_window=4096))
    assert mistral.attention == "gqa" and mistral.layers.sliding == 8 and mistral.sliding_window == 4096
    gemma2 = analyze(cfg(model_type="gemma2", architectures=["Gemma2ForCausalLM"], sliding_window=4096))
    assert gemma2.layers.sliding == 4  # transformers default: every 2nd layer is global
    qwen2 = analyze(cfg(model_type="qwen2", sliding_window=4096, use_sliding_window=True, max_window_layers=6))
    assert qwen2.layers.sliding == 2
    off = analyze(cfg(sliding_window=131072, use_sliding_window=False))
    assert off.layers.sliding == 0 and off.sliding_window is None


def test_chunked_local_attention_needs_the_family_interval() -> None:
    llama4 = analyze(cfg(model_type="llama4_text", attention_chunk_size=8192))
    assert llama4.layers.chunked == 6 and llama4.chunk_size == 8192
    explicit = analyze(cfg(attention_chunk_size=8192, no_rope_layers=[1, 0] * 4))
    assert explicit.layers.chunked == 4


# -- MoE, MTP, multimodal ------------------------------------------------------------------------
@pytest.mark.parametrize(("fields", "want"), [
    ({"num_experts": 64, "num_experts_per_tok": 4}, (64, 4, 0)),
    ({"n_routed_experts": 64, "num_experts_per_tok": 6, "n_shared_experts": 2}, (64, 6, 2)),
    ({"num_local_experts": 8, "num_experts_per_tok": 2}, (8, 2, 0)),
    ({"num_experts": 128, "top_k_experts": 8}, (128, 8, 0)),
    ({"num_experts": 256, "num_experts_per_token": 8, "num_shared_experts": 1}, (256, 8, 1)),
    ({"num_experts": 512, "num_experts_per_tok": 10, "shared_expert_intermediate_size": 512}, (512, 10, 1)),
])
def test_moe_field_spellings(fields: dict, want: tuple) -> None:
    card = analyze(cfg(moe_intermediate_size=512, **fields))
    assert (card.moe.experts, card.moe.active, card.moe.shared) == want


def test_moe_without_experts_per_token_is_an_error() -> None:
    with pytest.raises(InputError, match="num_experts_per_tok: missing .* 64 routed experts in num_experts"):
        analyze(cfg(num_experts=64, moe_intermediate_size=512), source="x/config.json")


def test_mtp_and_multimodal() -> None:
    card = analyze(cfg(num_nextn_predict_layers=2, vision_config={"hidden_size": 64, "num_hidden_layers": 2}))
    assert card.mtp_layers == 2 and card.multimodal and card.modalities == ("vision",)
    assert analyze(cfg(audio_config=None)).multimodal is False


def test_nested_text_config_paths_are_reported() -> None:
    nested = {"architectures": ["Qwen3VLForConditionalGeneration"], "model_type": "qwen3_vl",
              "text_config": {k: v for k, v in BASE.items() if k not in ("architectures", "_scenario")},
              "vision_config": {"depth": 2, "hidden_size": 64}}
    card = analyze(nested)
    assert card.sources["kv_heads"] == "text_config.num_key_value_heads"
    assert card.multimodal and card.vision_params > 0


# -- quantization -------------------------------------------------------------------------------
@pytest.mark.parametrize(("qc", "method", "fmt"), [
    ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8", "fp8"),
    ({"quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn"]}, "mxfp4", "mxfp4"),
    ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4", "nvfp4"),
    # hf_quant_config.json's layout inside config.json, as vLLM reads it (0.33.0 quantization/modelopt.py:324-342)
    ({"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "group_size": 16}}, "nvfp4", "nvfp4"),
    ({"quant_method": "compressed-tensors", "format": "nvfp4-pack-quantized"}, "compressed-tensors", "nvfp4"),
    ({"quant_method": "awq", "bits": 4, "group_size": 128}, "awq", "int4"),
])
def test_quantization_methods(qc: dict, method: str, fmt: str) -> None:
    card = analyze(cfg(quantization_config=qc))
    assert card.quantization.method == method and card.quantization.weight_format == fmt
    assert card.weight_bytes < card.params * 2


def test_modelopt_exclude_modules_one_level_down_stay_16_bit() -> None:
    qc = {"quant_method": "modelopt", "quantization": {"quant_algo": "NVFP4", "exclude_modules": [
        "lm_head", "model.language_model.layers.0.self_attn*"]}}
    card = analyze(cfg(quantization_config=qc))
    assert card.quantization.unquantized == ("lm_head", "attention")
    assert card.weight_bytes > analyze(cfg(quantization_config={"quant_method": "modelopt",
                                                                "quant_algo": "NVFP4"})).weight_bytes


# -- unknown and bad input ------------------------------------------------------------------------
def test_unknown_architecture_gets_a_best_effort_card() -> None:
    card = analyze(cfg(architectures=["BrandNewForCausalLM"], model_type="brand_new"))
    assert card.known is False and card.attention == "gqa"
    assert "unknown architecture (BrandNewForCausalLM)" in card.notes[0]


@pytest.mark.parametrize(("changes", "message"), [
    ({"num_hidden_layers": None}, "x/config.json: num_hidden_layers: missing"),
    ({"hidden_size": None}, "x/config.json: hidden_size: missing"),
    ({"num_key_value_heads": "four"}, "num_key_value_heads: expected an integer, got 'four'"),
    ({"num_key_value_heads": True}, "num_key_value_heads: expected an integer, got True"),
    ({"num_hidden_layers": math.nan}, "num_hidden_layers: expected an integer, got nan"),
    ({"num_hidden_layers": 0}, "num_hidden_layers: expected an integer >= 1"),
    ({"num_hidden_layers": 20_000}, "num_hidden_layers: 20000 layers is not a plausible model"),
    ({"hidden_size": 1.5e300}, "hidden_size: .* is implausibly large"),
    ({"hidden_size": 1000, "num_attention_heads": 16}, "head_dim: missing, and hidden_size=1000 is not a multiple"),
    ({"layer_types": ["full_attention"] * 3}, "layer_types: has 3 entries for 8 layers"),
    ({"layer_types": ["warp_attention"] * 8}, "layer_types: unknown layer type 'warp_attention' at layer 0"),
    ({"hybrid_override_pattern": "M*"}, "hybrid_override_pattern: has 2 characters for 8 layers"),
    ({"hybrid_override_pattern": "M*M*M*MX"}, "unknown layer code 'X' at position 7"),
    ({"architectures": "LlamaForCausalLM"}, "architectures: expected a list of class names"),
    ({"torch_dtype": "float12"}, "torch_dtype: unknown dtype 'float12'"),
    ({"kv_lora_rank": 512}, "qk_rope_head_dim: missing"),
    ({"quantization_config": {"bits": 4}}, "quantization_config.quant_method: missing"),
    ({"linear_attn_config": {"kda_layers": [0, 9]}}, "linear_attn_config.kda_layers: expected 1-based layer numbers"),
    ({"block_configs": [{"attention": {"no_op": True}}] * 8}, "num_hidden_layers: no layer holds attention KV"),
    ({"block_configs": [{"attention": {"n_heads_in_group": 3}}] * 8},
     r"block_configs\[0\].attention.n_heads_in_group: expected a divisor of num_attention_heads=16"),
])
def test_bad_fields_name_the_file_and_field(changes: dict, message: str) -> None:
    with pytest.raises(InputError, match=message):
        analyze(cfg(**changes), source="x/config.json")


def test_top_level_must_be_a_dict() -> None:
    with pytest.raises(InputError, match="expected a JSON object"):
        analyze([1, 2], source="x/config.json")  # type: ignore[arg-type]


def test_missing_dtype_is_assumed_bf16_and_said() -> None:
    card = analyze(cfg(torch_dtype=None))
    assert card.dtype == "bfloat16"
    assert any("assuming bfloat16" in e.claim for e in card.evidence)
