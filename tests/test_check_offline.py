"""Offline `llmdoctor check` reaches the seed's root causes from a pasted command, a real config and a GPU
name — and does not chase the false leads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, requires_shared, run_cli, shared_config

GLM52 = ("python3 -m sglang.launch_server --model nvidia/GLM-5.2-NVFP4 --tensor-parallel-size 8 "
         "--quantization modelopt_fp4 --tool-call-parser glm47 --reasoning-parser glm45 --trust-remote-code "
         "--chunked-prefill-size 16384 --mem-fraction-static 0.80")
QWEN35 = ("vllm serve Qwen/Qwen3.5-397B-A17B-FP8 -dp 8 --enable-expert-parallel --language-model-only "
          "--reasoning-parser qwen3 --enable-prefix-caching")


def _check(*args: str) -> tuple[int, dict]:
    result = run_cli("check", "--format", "json", *args)
    assert result.returncode in (0, 1, 5), result.stderr  # 5: a --symptom no cause explains (never silent)
    return result.returncode, json.loads(result.stdout)


def _ids(doc: dict) -> set[str]:
    return {f["id"] for f in doc["findings"]}


@requires_shared
def test_glm52_without_ep_on_b300_is_moe_without_ep() -> None:
    rc, doc = _check("--command", GLM52, "--config", str(shared_config("zai-org__GLM-5.2.json")), "--gpu", "8xB300",
                     "--symptom", "memory-filling-fast")
    assert rc == 1 and "moe-without-ep" in _ids(doc)
    [finding] = [f for f in doc["findings"] if f["id"] == "moe-without-ep"]
    assert finding["symptom"] == "memory-filling-fast" and finding["fix"] == "add --ep-size 8"


@requires_shared
def test_glm52_with_forced_fp8_kv_is_dsa_kv_dtype_forced() -> None:
    _rc, doc = _check("--command", GLM52 + " --kv-cache-dtype fp8_e4m3", "--config",
                      str(shared_config("zai-org__GLM-5.2.json")), "--gpu", "8xB300", "--symptom", "launch-failure")
    assert "dsa-kv-dtype-forced" in _ids(doc)
    # SGLang's spelling `fp8` is not even accepted: both causes
    _rc, doc = _check("--command", GLM52 + " --kv-cache-dtype fp8", "--config",
                      str(shared_config("zai-org__GLM-5.2.json")), "--gpu", "8xB300", "--symptom", "launch-failure")
    assert {"dsa-kv-dtype-forced", "invalid-flag-value"} <= _ids(doc)


@requires_shared
def test_glm5_on_two_rtx_4090_is_dsa_unsupported_gpu() -> None:
    rc, doc = _check("--config", str(shared_config("zai-org__GLM-5.json")), "--gpu", "2x RTX 4090",
                     "--symptom", "launch-failure")
    assert rc == 1
    [finding] = [f for f in doc["findings"] if f["id"] == "dsa-unsupported-gpu"]
    assert finding["severity"] == "critical"
    assert {e["fact"] for e in finding["evidence"]} >= {"model.attention", "gpu.dsa_kernels"}
    assert "model-does-not-fit" in _ids(doc)  # and 48 GB cannot hold the weights anyway (seed: "Large MoE is out")


@requires_shared
def test_dsa_overrides_on_a_gpu_without_dsa_kernels_are_not_blamed() -> None:
    """vllm-project/vllm#41117 (bench i041, a false lead): DeepSeek-V4-Flash with --kv-cache-dtype fp8 on RTX 4090s.
    No release has DSA kernels for sm_89 (doctor/hardware/kernels.yaml), so the override is moot: the GPU is the
    cause; the same override on a GPU that runs them stays dsa-kv-dtype-forced (the GLM-5.2 on B300 test above)."""
    command = "vllm serve deepseek-ai/DeepSeek-V4-Flash --tensor-parallel-size 8 --kv-cache-dtype fp8 --max-model-len 8192"
    config = str(shared_config("deepseek-ai__DeepSeek-V4-Flash.json"))
    _rc, doc = _check("--command", command, "--config", config, "--gpu", "8x RTX 4090", "--engine-version", "0.20.0",
                      "--symptom", "launch-failure")
    assert "dsa-unsupported-gpu" in _ids(doc) and "dsa-kv-dtype-forced" not in _ids(doc)
    _rc, doc = _check("--command", command, "--config", config, "--gpu", "8xB300", "--engine-version", "0.20.0",
                      "--symptom", "launch-failure")
    assert "dsa-kv-dtype-forced" in _ids(doc) and "dsa-unsupported-gpu" not in _ids(doc)


@requires_shared
def test_qwen35_prefix_caching_in_an_evaluation_pipeline() -> None:
    _rc, doc = _check("--command", QWEN35, "--config", str(shared_config("Qwen__Qwen3.5-397B-A17B.json")),
                      "--gpu", "H200:8", "--reproducible", "--temperature", "0",
                      "--symptom", "nondeterministic-outputs")
    [finding] = [f for f in doc["findings"] if f["id"] == "hybrid-prefix-cache-nondeterminism"]
    assert finding["severity"] == "warning"
    assert "sampling-nondeterministic" not in _ids(doc)


@requires_shared
def test_false_lead_right_parser_is_not_tool_parser_missing() -> None:
    command = ("vllm serve Qwen/Qwen3-Coder-480B-A35B-Instruct -tp 8 --enable-expert-parallel "
               "--enable-auto-tool-choice --tool-call-parser qwen3_coder")
    _rc, doc = _check("--command", command, "--config", str(shared_config("Qwen__Qwen3-Coder-480B-A35B-Instruct.json")),
                      "--symptom", "tools-ignored")
    ids = _ids(doc)
    assert not ids & {"tool-parser-missing", "tool-parser-wrong", "auto-tool-choice-missing"}
    assert "model-tool-format-unsupported" in ids  # "the flags are right: look at the model or template"


def test_false_lead_blackwell_workstation_has_nvfp4() -> None:
    _rc, doc = _check("--command", "vllm serve nvidia/Some-Model-NVFP4 --quantization modelopt_fp4",
                      "--gpu", "RTX PRO 6000", "--symptom", "launch-failure")
    assert "nvfp4-needs-blackwell" not in _ids(doc)
    _rc, hopper = _check("--command", "vllm serve nvidia/Some-Model-NVFP4 --quantization modelopt_fp4",
                         "--gpu", "H100", "--symptom", "launch-failure")
    assert "nvfp4-needs-blackwell" in _ids(hopper)


@requires_shared
def test_false_lead_dsa_with_nothing_forced() -> None:
    command = "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --tp-size 8 --ep-size 8"
    _rc, doc = _check("--command", command, "--config", str(shared_config("deepseek-ai__DeepSeek-V3.2.json")),
                      "--gpu", "H200:8", "--symptom", "launch-failure")
    assert not _ids(doc) & {"dsa-kv-dtype-forced", "dsa-attention-backend-forced", "dsa-unsupported-gpu"}


@requires_shared
def test_recorded_files_offline() -> None:
    _rc, doc = _check("--metrics", str(SHARED_FIXTURES / "metrics" / "vllm_1.prom"), "--symptom", "memory-filling-fast")
    assert "kv-cache-exhausted" in _ids(doc)


def test_a_new_symptom_is_one_yaml_file(tmp_path: Path) -> None:
    """A user adds a symptom without touching Python: a tree reading observed metrics, a cause of their own."""
    (tmp_path / "causes").mkdir()
    (tmp_path / "causes" / "ttft-slo-breach.yaml").write_text(
        "id: ttft-slo-breach\ntitle: TTFT p99 above the SLO\nseverity: warning\n"
        "what: p99 time to first token is {metrics.ttft_p99} s\nwhy: prefill is queueing\n"
        "fix: {any: add prefill capacity}\nref: our runbook\n")
    (tmp_path / "slow-first-token.yaml").write_text(
        "symptom: slow-first-token\ntitle: First tokens are slow\ntree:\n"
        "  - when: {fact: metrics.ttft_p99, op: gt, value: 1.0}\n    cause: ttft-slo-breach\n")
    metrics = tmp_path / "scenario.prom"
    metrics.write_text(  # a scenario scrape: vLLM's histogram names, a slow p99
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        + "".join(f'vllm:time_to_first_token_seconds_bucket{{le="{le}",model_name="m"}} {n}\n'
                  for le, n in (("0.1", 10), ("1.0", 50), ("5.0", 100), ("+Inf", 100)))
        + 'vllm:time_to_first_token_seconds_count{model_name="m"} 100\n'
        + 'vllm:time_to_first_token_seconds_sum{model_name="m"} 150\n')
    _rc, doc = _check("--metrics", str(metrics), "--playbooks", str(tmp_path), "--symptom", "slow-first-token")
    [finding] = doc["findings"]
    assert finding["id"] == "ttft-slo-breach" and finding["confidence"] == "high"


@pytest.mark.parametrize("args", [(), ("--engine-version", "0.8.5"), ("--context", "8k")])
def test_nothing_to_check_is_a_usage_error(args: tuple[str, ...]) -> None:
    """No symptom and nothing to examine (a version or a workload describes nothing by itself): exit 2. A
    --symptom alone is an answer, not this error (tests/test_never_silent.py)."""
    result = run_cli("check", *args)
    assert result.returncode == 2 and "nothing to check" in result.stderr


def test_server_info_file_offline() -> None:
    scenario = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios" / "sglang_server_info.json"
    _rc, doc = _check("--server-info", str(scenario), "--symptom", "config-hygiene")
    assert doc["facts"]["launch.tp"]["value"] == 8
    assert "secret-in-command" in _ids(doc)  # its recorded launch command carries --api-key
    assert "sk-scenario" not in json.dumps(doc)


@pytest.mark.parametrize("content", [b"\x00\x01\x02garbage", b"\xff\xfe not utf-8", None])
def test_bad_recorded_files_are_one_line_exit_2(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "bad.prom"
    if content is not None:
        path.write_bytes(content)
    for flag in ("--metrics", "--server-info", "--nvidia-smi"):
        result = run_cli("check", flag, str(path))
        assert result.returncode == 2, (flag, result.stdout, result.stderr)
        assert result.stderr.count("\n") == 1 and str(path) in result.stderr


def test_deprecation_warning_of_another_subcommand_is_not_a_deprecated_flag(tmp_path: Path) -> None:
    """vLLM warns for any parsed dest that some sub-command registered as deprecated (one set shared by every
    parser, vllm 0.24.0 vllm/utils/argparse_utils.py:116, 141-146): `vllm chat --url` printed run-batch's
    deprecation (vllm-project/vllm#48094). A log from a sub-command other than serve names no launch flag."""
    log = tmp_path / "chat.log"
    log.write_text("WARNING 07-09 15:49:52 [argparse_utils.py:146] argument 'url' is deprecated\n")
    _rc, doc = _check("--offline", "--symptom", "config-hygiene", "--engine-version", "0.24.0", "--log", str(log),
                      "--command", "vllm chat --url http://localhost:8000/v1")
    assert doc["facts"]["launch.other_subcommand"]["value"] == "chat"
    assert "deprecated-flag" not in _ids(doc)
    # the same line with no command (or a server's own log) is still the engine's deprecation warning
    _rc, doc = _check("--offline", "--symptom", "config-hygiene", "--engine-version", "0.24.0", "--log", str(log))
    assert "deprecated-flag" in _ids(doc)


def test_vllm_compiled_extension_missing_is_a_broken_install_not_an_old_release(tmp_path: Path) -> None:
    """vLLM's warning that vllm._C is absent (vllm/_custom_ops.py:17-18, 0.5.5-0.6.3.post1) explains the model
    registry's 'not supported' for a Llama (vllm-project/vllm#9624): engine-too-old yields to it. The missing module
    is the engine's own compiled extension, so engine-package-incomplete names it (engine-dependency-missing, whose
    fix installs a third-party package, yields to it since work9a; bench case i416 accepts either)."""
    log = tmp_path / "server.log"
    log.write_text("WARNING 10-25 00:26:20 _custom_ops.py:19] Failed to import from vllm._C with "
                   "ModuleNotFoundError(\"No module named 'vllm._C'\")\n"
                   "ValueError: Model architectures ['LlamaForCausalLM'] are not supported for now.\n")
    _rc, doc = _check("--offline", "--symptom", "launch-failure", "--engine-version", "0.6.3", "--log", str(log))
    assert "engine-package-incomplete" in _ids(doc) and "engine-dependency-missing" not in _ids(doc)
    assert "engine-too-old" not in _ids(doc)
