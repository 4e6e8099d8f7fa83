"""`llmdoctor lint` as a user types it: every way of handing over a command, the JSON contract, secrets,
bad input, and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from doctor.facts import Facts
from doctor.model.fit import derive_fit

VLLM = "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --dtype fp8 --api-key sk-live-SECRETSECRET123"


def test_one_string_argument_json_contract() -> None:
    result = run_cli("lint", VLLM, "--format", "json")
    assert result.returncode == 1, result.stderr  # a critical finding (--dtype fp8)
    doc = json.loads(result.stdout)
    assert doc["schema"] == "llmdoctor.lint/1"
    assert doc["engine"] == "vllm" and doc["catalog_version"]
    assert doc["model"] == "deepseek-ai/DeepSeek-V3"
    flags = {f["canonical"]: f for f in doc["flags"]}
    assert flags["--tensor-parallel-size"]["value"] == 8 and flags["--tensor-parallel-size"]["explain"]
    ids = {f["id"] for f in doc["findings"]}
    assert {"invalid-flag-value", "secret-in-command"} <= ids
    for finding in doc["findings"]:
        assert {"id", "severity", "title", "evidence", "fix", "ref"} <= set(finding)


def test_secret_never_printed_in_any_format() -> None:
    for fmt in ("text", "json", "markdown"):
        result = run_cli("lint", VLLM, "--format", fmt)
        assert "SECRETSECRET" not in result.stdout + result.stderr, fmt


def test_words_after_double_dash_file_and_stdin_agree(tmp_path: Path) -> None:
    words = ["--", "python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--tp", "2"]
    script = tmp_path / "launch.sh"
    script.write_text("#!/bin/sh\npython3 -m sglang.launch_server \\\n  --model-path Qwen/Qwen3-8B \\\n  --tp 2\n")
    outputs = [
        run_cli("lint", "--format", "json", *words),
        run_cli("lint", "--format", "json", "--file", str(script)),
        run_cli("lint", "--format", "json", input=script.read_text()),
        run_cli("lint", "--format", "json", "--file", "-", input=script.read_text()),
    ]
    flags = []
    for out in outputs:
        assert out.returncode in (0, 1), out.stderr
        doc = json.loads(out.stdout)
        flags.append([(f["dest"], f["value"]) for f in doc["flags"]])
    assert all(f == flags[0] for f in flags)
    assert ("tp_size", 2) in flags[0]  # SGLang resolves the --tp alias to --tp-size


def test_kubernetes_args_list() -> None:
    manifest = ('command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n'
                'args: ["--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "2", "--tp-size", "2"]\n')
    result = run_cli("lint", "--format", "json", input=manifest)
    doc = json.loads(result.stdout)
    assert doc["engine"] == "vllm"
    assert "flag-from-other-engine" in {f["id"] for f in doc["findings"]}  # --tp-size is SGLang's


def test_garbage_gives_one_line_and_exit_2() -> None:
    for bad in ("'unbalanced quote", "\x01\x02\x03binary", "ls -la /tmp"):
        result = run_cli("lint", bad)
        assert result.returncode == 2, (bad, result.stdout, result.stderr)
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_nothing_to_lint_and_unknown_gpu() -> None:
    empty = run_cli("lint", input="")
    assert empty.returncode == 2 and "no command to lint" in empty.stderr
    # an unknown GPU is not fatal (issue 14): lint carries on with the GPU facts unknown and says what to pass
    gpu = run_cli("lint", "vllm serve x", "--gpu", "H2000")
    assert gpu.returncode in (0, 1) and "unknown GPU 'H2000'" in gpu.stdout and "--gpu-mem" in gpu.stdout
    bad_mem = run_cli("lint", "vllm serve x", "--gpu", "H200", "--gpu-mem", "lots")
    assert bad_mem.returncode == 2 and "--gpu-mem" in bad_mem.stderr and bad_mem.stderr.count("\n") == 1


def test_fail_on_and_symptom() -> None:
    ok = run_cli("lint", VLLM, "--fail-on", "never")
    assert ok.returncode == 0
    narrowed = run_cli("lint", VLLM, "--symptom", "config-hygiene", "--format", "json")
    ids = {f["id"] for f in json.loads(narrowed.stdout)["findings"]}
    assert ids == {"secret-in-command"}
    bad = run_cli("lint", VLLM, "--symptom", "nope")
    assert bad.returncode == 2 and "no such playbook" in bad.stderr


def test_help_teaches() -> None:
    result = run_cli("lint", "--help")
    assert result.returncode == 0
    for needle in ("Examples:", "Exit codes", "--engine-version", "--config", "--gpu", "--symptom"):
        assert needle in result.stdout


@pytest.mark.parametrize("value", ["1e308", "-3", "0", "nan"])
def test_a_memory_fraction_no_engine_accepts_is_not_a_crash(value: str) -> None:
    """`--gpu-memory-utilization 1e308` once overflowed the fit arithmetic (exit 4): now there is simply no fit."""
    result = run_cli("lint", f"vllm serve Qwen/Qwen3-8B --gpu-memory-utilization {value}", "--gpu", "H200:8",
                     "--config", "example:seed-gqa-27b", "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    assert json.loads(result.stdout)["schema"] == "llmdoctor.lint/1"
    facts = Facts()
    facts.set("launch.mem_fraction", float(value), "argv --gpu-memory-utilization")
    facts.set("gpu.memory_bytes", 141 * 10**9, "gpu catalog H200")
    derive_fit(facts)
    assert "fit.usable_bytes_per_gpu" not in facts
