"""The memory model against KV cache sizes the engines logged in public threads (tests/data/kv_datapoints.yaml).

Each data point is an excerpt of a real report (cited by URL); the model is llmdoctor's own path: the real config
through doctor/model (KV layout per engine release, doctor/model/memory.py), the GPU catalog, doctor/fit.py.
Two checks (see the table's header): `layout` predicts the tokens from the memory the engine logged; `full`
predicts them from the catalog GPU, the utilization and llmdoctor's weights and non-KV estimate.

Run as a script for the table: python tests/test_memory_datapoints.py
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import SHARED_FIXTURES, requires_shared  # noqa: E402

TABLE = Path(__file__).with_name("data") / "kv_datapoints.yaml"
TOLERANCE = 0.15
GIB = 2**30


def datapoints() -> list[dict[str, Any]]:
    return yaml.safe_load(TABLE.read_text(encoding="utf-8"))["datapoints"]


@dataclass
class Result:
    id: str
    check: str
    predicted: float
    logged: float
    detail: str

    @property
    def error(self) -> float:
        if self.logged == 0:
            return math.inf
        return (self.predicted - self.logged) / abs(self.logged)

    @property
    def within(self) -> bool:
        return abs(self.error) <= TOLERANCE


def _card_and_facts(point: dict[str, Any]) -> tuple[Any, Any]:
    from doctor.sources import model_facts_for

    flags = point["flags"]
    if "config_facts" in point:
        raw = point["config_facts"]["config"]
        name = point["id"]
    else:
        path = SHARED_FIXTURES / "configs" / point["config"]
        raw, name = json.loads(path.read_text(encoding="utf-8")), str(path)
    return model_facts_for(name, kv_cache_dtype=flags.get("kv_cache_dtype"), engine=point["engine"], raw=raw,
                           engine_version=point["version"], served=point.get("served"))


def _per_gpu_bytes(point: dict[str, Any], facts: Any) -> float:
    from doctor.fit import Layout, kv_bytes_per_token_per_gpu

    flags = point["flags"]
    tp, pp = flags.get("tp", 1), flags.get("pp", 1)
    attn_tp = 1 if flags.get("dp_attention") else tp
    per_gpu = kv_bytes_per_token_per_gpu(facts, Layout(tp * pp, attn_tp, 1, pp, 1))
    assert per_gpu, point["id"]
    if flags.get("indexer_in_log") is False:  # that release's log line left the DSA indexer keys out
        layers = facts.get("model.layers.indexer") or 0
        per_gpu -= layers * 132 / pp
    return per_gpu


def _tokens(point: dict[str, Any], memory: float, per_gpu: float) -> float:
    block = point["logged"].get("block_size")
    if point["engine"] == "vllm" and block:
        return math.floor(memory / (block * per_gpu)) * block
    return memory / per_gpu


def _logged_tokens(point: dict[str, Any]) -> float:
    logged = point["logged"]
    if "tokens" in logged:
        return logged["tokens"]
    return logged["gpu_blocks"] * logged["block_size"]


def evaluate(point: dict[str, Any]) -> list[Result]:
    card, facts = _card_and_facts(point)
    per_gpu = _per_gpu_bytes(point, facts)
    logged = point["logged"]
    out = []
    if "layout" in point["checks"]:
        memory = logged["kv_memory"] * GIB
        out.append(Result(point["id"], "layout", _tokens(point, memory, per_gpu), _logged_tokens(point),
                          f"{per_gpu:.0f} B/token/GPU ({facts.get('model.kv_layout') or facts.get('model.attention')})"))
    if "full" in point["checks"]:
        out.append(_full(point, card, facts, per_gpu))
    return out


def _full(point: dict[str, Any], card: Any, facts: Any, per_gpu: float) -> Result:
    from doctor.fit import Layout, weights_per_gpu
    from doctor.hardware.catalog import lookup_gpu
    from doctor.model.memory import non_kv_bytes

    flags, logged = point["flags"], point["logged"]
    gpu = lookup_gpu(point["gpu"])
    assert gpu is not None, point["gpu"]
    tp, pp = flags.get("tp", 1), flags.get("pp", 1)
    weights = weights_per_gpu(facts, Layout(tp * pp, tp, 1, pp, 1)) or 0
    fraction = flags.get("mem_fraction_static" if point["engine"] == "sglang" else "gpu_memory_utilization", 0.9)
    non_kv = non_kv_bytes(card, point["engine"], point["version"], tp=tp,
                          max_num_batched_tokens=flags.get("max_num_batched_tokens"),
                          max_model_len=flags.get("max_model_len"), gpu_name=gpu.name,
                          gpu_memory_bytes=gpu.memory_bytes, mem_fraction=fraction, gpu_sm=gpu.sm)
    assert non_kv is not None
    budget = gpu.memory_bytes * fraction - weights - non_kv.total
    if "kv_memory" in logged and "gpu_blocks" not in logged and "tokens" not in logged:
        # the engine logged only the memory (it did not start): compare memory, the thing it logged
        predicted, actual = budget / GIB, logged["kv_memory"]
    else:
        predicted, actual = _tokens(point, max(0.0, budget), per_gpu), _logged_tokens(point)
    detail = (f"{gpu.name} {gpu.memory_bytes / GIB:.1f} GiB × {fraction} − weights "
              f"{weights / GIB:.2f} − non-KV {non_kv.total / GIB:.2f} GiB")
    if "weights_gib" in logged:  # the log gives the real weights: which term is off
        detail += f" (logged weights {logged['weights_gib']:.2f} GiB)"
    return Result(point["id"], "full", predicted, actual, detail)


def all_results() -> list[Result]:
    return [r for point in datapoints() for r in evaluate(point)]


# ------------------------------------------------------------------------------------------------ tests
def test_table_is_cited_and_large_enough() -> None:
    points = datapoints()
    assert len(points) >= 15
    assert len({p["id"] for p in points}) == len(points)
    for point in points:
        assert point["url"].startswith("https://github.com/"), point["id"]
        assert point["engine"] in ("vllm", "sglang") and point["checks"]
        assert ("config" in point) != ("config_facts" in point), point["id"]
        if "config_facts" in point:
            assert point["config_facts"]["source"].startswith("https://huggingface.co/")


@requires_shared
def test_at_least_80_percent_within_15_percent() -> None:
    """One verdict per data point: its primary check (the first listed) within ±15 % of what the engine logged.
    Second checks are reported (python tests/test_memory_datapoints.py) but do not count: the full prediction
    of a V1 MoE pool (Qwen3-235B-FP8 on 4×H100) is one of the misses the table keeps in view."""
    primary = {}
    for result in all_results():
        primary.setdefault(result.id, result)
    within = [r for r in primary.values() if r.within]
    assert len(within) / len(primary) >= 0.8, "\n" + report()


@requires_shared
def test_every_layout_check_is_within_15_percent() -> None:
    """The KV layout per engine release reproduces every pool the engines logged (memory → tokens)."""
    misses = [r for r in all_results() if r.check == "layout" and not r.within]
    assert not misses, "\n" + report()


@requires_shared
def test_mla_before_071_needs_the_per_head_layout() -> None:
    """vLLM cached every head of DeepSeek-V2-Lite (padded to 256) before 0.7.1: the latent layout would predict
    ~14× more tokens than the 85,968 the engine made of 35.42 GiB."""
    point = next(p for p in datapoints() if p["id"] == "vllm-pr10927-deepseek-v2-lite-h100-before-mla")
    release = evaluate(point)[0]
    assert release.check == "layout" and release.within and "per_head" in release.detail
    newest = dict(point, version="0.33.0")
    latent = evaluate(newest)[0]
    assert latent.predicted / latent.logged > 10


@requires_shared
def test_the_v0_activation_peak_follows_max_model_len() -> None:
    """vLLM V0 profiles max(max_model_len, 2048) tokens without chunked prefill: 29k leaves less KV than 20k."""
    fulls = {r.id: r for r in all_results() if r.check == "full"}
    small, large = fulls["vllm-10517-llama31-8b-rtx3090-20k"], fulls["vllm-10517-llama31-8b-rtx3090-29k"]
    assert small.within and large.within and large.predicted < small.predicted


@requires_shared
def test_gpt_oss_non_kv_is_counted() -> None:
    """The issue's example: gpt-oss-120b on one H100 — llmdoctor predicted ~12.6 GiB of KV before the non-KV model;
    the server logged 1.71 GiB (0.11) and -2.14 GiB (0.10.1). The sampler pass over 1024 × 201,088 vocabulary rows
    (~5 GiB) is taken off on both, the Marlin padding (~5.1 GiB) on 0.10.1, whose log names Marlin; what remains
    (~2.5 GiB, and on 0.11's Triton backend 3.7 GiB of weights outside the vLLM wheel) is listed in the report."""
    fulls = {r.id: r for r in all_results() if r.check == "full"}
    newer, older = fulls["vllm-27508-gpt-oss-120b-h100-095"], fulls["vllm-23278-gpt-oss-120b-h100-090"]
    assert "non-KV 5." in newer.detail and newer.predicted < 12.6
    assert "non-KV 10." in older.detail and older.predicted < 1


@requires_shared
def test_mxfp4_padding_explains_the_logged_gpt_oss_weights() -> None:
    """vllm issue 23278 (0.10.1, Marlin) logged "Model loading took 65.9651 GiB" for a 60.7 GiB checkpoint: Marlin
    pads the experts' hidden size 2880 to 3072 and intermediate to 2944 (mxfp4.py:187-200); checkpoint + padding
    lands within 1 % of the logged weights, and without the padding misses by > 7 %. From 0.11.0 an H100 runs the
    Triton backend (intermediate to 64: no padding for 2880), an A100 still Marlin, a B200 FlashInfer (assumed)."""
    from doctor.fit import Layout, weights_per_gpu
    from doctor.model.memory import mxfp4_padding_bytes

    point = next(p for p in datapoints() if p["id"] == "vllm-23278-gpt-oss-120b-h100-090")
    card, facts = _card_and_facts(point)
    checkpoint = weights_per_gpu(facts, Layout(1, 1, 1, 1, 1)) or 0
    padding, source = mxfp4_padding_bytes(card, "vllm", point["version"], tp=1, gpu_sm=90)
    logged = point["logged"]["weights_gib"] * GIB
    assert abs(checkpoint + padding - logged) / logged < 0.01, (checkpoint / GIB, padding / GIB)
    assert (logged - checkpoint) / logged > 0.07
    assert "Marlin" in source and "3072" in source and "assumed" not in source
    assert mxfp4_padding_bytes(card, "vllm", "0.11.0", gpu_sm=90)[0] == 0  # Triton: 2880 is a multiple of 64
    assert mxfp4_padding_bytes(card, "vllm", "0.11.0", gpu_sm=80)[0] == padding
    blackwell, blackwell_source = mxfp4_padding_bytes(card, "vllm", "0.11.0", gpu_sm=100)
    assert blackwell > padding and "assumed" in blackwell_source
    assert mxfp4_padding_bytes(card, "vllm", "0.10.0", gpu_sm=90)[0] == 0  # no rule before gpt-oss support
    llama, _ = _card_and_facts(datapoints()[0])
    assert mxfp4_padding_bytes(llama, "vllm", "0.11.0", gpu_sm=80)[0] == 0  # a bf16 model is never padded


@requires_shared
def test_sglang_fraction_covers_weights_and_kv_only() -> None:
    """SGLang's --mem-fraction-static is applied to the memory free after the CUDA context (model_runner.py:
    949-983): the full prediction for Qwen3-235B-FP8 at 0.93 on 4×H100 lands within ±15 % of the 367,404 tokens
    it logged, and only context × fraction is taken inside the fraction (activations live outside it)."""
    fulls = {r.id: r for r in all_results() if r.check == "full"}
    result = fulls["sglang-21348-qwen3-235b-fp8-4xh100"]
    assert result.within, result
    assert "non-KV 0.37 GiB" in result.detail
    from doctor.model.memory import non_kv_bytes

    card, _ = _card_and_facts(datapoints()[0])
    old = non_kv_bytes(card, "sglang", "0.4.9", mem_fraction=0.93)
    new = non_kv_bytes(card, "sglang", "0.5.23", mem_fraction=0.93)
    assert old is not None and new is not None and old.activation == 0 and old.sampler == 0
    assert "CUDA graphs live outside" in old.source and "taken off the pool after capture" in new.source
    assert non_kv_bytes(card, "sglang", "0.4.9", mem_fraction=None) is None


@requires_shared
def test_cuda_graph_memory_follows_the_release() -> None:
    """vLLM captured CUDA graphs after sizing the KV pool (0.11.0 gpu_worker.py:222-344) until the profiler's
    estimate was taken off the pool (0.33.0 gpu_worker.py:702-756): the source says which, per release."""
    from doctor.model.memory import non_kv_bytes

    card, _ = _card_and_facts(datapoints()[0])
    old = non_kv_bytes(card, "vllm", "0.11.0")
    new = non_kv_bytes(card, "vllm", "0.33.0")
    assert old is not None and new is not None
    assert "captured after the KV pool is sized" in old.source
    assert "takes its measured CUDA graph memory off the KV pool" in new.source


@requires_shared
def test_hybrid_state_follows_the_release() -> None:
    """Jamba's Mamba state: vLLM V0 allocated it in the profile run for max_num_seqs (256) sequences, off the KV
    budget (0.7.0 jamba.py:428-456); V1 (0.11.0 kv_cache_interface.py:218-239) keeps one page per request in the
    pool, so it is no longer non-KV memory. A model without recurrent state never gets the term."""
    from doctor.model.kvcache import state_bytes_per_sequence
    from doctor.model.memory import non_kv_bytes
    from doctor.sources import model_facts_for

    path = SHARED_FIXTURES / "configs" / "ai21labs__Jamba-v0.1.json"
    card, _ = model_facts_for(str(path), kv_cache_dtype=None, engine="vllm",
                              raw=json.loads(path.read_text(encoding="utf-8")), engine_version="0.7.0")
    old, new = non_kv_bytes(card, "vllm", "0.7.0"), non_kv_bytes(card, "vllm", "0.11.0")
    assert old is not None and new is not None
    assert old.hybrid_state == 256 * state_bytes_per_sequence(card, "vllm") > 1 * GIB
    assert new.hybrid_state == 0 and "recurrent state of 256 sequences" in old.source
    llama, _ = _card_and_facts(datapoints()[0])
    assert (non_kv_bytes(llama, "vllm", "0.7.0") or old).hybrid_state == 0


@requires_shared
def test_full_predictions_that_match_keep_matching() -> None:
    """Full predictions (GPU × fraction − weights − non-KV, nothing read from the log) that are within ±15 % today:
    a regression guard. The misses (gpt-oss, the LMCache run, GB10, V2-Lite on H100) are in the report."""
    fulls = {r.id: r for r in all_results() if r.check == "full"}
    expected = {"vllm-10517-llama31-8b-rtx3090-20k", "vllm-10517-llama31-8b-rtx3090-29k",
                "sglang-21348-qwen3-235b-fp8-4xh100", "vllm-pr20665-deepseek-v2-lite-tp2-pp2-l4",
                "vllm-pr2031-llama2-7b-a100"}
    assert {i for i, r in fulls.items() if r.within} == expected, "\n" + report()


@requires_shared
def test_check_reads_the_release_layout_and_the_non_kv_reserve() -> None:
    """Through the CLI (`check` offline, whose JSON carries the facts): an old vLLM on DeepSeek-V2-Lite is sized per head (and 0.7.1 forces prefix caching off);
    a gpt-oss-120b launch on an H100 has its sampler pass taken off the KV budget."""
    from conftest import run_cli

    config = str(SHARED_FIXTURES / "configs" / "deepseek-ai__DeepSeek-V2-Lite.json")

    def facts(*args: str) -> dict[str, Any]:
        result = run_cli("check", "--format", "json", "--config", config, "--gpu", "H100", *args)
        assert result.returncode in (0, 1), result.stderr
        return {k: v["value"] for k, v in json.loads(result.stdout)["facts"].items()}

    old = facts("--engine-version", "0.5.1", "--command", "vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert old["model.kv_layout"] == "per_head" and old["model.kv_bytes_per_token"] == 442368
    mla = facts("--engine-version", "0.7.1", "--command", "vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert mla["model.kv_layout"] == "latent" and mla["engine.mla_prefix_caching_forced_off"] is True
    new = facts("--command", "vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert new["model.kv_bytes_per_token"] == 31104 and "engine.mla_prefix_caching_forced_off" not in new
    assert old["fit.kv_tokens"] * 10 < new["fit.kv_tokens"]
    gpt_oss = run_cli("check", "--format", "json", "--config", str(SHARED_FIXTURES / "configs" / "openai__gpt-oss-120b.json"),
                      "--gpu", "H100", "--command", "vllm serve openai/gpt-oss-120b --gpu-memory-utilization 0.95")
    doc = json.loads(gpt_oss.stdout)["facts"]
    assert doc["engine.non_kv_bytes_per_gpu"]["value"] > 5 * GIB
    assert "sampler pass over 1024 × 201088" in doc["engine.non_kv_bytes_per_gpu"]["source"]

def report() -> str:
    results = all_results()
    lines = [f"{'data point':<52} {'check':<6} {'predicted':>12} {'logged':>12} {'error':>8}  detail"]
    for r in results:
        lines.append(f"{r.id:<52} {r.check:<6} {r.predicted:>12,.2f} {r.logged:>12,.2f} {r.error:>+8.1%}  {r.detail}")
    for check in ("layout", "full"):
        some = [r for r in results if r.check == check]
        ok = sum(r.within for r in some)
        lines.append(f"{check}: {ok}/{len(some)} within ±{TOLERANCE:.0%}")
    primary: dict[str, Result] = {}
    for r in results:
        primary.setdefault(r.id, r)
    ok = sum(r.within for r in primary.values())
    lines.append(f"{ok}/{len(primary)} data points within ±{TOLERANCE:.0%} on their first check "
                 f"({ok / len(primary):.0%})")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
