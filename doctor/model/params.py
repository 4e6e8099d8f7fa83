"""Parameter counts and weight bytes estimated from the config's shapes.

Planning needs the weight footprint before a single file is downloaded, so the count is rebuilt
from the layer shapes: embeddings and lm_head, attention projections (GQA, MLA with its low-rank
Q/KV paths, DSA indexers, DeepSeek V4's grouped output and compressors), linear-attention and SSM
mixers, dense MLPs, routed and shared experts and routers. Biases and norms are left out (well under
0.1% of any model here). The main model only: MTP layers are loaded by the engines only when
speculative decoding uses them. Accuracy against published totals is pinned in
tests/test_model_params.py (within 2% for DeepSeek-V3, Qwen3-235B-A22B, gpt-oss-120b and others).
"""

from __future__ import annotations

from doctor.model import layers as L
from doctor.model.card import MoE, ParamEstimate, Quantization
from doctor.model.fields import ConfigView

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Parts a count is split into; weights are priced per part (quantized or kept 16-bit).
#: linear_attention is a linear-attention or SSM mixer's input side (its in-projections and convolution, which
#: quantized builds of hybrids often keep 16-bit for the recurrent state's sake), linear_attention_out its output
#: projection.
PARTS = ("embed", "lm_head", "attention", "indexer", "linear_attention", "linear_attention_out", "dense_mlp",
         "experts", "shared_experts", "router")
#: Parts every engine keeps in 16-bit whatever the checkpoint's scheme (embeddings, routers, lm_head).
ALWAYS_16BIT = ("embed", "lm_head", "router")


def estimate_params(v: ConfigView, plan: L.LayerPlan, moe: MoE | None, defaults: dict[str, Any], *,
                    full_kind: str) -> ParamEstimate:
    h = v.int("hidden_size", "d_model", "n_embd", required=True).value
    heads = v.int("num_attention_heads", "n_head", "num_heads", required=True).value
    vocab = v.int_or("vocab_size", "padded_vocab_size", default=defaults.get("vocab_size", 0))
    parts = dict.fromkeys(PARTS, 0)
    if vocab:
        parts["embed"] = vocab * h
        tied = v.flag("tie_word_embeddings")
        is_tied = tied.value if tied is not None else defaults.get("tie_word_embeddings", False)
        parts["lm_head"] = 0 if is_tied else vocab * h
    gated = defaults.get("mlp_gated", True)
    mats = 3 if gated else 2

    attn_layers = [r for r in plan.roles if r in (L.FULL, L.SLIDING, L.CHUNKED)]
    if v.find("compress_ratios", "compress_rates") is not None:
        parts["attention"], parts["indexer"] = _dsv4_attention(v, h, heads)
    elif full_kind in ("mla", "dsa"):
        parts["attention"] = len(attn_layers) * _mla_layer(v, h, heads)
        if full_kind == "dsa":
            parts["indexer"] = _indexer_params(v, h, plan)
    else:
        parts["attention"] = _gqa_params(v, plan, h, heads)
    mixer_in, mixer_out = _linear_layer(v, plan.linear_kind, h, heads)
    parts["linear_attention"] = plan.count(L.LINEAR) * mixer_in
    parts["linear_attention_out"] = plan.count(L.LINEAR) * mixer_out

    dense_layers, moe_layers = _mlp_layout(v, plan, moe)
    if plan.kv_heads_by_layer is not None:
        parts["dense_mlp"] = _nas_mlp(v, h)
    else:
        inter = v.int("intermediate_size_mlp", "intermediate_size", "ffn_hidden_size", "ffn_dim")
        dense_inter = inter.value if inter else defaults.get("mlp_ratio", 4) * h
        parts["dense_mlp"] = dense_layers * mats * h * dense_inter
    if moe is not None:
        expert_in = v.int_or("routed_expert_hidden_size", "moe_latent_size", default=h)  # Nemotron 3: moe_latent_size
        e_inter = v.int("moe_intermediate_size", "expert_intermediate_size", "intermediate_size", required=True).value
        parts["experts"] = moe_layers * moe.experts * mats * expert_in * e_inter
        parts["router"] = moe_layers * h * moe.experts
        if expert_in != h:  # latent MoE: down/up projections around the experts
            parts["router"] += moe_layers * 2 * h * expert_in
        parts["shared_experts"] = moe_layers * mats * h * _shared_inter(v, moe, e_inter)
    # Active = what one token's forward pass multiplies by: every part but the input embedding
    # (a row lookup) and the unselected routed experts (OpenAI's convention for gpt-oss 5.1B).
    total_experts = parts["experts"]
    active = sum(parts.values()) - total_experts - parts["embed"]
    if moe is not None:
        active += total_experts * moe.active // moe.experts
    return ParamEstimate(parts, active, _vision_params(v))


def part_bytes(estimate: ParamEstimate, quant: Quantization | None) -> dict[str, int]:
    """Bytes of each weight part as the engine loads it: routed experts may be quantized differently."""
    out: dict[str, int] = {}
    for part, count in estimate.parts.items():
        per = 2.0
        if quant is not None and part not in ALWAYS_16BIT and part not in quant.unquantized:
            per = quant.expert_bytes_per_param if (part == "experts" and quant.expert_bytes_per_param) \
                else quant.bytes_per_param
        out[part] = int(count * per)
    return out


def weight_bytes(estimate: ParamEstimate, quant: Quantization | None, dtype: str) -> int:
    """Bytes of the checkpoint's weights as the engine loads them (vision tower in 16-bit)."""
    return sum(part_bytes(estimate, quant).values()) + estimate.vision * 2


def _gqa_params(v: ConfigView, plan: L.LayerPlan, h: int, heads: int) -> int:
    hd_f = v.int("head_dim", "attention_head_dim", "kv_channels")
    hd = hd_f.value if hd_f else h // heads
    vd = v.int_or("v_head_dim", default=hd)
    multi_query = v.flag("multi_query")
    kv = v.int_or("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
                  default=1 if multi_query and multi_query.value else heads)
    total = 0
    for i, role in enumerate(plan.roles):
        if role not in (L.FULL, L.SLIDING, L.CHUNKED):
            continue
        q_heads, k_heads, k_dim, v_dim = heads, kv, hd, vd
        if plan.kv_heads_by_layer is not None:
            k_heads = plan.kv_heads_by_layer[i] or 0
        elif role == L.FULL and v.find("global_head_dim", "num_global_key_value_heads"):
            k_dim = v_dim = v.int_or("global_head_dim", default=hd)
            k_heads = v.int_or("num_global_key_value_heads", default=kv)
        elif role == L.SLIDING:
            q_heads = v.int_or("swa_num_attention_heads", default=heads)
            k_heads = v.int_or("swa_num_key_value_heads", default=kv)
            k_dim = v.int_or("swa_head_dim", default=hd)
            v_dim = v.int_or("swa_v_head_dim", default=vd if k_dim == hd else k_dim)
        total += h * q_heads * k_dim + h * k_heads * (k_dim + v_dim) + q_heads * v_dim * h
    return total


def _mla_layer(v: ConfigView, h: int, heads: int) -> int:
    kv_lora = v.int("kv_lora_rank", required=True).value
    rope = v.int("qk_rope_head_dim", required=True).value
    nope = v.int_or("qk_nope_head_dim", default=128)
    vd = v.int_or("v_head_dim", default=128)
    q_lora = v.int("q_lora_rank")
    qk = nope + rope
    q = (h * q_lora.value + q_lora.value * heads * qk) if q_lora and q_lora.value else h * heads * qk
    return q + h * (kv_lora + rope) + kv_lora * heads * (nope + vd) + heads * vd * h


def _indexer_params(v: ConfigView, h: int, plan: L.LayerPlan) -> int:
    n_heads = v.int_or("index_n_heads", default=64)
    dim = v.int_or("index_head_dim", default=128)
    q_lora = v.int("q_lora_rank")
    q_in = q_lora.value if q_lora and q_lora.value else h
    per_layer = q_in * n_heads * dim + h * dim + h * n_heads
    types = v.str_list("indexer_types")
    layers = plan.count(L.FULL)
    if types is not None:
        layers = sum(1 for t in types.value[:layers] if t != "shared")
    return layers * per_layer


def _dsv4_attention(v: ConfigView, h: int, heads: int) -> tuple[int, int]:
    """DeepSeek V4: low-rank Q, one shared KV row, grouped low-rank output, compressors, c4 indexers."""
    total_layers = v.int("num_hidden_layers", required=True).value
    ratios_f = v.find("compress_ratios")
    ratios = list(ratios_f.value[:total_layers]) if ratios_f else [0] * total_layers
    hd = v.int("head_dim", required=True).value
    q_lora = v.int_or("q_lora_rank", default=h)
    o_lora = v.int_or("o_lora_rank", default=h)
    o_groups = v.int_or("o_groups", default=1)
    n_idx = v.int_or("index_n_heads", default=64)
    idx_dim = v.int_or("index_head_dim", default=128)
    base = h * q_lora + q_lora * heads * hd + h * hd + heads * hd * o_lora + o_groups * o_lora * h
    attention = indexer = 0
    for r in ratios:
        attention += base
        if r > 1:
            coff = 2 if r == 4 else 1
            attention += 2 * h * coff * hd
        if r == 4:
            indexer += q_lora * n_idx * idx_dim + h * n_idx + 2 * h * 2 * idx_dim
    return attention, indexer


def kda_shape(v: ConfigView) -> tuple[int, int, int]:
    """(heads, head_dim, conv kernel) of Kimi's KDA layers: ``linear_attn_config`` (checkpoints)
    or the flat ``linear_num_heads``/``linear_head_dim`` fields (transformers' KimiLinearConfig)."""
    found = v.mapping("linear_attn_config")

    def nested(key: str) -> int | None:
        return v.member_int(found, key) if found else None

    heads = nested("num_heads") or v.int_or("linear_num_heads", default=0)
    head_dim = nested("head_dim") or v.int_or("linear_head_dim", default=0)
    kernel = nested("short_conv_kernel_size") or v.int_or("linear_conv_kernel_dim", default=4)
    if not heads or not head_dim:
        raise v.fail("linear_attn_config.num_heads", "missing (needed to size the KDA layers)")
    return heads, head_dim, kernel


def _linear_layer(v: ConfigView, kind: str | None, h: int, heads: int) -> tuple[int, int]:
    """(input side, output projection) parameters of one linear-attention or SSM mixer."""
    def get(*names: str, default: int = 0) -> int:
        return v.int_or(*names, default=default)

    if kind == "gdn":
        kh, kd = get("linear_num_key_heads"), get("linear_key_head_dim")
        vh, vd = get("linear_num_value_heads"), get("linear_value_head_dim")
        k = get("linear_conv_kernel_dim", default=4)
        conv_dim = 2 * kh * kd + vh * vd
        return h * (2 * kh * kd + 2 * vh * vd) + h * 2 * vh + conv_dim * k, vh * vd * h
    if kind == "kda":
        nh, d, k = kda_shape(v)
        return 3 * h * nh * d + 2 * (h * d + d * nh * d) + h * nh + 3 * nh * d * k, h * nh * d
    if kind == "mamba2":
        nh, hd = get("mamba_num_heads"), get("mamba_head_dim")
        ng, state = get("n_groups", "mamba_n_groups"), get("ssm_state_size", "mamba_d_state")
        k = get("conv_kernel", "mamba_d_conv", default=4)
        inner = nh * hd
        conv_dim = inner + 2 * ng * state
        return h * (2 * inner + 2 * ng * state + nh) + conv_dim * k, inner * h
    if kind == "mamba1":
        inner = get("mamba_expand", default=2) * h
        state = get("mamba_d_state", "ssm_state_size", default=16)
        k = get("mamba_d_conv", default=4)
        dt_rank = get("mamba_dt_rank", default=-(-h // 16))
        return (h * 2 * inner + inner * k + inner * (dt_rank + 2 * state) + dt_rank * inner
                + inner * state), inner * h
    hd = get("head_dim", default=h // heads)
    return 3 * h * heads * hd, h * heads * hd


def _mlp_layout(v: ConfigView, plan: L.LayerPlan, moe: MoE | None) -> tuple[int, int]:
    """(dense MLP layers, MoE layers). Nemotron-H layers are a single block each (M, *, - or E)."""
    total = len(plan.roles)
    pattern = v.string("hybrid_override_pattern")
    if pattern is not None:
        return pattern.value.count("-"), pattern.value.count("E") if moe else 0
    moe_layers = moe.layers if moe else 0
    both = v.flag("enable_moe_block")
    if both is not None and both.value:  # Gemma 4: a dense MLP beside the experts in every layer
        return total, moe_layers
    return total - moe_layers, moe_layers


def _nas_mlp(v: ConfigView, h: int) -> int:
    """Nemotron NAS: each block's FFN width is ffn_mult × hidden (transformers DeciLM rounding)."""
    total = 0
    found = v.find("block_configs")
    for i, block in enumerate(found.value):
        ffn = block.get("ffn") or {}
        if not isinstance(ffn, dict):
            raise v.fail(f"{found.path}[{i}].ffn", "expected an object")
        mult = ffn.get("ffn_mult")
        if ffn.get("no_op") or not mult:
            continue
        if isinstance(mult, bool) or not isinstance(mult, (int, float)) or not 0 < mult < 1000:
            raise v.fail(f"{found.path}[{i}].ffn.ffn_mult", f"expected a positive number, got {mult!r}")
        inter = int(2 * mult * h / 3)
        inter = -(-inter // 256) * 256
        total += (h * inter) if ffn.get("replace_with_linear") else 3 * h * inter
    return total


def _shared_inter(v: ConfigView, moe: MoE, expert_inter: int) -> int:
    size = v.int("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size", "shared_intermediate_size")
    if size is not None:
        return size.value
    if v.int("n_shared_experts", "num_shared_experts") is not None:
        return moe.shared * expert_inter
    if moe.shared:  # Llama 4: one shared expert as wide as a routed one (intermediate_size)
        return v.int_or("intermediate_size", default=expert_inter)
    return 0


def _vision_params(v: ConfigView) -> int:
    """A ViT-shaped estimate of the vision tower (attention 4·d² + MLP 2·d·ff per block)."""
    cfg = v.raw.get("vision_config")
    if not isinstance(cfg, dict):
        return 0

    def first(*names: str) -> int:
        for name in names:
            value = cfg.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
        return 0

    depth = first("depth", "num_hidden_layers", "vt_num_hidden_layers", "num_layers")
    width = first("hidden_size", "vt_hidden_size", "embed_dim", "width")
    ff = first("intermediate_size", "vt_intermediate_size", "mlp_dim") or 4 * width
    out = first("out_hidden_size", "text_hidden_size", "projector_output_dim") or width
    return depth * (4 * width * width + 2 * width * ff) + 4 * width * out if depth and width else 0
