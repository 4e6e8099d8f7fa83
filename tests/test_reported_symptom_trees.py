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


def _case_log(case_id: str, tmp_path) -> str:
    """A worked case's log (bench/incidents/<id>.yaml: the reporter's own lines, the thread's URL there)."""
    import yaml

    data = yaml.safe_load((ROOT / "bench" / "incidents" / f"{case_id}.yaml").read_text(encoding="utf-8"))
    assert int(data["batch"]) in (1, 2, 3)  # never a blind batch
    path = tmp_path / f"{case_id}.log"
    path.write_text(data["evidence"]["log"], encoding="utf-8")
    return str(path)


def _check(*args: str) -> dict:
    proc = run_cli("check", "--offline", "--format", "json", *args, env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode in (0, 1, 5), proc.stderr
    return json.loads(proc.stdout)


def test_vllm_boot_line_counts_fewer_full_length_requests_than_the_server_admits(tmp_path) -> None:
    """vLLM's "Maximum concurrency for N tokens per request: X" is the requests of max_model_len its pool holds
    (vllm/v1/core/kv_cache_utils.py:1061-1090, 0.33.0). i290 (GB10, 1.36x, the cap left to the engine) and i091
    (5.70x, --max-num-seqs 128) filled the pool; the same line with the cap below X names nothing."""
    doc = _check("--symptom", "memory-filling-fast", "--gpu", "GB10:2", "--log", _case_log("i290-glm-5.3-flash-exl3-2x-dgx-sparks-122", tmp_path))
    assert doc["facts"]["fit.users_fit"]["value"] == 1
    assert "users-exceed-kv-capacity" in [f["id"] for f in doc["findings"]]
    log = _case_log("i091-discuss-vllm-ai-t-vllm-0-18-0-kv-cache-1", tmp_path)
    admitted = _check("--symptom", "memory-filling-fast", "--engine-version", "0.18.0", "--log", log,
                      "--command", "vllm serve Qwen3.5-9B --max-num-seqs 128")
    assert "users-exceed-kv-capacity" in [f["id"] for f in admitted["findings"]]
    capped = _check("--symptom", "memory-filling-fast", "--engine-version", "0.18.0", "--log", log,
                    "--command", "vllm serve Qwen3.5-9B --max-num-seqs 4")
    assert "users-exceed-kv-capacity" not in [f["id"] for f in capped["findings"]]


def test_an_amd_gpu_the_catalog_lacks_is_still_amds() -> None:
    """ROCm/TheRock#7700 (i106) named RDNA cards; one the catalog lacks (RX 9070 XT) is AMD's by its name: the ROCm
    stack's support is what to check. An unknown name that is not AMD's names nothing."""
    amd = _check("--symptom", "hardware-fit", "--gpu", "Radeon RX 9070 XT")
    assert "amd-stack-unverified" in [f["id"] for f in amd["findings"]]
    assert "<" not in amd["findings"][0]["what"]
    other = _check("--symptom", "hardware-fit", "--gpu", "RTX 9999")
    assert "amd-stack-unverified" not in [f["id"] for f in other["findings"]]


def test_a_log_from_a_rocm_build_says_the_gpu_is_amds(tmp_path) -> None:
    """ROCm/aiter#4831 (i110): "mla_gluon requires gfx950 (CDNA4), got gfx942" names the GPU's own ROCm target, so
    the GPU is AMD's though none was given; a CUDA-side refusal (SGLang's FA3 assertion, sglang
    srt/layers/attention/attention_registry.py:239-246) says nothing of the kind."""
    doc = _check("--symptom", "hardware-fit", "--log", _case_log("i110-aiter-4831", tmp_path))
    assert doc["facts"]["gpu.vendor"]["value"] == "amd"
    assert "amd-stack-unverified" in [f["id"] for f in doc["findings"]]
    cuda = tmp_path / "cuda.log"
    cuda.write_text("AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90\n", encoding="utf-8")
    assert "gpu.vendor" not in _check("--symptom", "hardware-fit", "--log", str(cuda))["facts"]


def test_sglang_04_decode_lines_are_read(tmp_path) -> None:
    """SGLang 0.4.x printed "Decode batch. #running-req: …" (sglang 0.4.3 srt/managers/scheduler.py:796-818; i157,
    sgl-project/sglang#6081): its statistics and accept length are read as the later ", " form's are."""
    doc = _check("--symptom", "slow-decode", "--log", _case_log("i157-sglang-6081", tmp_path))
    stats = doc["facts"]["log.stats"]["value"]
    assert stats["running"] == 8 and stats["spec_accept_length"] == 2.12
    assert doc["facts"]["log.engine"]["value"] == "sglang"
