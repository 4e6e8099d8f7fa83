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


def test_dp_attention_keeps_the_experts_sharded_over_the_whole_tp() -> None:
    """sgl-project/sglang#5634 (i160): DeepSeek-V3 with --tp 8 --enable-dp-attention --dp-size 8 on 8 H200s. The
    attention runs per DP rank, the experts stay split over all 8 GPUs: the weights fit (they did; the start failed
    in CUDA-graph capture), so "the weights alone do not fit" is not the answer."""
    config = str(ROOT / "fixtures" / "configs" / "deepseek-ai__DeepSeek-V3.json")
    proc = run_cli("check", "--offline", "--format", "json", "--engine-version", "0.4.5", "--config", config,
                   "--gpu", "H200:8", "--symptom", "launch-failure", "--command",
                   "python3 -m sglang.launch_server --model /DeepSeek-V3 --tp 8 --trust-remote-code "
                   "--enable-dp-attention --dp-size 8", env={"HF_HUB_OFFLINE": "1"})
    doc = json.loads(proc.stdout)
    assert doc["facts"]["fit.weights_fit"]["value"] is True
    assert "model-does-not-fit" not in [f["id"] for f in doc["findings"]]
