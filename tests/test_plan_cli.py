"""`llmdoctor plan` as a user runs it: real subprocesses, the llmdoctor.plan/1 JSON document, text and markdown,
exit codes, and bad input as one line with exit 2."""

from __future__ import annotations

import json

import pytest

from doctor.cli.plan_cmd import LATENCY, WEIGHT_DTYPES
from doctor.model.weights import WEIGHT_DTYPES as PLANNER_DTYPES
from doctor.plan.rules import latency_modes
from tests.conftest import SHARED_FIXTURES, requires_shared, run_cli

CONFIGS = SHARED_FIXTURES / "configs"


def test_cli_choices_match_the_planner() -> None:
    assert latency_modes() == LATENCY and WEIGHT_DTYPES == PLANNER_DTYPES


def test_json_document() -> None:
    result = run_cli("plan", "example:seed-gqa-27b", "--gpu", "H200:8", "--context", "32k", "--users", "100",
                     "--weights-dtype", "fp8", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["schema"] == "llmdoctor.plan/1"
    for key in ("fit", "concurrency", "parallelism", "flags", "commands", "verdict", "findings"):
        assert key in doc
    assert set(doc["flags"]) == {"set", "delegate"}
    assert doc["verdict"]["status"] == "runs"
    vllm = doc["commands"]["vllm"]
    assert vllm["command"].startswith("vllm serve seed-gqa-27b") and vllm["argv"][:2] == ["vllm", "serve"]
    assert doc["commands"]["sglang"]["command"].startswith("python3 -m sglang.launch_server")
    assert doc["parallelism"]["vllm"]["tp"] == 2 and doc["parallelism"]["vllm"]["replicas"] == 4
    assert doc["concurrency"]["vllm"]["users_total"] >= 100
    assert {row["kv_dtype"] for row in doc["concurrency"]["vllm"]["by_kv_dtype"]} == {"bf16", "fp8"}
    assert doc["concurrency"]["vllm"]["seed_method"]["users_per_replica"] > 0


@requires_shared
def test_text_and_markdown() -> None:
    config = str(CONFIGS / "deepseek-ai__DeepSeek-V3.json")
    text = run_cli("plan", config, "--gpu", "8xH200", "--rps", "5", "--engine", "vllm")
    assert text.returncode == 0, text.stderr
    out = text.stdout
    assert "verdict  RUNS" in out and "vllm serve deepseek-ai/DeepSeek-V3" in out
    assert "Little's law: 5 requests/s × 20 s per request (assumed: no --request-seconds)" in out
    assert "Left to the engine" not in out and "(-v: why each flag)" in out  # one readable page by default
    verbose = run_cli("plan", config, "--gpu", "8xH200", "--rps", "5", "--engine", "vllm", "-v")
    assert "Left to the engine" in verbose.stdout and "--attention-backend" in verbose.stdout
    markdown = run_cli("plan", config, "--gpu", "8xH200", "--users", "100", "--format", "markdown")
    assert markdown.returncode == 0, markdown.stderr
    assert markdown.stdout.startswith("## llmdoctor plan") and "```sh" in markdown.stdout


@requires_shared
def test_does_not_run_exits_1_and_withholds_the_command() -> None:
    result = run_cli("plan", str(CONFIGS / "zai-org__GLM-5.json"), "--gpu", "2x RTX 4090", "--format", "json")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert doc["verdict"]["status"] == "does-not-run"
    assert doc["commands"]["vllm"]["command"] is None
    assert "dsa-unsupported-gpu" in doc["commands"]["vllm"]["withheld"]
    assert doc["verdict"]["instead"]


@pytest.mark.parametrize("args, fragment", [
    (["--gpu", "H2000"], "unknown GPU 'H2000'"),
    (["--gpu", "H200", "--context", "lots"], "--context"),
    (["--gpu", "H200", "--users", "5", "--rps", "2"], "--users and --rps"),
    (["--gpu", "H200", "--context", "2M"], "max_position_embeddings"),
    (["--gpu", "H200", "--weights-dtype", "nvfp4"], "--model-path"),
    (["--gpu", "H200", "--engine-version", "0.13.0"], "--engine-version"),
])
def test_bad_input_is_one_line_exit_2(args: list[str], fragment: str) -> None:
    result = run_cli("plan", "example:seed-gqa-27b", *args)
    assert result.returncode == 2, result.stderr
    assert fragment in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_unreadable_config_is_exit_2(tmp_path: object) -> None:
    missing = run_cli("plan", "/nonexistent/config.json", "--gpu", "H200")
    assert missing.returncode == 2 and "no such file" in missing.stderr
    broken = tmp_path / "config.json"  # type: ignore[operator]
    broken.write_text("{not json")
    result = run_cli("plan", str(broken), "--gpu", "H200")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
