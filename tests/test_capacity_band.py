"""Every printed capacity carries its error band from the memory model's record (doctor/model/band.py), and a
verdict resting on a capacity says "borderline" when its margin is inside that band (issue 25, point 4)."""

from __future__ import annotations

import json

from conftest import SHARED_FIXTURES, requires_shared, run_cli

from doctor.model.band import Band, band_for, margin_note, percentile, record, stratum_of


def test_the_band_narrows_while_enough_runs_remain() -> None:
    """A dense 16-bit GQA model on vLLM/Hopper gets the band of those runs; a stratum the record lacks is said."""
    dense = band_for(stratum_of("vllm", 90, False, "gqa", None))
    rows = [r for r in record() if (r["engine"], r["quantization"], r["gpu_family"], r["moe"], r["attention"])
            == ("vllm", "16-bit", "hopper", "dense", "gqa")]
    assert dense.runs == len(rows) >= 5 and dense.matched == ("vllm", "16-bit", "hopper", "dense", "gqa")
    assert dense.error == percentile([abs(r["error"]) for r in rows], 0.9)
    assert dense.text().startswith(f"±{round(dense.error * 100 + 0.4999)}% on {dense.runs} comparable runs: vLLM")
    nothing = band_for(stratum_of("tensorrt-llm", 90, False, "gqa", None))
    assert nothing.error is None and "no comparable runs" in nothing.text()
    volta = band_for(stratum_of("vllm", 70, False, "gqa", None))
    assert "none yet on Volta" in volta.text()


def test_unified_memory_runs_band_only_unified_memory_parts() -> None:
    """GB10's engines size the pool from what the OS and other processes leave of the shared memory (the record's
    GB10 runs miss by up to +12,000 %): those runs must not widen a discrete GPU's band, and a GB10 prediction
    is banded by them alone."""
    unified = [r for r in record() if r["gpu_family"] == "unified"]
    assert unified and all(r["engine"] in ("vllm", "sglang") for r in unified)
    sglang_dense = band_for(stratum_of("sglang", 100, False, "gqa", None))
    discrete = [abs(r["error"]) for r in record() if r["engine"] == "sglang" and r["gpu_family"] != "unified"]
    assert sglang_dense.error is not None and sglang_dense.error <= max(discrete)
    assert sglang_dense.error < max(abs(r["error"]) for r in unified if r["engine"] == "sglang")
    gb10 = band_for(stratum_of("vllm", 121, False, "gqa", None))
    assert "unified" in gb10.matched and gb10.runs == len([r for r in unified if r["engine"] == "vllm"])
    # a limit of prediction, not of the model: the band says why it is wide, on either engine, and a discrete
    # GPU's band says nothing of it
    for band in (gb10, band_for(stratum_of("sglang", 121, False, "gqa", None))):
        assert "what the OS and other processes leave" in band.text() and band.to_dict()["limit"]
    assert "OS" not in sglang_dense.text() and "limit" not in sglang_dense.to_dict()


def test_a_margin_inside_the_band_is_borderline_and_names_the_settling_line() -> None:
    band = Band(0.2, 30, ("vllm",))
    assert "Borderline" in margin_note(0.1, band, "vllm", "capacity")
    assert "GPU KV cache size" in margin_note(0.1, band, "vllm", "capacity")
    assert "KV Cache is allocated" in margin_note(0.1, band, "sglang", "capacity")
    assert "outside the prediction's band" in margin_note(0.5, band, "vllm", "capacity")


def _lint(*args: str) -> tuple[str, dict]:
    config = str(SHARED_FIXTURES / "configs" / "Qwen__Qwen3-30B-A3B.json")
    text = run_cli("lint", "--config", config, "--gpu", "H100", *args)
    doc = run_cli("lint", "--format", "json", "--config", config, "--gpu", "H100", *args)
    return " ".join(text.stdout.split()), json.loads(doc.stdout)


@requires_shared
def test_lint_prints_the_band_and_a_borderline_max_len() -> None:
    """Qwen3-30B-A3B on one H100: ~137k tokens predicted at ±17 % (16-bit MoE runs on Hopper); a max length of
    150k is inside that band (borderline, the engine's log settles it), 2M is outside it."""
    text, doc = _lint("vllm serve Qwen/Qwen3-30B-A3B --max-model-len 150000")
    assert "fit: ≈ " in text and "KV tokens per pool, predicted (±" in text and "comparable runs: vLLM" in text
    finding = next(f for f in doc["findings"] if f["id"] == "kv-cache-too-small-for-max-len")
    assert "Borderline" in finding["what"] and "GPU KV cache size" in finding["what"]
    _, far = _lint("vllm serve Qwen/Qwen3-30B-A3B --max-model-len 2000000")
    finding = next(f for f in far["findings"] if f["id"] == "kv-cache-too-small-for-max-len")
    assert "Borderline" not in finding["what"] and "outside the prediction's band" in finding["what"]


@requires_shared
def test_plan_and_inspect_carry_the_band() -> None:
    config = str(SHARED_FIXTURES / "configs" / "Qwen__Qwen2.5-7B.json")
    plan = json.loads(run_cli("plan", config, "--gpu", "H100", "--format", "json").stdout)
    band = plan["fit"]["vllm"]["kv_tokens_band"]
    assert band["runs"] >= 5 and band["strata"][0] == "vllm" and 0 < band["error"] < 1
    text = " ".join(run_cli("plan", config, "--gpu", "H100").stdout.split())
    assert f"tokens per KV pool ({band['text']})" in text
    inspect = json.loads(run_cli("inspect", config, "--gpu-mem", "80G", "--format", "json").stdout)
    assert inspect["capacity"]["band"]["runs"] >= 5


@requires_shared
def test_the_cuda_graph_estimate_follows_enforce_eager() -> None:
    """vLLM ≥ 0.20 takes its CUDA graph estimate off the KV pool (engine_memory.yaml cudagraph_pool); with
    --enforce-eager there are no graphs, so `check` reserves 0.84 GiB less per GPU."""
    config = str(SHARED_FIXTURES / "configs" / "meta-llama__Meta-Llama-3.1-8B.json")

    def reserved(*extra: str) -> int:
        result = run_cli("check", "--format", "json", "--config", config, "--gpu", "H100", "--engine-version",
                         "0.33.0", "--command", " ".join(["vllm serve meta-llama/Llama-3.1-8B", *extra]))
        assert result.returncode in (0, 1), result.stderr
        return json.loads(result.stdout)["facts"]["engine.non_kv_bytes_per_gpu"]["value"]

    assert reserved() - reserved("--enforce-eager") == int(0.84 * 2**30)


@requires_shared
def test_weights_that_barely_do_not_fit_are_borderline() -> None:
    """Qwen3-32B at online FP8 (~32 GiB) on an RTX 5090: at utilization 0.99 the weights miss by ~1 %, inside the
    record's weights band (logged weights against predicted), so model-does-not-fit says borderline and names the
    engine's weights line; at the default 0.9 the 8 % margin is outside it."""
    config = str(SHARED_FIXTURES / "configs" / "Qwen__Qwen3-32B.json")

    def what(*flags: str) -> str:
        result = run_cli("lint", "--format", "json", "--config", config, "--gpu", "RTX 5090",
                         " ".join(["vllm serve Qwen/Qwen3-32B --quantization fp8", *flags]))
        return next(f["what"] for f in json.loads(result.stdout)["findings"] if f["id"] == "model-does-not-fit")

    assert "Borderline" in what("--gpu-memory-utilization 0.99") and "Loading model weights took" in what(
        "--gpu-memory-utilization 0.99")
    assert "outside the prediction's band" in what()
