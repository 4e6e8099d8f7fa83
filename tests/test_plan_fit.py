"""doctor/model/fit.py as `plan` extended it: one LayoutFit behind derive_fit, SGLang's --attn-dp-size, and users per
KV pool from a sequence's bytes. Facts come from real launch commands and real configs."""

from __future__ import annotations

from doctor.derive.fit import derive_fit
from doctor.facts import Facts
from doctor.model.fit import Layout, fit_layout, layout_from_facts, mem_fraction
from doctor.sources.offline import command_facts, model_facts_for
from tests.conftest import requires_shared, shared_config


def _launch(text: str, version: str | None = None) -> Facts:
    return command_facts(text, version)[1]


def test_sglang_attn_dp_size_is_dp_attention_inside_tp() -> None:
    # sglang 0.5.23 deprecates --dp-size + --enable-dp-attention for --attn-dp-size (srt/server_args.py:418):
    # both spellings must give the same layout (8 GPUs, attention TP 1, 8 KV pools).
    new = layout_from_facts(_launch("python3 -m sglang.launch_server --model-path m --tp-size 8 --attn-dp-size 8 "
                                    "--ep-size 8", "0.5.23"))
    old = layout_from_facts(_launch("python3 -m sglang.launch_server --model-path m --tp-size 8 --dp-size 8 "
                                    "--enable-dp-attention --ep-size 8", "0.5.16"))
    # the MoE layers stay tensor-parallel over all 8 (sglang 0.4.3 srt/layers/moe/fused_moe_triton/layer.py:272)
    assert new == old == Layout(gpus=8, attn_tp=1, kv_groups=8, pp=1, ep=8, moe_tp=8)


def test_sglang_without_dp_attention_is_replicas() -> None:
    layout = layout_from_facts(_launch("python3 -m sglang.launch_server --model-path m --tp-size 2 --dp-size 4",
                                       "0.5.23"))
    assert layout == Layout(gpus=8, attn_tp=2, kv_groups=4, pp=1, ep=1)


@requires_shared
def test_derive_fit_writes_what_fit_layout_computes() -> None:
    facts = _launch("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --enable-expert-parallel --kv-cache-dtype fp8",
                    "0.33.0")
    _, model = model_facts_for(str(shared_config("deepseek-ai__DeepSeek-V3.json")), kv_cache_dtype="fp8",
                               engine="vllm")
    facts.update(model)
    facts.set("gpu.memory_bytes", 143771 * 2**20, "test: H200 as nvidia-smi reports it")
    derive_fit(facts)
    layout = layout_from_facts(facts)
    assert layout is not None
    result = fit_layout(facts, layout, 143771 * 2**20, mem_fraction(facts))
    assert mem_fraction(facts) == 0.92  # vllm 0.33.0 catalog default of --gpu-memory-utilization
    assert facts.get("fit.weights_per_gpu_bytes") == int(result.weights_per_gpu_bytes)
    assert facts.get("fit.kv_budget_per_gpu_bytes") == int(result.kv_budget_per_gpu_bytes)
    assert facts.get("fit.kv_tokens_per_group") == result.kv_tokens_per_group
    # MLA: the latent is not split by TP, so one GPU's budget over the whole per-token latent
    assert result.kv_tokens_per_group == int(result.kv_budget_per_gpu_bytes / facts.get("model.kv_bytes_per_token"))


@requires_shared
def test_sequences_per_group_splits_gqa_kv_by_tp() -> None:
    _, model = model_facts_for(str(shared_config("Qwen__Qwen3-32B.json")), kv_cache_dtype="fp8", engine="vllm")
    layout = Layout(gpus=2, attn_tp=2, kv_groups=1, pp=1, ep=1)
    result = fit_layout(model, layout, 80 * 10**9, 0.9)
    per_token = model.get("model.kv_bytes_per_token")  # 64 layers × 8 heads × 128 × 2 (K,V) × 1 B = 131072
    assert per_token == 131072
    per_sequence = per_token * 32768
    budget = 80 * 10**9 * 0.9 - model.get("model.weight_bytes") / 2
    assert result.sequences_per_group(per_sequence, per_token) == int(budget // (per_sequence / 2))
    assert result.sequences_per_group(0, per_token) is None


@requires_shared
def test_with_no_gpu_weights_beyond_the_largest_gpu_do_not_fit() -> None:
    """sgl-project/sglang#2591 (bench/incidents/i066): DeepSeek-V3 at `--tp 1` and no GPU given. No GPU of the
    catalog holds its weights, so the answer does not wait for --gpu; at `--tp 8` (a layout that fits the large
    GPUs) and with no launch command read (no layout of the user's) nothing is said."""
    _, model = model_facts_for(str(shared_config("deepseek-ai__DeepSeek-V3.json")), kv_cache_dtype=None,
                               engine="sglang")
    from doctor.hardware.catalog import all_gpus

    largest = max(g.memory_bytes for g in all_gpus())
    facts = _launch("python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-V3 --tp 1", "0.4.1")
    facts.update(model)
    derive_fit(facts)
    assert facts.get("fit.weights_fit") is False and "fit.largest_gpu" in facts
    assert facts.get("fit.weights_per_gpu_bytes") > largest
    for text in ("python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-V3 --tp 8", None):
        facts = _launch(text, "0.4.1") if text else Facts()
        facts.update(model)
        derive_fit(facts)
        assert "fit.weights_fit" not in facts and "fit.largest_gpu" not in facts
