"""Fit and concurrency: the seed's worked examples (and where its arithmetic slips), per-engine capacity, the
inverse (longest context for N users), KV dtypes per GPU generation, and --rps through Little's law."""

from __future__ import annotations

import math

import pytest

from doctor.errors import InputError
from doctor.plan.capacity import seed_method_users
from doctor.plan.request import PlanRequest, demand_for
from tests.test_plan_support import plan_for

H200 = 143771 * 2**20  # the catalog's H200 memory (nvidia-smi 143771 MiB)


# -- the seed's worked examples (seed § GQA): its method, exactly ---------------------------------------------
def test_seed_gqa_tp2_example_is_79_users_not_82() -> None:
    # "TP2, FP8: KV per token 96 KB; one user ≈ 3.1 GB; two cards with 282 GB minus 27 GB of weights leave
    # 255 GB → 82 concurrent users". 98,304 B × 32,768 = 3.22e9 B (exactly 3 GiB), not 3.1 GB: 255e9 / 3.22e9
    # gives 79 (docs/plan.md "Where the seed's arithmetic slips").
    assert seed_method_users(2, 141e9, 27e9, 98304, 32768) == 79
    assert 98304 * 32768 == 3 * 2**30


def test_seed_single_h200_examples() -> None:
    # GQA on one H200: the seed says 36 users (114 GB / 3.1 GB); exactly 114e9 / 3.22e9 = 35.
    assert seed_method_users(1, 141e9, 27e9, 98304, 32768) == 35
    # MHA (384 KB/token, 12 GiB per user): the seed says 9 (114 / 12.6); exactly 8.
    assert seed_method_users(1, 141e9, 27e9, 393216, 32768) == 8


def test_plan_reproduces_the_seed_method_with_the_catalog_memory() -> None:
    plan = plan_for("example:seed-gqa-27b", "H200:2", context=32768, weights_dtype="fp8", latency="strict")
    vllm = plan.engines["vllm"]
    assert vllm.decision.parallelism.attn_tp == 2 and vllm.decision.parallelism.replicas == 1
    cap = vllm.capacity
    assert cap.kv.bytes_per_token == 98304  # 2 × 48 layers × 8 KV heads × 128 × 1 B (FP8)
    from doctor.plan.planner import seed_method

    expected = int((2 * H200 - plan.weights.total_bytes) // (98304 * 32768))
    assert seed_method(plan, vllm)["users_per_replica"] == expected
    # The engine-realistic number: each GPU holds half the KV heads; usable memory is 0.92 of it (vllm 0.33.0).
    # minus what the engine holds besides weights and KV (doctor/model/memory.py: activations, sampler, non-torch)
    assert cap.fit.reserved_bytes_per_gpu > 0
    budget = H200 * 0.92 - plan.weights.total_bytes / 2 - cap.fit.reserved_bytes_per_gpu
    assert cap.users_per_instance == int(budget // (98304 * 32768 / 2))
    assert cap.users_per_instance < expected  # the fraction and the activation reserve cost users


def test_fp8_weights_halve_the_linear_layers_only() -> None:
    plan = plan_for("example:seed-gqa-27b", "H200:2", context=32768, weights_dtype="fp8")
    card = plan.card
    sixteen_bit = card.param_parts["embed"] + card.param_parts["lm_head"]  # kept 16-bit (params.ALWAYS_16BIT)
    assert plan.weights.online and plan.weights.method == "fp8"
    assert plan.weights.total_bytes == (card.params - sixteen_bit) + 2 * sixteen_bit


# -- the inverse and per-sequence sizing -----------------------------------------------------------------------
def test_max_context_for_users_is_the_largest_that_fits() -> None:
    cap = plan_for("example:seed-gqa-27b", "H200:8", context=32768, users=100, weights_dtype="fp8") \
        .engines["sglang"].capacity
    longest = cap.max_context(100)
    per_group = math.ceil(100 / (cap.groups * cap.replicas))
    budget = cap.fit.kv_budget_per_gpu_bytes
    assert per_group * cap.kv.bytes_per_sequence(longest) * cap.share <= budget
    assert per_group * cap.kv.bytes_per_sequence(longest + 1) * cap.share > budget
    assert longest < cap.max_context(1) <= cap.max_context_limit  # fewer users, longer contexts, up to the model's


def test_sliding_window_layers_stop_growing_at_their_window() -> None:
    # gemma-3: five of six layers keep a 1024-token window; sizing every layer at 32k would undercount users.
    cap = plan_for("google__gemma-3-27b-it.json", "H100:1", context=32768, engines=("vllm",)).engines["vllm"].capacity
    naive = cap.fit.kv_tokens_per_group // 32768
    assert cap.users_per_group > 2 * naive


def test_hybrid_state_is_paid_per_request() -> None:
    cap = plan_for("Qwen__Qwen3-Next-80B-A3B-Thinking.json", "8xH200", context=4096, engines=("vllm",)) \
        .engines["vllm"].capacity
    assert cap.kv.state_bytes_per_sequence > 0
    assert cap.users_per_group < cap.kv_tokens_per_group // 4096


# -- KV dtypes per GPU generation and engine ------------------------------------------------------------------
def test_fp4_kv_row_only_with_fp4_tensor_cores() -> None:
    hopper = plan_for("Qwen__Qwen3-32B.json", "8xH200", context=32768, engines=("vllm",)).engines["vllm"]
    blackwell = plan_for("Qwen__Qwen3-32B.json", "8xB200", context=32768, engines=("vllm",)).engines["vllm"]
    assert [r.kv_dtype for r in hopper.rows] == ["bf16", "fp8"]
    assert [r.kv_dtype for r in blackwell.rows] == ["bf16", "fp8", "fp4"]
    by = {r.kv_dtype: r for r in blackwell.rows}
    assert by["fp4"].users_total > by["fp8"].users_total > by["bf16"].users_total


def test_no_fp8_kv_without_fp8_tensor_cores() -> None:
    a100 = plan_for("Qwen__Qwen3-32B.json", "4x A100 80GB", context=32768, engines=("vllm",)).engines["vllm"]
    assert [r.kv_dtype for r in a100.rows] == ["bf16"]
    assert not any(f.dest == "kv_cache_dtype" for f in a100.flags)


def test_dsa_kv_dtype_is_the_engines_choice_per_hardware() -> None:
    # SGLang picks fp8_e4m3 for DSA on sm_100+ and bf16 below (sglang 0.5.23 srt/arg_groups/overrides.py:532-535);
    # vLLM's auto keeps the model dtype. The plan sizes with that and never sets the flag.
    b300 = plan_for("zai-org__GLM-5.json", "8xB300", context=32768, users=100, weights_dtype="nvfp4",
                    model_path="nvidia/GLM-5-NVFP4")
    h200 = plan_for("zai-org__GLM-5.json", "8xH200", context=32768, users=40, weights_dtype="fp8")
    assert b300.engines["sglang"].capacity.kv_dtype == "fp8"
    assert b300.engines["vllm"].capacity.kv_dtype == "bf16"
    assert h200.engines["sglang"].capacity.kv_dtype == "bf16"
    for plan in (b300, h200):
        for engine in plan.engines.values():
            assert not any(f.dest in ("kv_cache_dtype", "attention_backend") for f in engine.flags)


# -- traffic ---------------------------------------------------------------------------------------------------
def test_rps_becomes_users_by_littles_law_and_says_it_assumed() -> None:
    assumed = demand_for(PlanRequest(config="x", gpu="H200", rps=5), None, "x")
    assert assumed.users == 100 and "assumed" in assumed.users_source and "20 s" in assumed.users_source
    given = demand_for(PlanRequest(config="x", gpu="H200", rps=5, request_seconds=12), None, "x")
    assert given.users == 60 and "assumed" not in given.users_source


def test_context_beyond_the_model_is_an_input_error() -> None:
    with pytest.raises(InputError, match="max_position_embeddings"):
        demand_for(PlanRequest(config="x", gpu="H200", context=300000), 262144, "cfg")
    assert demand_for(PlanRequest(config="x", gpu="H200"), 8192, "cfg").context == 8192


@pytest.mark.parametrize("options, message", [
    ({"users": 5, "rps": 1.0}, "--users and --rps"),
    ({"rps": 0.0}, "--rps"),
    ({"request_seconds": 3.0}, "--request-seconds"),
    ({"engine_version": "0.13.0"}, "--engine-version"),
    ({"latency": "fast"}, "--latency"),
    ({"context": 0}, "--context"),
])
def test_bad_requests_name_the_option(options: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        PlanRequest(config="x", gpu="H200", **options).check()  # type: ignore[arg-type]
