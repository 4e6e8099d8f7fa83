"""Every launch command printed in the seed, linted, with the findings a senior engineer would give.

The command texts are copied from fixtures/seed/serving-playbook.txt (our own seed); the configs are the
real ones under fixtures/configs. Where the seed's command carries a slip (a
vLLM `--dtype fp8`, SGLang's non-existent `--enable-moe-ep`), the finding is asserted; where it is right,
its absence is.
"""

from __future__ import annotations

import pytest
from conftest import requires_shared, shared_config
from seed_commands import (
    SEED_DSV3,
    SEED_DSV3_EP,
    SEED_GLM_DSA,
    SEED_GLM_HANDOVER,
    SEED_GQA,
    SEED_QWEN35,
    SEED_QWEN35_MM,
)

from doctor.commands.lint import lint
from doctor.sources.offline import OfflineInputs, Workload

# "Same Conditions, Different Architectures", GLM-5.2 line, as a command.
GLM52_SAME_CONDITIONS = ("python3 -m sglang.launch_server --model nvidia/GLM-5.2-NVFP4 "
                         "--tensor-parallel-size 8 --enable-moe-ep --tool-call-parser glm47 --reasoning-parser glm45 "
                         "--chunked-prefill-size 16384 --mem-fraction-static 0.80")

PARSER_CAUSES = {"tool-parser-missing", "tool-parser-wrong", "reasoning-parser-missing", "reasoning-parser-wrong",
                 "auto-tool-choice-missing"}


def _lint(command: str, config: str, gpu: str, **workload: object):
    path = config if config.startswith("example:") else str(shared_config(config))
    return lint(OfflineInputs(command=command, config=path, gpu=gpu, workload=Workload(**workload)))


def _ids(result, at_least: str = "info") -> set[str]:
    order = ["info", "warning", "critical"]
    return {f.id for f in result.diagnosis.findings if order.index(f.severity) >= order.index(at_least)}


@requires_shared
@pytest.mark.parametrize("command", [SEED_GLM_HANDOVER, SEED_GLM_DSA])
def test_glm52_sglang_needs_ep_and_leaves_dsa_choices_to_the_engine(command: str) -> None:
    result = _lint(command, "zai-org__GLM-5.2.json", "8xB300")
    ids = _ids(result)
    assert "moe-without-ep" in ids
    assert not ids & {"dsa-kv-dtype-forced", "dsa-attention-backend-forced"}
    assert not ids & PARSER_CAUSES, "glm47/glm45 are the right SGLang parsers for GLM-5.x"
    assert "metrics-disabled" in ids  # the seed's command has no --enable-metrics
    moe = next(f for f in result.diagnosis.findings if f.id == "moe-without-ep")
    assert moe.fix == "add --ep-size 8"
    assert [e.fact for e in moe.evidence] == ["model.moe", "launch.tp", "launch.expert_parallel"]
    assert moe.evidence[1].source == "argv --tensor-parallel-size"


@requires_shared
def test_enable_moe_ep_is_not_an_sglang_flag() -> None:
    result = _lint(GLM52_SAME_CONDITIONS, "zai-org__GLM-5.2.json", "8xB300")
    unknown = next(f for f in result.diagnosis.findings if f.id == "unknown-flag")
    assert unknown.severity == "critical"
    assert "--enable-moe-ep" in unknown.what and "--ep-size" in unknown.fix
    assert result.gathered.command.catalog_version == "0.5.23"


@requires_shared
@pytest.mark.parametrize("command", [SEED_DSV3, SEED_DSV3_EP])
def test_vllm_has_no_dtype_fp8(command: str) -> None:
    result = _lint(command, "deepseek-ai__DeepSeek-V3.json", "8xH200")
    invalid = next(f for f in result.diagnosis.findings if f.id == "invalid-flag-value")
    assert invalid.severity == "critical" and "--dtype" in invalid.what and "fp8" in invalid.what


@requires_shared
def test_dsv3_tp8_without_ep_and_the_dp_ep_variant() -> None:
    assert "moe-without-ep" in _ids(_lint(SEED_DSV3, "deepseek-ai__DeepSeek-V3.json", "8xH200"))
    dp = _ids(_lint(SEED_DSV3_EP, "deepseek-ai__DeepSeek-V3.json", "8xH200"))
    assert "moe-without-ep" not in dp and "kv-replicated-by-tp" not in dp


@requires_shared
@pytest.mark.parametrize("command", [SEED_QWEN35, SEED_QWEN35_MM])
def test_qwen35_parsers_are_clean(command: str) -> None:
    """The seed's Qwen3.5-397B commands: `--reasoning-parser qwen3` is right and EP is on. No tool parser is
    set: that is only advice (info) unless someone reports tools-ignored."""
    result = _lint(command, "Qwen__Qwen3.5-397B-A17B.json", "8xH200")
    assert not _ids(result, "warning") & PARSER_CAUSES
    assert "moe-without-ep" not in _ids(result)
    tool = [f for f in result.diagnosis.findings if f.id == "tool-parser-missing"]
    assert all(f.severity == "info" for f in tool)


@requires_shared
def test_qwen35_prefix_caching_in_an_evaluation_pipeline() -> None:
    casual = _lint(SEED_QWEN35, "Qwen__Qwen3.5-397B-A17B.json", "8xH200")
    [info] = [f for f in casual.diagnosis.findings if f.id == "hybrid-prefix-cache-nondeterminism"]
    assert info.severity == "info"
    evaluation = _lint(SEED_QWEN35, "Qwen__Qwen3.5-397B-A17B.json", "8xH200", reproducible=True)
    [warning] = [f for f in evaluation.diagnosis.findings if f.id == "hybrid-prefix-cache-nondeterminism"]
    assert warning.severity == "warning"
    assert "--no-enable-prefix-caching" in warning.fix


def test_seed_gqa_command_on_the_seed_scenario() -> None:
    """The seed's Qwen3.6-27B SGLang command, against the bundled scenario of the model as the seed
    describes it (dense GQA): nothing forced that should not be, EP moot; the seed forgot the reasoning
    parser of a Qwen3.6 (thinking) model."""
    result = _lint(SEED_GQA, "example:seed-gqa-27b", "2xH200")
    ids = _ids(result)
    assert not ids & {"moe-without-ep", "kv-replicated-by-tp", "unknown-flag", "invalid-flag-value",
                      "flag-from-other-engine", "metrics-disabled"}
    assert "reasoning-parser-missing" in ids


def test_a_right_command_lints_clean_on_every_version_it_is_valid_for() -> None:
    """A command that is entirely right: no warning or critical, on each engine version that has its flags."""
    command = ("python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 1 "
               "--tool-call-parser qwen25 --reasoning-parser qwen3 --enable-metrics --mem-fraction-static 0.85")
    for version in ("0.5.4", "0.5.8", "0.5.23"):
        result = lint(OfflineInputs(command=command, engine_version=version, gpu="H100"))
        assert not _ids(result, "warning"), (version, [(f.id, f.what) for f in result.diagnosis.findings])


@requires_shared
def test_hybrid_chunk_must_be_a_multiple_of_the_engine_block_size() -> None:
    """Qwen3-Next (real config): vLLM's hybrid manager makes an attention page as large as one GDN state page,
    16·ceil(1,097,728 B ÷ (16 × 2,048 B)) = 544 tokens; 8192 is not a multiple of it (seed: One Block Size
    Determines Other Settings in a Chain)."""
    command = ("vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking -tp 4 --enable-expert-parallel "
               "--max-num-batched-tokens {} --reasoning-parser qwen3")
    config = str(shared_config("Qwen__Qwen3-Next-80B-A3B-Thinking.json"))
    bad = lint(OfflineInputs(command=command.format(8192), config=config))
    assert bad.facts.get("engine.block_size") == 544
    [finding] = [f for f in bad.diagnosis.findings if f.id == "hybrid-chunk-misaligned"]
    assert "544" in finding.fix and "8192" in finding.what
    good = lint(OfflineInputs(command=command.format(544 * 16), config=config))
    assert "hybrid-chunk-misaligned" not in {f.id for f in good.diagnosis.findings}
