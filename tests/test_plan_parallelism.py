"""The parallelism rules on real configs: dense GQA is TP sized by latency, MoE gets EP over the node, MLA switches
to DP attention with concurrency (or memory), DSA stays TP+EP, PP only when nothing else fits, heads must divide."""

from __future__ import annotations

from doctor.plan.parallelism import Parallelism
from tests.test_plan_support import plan_for


def _par(plan: object, engine: str = "vllm") -> Parallelism:
    return plan.engines[engine].decision.parallelism  # type: ignore[attr-defined]


def test_dense_gqa_is_tensor_parallel_only_sized_by_latency() -> None:
    spec = "meta-llama__Llama-3.3-70B-Instruct.json"
    strict = _par(plan_for(spec, "8xH200", context=32768, users=20, latency="strict"))
    balanced = _par(plan_for(spec, "8xH200", context=32768, users=20))
    relaxed = _par(plan_for(spec, "8xH200", context=32768, users=20, latency="relaxed"))
    assert (strict.attn_tp, strict.replicas) == (8, 1)  # one TP8 team: the seed's strict-latency choice
    assert (balanced.attn_tp, balanced.replicas) == (2, 4)  # the seed's four TP2 instances
    assert (relaxed.attn_tp, relaxed.replicas) == (2, 4)  # 141 GB of BF16 weights do not fit one H200
    for par in (strict, balanced, relaxed):
        assert par.ep == 1 and not par.dp_attention and par.pp == 1


def test_relaxed_latency_uses_single_gpu_replicas_when_the_weights_fit() -> None:
    par = _par(plan_for("Qwen__Qwen3-8B.json", "8xH200", context=32768, latency="relaxed"))
    assert (par.attn_tp, par.replicas) == (1, 8)


def test_strict_latency_stops_at_the_kv_heads() -> None:
    # Qwen2.5-7B has 4 KV heads: TP8 would only replicate KV, so strict latency takes TP4.
    plan = plan_for("Qwen__Qwen2.5-7B.json", "8xH200", context=32768, latency="strict")
    assert (_par(plan).attn_tp, _par(plan).replicas) == (4, 2)
    assert any("4 KV heads" in r for r in plan.engines["vllm"].decision.reasons)


def test_tp_must_divide_the_attention_heads() -> None:
    # falcon-7b has 71 query heads: no TP degree above 1 divides them.
    par = _par(plan_for("tiiuae__falcon-7b.json", "8xH200", context=2048))
    assert (par.attn_tp, par.replicas) == (1, 8)


def test_moe_shards_experts_over_the_node() -> None:
    plan = plan_for("Qwen__Qwen3-30B-A3B.json", "8xH200", context=32768, users=16)
    for engine in ("vllm", "sglang"):
        par = _par(plan, engine)
        assert par.instance_gpus == 8 and par.ep == 8 and par.replicas == 1
    assert "enable_expert_parallel" in {f.dest for f in plan.engines["vllm"].flags}
    assert {f.dest: f.value for f in plan.engines["sglang"].flags}["ep_size"] == 8


def test_mla_attention_follows_concurrency() -> None:
    low = plan_for("deepseek-ai__DeepSeek-V3.json", "8xB300", context=32768, users=32)
    high = plan_for("deepseek-ai__DeepSeek-V3.json", "8xB300", context=32768, users=200)
    unknown = plan_for("deepseek-ai__DeepSeek-V3.json", "8xB300", context=32768)
    assert not _par(low).dp_attention and _par(low).attn_tp == 8  # TP+EP below ~64 (AMD measurement)
    assert _par(high).dp_attention and _par(high).attn_dp == 8 and _par(high).ep == 8
    assert not _par(unknown).dp_attention
    assert any("low concurrency assumed" in r for r in unknown.engines["vllm"].decision.reasons)


def test_mla_switches_to_dp_attention_when_tp_replication_runs_out_of_memory() -> None:
    # 40 users (< 64: TP by the measurement) of 64k on 8×H200: TP8's replicated latent cannot hold them.
    plan = plan_for("deepseek-ai__DeepSeek-V3.json", "8xH200", context=65536, users=40)
    vllm = plan.engines["vllm"]
    assert _par(plan).dp_attention
    assert any("fewer than 40" in r and "DP attention" in r for r in vllm.decision.reasons)


def test_dsa_stays_tp_plus_ep_while_it_fits() -> None:
    plan = plan_for("deepseek-ai__DeepSeek-V3.2.json", "8xB300", context=32768, users=100)
    sglang = _par(plan, "sglang")
    assert (sglang.attn_tp, sglang.ep, sglang.dp_attention) == (8, 8, False)
    assert any(r.startswith("DSA: TP + EP") for r in plan.engines["sglang"].decision.reasons)


def test_pipeline_parallel_only_when_a_node_cannot_hold_the_weights() -> None:
    # Llama-3.1-405B in BF16 (≈ 812 GB) does not fit 8×H100 (8 × 74 GB usable): PP across two nodes.
    plan = plan_for("meta-llama__Meta-Llama-3.1-405B.json", "16xH100", context=8192)
    par = _par(plan)
    assert (par.attn_tp, par.pp, par.replicas) == (8, 2, 1)
    vllm = plan.engines["vllm"]
    assert {f.dest: f.value for f in vllm.flags}["pipeline_parallel_size"] == 2
    assert any("multi-node" in n for n in vllm.notes)
    # The same model fits one node of H200: no PP.
    assert _par(plan_for("meta-llama__Meta-Llama-3.1-405B.json", "16xH200", context=8192)).pp == 1


def test_moe_replicas_are_separate_servers() -> None:
    plan = plan_for("Qwen__Qwen3-30B-A3B.json", "16xH200", context=32768, users=16)
    vllm = plan.engines["vllm"]
    assert _par(plan).replicas == 2
    assert "data_parallel_size" not in {f.dest for f in vllm.flags}  # -dp would make it one DP-attention group
    assert any("run 2 copies" in n for n in vllm.notes)


def test_dense_replicas_are_the_engines_own_data_parallelism() -> None:
    plan = plan_for("Qwen__Qwen3-8B.json", "8xH200", context=32768)
    assert {f.dest: f.value for f in plan.engines["vllm"].flags}["data_parallel_size"] == 4
    assert {f.dest: f.value for f in plan.engines["sglang"].flags}["dp_size"] == 4


def test_users_that_do_not_fit_escalate_then_report_the_shortfall() -> None:
    plan = plan_for("Qwen__Qwen3-32B.json", "2x RTX 4090", context=32768, users=8, weights_dtype="fp8")
    vllm = plan.engines["vllm"]
    assert vllm.capacity.users_total < 8
    assert any(n.startswith(f"serves {vllm.capacity.users_total} of 8") for n in vllm.notes)
