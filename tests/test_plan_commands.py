"""The launch commands: spelled from each engine version's catalog, parsed back without a problem, and clean under
`lint` (doctor.commands.lint.lint with the config and the GPUs) for every real fixture config on four GPU setups."""

from __future__ import annotations

import json

import pytest

from doctor.commands.lint import lint
from doctor.engines.catalog import load_catalog
from doctor.plan.commands import option_name
from doctor.render.plan import plan_markdown, plan_text
from doctor.sources.offline import OfflineInputs, Workload
from tests.conftest import SHARED_FIXTURES, requires_shared
from tests.test_plan_support import plan_for

SETUPS = ("8xH200", "8xB300", "4x A100 80GB", "2x RTX 4090")


def _configs() -> list[str]:
    folder = SHARED_FIXTURES / "configs"
    return sorted(p.name for p in folder.glob("*.json")) if folder.is_dir() else []


def test_option_spellings_come_from_the_catalog() -> None:
    # SGLang's expert parallelism is --ep-size in every catalogued release (0.5.12 lists it second, after
    # --expert-parallel-size); vLLM's --enable-expert-parallel predates its -ep alias (0.17.0).
    for version in ("0.5.12", "0.5.23"):
        assert option_name("sglang", load_catalog("sglang", version), "ep_size") == "--ep-size"
    assert option_name("vllm", load_catalog("vllm", "0.13.0"), "enable_expert_parallel") == "--enable-expert-parallel"
    assert "-ep" not in load_catalog("vllm", "0.13.0").flag("enable_expert_parallel").options
    assert "-ep" in load_catalog("vllm", "0.17.0").flag("enable_expert_parallel").options


def test_language_model_only_only_where_the_version_has_it() -> None:
    old = plan_for("Qwen__Qwen3.5-397B-A17B.json", "8xH200", users=100, text_only=True, engines=("vllm",),
                   engine_version="0.13.0")
    new = plan_for("Qwen__Qwen3.5-397B-A17B.json", "8xH200", users=100, text_only=True, engines=("vllm",),
                   engine_version="0.17.0")
    assert "--language-model-only" not in old.engines["vllm"].argv
    assert any("no --language-model-only" in n for n in old.engines["vllm"].notes)
    assert "--language-model-only" in new.engines["vllm"].argv


def test_sglang_dp_attention_spelling_follows_the_release() -> None:
    # 0.5.23 deprecates --dp-size N --enable-dp-attention for --attn-dp-size N (srt/server_args.py:418).
    old = plan_for("deepseek-ai__DeepSeek-V3.json", "8xH200", users=100, engines=("sglang",), engine_version="0.5.16")
    new = plan_for("deepseek-ai__DeepSeek-V3.json", "8xH200", users=100, engines=("sglang",))
    old_argv, new_argv = old.engines["sglang"].argv, new.engines["sglang"].argv
    assert "--enable-dp-attention" in old_argv and old_argv[old_argv.index("--dp-size") + 1] == "8"
    assert "--attn-dp-size" in new_argv and "--enable-dp-attention" not in new_argv
    for plan in (old, new):
        command = plan.engines["sglang"].command
        assert not command.problems, command.problems


def test_parsers_missing_from_an_old_release_become_a_note() -> None:
    # glm47 (GLM-5's tool parser) is registered from vLLM 0.14.0 (docs/families.md): 0.13.0 cannot set it.
    plan = plan_for("zai-org__GLM-5.json", "8xB300", users=100, engines=("vllm",), engine_version="0.13.0")
    vllm = plan.engines["vllm"]
    assert "--tool-call-parser" not in vllm.argv
    assert any("glm47" in n and "upgrade" in n for n in vllm.notes)


def test_a_parser_that_handles_the_family_only_later_is_not_set() -> None:
    # vLLM registers `qwen3` long before 0.17.0, but it separates Qwen3.5's reasoning only from 0.17.0
    # (docs/families.md, †): on 0.13.0 the plan says to upgrade instead of setting a parser that leaks.
    old = plan_for("Qwen__Qwen3.5-27B.json", "H100", engines=("vllm",), engine_version="0.13.0").engines["vllm"]
    new = plan_for("Qwen__Qwen3.5-27B.json", "H100", engines=("vllm",), engine_version="0.17.0").engines["vllm"]
    assert "--reasoning-parser" not in old.argv and any("0.17.0" in n and "upgrade" in n for n in old.notes)
    assert new.argv[new.argv.index("--reasoning-parser") + 1] == "qwen3"


@requires_shared
@pytest.mark.parametrize("gpu", SETUPS)
def test_every_runnable_plan_lints_clean(gpu: str) -> None:
    """No warning or critical finding from `lint` on the command with the config and GPUs — except the hardware
    causes the plan's own verdict reports (a degraded plan says so)."""
    checked = 0
    for name in _configs():
        plan = plan_for(name, gpu)
        assert json.loads(json.dumps(plan.to_dict()))["schema"] == "llmdoctor.plan/1"
        assert plan_text(plan) and plan_markdown(plan)
        for engine, p in plan.engines.items():
            if p.status == "does-not-run":
                assert plan.to_dict()["commands"][engine]["command"] is None
                continue
            assert not p.command.problems, (name, engine, p.command.problems)
            result = lint(OfflineInputs(command=p.argv, engine_version=p.version,
                                        config=str(SHARED_FIXTURES / "configs" / name), gpu=gpu,
                                        workload=Workload(context=plan.demand.context)))
            loud = {f.id for f in result.diagnosis.findings if f.severity != "info"}
            assert loud <= {f.id for f in p.check.gating}, (name, gpu, engine, loud)
            if p.status == "runs":
                assert not loud, (name, gpu, engine, loud)
            checked += 1
    assert checked


@requires_shared
def test_lint_computes_the_same_capacity_as_the_plan() -> None:
    """One arithmetic (doctor/model/fit.py): lint's fit of the generated command equals the plan's, KV pool for KV pool."""
    for name, gpu in (("Qwen__Qwen3-32B.json", "8xH200"), ("deepseek-ai__DeepSeek-V3.json", "8xH200"),
                      ("Qwen__Qwen3.5-397B-A17B.json", "8xH200"), ("openai__gpt-oss-120b.json", "8xB300"),
                      ("meta-llama__Meta-Llama-3.1-405B.json", "16xH100")):
        plan = plan_for(name, gpu, users=100)
        for engine, p in plan.engines.items():
            facts = p.check.gathered.facts
            assert facts.get("fit.kv_tokens_per_group") == p.capacity.kv_tokens_per_group, (name, engine)
            assert facts.get("fit.weights_per_gpu_bytes") == int(p.capacity.fit.weights_per_gpu_bytes), (name, engine)
