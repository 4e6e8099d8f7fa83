"""launch.* facts from parsed commands: engine-neutral values, defaults filled, every source cited.

Commands are the seed's or scenarios written here; defaults come from the generated catalogs
(tests/test_catalog.py ties those to the engines' source).
"""

from __future__ import annotations

import json

from seed_commands import SEED_GLM_HANDOVER

from doctor.engines.command import parse_command
from doctor.engines.launch_facts import launch_facts


def facts_of(text: str, version: str | None = None, **kw):
    return launch_facts(parse_command(text, engine_version=version, **kw))


GLM = SEED_GLM_HANDOVER


def test_seed_glm_facts() -> None:
    f = facts_of(GLM, "0.5.23")
    assert f.get("launch.engine") == "sglang" and f.get("launch.version") == "0.5.23"
    assert f.get("launch.catalog_version") == "0.5.23" and f.get("launch.model") == "nvidia/GLM-5.2-NVFP4"
    assert f.get("launch.tp") == 8 and f.fact("launch.tp").source == "argv --tensor-parallel-size"
    assert f.get("launch.flags.tp_size") == 8
    assert f.get("launch.dp") == 1 and f.fact("launch.dp").source == "default of sglang 0.5.23 (--dp-size)"
    assert f.get("launch.expert_parallel") is False and f.get("launch.ep") == 1
    # left to the engine: known to be unset, not unknown
    for key in ("launch.kv_cache_dtype", "launch.attention_backend"):
        assert key in f and f.get(key) is None
    assert f.get("launch.tool_call_parser") == "glm47" and f.get("launch.reasoning_parser") == "glm45"
    assert f.get("launch.prefix_caching") is True
    assert f.fact("launch.prefix_caching").source == "default of sglang 0.5.23"
    assert f.get("launch.mem_fraction") == 0.8 and f.get("launch.chunked_prefill_size") == 16384
    assert f.get("launch.enable_metrics") is False
    assert f.get("launch.unknown_flags") == [] and f.get("launch.invalid_values") == []
    assert "glm47" in f.get("engine.tool_parsers")
    json.dumps(f.to_dict())  # JSON all the way down


def test_unknown_version_is_an_error_fact() -> None:
    f = facts_of(GLM)
    assert "launch.version" not in f
    assert "newest sglang catalog" in f.unknown_reason("launch.version")
    assert f.get("launch.catalog_version") == "0.5.23"


def test_vllm_expert_parallel_and_dp_attention() -> None:
    f = facts_of("vllm serve deepseek-ai/DeepSeek-V3 -dp 8 --enable-expert-parallel --dtype fp8 --kv-cache-dtype fp8",
                 "0.13.0")
    assert f.get("launch.expert_parallel") is True
    assert f.get("launch.ep") == 8 and f.fact("launch.ep").source.startswith("derived: launch.tp × launch.dp")
    assert f.get("launch.dp_attention") is True
    assert f.get("launch.invalid_values") == [{"flag": "--dtype", "value": "fp8", "enforced": "argparse",
                                              "choices": ["auto", "bfloat16", "float", "float16", "float32", "half"]}]
    assert f.get("launch.kv_cache_dtype") == "fp8"
    assert f.get("launch.enable_metrics") is True
    assert f.fact("launch.enable_metrics").source == "engine behaviour: vLLM always serves /metrics"
    plain = facts_of("vllm serve m -tp 8", "0.13.0")
    assert plain.get("launch.expert_parallel") is False and plain.get("launch.ep") == 1
    assert plain.get("launch.dp_attention") is False


def test_sglang_expert_parallel_spellings() -> None:
    f = facts_of("python3 -m sglang.launch_server --model-path m --tp 8 --ep-size 8", "0.5.23")
    assert f.get("launch.expert_parallel") is True and f.get("launch.ep") == 8
    assert "argv --ep-size = 8" in f.fact("launch.expert_parallel").source
    assert f.fact("launch.tp").source == "argv --tp (abbreviation of --tp-size)"
    assert f.get("launch.abbreviated_flags") == [{"flag": "--tp", "resolved": "--tp-size"}]
    old = facts_of("python3 -m sglang.launch_server --model-path m --tp 4 --enable-ep-moe", "0.4.10")
    assert old.get("launch.expert_parallel") is True and old.get("launch.ep") == 4
    deepep = facts_of("python3 -m sglang.launch_server --model-path m --tp 8 --moe-a2a-backend deepep", "0.5.4")
    assert deepep.get("launch.ep") == 8 and deepep.get("launch.expert_parallel") is True
    dpa = facts_of("python3 -m sglang.launch_server --model-path m --tp 8 --dp 8 --enable-dp-attention", "0.5.4")
    assert dpa.get("launch.dp_attention") is True and dpa.get("launch.dp") == 8


def test_defaults_filled_from_the_catalog() -> None:
    v13 = facts_of("vllm serve m", "0.13.0")
    assert v13.get("launch.mem_fraction") == 0.9 and v13.fact("launch.mem_fraction").source == "default of vllm 0.13.0"
    assert v13.get("launch.prefix_caching") is True
    assert facts_of("vllm serve m", "0.33.0").get("launch.mem_fraction") == 0.92
    off = facts_of("vllm serve m --no-enable-prefix-caching", "0.13.0")
    assert off.get("launch.prefix_caching") is False
    assert off.fact("launch.prefix_caching").source == "argv --no-enable-prefix-caching"
    sg = facts_of("python3 -m sglang.launch_server --model-path m --disable-radix-cache", "0.5.4")
    assert sg.get("launch.prefix_caching") is False
    unknown = facts_of("python3 -m sglang.launch_server --model-path m", "0.5.4")
    assert "launch.mem_fraction" not in unknown
    assert "computes its default at startup" in unknown.unknown_reason("launch.mem_fraction")


def test_env_driven_facts() -> None:
    f = facts_of("VLLM_BATCH_INVARIANT=1 LMCACHE_CHUNK_SIZE=256 VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m",
                 "0.10.0")
    assert f.get("launch.deterministic") is True
    assert f.fact("launch.deterministic").source == "derived: env VLLM_BATCH_INVARIANT = 1"  # as the shell writes it
    assert f.get("launch.lmcache_chunk_size") == 256 and f.get("launch.env.LMCACHE_CHUNK_SIZE") == "256"
    assert f.get("launch.attention_backend") == "FLASHINFER"
    assert f.fact("launch.attention_backend").source == "env VLLM_ATTENTION_BACKEND"
    s = facts_of("python3 -m sglang.launch_server --model-path m --enable-deterministic-inference", "0.5.4")
    assert s.get("launch.deterministic") is True


def test_json_flags_and_dotted_keys() -> None:
    f = facts_of("vllm serve m --enable-eplb --eplb-config.num_redundant_experts 32 --eplb-config.window_size 1000 "
                 "--speculative-config '{\"method\":\"qwen3_next_mtp\",\"num_speculative_tokens\":1}'", "0.13.0")
    assert f.get("launch.flags.eplb_config") == {"num_redundant_experts": 32, "window_size": 1000}
    assert f.get("launch.ep_redundant_experts") == 32 and f.get("launch.eplb") is True
    assert f.get("launch.speculative") is True
    assert f.get("launch.flags.speculative_config") == {"method": "qwen3_next_mtp", "num_speculative_tokens": 1}


def test_language_model_only() -> None:
    assert facts_of("vllm serve m --language-model-only", "0.33.0").get("launch.language_model_only") is True
    limits = facts_of("vllm serve m --limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'", "0.13.0")
    assert limits.get("launch.language_model_only") is True
    assert "--limit-mm-per-prompt" in limits.fact("launch.language_model_only").source
    some = facts_of("vllm serve m --limit-mm-per-prompt '{\"image\": 2}'", "0.13.0")
    assert some.get("launch.language_model_only") is False


def test_problem_lists_and_secrets() -> None:
    f = facts_of("vllm serve m --api-key sk-abcdefghijklmnopqrstuvwx --tp-size 2 --enable-moe-ep "
                 "--reasoning-parser-qwen3", "0.13.0")
    assert f.get("launch.secret_flags") == ["--api-key"]
    assert f.get("launch.flags.api_key") == "***"
    assert "sk-abcdefghijklmnopqrstuvwx" not in json.dumps(f.to_dict())
    assert f.get("launch.other_engine_flags") == [{"flag": "--tp-size", "engine": "sglang",
                                                   "equivalent": "--tensor-parallel-size"}]
    unknown = {p["flag"]: p for p in f.get("launch.unknown_flags")}
    assert unknown["--reasoning-parser-qwen3"]["nearest"] == "--reasoning-parser"
    too_new = facts_of("vllm serve m --language-model-only", "0.10.0")
    assert too_new.get("launch.too_new_flags")[0]["flag"] == "--language-model-only"
    dep = facts_of("python3 -m sglang.launch_server --model-path m --enable-ep-moe", "0.5.4")
    assert dep.get("launch.deprecated_flags")[0]["replacement"] == "--ep-size"
