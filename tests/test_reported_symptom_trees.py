"""A reported symptom is what the user wants: reporting nondeterministic outputs says the same request should give
the same output, as --reproducible does (playbooks/nondeterministic-outputs.yaml)."""

from __future__ import annotations

import json

from tests.conftest import ROOT, run_cli

QWEN3 = str(ROOT / "fixtures" / "configs" / "Qwen__Qwen3-8B.json")
#: vllm-project/vllm#40896 (bench/incidents/i281): the reporter's launch on vLLM 0.19.0
COMMAND = "python -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B --max-model-len 4096"


def _findings(*args: str) -> list[str]:
    proc = run_cli("check", "--offline", "--format", "json", "--engine-version", "0.19.0", "--config", QWEN3,
                   "--gpu", "H100", *args, env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode in (0, 1, 5), proc.stderr
    return [f["id"] for f in json.loads(proc.stdout)["findings"]]


def test_reporting_nondeterminism_is_asking_for_reproducible_outputs() -> None:
    assert "batch-invariance-off" in _findings("--command", COMMAND, "--symptom", "nondeterministic-outputs")
    assert "batch-invariance-off" in _findings("--command", COMMAND, "--reproducible")


def test_batch_invariant_kernels_on_or_nothing_reported_name_nothing() -> None:
    assert "batch-invariance-off" not in _findings("--command", "VLLM_BATCH_INVARIANT=1 " + COMMAND,
                                                   "--symptom", "nondeterministic-outputs")
    assert "batch-invariance-off" not in _findings("--command", COMMAND)
