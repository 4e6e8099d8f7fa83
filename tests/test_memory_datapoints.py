"""The memory model against KV cache sizes the engines logged in public threads (tests/data/kv_datapoints.yaml).

Each data point is an excerpt of a real report (cited by URL); the model is llmdoctor's own path: the real config
through doctor/model (KV layout per engine release, doctor/model/memory.py), the GPU catalog, doctor/model/fit.py.
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

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from conftest import SHARED_FIXTURES, requires_shared  # noqa: E402

TABLE = Path(__file__).with_name("data") / "kv_datapoints.yaml"
TOLERANCE = 0.15
GIB = 2**30


def datapoints(batch: int | None = None) -> list[dict[str, Any]]:
    """Every data point, each tagged with its blind batch: kv_datapoints.yaml is batch 1, and each
    kv_datapoints_batch<N>.yaml names its own (``batch.id``); ``batch`` keeps one batch only (its blind figure)."""
    points = []
    for path in [TABLE, *sorted(TABLE.parent.glob("kv_datapoints_batch*.yaml"))]:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        number = (doc.get("batch") or {}).get("id", 1)
        points += [{**point, "batch": number} for point in doc["datapoints"]]
    return [p for p in points if batch is None or p["batch"] == batch]


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
    from doctor.sources.offline import model_facts_for

    flags = point["flags"]
    if "config_facts" in point:
        raw = point["config_facts"]["config"]
        name = point["id"]
    else:
        path = SHARED_FIXTURES / "configs" / point["config"]
        raw, name = json.loads(path.read_text(encoding="utf-8")), str(path)
    card, facts = model_facts_for(name, kv_cache_dtype=flags.get("kv_cache_dtype"), engine=point["engine"],
                                  raw=raw, engine_version=point["version"], served=point.get("served"),
                                  launch_quantization=flags.get("quantization"))
    # what the launch changes on top of the checkpoint, as `check`/`lint` apply it (doctor/sources/offline.py)
    from doctor.sources.card import float32_facts, online_fp8_facts

    for key, flag in (("launch.quantization", "quantization"), ("launch.flags.dtype", "dtype"),
                      ("launch.kv_cache_dtype", "kv_cache_dtype")):
        if flags.get(flag) is not None:
            facts.set(key, flags[flag], "data point")
    facts.update(online_fp8_facts(card, facts))
    facts.update(float32_facts(card, facts))
    from doctor.model.memory import engine_pool_facts

    if flags.get("speculative"):  # --speculative-config as the launch parses it
        facts.set("launch.flags.speculative_config", flags["speculative"], "data point")
    facts.set("launch.engine", point["engine"], "data point")
    facts.set("launch.version", point["version"], "data point")
    if point.get("gpu") or point.get("gpu_mem_gib"):  # SGLang keeps its RoPE tables in fp32 on CUDA only
        facts.set("gpu.vendor", _gpu(point).vendor, "data point")
    for flag in ("swa_full_tokens_ratio", "disable_hybrid_swa_memory", "mamba_full_memory_ratio", "max_mamba_cache_size",
                 "disable_radix_cache", "max_running_requests", "max_model_len", "enable_prefix_caching"):
        if flags.get(flag) is not None:
            facts.set(f"launch.flags.{flag}", flags[flag], "data point")
    facts.update(engine_pool_facts(card, facts))
    return card, facts


def _layout(point: dict[str, Any]) -> Any:
    """One engine instance's layout (doctor/model/fit.py), per GPU: a DP rank holds its own pool (vLLM -dp, SGLang's
    DP attention), experts split over ``ep``."""
    from doctor.model.fit import Layout

    flags = point["flags"]
    tp, pp, dp, ep = flags.get("tp", 1), flags.get("pp", 1), flags.get("dp", 1), flags.get("ep", 1)
    if flags.get("dp_attention"):  # SGLang: --tp is the whole instance, attention split dp ways inside it
        return Layout(tp * pp, max(1, tp // dp), dp, pp, ep)
    return Layout(tp * pp * dp, tp, dp, pp, ep)


def _per_gpu_bytes(point: dict[str, Any], facts: Any) -> float:
    from doctor.model.fit import kv_bytes_per_token_per_gpu

    per_gpu = kv_bytes_per_token_per_gpu(facts, _layout(point))
    assert per_gpu, point["id"]
    if point["flags"].get("indexer_in_log") is False:  # that release's log line left the DSA indexer keys out
        layers = facts.get("model.layers.indexer") or 0
        per_gpu -= layers * 132 / point["flags"].get("pp", 1)
    return per_gpu


def _tokens(point: dict[str, Any], memory: float, per_gpu: float) -> float:
    block = point["logged"].get("block_size")
    if point["engine"] == "vllm" and block:
        return math.floor(memory / (block * per_gpu)) * block
    return memory / per_gpu


def _logged_tokens(logged: dict[str, Any]) -> float:
    if "tokens" in logged:
        return logged["tokens"]
    return logged["gpu_blocks"] * logged["block_size"]


def evaluate(point: dict[str, Any]) -> list[Result]:
    card, facts = _card_and_facts(point)
    per_gpu = _per_gpu_bytes(point, facts)
    logged = point["logged"]
    out: list[Result] = []
    if "layout" in point["checks"]:
        # "N GiB KV cache is needed" for one request of the model's length, where the engine refused to start
        pool = logged.get("needed") or logged
        memory = pool["kv_memory"] * GIB
        out.append(Result(point["id"], "layout", _tokens(point, memory, per_gpu), _logged_tokens(pool),
                          f"{per_gpu:.0f} B/token/GPU ({facts.get('model.kv_layout') or facts.get('model.attention')})"))
    if "full" in point["checks"]:
        out.append(_full(point, card, facts, per_gpu))
    return out


def _gpu(point: dict[str, Any]) -> Any:
    """The catalog GPU, or — for one the thread does not name or the catalog lacks — its memory as a user gives
    it with --gpu-mem (doctor/hardware/spec.py unknown_gpu)."""
    from doctor.hardware.catalog import lookup_gpu
    from doctor.hardware.spec import unknown_gpu

    if point.get("gpu"):
        gpu = lookup_gpu(point["gpu"])
        assert gpu is not None, point["gpu"]
        return gpu
    size = point["gpu_mem_gib"]
    return unknown_gpu("(unnamed)", int(size * GIB), f"--gpu-mem {size}GiB")


def _full(point: dict[str, Any], card: Any, facts: Any, per_gpu: float) -> Result:
    from doctor.model.fit import state_pool_per_gpu, weights_per_gpu
    from doctor.model.memory import non_kv_bytes, on_nvswitch

    flags, logged = point["flags"], point["logged"]
    gpu = _gpu(point)
    layout = _layout(point)
    weights = weights_per_gpu(facts, layout) or 0
    fraction = flags.get("mem_fraction_static" if point["engine"] == "sglang" else "gpu_memory_utilization", 0.9)
    non_kv = non_kv_bytes(card, point["engine"], point["version"], tp=layout.attn_tp,
                          max_num_batched_tokens=flags.get("max_num_batched_tokens"),
                          max_num_seqs=flags.get("max_num_seqs"),
                          max_model_len=flags.get("max_model_len") or flags.get("context_length"),
                          gpu_name=gpu.name, gpu_memory_bytes=gpu.memory_bytes, mem_fraction=fraction,
                          gpu_sm=gpu.sm, ep=layout.ep, nvswitch=on_nvswitch(gpu.interconnect, gpu.nvlink_domain),
                          enforce_eager=bool(flags.get("enforce_eager")),
                          flashinfer_sampler=bool(flags.get("flashinfer_sampler")),
                          mxfp4_backend=flags.get("mxfp4_backend"), cuda_total=gpu.memory_is_cuda_total,
                          estimate_cudagraphs=flags.get("estimate_cudagraphs"))
    assert non_kv is not None
    budget = gpu.memory_bytes * fraction - weights - non_kv.total - state_pool_per_gpu(facts, layout)
    share = facts.get("engine.kv_pool_share")  # SGLang's Mamba state pool takes the rest (sglang_mamba_pool)
    if share is not None:
        budget = max(0.0, budget) * share
    if "gpu_blocks" not in logged and "tokens" not in logged:
        # the engine logged only the memory (it did not start): compare memory, the thing it logged
        predicted, actual = budget / GIB, logged["kv_memory"]
    else:
        predicted, actual = _tokens(point, max(0.0, budget), per_gpu), _logged_tokens(logged)
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
        assert point["url"].startswith("https://"), point["id"]
        assert point["engine"] in ("vllm", "sglang") and point["checks"]
        assert ("config" in point) != ("config_facts" in point), point["id"]
        if "config_facts" in point:
            assert point["config_facts"]["source"].startswith("https://huggingface.co/")


#: the blind batches whose open classes are worked through: the regression floor holds over them (a batch joins
#: once its misses are modelled or fixed; until then its first figure and its declared misses are the record)
FLOOR_BATCHES = (1, 2, 3)


@requires_shared
def test_full_predictions_reach_80_percent() -> None:
    """The regression floor: KV tokens predicted before anything runs (catalog GPU × fraction − weights − non-KV,
    nothing read from the log) within ±15 % of what the engine logged on at least 80 % of the data points that allow
    it, over FLOOR_BATCHES (the goal over the whole record is the strict xfail at the end of this file)."""
    batch = {p["id"]: p["batch"] for p in datapoints()}
    fulls = [r for r in all_results() if r.check == "full" and batch[r.id] in FLOOR_BATCHES]
    assert len(fulls) >= 15
    within = [r for r in fulls if r.within]
    assert len(within) / len(fulls) >= 0.8, "\n" + report()


@requires_shared
def test_every_miss_is_declared_with_its_reason() -> None:
    """A prediction outside ±15 % is a known limit of the model only when its data point says so (``known_miss``:
    check → why), and a declared miss that starts matching must lose its declaration: the table cannot rot."""
    points = {p["id"]: p for p in datapoints()}
    undeclared, stale = [], []
    for result in all_results():
        declared = (points[result.id].get("known_miss") or {}).get(result.check)
        if not result.within and not declared:
            undeclared.append(result)
        if result.within and declared:
            stale.append(result)
    assert not undeclared and not stale, f"undeclared: {undeclared}\nstale: {stale}\n" + report()


@requires_shared
def test_layout_checks_pass_where_the_layout_is_modelled() -> None:
    """The KV layout per engine release reproduces the pools the engines logged (memory → tokens): at least 95 %."""
    layouts = [r for r in all_results() if r.check == "layout"]
    assert sum(r.within for r in layouts) / len(layouts) >= 0.95, "\n" + report()


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
    """The issue's example: gpt-oss-120b on one H100. vLLM 0.10.1 logged -2.14 GiB of KV (issue 23278) and 0.11's
    llm-d-benchmark run 3.33 GiB: the sampler pass over 1024 rows of the 201,088 vocabulary, fully sorted on those
    releases (7.4 GiB), and Marlin's padding on 0.10.1 (~5.3 GiB, counted with the non-KV) are what take it; both
    are within ±15 % now (they were +200 % and +118 % at 16 bytes an element). llm-d's lands there by two errors
    that cancel: weights 3.7 GiB under the 64.38 GiB it logged (its backend's, not modelled) and a non-KV above
    what its own figures leave (64.38 + 7.38 + 0.13 GiB exceed the 71.26 GiB budget that left 3.33 GiB of KV)."""
    fulls = {r.id: r for r in all_results() if r.check == "full"}
    older, llmd = fulls["vllm-23278-gpt-oss-120b-h100-090"], fulls["llmd-bench-gpt-oss-120b-h100"]
    assert "non-KV 13." in older.detail and older.within, older
    assert "non-KV 8." in llmd.detail and llmd.within, llmd
    assert fulls["planner-gpt-oss-20b-h100-tp1-8192-failedlater"].within


@requires_shared
def test_the_sampler_pass_follows_the_release() -> None:
    """vLLM V1 up to 0.16 sorts the whole vocabulary in the profile's sampler pass unless FlashInfer's sampler runs
    (38.5 bytes per row × vocabulary element, measured on 0.11: 7.38 GiB for gpt-oss at 1024 rows, what llm-d-benchmark
    logged); from 0.17 a Triton kernel does it in 16. The same rig's vLLM 0.10.1.1 runs show both paths: the one
    whose log says FlashInfer is not available and the ones whose log says it runs are all within 3 % (at 16 bytes
    everywhere the first was +7.5 %); the version sweep's step from 0.16 to 0.17 (+3.40 GiB of KV logged) is
    predicted within 0.2 GiB."""
    from doctor.model.memory import non_kv_bytes

    point = next(p for p in datapoints() if p["id"] == "llmd-bench-gpt-oss-20b-h100")
    card, _ = _card_and_facts(point)
    sorted_pass = non_kv_bytes(card, "vllm", "0.11.0", gpu_name="H100", gpu_memory_bytes=80 * GIB)
    flashinfer = non_kv_bytes(card, "vllm", "0.11.0", gpu_name="H100", gpu_memory_bytes=80 * GIB,
                              flashinfer_sampler=True)
    kernel = non_kv_bytes(card, "vllm", "0.17.0", gpu_name="H100", gpu_memory_bytes=80 * GIB)
    assert sorted_pass is not None and flashinfer is not None and kernel is not None
    assert abs(sorted_pass.sampler / GIB - 7.38) < 0.05, sorted_pass.sampler / GIB  # llm-d-benchmark's 0.11 peak
    assert flashinfer.sampler == kernel.sampler < sorted_pass.sampler / 2
    assert "38.5 B an element" in sorted_pass.source and "FlashInfer" in flashinfer.source
    fulls = {r.id: r for r in all_results() if r.check == "full"}
    rig = [fulls[i] for i in ("dennislee-qwen2-7b-a100-40-tp2-05-two-nodes", "dennislee-qwen2-7b-a100-80-tp1-025",
                              "dennislee-qwen2-7b-a100-80-tp1-05", "dennislee-qwen2-7b-a100-80-tp2-05")]
    assert all(abs(r.error) < 0.03 for r in rig), rig
    points = {p["id"]: p for p in datapoints()}
    step = [fulls[f"planner-version-sweep-qwen3-14b-h100-vllm-0-{v}"] for v in (16, 17)]
    per_token = {v: _per_gpu_bytes(points[f"planner-version-sweep-qwen3-14b-h100-vllm-0-{v}"],
                                   _card_and_facts(points[f"planner-version-sweep-qwen3-14b-h100-vllm-0-{v}"])[1])
                 for v in (16, 17)}
    predicted = (step[1].predicted * per_token[17] - step[0].predicted * per_token[16]) / GIB
    logged = points["planner-version-sweep-qwen3-14b-h100-vllm-0-17"]["logged"]["kv_memory"] - points[
        "planner-version-sweep-qwen3-14b-h100-vllm-0-16"]["logged"]["kv_memory"]
    assert abs(predicted - logged) < 0.2, (predicted, logged)


@requires_shared
def test_mxfp4_padding_explains_the_logged_gpt_oss_weights() -> None:
    """vllm issue 23278 (0.10.1, Marlin) logged "Model loading took 65.9651 GiB" for a 60.7 GiB checkpoint: Marlin
    pads the experts' hidden size 2880 to 3072 and intermediate to 2944 (mxfp4.py:187-200); checkpoint + padding
    lands within 1 % of the logged weights, and without the padding misses by > 7 %. On 0.11 an H100 runs Marlin
    unless triton_kernels is installed (neither required nor shipped by the wheel; vllm issue 27508's pip install
    lands within 4 % with it), Triton where it is (intermediate to 64: no padding for 2880), as from 0.12.0, which
    ships it; an A100 runs Marlin, a B200 FlashInfer (assumed)."""
    from doctor.model.fit import Layout, weights_per_gpu
    from doctor.model.memory import mxfp4_padding_bytes

    point = next(p for p in datapoints() if p["id"] == "vllm-23278-gpt-oss-120b-h100-090")
    card, facts = _card_and_facts(point)
    checkpoint = weights_per_gpu(facts, Layout(1, 1, 1, 1, 1)) or 0
    padding, source = mxfp4_padding_bytes(card, "vllm", point["version"], tp=1, gpu_sm=90)
    logged = point["logged"]["weights_gib"] * GIB
    assert abs(checkpoint + padding - logged) / logged < 0.01, (checkpoint / GIB, padding / GIB)
    assert (logged - checkpoint) / logged > 0.07
    assert "Marlin" in source and "3072" in source and "assumed" not in source
    assert mxfp4_padding_bytes(card, "vllm", "0.11.0", gpu_sm=90)[0] == padding  # Marlin: no triton_kernels
    assert mxfp4_padding_bytes(card, "vllm", "0.11.0", gpu_sm=90, backend="Triton")[0] == 0  # 2880 is 64 × 45
    assert mxfp4_padding_bytes(card, "vllm", "0.12.0", gpu_sm=90)[0] == 0  # shipped from 0.12.0
    assert mxfp4_padding_bytes(card, "vllm", "0.11.0", gpu_sm=80)[0] == padding
    assert next(r for r in all_results() if r.id == "vllm-27508-gpt-oss-120b-h100-095" and r.check == "full").within
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
    assert "non-KV 0.78 GiB" in result.detail  # (0.4 GiB context + 453 MiB CUDA does not report) × 0.93
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
    assert old.cudagraphs == 0 and new.cudagraphs == int(0.84 * GIB) and new.total == old_total(new) + new.cudagraphs
    eager = non_kv_bytes(card, "vllm", "0.33.0", enforce_eager=True)
    assert eager is not None and eager.cudagraphs == 0 and "--enforce-eager" in eager.source


def old_total(found: Any) -> int:
    """A NonKV's total without its CUDA graph term."""
    from dataclasses import replace

    return replace(found, cudagraphs=0).total


@requires_shared
def test_hybrid_state_follows_the_release() -> None:
    """Jamba's Mamba state: vLLM V0 allocated it in the profile run for max_num_seqs (256) sequences, off the KV
    budget (0.7.0 jamba.py:428-456); V1 (0.11.0 kv_cache_interface.py:218-239) keeps one page per request in the
    pool, so it is no longer non-KV memory. A model without recurrent state never gets the term."""
    from doctor.model.kvcache import state_bytes_per_sequence
    from doctor.model.memory import non_kv_bytes
    from doctor.sources.offline import model_facts_for

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
def test_hybrid_state_layers_take_attention_page_slots_in_padded_releases() -> None:
    """vLLM 0.10.1–0.20 give attention and state (GDN / Mamba) layers one page size and equal groups, and log
    num_blocks // groups × block: Qwen3.6-35B-A3B's 10 attention + 30 GDN layers are 40 slots of one attention
    layer's 2,048 bytes (the DGX Spark log: 47.55 GiB for 623,040 tokens). From 0.21.0 the log is the group-aware
    capacity, so the per-token layout stays the attention layers' (kv_cache_utils.py:1701-1710)."""
    from doctor.sources.offline import model_facts_for

    path = SHARED_FIXTURES / "configs" / "Qwen__Qwen3.6-35B-A3B.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    per_token = {v: model_facts_for(str(path), kv_cache_dtype=None, engine="vllm", raw=raw, engine_version=v)[1]
                 .fact("model.kv_bytes_per_token") for v in ("0.10.0", "0.19.0", "0.21.0")}
    assert per_token["0.10.0"].value == per_token["0.21.0"].value == 10 * 2048
    assert per_token["0.19.0"].value == 40 * 2048 and "30 state layer slots" in per_token["0.19.0"].source


@requires_shared
def test_vllm_logs_the_group_aware_capacity_of_a_state_hybrid_from_021() -> None:
    """From 0.21.0 vLLM logs num_blocks / (the blocks one max_model_len request takes over all groups) × max_model_len
    (0.33.0 kv_cache_utils.py:1061-1093): Qwen3.6-35B-A3B's 10 attention + 30 GDN layers are one attention group and
    three state groups of 10, the attention block raised to hold the 2,146,304-byte state page (16 × cdiv(page, 16 ×
    1,024 B) = 2,096 tokens at fp8), a 131,072-token request taking 63 blocks + 3 × 2 state pages with prefix caching
    (align mode) or 3 × 1 without; the club-3090 log (569,878 tokens of 6.01 GiB) is 10,240 × 1.103 bytes a token."""
    from doctor.model.memory import group_aware_facts
    from doctor.sources.offline import model_facts_for

    path = SHARED_FIXTURES / "configs" / "Qwen__Qwen3.6-35B-A3B.json"
    card, model = model_facts_for(str(path), kv_cache_dtype="fp8", engine="vllm",
                                  raw=json.loads(path.read_text(encoding="utf-8")), engine_version="0.24.0")

    def per_token(engine: str, version: str, **flags: object) -> object:
        return group_aware_facts(card, _launched(model, engine, version, **flags)).get("model.kv_bytes_per_token")

    assert model.get("model.kv_bytes_per_token") == 10 * 1024
    assert per_token("vllm", "0.24.0", max_model_len=131072) == round(10 * 2096 * 1024 * (63 + 3 * 2) / 131072)
    assert per_token("vllm", "0.24.0", max_model_len=131072, enable_prefix_caching=False) == round(
        10 * 2096 * 1024 * (63 + 3) / 131072)
    assert per_token("vllm", "0.20.0", max_model_len=131072) is None  # the padded per-slot log (test above)
    assert per_token("sglang", "0.5.23", max_model_len=131072) is None
    llama = SHARED_FIXTURES / "configs" / "meta-llama__Meta-Llama-3.1-8B.json"
    card8, model8 = model_facts_for(str(llama), kv_cache_dtype=None, engine="vllm",
                                    raw=json.loads(llama.read_text(encoding="utf-8")), engine_version="0.24.0")
    assert group_aware_facts(card8, _launched(model8, "vllm", "0.24.0", max_model_len=131072)).get(
        "model.kv_bytes_per_token") is None  # no state layers: the per-token layout is the log's


@requires_shared
def test_sglang_swa_pool_follows_the_ratio() -> None:
    """SGLang's hybrid SWA pool: the sliding layers hold --swa-full-tokens-ratio × the full layers' tokens and the
    log counts full-layer tokens, so a token costs the full layers' bytes plus ratio × the sliding layers' (0.4.10
    model_runner.py:1046-1060, 0.5.23 pool_configurator.py:785-802); the 0.8 default when the flag is absent, nothing
    before the flag's release, with --disable-hybrid-swa-memory, or on vLLM."""
    from doctor.facts import Facts
    from doctor.model.memory import swa_pool_facts
    from doctor.sources.offline import model_facts_for

    path = SHARED_FIXTURES / "configs" / "google__gemma-4-26B-A4B.json"
    card, model = model_facts_for(str(path), kv_cache_dtype=None, engine="sglang",
                                  raw=json.loads(path.read_text(encoding="utf-8")))
    full, total = model.get("model.kv_bytes_per_token_growing"), model.get("model.kv_bytes_per_token")
    assert (full, total) == (5 * 2 * 2 * 512 * 2, 5 * 2 * 2 * 512 * 2 + 25 * 2 * 8 * 256 * 2)

    def per_token(engine: str, version: str, **flags: object) -> object:
        return swa_pool_facts(card, _launched(model, engine, version, **flags)).get("model.kv_bytes_per_token")

    assert per_token("sglang", "0.5.12", swa_full_tokens_ratio=0.1) == int(full + 0.1 * (total - full))
    assert per_token("sglang", "0.5.12") == int(full + 0.8 * (total - full))
    assert per_token("sglang", "0.5.12", swa_full_tokens_ratio="0.25") == int(full + 0.25 * (total - full))
    assert per_token("sglang", "0.4.3") is None and per_token("vllm", "0.19.0") is None
    assert per_token("sglang", "0.5.12", disable_hybrid_swa_memory=True) is None
    # which models: any with a sliding window before 0.5.8 (0.4.10 model_runner.py:282-290), then an allowlist that
    # has Gemma 4 from 0.5.12 (configs/model_config.py is_hybrid_swa_model) and never Gemma 3
    assert per_token("sglang", "0.5.3") == int(full + 0.8 * (total - full)) and per_token("sglang", "0.5.8") is None
    gemma3 = SHARED_FIXTURES / "configs" / "google__gemma-3-27b-it.json"
    card3, model3 = model_facts_for(str(gemma3), kv_cache_dtype=None, engine="sglang",
                                    raw=json.loads(gemma3.read_text(encoding="utf-8")))
    facts3 = Facts()
    facts3.update(model3)
    facts3.set("launch.version", "0.5.23", "test")
    assert swa_pool_facts(card3, facts3, "sglang").get("model.kv_bytes_per_token") is None
    facts3.set("launch.version", "0.5.3", "test")
    assert swa_pool_facts(card3, facts3, "sglang").get("model.kv_bytes_per_token") is not None


def _launched(model: object, engine: str, version: str, **flags: object) -> object:
    """A model's facts launched on ``engine`` ``version`` with ``flags`` (launch.flags.<name>), as the pool rules read them."""
    from doctor.facts import Facts

    facts = Facts()
    facts.update(model)
    facts.set("launch.engine", engine, "test")
    facts.set("launch.version", version, "test")
    for name, value in flags.items():
        facts.set(f"launch.flags.{name}", value, "test")
    return facts


@requires_shared
def test_sglang_mamba_pool_takes_its_share_of_what_is_left() -> None:
    """A hybrid GDN model on SGLang: the KV pool gets 1 / (1 + --mamba-full-memory-ratio) of what is left after the
    weights (0.5.9 model_runner_kv_cache_mixin.py:151-208, default 0.9); nothing when the state pool is sized by
    slots, before the flag's release, or on vLLM."""
    from doctor.model.memory import swa_pool_facts
    from doctor.sources.offline import model_facts_for

    path = SHARED_FIXTURES / "configs" / "Qwen__Qwen3.5-27B.json"
    card, model = model_facts_for(str(path), kv_cache_dtype=None, engine="sglang",
                                  raw=json.loads(path.read_text(encoding="utf-8")))
    assert card.states

    def share(engine: str, version: str, **flags: object) -> object:
        out = swa_pool_facts(card, _launched(model, engine, version, **flags))
        assert out.get("model.kv_bytes_per_token") is None  # the pool's bytes per token stay the full layers'
        return out.get("engine.kv_pool_share")

    assert share("sglang", "0.5.9") == 1 / 1.9 and share("sglang", "0.5.23") == 1 / 1.9
    assert share("sglang", "0.5.9", mamba_full_memory_ratio="0.5") == 1 / 1.5
    assert share("sglang", "0.5.9", max_mamba_cache_size=8) is None
    assert share("sglang", "0.5.9", disable_radix_cache=True, max_running_requests=8) is None
    # sized by slots: that many requests' state (model_runner_kv_cache_mixin.py:100-113,132-137)
    from doctor.model.kvcache import state_bytes_per_sequence

    def pool(**flags: object) -> object:
        return swa_pool_facts(card, _launched(model, "sglang", "0.5.9", **flags)).get("engine.state_pool_bytes")

    per_request = state_bytes_per_sequence(card, "sglang")
    assert pool(max_mamba_cache_size="8") == 8 * per_request == pool(disable_radix_cache=True, max_running_requests=8)
    assert pool() is None and pool(max_running_requests=8) is None
    assert share("sglang", "0.5.2") is None and share("vllm", "0.19.0") is None


@requires_shared
def test_sglang_holds_the_gemma_embedding_whole_on_every_rank() -> None:
    """SGLang's Gemma 3/3n/4 token embedding is a plain nn.Embedding (0.5.12 gemma4_causal.py:68,677), so every TP
    rank holds all of it: at TP 2 a rank holds half the rest plus the whole embedding. vLLM shards it
    (VocabParallelEmbedding), and SGLang shards every other architecture's; no rule before Gemma 3's release."""
    from doctor.model.fit import Layout, weights_per_gpu
    from doctor.model.memory import replicated_weight_facts
    from doctor.sources.offline import model_facts_for

    def per_gpu(config: str, engine: str, version: str) -> tuple[float, float]:
        """Weights per GPU at TP 2 without the RoPE tables (test_sglang_keeps_its_rope_tables_beside_the_weights),
        and the embedding's bytes."""
        path = SHARED_FIXTURES / "configs" / config
        card, model = model_facts_for(str(path), kv_cache_dtype=None, engine=engine,
                                      raw=json.loads(path.read_text(encoding="utf-8")))
        facts = _launched(model, engine, version)
        facts.update(replicated_weight_facts(card, facts))
        rope = facts.get("model.rope_table_bytes") or 0
        return (weights_per_gpu(facts, Layout(2, 2, 1, 1, 1)) or 0) - rope, card.param_parts["embed"] * 2

    sharded, embed = per_gpu("google__gemma-4-26B-A4B.json", "vllm", "0.19.0")
    whole, _ = per_gpu("google__gemma-4-26B-A4B.json", "sglang", "0.5.12")
    assert whole - sharded == embed / 2 > 0.6 * GIB
    assert per_gpu("google__gemma-3-27b-it.json", "sglang", "0.4.3")[0] == per_gpu(
        "google__gemma-3-27b-it.json", "vllm", "0.19.0")[0]  # before SGLang had Gemma 3
    assert per_gpu("google__gemma-3-27b-it.json", "sglang", "0.5.23")[0] > per_gpu(
        "google__gemma-3-27b-it.json", "vllm", "0.19.0")[0]
    llama = per_gpu("meta-llama__Meta-Llama-3.1-8B.json", "sglang", "0.5.12")[0]
    assert llama == per_gpu("meta-llama__Meta-Llama-3.1-8B.json", "vllm", "0.19.0")[0]


@requires_shared
def test_the_log_says_which_sampler_and_mxfp4_backend_ran() -> None:
    """`check` with a log sizes the profile as the log says it ran: vLLM's start-up line names the sampler
    (FlashInfer or the full sort) and the MXFP4 backend, and non_kv_facts takes them (lines as vLLM 0.10.1.1 and
    0.11 print them, dennislee22/vLLM-benchmarking and vllm issue 33155)."""
    from doctor.facts import Facts
    from doctor.logs.parse import log_facts
    from doctor.logs.read import LogText
    from doctor.model.memory import non_kv_facts
    from doctor.sources.offline import model_facts_for

    lines = ("INFO 09-04 01:02:21 [api_server.py:1805] vLLM API server version 0.10.1.1",
             "(EngineCore_0 pid=1812) INFO 09-04 01:02:57 [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k "
             "sampling.",
             "(EngineCore_DP0 pid=70073) INFO 01-27 00:31:44 [mxfp4.py:165] Using Triton backend")
    facts = log_facts(LogText("--log test", lines, sum(len(x) + 1 for x in lines))).facts
    assert facts.get("log.sampler") == "flashinfer" and facts.get("log.mxfp4_backend") == "Triton"
    path = SHARED_FIXTURES / "configs" / "openai__gpt-oss-120b.json"
    card, _ = model_facts_for(str(path), kv_cache_dtype=None, engine="vllm", raw=json.loads(path.read_text()))
    base = Facts()
    for key, value in (("launch.engine", "vllm"), ("launch.version", "0.11.0"), ("gpu.name", "H100"),
                       ("gpu.memory_bytes", 80 * GIB), ("gpu.sm", 90)):
        base.set(key, value, "test")
    plain = non_kv_facts(card, base).get("engine.non_kv_bytes_per_gpu")
    base.update(facts)
    told = non_kv_facts(card, base).get("engine.non_kv_bytes_per_gpu")
    # FlashInfer's sampler (16 B, not 38.5) and Triton (no Marlin padding): both lower the reserve
    assert plain - told > 5 * GIB, (plain / GIB, told / GIB)


@requires_shared
def test_bitsandbytes_dequantizes_a_shard_in_the_profile() -> None:
    """A bitsandbytes 4-bit linear dequantizes its whole shard to 16-bit for a multi-row input (bitsandbytes 0.45.3
    autograd/_functions.py:462,512-533) and vLLM copies each shard's product into the merged output (0.7.3
    quantization/bitsandbytes.py:318-362): on the RTX 4060 laptop run (vllm issue 13882) that lifts the profile's
    forward pass above its sampler pass, and the prediction from +18.6 % to within ±15 %; a 16-bit model gets nothing."""
    from doctor.model.memory import bnb4_dequant_bytes

    fulls = {r.id: r for r in all_results() if r.check == "full"}
    point = next(p for p in datapoints() if p["id"] == "vllm-13882-qwen25-7b-bnb4-rtx4060-laptop")
    card, _ = _card_and_facts(point)
    size, source = bnb4_dequant_bytes(card, "vllm", point["version"], 4096, 1)
    assert 0.2 * GIB < size < 0.35 * GIB and "bitsandbytes" in source, size / GIB
    assert fulls[point["id"]].within, fulls[point["id"]]
    llama, _ = _card_and_facts(datapoints()[0])
    assert bnb4_dequant_bytes(llama, "vllm", "0.7.3", 4096, 1) == (0, "")


@requires_shared
def test_engines_keep_their_rope_tables_beside_the_weights() -> None:
    """Both engines register each RoPE's cos/sin table as a model buffer, [positions, rotary_dim] whole on every rank:
    SGLang in fp32 on CUDA (0.5.12 rotary_embedding/base.py:70-98), vLLM in the model dtype (0.17.0
    rotary_embedding/base.py:58-63); the weights they log carry it. SGLang's Qwen3 (40,960 × 128) and Llama 3
    (131,072 × 128) builds logged 0.02 and 0.06 GiB above their checkpoints; Gemma 4 31B holds a 512-wide
    proportional table for its global layers beside the 256-wide sliding one (0.75 GiB), which put the rig's 15 AWQ
    Gemma 4 runs at +12 to +15 % before and at +4.5 to +5.8 % after; Llama 4 Scout's 10,485,760 positions are the
    2.5 GiB vLLM 0.19 logged above its TP 4 shard (+16.7 % before, within 2 % after)."""
    from doctor.model.rope import rope_tables

    fulls = {r.id: r for r in all_results() if r.check == "full"}
    points = {p["id"]: p for p in datapoints()}
    for pid in ("massed-compute-sglang-qwen3-32b-h100", "massed-compute-sglang-r1-distill-llama-8b-h100"):
        card, facts = _card_and_facts(points[pid])
        logged = points[pid]["logged"]["weights_gib"] * GIB
        assert abs(facts.get("model.weight_bytes") + facts.get("model.rope_table_bytes") - logged) < 0.01 * GIB, pid
    gemma = [r for r in fulls.values() if r.id.startswith("mattbucci-3090-gemma4-")]
    assert len(gemma) == 15 and all(0 < r.error < 0.06 for r in gemma), gemma
    card, facts = _card_and_facts(points["mattbucci-3090-gemma4-31b-awq-tp2-mfs085-swa01"])
    assert card.rope_tables_for("sglang") == ((262144, 256), (262144, 512))
    assert facts.get("model.rope_table_bytes") == 262144 * 768 * 4
    scout = points["planner-llama-4-scout-17b-16e-instruct-h100-tp4-8192"]
    card, facts = _card_and_facts(scout)
    assert facts.get("model.rope_table_bytes") == 10485760 * 128 * 2 and fulls[scout["id"]].within
    weights = weights_per_gpu_of(scout, facts) / GIB
    assert abs(weights - scout["logged"]["weights_gib"]) < 0.1, weights
    # YaRN and linear scaling size the table as the engines' scaling classes do; Gemma 3's global table takes the
    # config's scaling on vLLM only; no RoPE, no table
    assert rope_tables({"max_position_embeddings": 163840, "rope_scaling": {"type": "yarn", "factor": 40,
                        "original_max_position_embeddings": 4096}}, 192, 64) == ((163840, 64),)
    assert rope_tables({"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "linear", "factor": 8.0},
                        "rope_theta": 1e6}, 128) == ((32768, 128),)
    assert rope_tables({"max_position_embeddings": 4096, "partial_rotary_factor": 0.25, "rope_theta": 1e7},
                       256) == ((4096, 64),)
    gemma3 = {"max_position_embeddings": 4096, "rope_local_base_freq": 1e4, "rope_theta": 1e6,
              "rope_scaling": {"rope_type": "linear", "factor": 8.0}, "head_dim": 128}
    assert rope_tables(gemma3, 128, engine="vllm") == ((4096, 128), (32768, 128))
    assert rope_tables(gemma3, 128, engine="sglang") == ((4096, 128), (4096, 128))
    assert rope_tables({"max_position_embeddings": 4096}, 128) == ()


def weights_per_gpu_of(point: dict[str, Any], facts: Any) -> float:
    from doctor.model.fit import weights_per_gpu

    return weights_per_gpu(facts, _layout(point)) or 0.0


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
    assert doc["engine.non_kv_bytes_per_gpu"]["value"] > 3 * GIB
    assert "sampler pass over 1024 × 201088" in doc["engine.non_kv_bytes_per_gpu"]["source"]

def _source(url: str) -> str:
    """Where a data point comes from, for the per-source line of the report (a repository, or a site)."""
    parts = url.split("/")
    return "/".join(parts[3:5]) if parts[2] == "github.com" else parts[2]


def report() -> str:
    results = all_results()
    lines = [f"{'data point':<52} {'check':<6} {'predicted':>12} {'logged':>12} {'error':>8}  detail"]
    for r in results:
        lines.append(f"{r.id:<52} {r.check:<6} {r.predicted:>12,.2f} {r.logged:>12,.2f} {r.error:>+8.1%}  {r.detail}")
    for check in ("layout", "full"):
        some = [r for r in results if r.check == check]
        ok = sum(r.within for r in some)
        lines.append(f"{check}: {ok}/{len(some)} within ±{TOLERANCE:.0%}")
    urls = {p["id"]: p["url"] for p in datapoints()}
    by_source: dict[str, list[Result]] = {}
    for r in results:
        if r.check == "full":
            by_source.setdefault(_source(urls[r.id]), []).append(r)
    for source, some in sorted(by_source.items(), key=lambda item: -len(item[1])):
        lines.append(f"  full, {source}: {sum(r.within for r in some)}/{len(some)}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())


@requires_shared
def test_release_defaults_decide_the_profiled_batch() -> None:
    """What the profile run holds follows the release's defaults (engine_memory.yaml, wheel file:line): V0 turns
    chunked prefill on past 32k tokens from 0.5.4 (512 tokens) and 0.7.0 (2048); V1 0.8.5 sizes by the GPU's memory
    (8192 tokens and 1024 sequences from 70 GiB, else 2048 and 256)."""
    from doctor.hardware.catalog import lookup_gpu
    from doctor.model.memory import non_kv_bytes

    card, _ = _card_and_facts(datapoints()[0])  # Llama-3.1-8B
    batched = {v: (non_kv_bytes(card, "vllm", v, max_model_len=131072) or card).batched_tokens
               for v in ("0.5.1", "0.5.4", "0.7.0")}
    assert batched == {"0.5.1": 131072, "0.5.4": 512, "0.7.0": 2048}
    a10, h100 = lookup_gpu("A10"), lookup_gpu("H100")
    assert a10 is not None and h100 is not None
    small = non_kv_bytes(card, "vllm", "0.8.5", gpu_name=a10.name, gpu_memory_bytes=a10.memory_bytes)
    large = non_kv_bytes(card, "vllm", "0.8.5", gpu_name=h100.name, gpu_memory_bytes=h100.memory_bytes)
    assert small is not None and large is not None
    assert (small.batched_tokens, small.sampler_rows) == (2048, 256)
    assert (large.batched_tokens, large.sampler_rows) == (8192, 1024)


@requires_shared
def test_nccl_on_an_nvswitch_fabric_is_counted_per_rank() -> None:
    """TP across H100s on NVSwitch: ~1.8 GiB more non-torch memory per rank (vllm PR 10511, llm-d-planner PR 205);
    not at TP 1, not on a PCIe card, not on sm_80 A100s (measured absent at TP 2)."""
    from doctor.model.memory import NVSWITCH_TP_BYTES, non_kv_bytes

    card, _ = _card_and_facts(datapoints()[0])

    def non_torch(tp: int, sm: int, nvswitch: bool) -> int:
        found = non_kv_bytes(card, "vllm", "0.19.0", tp=tp, gpu_sm=sm, nvswitch=nvswitch)
        assert found is not None
        return found.non_torch

    base = non_torch(1, 90, True)
    assert non_torch(2, 90, True) == base + NVSWITCH_TP_BYTES
    assert non_torch(2, 89, False) == base == non_torch(2, 80, True)
    from doctor.hardware.catalog import lookup_gpu
    from doctor.model.memory import on_nvswitch

    fabric = {name: on_nvswitch(g.interconnect, g.nvlink_domain)
              for name in ("H100", "H100 NVL", "L40S", "B200") if (g := lookup_gpu(name)) is not None}
    assert fabric == {"H100": True, "H100 NVL": False, "L40S": False, "B200": True}  # bridged pairs: no NVSwitch


@requires_shared
def test_check_sizes_float32_padding_layers_and_bitsandbytes_from_the_launch() -> None:
    """Through the CLI: `--dtype float32` doubles the weights and the auto KV; gemma-3-27b on vLLM 0.19 pools 70 layer
    slots for its 62 layers (the newest release reports a group-aware capacity: no per-token padding);
    `--quantization bitsandbytes` sizes a base config at 4-bit NF4 and says it assumed so."""
    from conftest import run_cli

    def facts(config: str, command: str, *args: str) -> dict[str, Any]:
        result = run_cli("check", "--format", "json", "--config", str(SHARED_FIXTURES / "configs" / config),
                         "--gpu", "H100", "--command", command, *args)
        assert result.returncode in (0, 1), result.stderr
        return {k: (v.get("value"), v.get("source")) for k, v in json.loads(result.stdout)["facts"].items()}

    llama = "meta-llama__Meta-Llama-3.1-8B.json"
    plain = facts(llama, "vllm serve meta-llama/Llama-3.1-8B")
    wide = facts(llama, "vllm serve meta-llama/Llama-3.1-8B --dtype float32")
    assert wide["model.weight_bytes"][0] == 2 * plain["model.weight_bytes"][0]
    assert wide["model.kv_bytes_per_token"][0] == 2 * plain["model.kv_bytes_per_token"][0] == 262144
    assert wide["model.kv_dtype"][0] == "fp32" and "--dtype float32" in wide["model.weight_bytes"][1]
    gemma = "google__gemma-3-27b-it.json"
    old = facts(gemma, "vllm serve google/gemma-3-27b-it", "--engine-version", "0.19.0")
    new = facts(gemma, "vllm serve google/gemma-3-27b-it", "--engine-version", "0.33.0")
    assert old["model.kv_bytes_per_token"][0] == 573440 and "8 padding layer(s)" in old["model.kv_bytes_per_token"][1]
    assert new["model.kv_bytes_per_token"][0] == 507904
    qwen = facts("Qwen__Qwen2.5-7B.json", "vllm serve /models/Qwen2.5-7B-Instruct-bnb-4bit --quantization bitsandbytes")
    assert 5.0 * GIB < qwen["model.weight_bytes"][0] < 5.4 * GIB  # vllm issue 13882 logged 5.20 GiB
    assert "bitsandbytes" in qwen["model.weight_bytes"][1] and "assumed" in qwen["model.weight_bytes"][1]


@requires_shared
def test_gb10_is_sized_from_cudas_own_total() -> None:
    """NVML reports no memory on a GB10; CUDA reports 121.69 GiB (gpus.yaml cuda_source), and the engines size
    from CUDA's total: the catalog's memory is that total, with no nvidia-smi-to-CUDA share taken off it. Against
    the marketed 128 GB, vLLM 0.19.2's Qwen3.6-35B-A3B run (47.55 GiB logged) was +9.2 % and SGLang 0.5.11's two
    --mem-fraction-static 0.4 runs +15.4 %; a --gpu-mem the user gives is an nvidia-smi reading again."""
    from doctor.facts import Facts
    from doctor.hardware.catalog import lookup_gpu
    from doctor.hardware.spec import catalog_facts
    from doctor.model.memory import CUDA_UNREPORTED_BYTES, non_kv_facts

    gpu = lookup_gpu("GB10")
    assert gpu is not None and gpu.memory_is_cuda_total and round(gpu.memory_bytes / GIB, 2) == 121.69
    h100 = lookup_gpu("H100")
    assert h100 is not None and not h100.memory_is_cuda_total
    points = {p["id"]: p for p in datapoints()}
    for name in ("dgxspark-bench-qwen36-35b-a3b-gb10", "dgx-hijinks-sglang-qwen25-1p5b-bf16-gb10-mfs04",
                 "dgx-hijinks-sglang-qwen25-1p5b-fp8kv-gb10-mfs04"):
        full = next(r for r in evaluate(points[name]) if r.check == "full")
        assert full.within, full
    card, _ = _card_and_facts(points["dgxspark-bench-qwen36-35b-a3b-gb10"])

    def reserve(memory: int) -> int:
        facts = Facts()
        facts.update(catalog_facts(gpu))
        facts.set("gpu.memory_bytes", memory, "test")
        for key, value in (("launch.engine", "vllm"), ("launch.version", "0.20.0"), ("launch.tp", 1),
                           ("launch.mem_fraction", 0.95)):
            facts.set(key, value, "test")
        return non_kv_facts(card, facts).get("engine.non_kv_bytes_per_gpu")

    # the catalog's CUDA total: nothing unreported taken off; a user's --gpu-mem: its share × 0.95
    assert reserve(int(120 * GIB)) - reserve(gpu.memory_bytes) == int(CUDA_UNREPORTED_BYTES * 0.95)


@requires_shared
def test_a_modelopt_checkpoint_without_its_folder_is_priced_at_its_announced_format() -> None:
    """ModelOpt up to 0.29 declares the format in hf_quant_config.json, which vLLM reads when config.json has no
    quantization_config (vllm 0.33.0 transformers_utils/config.py:951-962). NVIDIA's Nemotron-3-Super NVFP4
    config.json alone says nothing, and its weights were priced 16-bit: 225 GiB against the 75.03 GiB vLLM 0.19.2
    logged with the MTP draft. Where the folder was not read, the checkpoint's name (or --quantization) gives an
    NVFP4 or FP8 format, said as assumed; a folder read without that file keeps the config's 16-bit."""
    from doctor.model.architecture import analyze
    from doctor.model.resolve import model_card
    from doctor.model.weights import sized_card

    path = SHARED_FIXTURES / "configs" / "nvidia__NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    card = model_card(str(path), raw=raw).card
    assert card.quantization is not None and card.quantization.method == "nvfp4"
    assert 60 * GIB < card.weight_bytes < 75.03 * GIB and "hf_quant_config.json" in card.weight_detail
    alone = model_card(str(path), offline=True).card  # a config file alone: nothing beside it was read either
    assert alone.quantization is not None and alone.weight_bytes == card.weight_bytes
    plain = analyze(raw, name=str(path), source=str(path))
    assert sized_card(plain, checkpoint=None, hf_quant=None).quantization is None  # the folder was read
    awq = sized_card(plain, checkpoint=None, hf_quant=None, hf_quant_unread=True, served_name="x/Model-AWQ")
    assert awq.quantization is None  # AWQ declares itself in config.json, never beside it
    point = next(p for p in datapoints() if p["id"] == "dgxspark-bench-nemotron3-super-120b-nvfp4-mtp-gb10")
    assert next(r for r in evaluate(point) if r.check == "full").predicted > 0  # was -100 %: no room left


@requires_shared
def test_v0_per_head_mla_profile_holds_the_padded_attention() -> None:
    """vLLM 0.5.1-0.7.0 caches every DeepSeek-V2 head and pads q, k and v to 256 per head in the forward pass (vllm
    0.6.4 deepseek_v2.py:279-319, 0.5.1 :317-325): the profile's attention holds, per local head, the projected
    query (192), kv_b_proj's output (256) and four 256-wide tensors — 16 x 1,472 values a token on V2-Lite, where
    the estimate counted the attention's input and output (2 x hidden, 4,096). The 0.6.4 H100 run (85,968 tokens
    logged) goes +15.1 -> +14.3 %; the latent layout of 0.7.1 adds nothing."""
    from doctor.model.memory import per_head_mla_attention

    point = next(p for p in datapoints() if p["id"] == "vllm-pr10927-deepseek-v2-lite-h100-before-mla")
    card, _ = _card_and_facts(point)
    elems, source = per_head_mla_attention(card, "vllm", "0.6.4", 1)
    assert elems == 16 * (192 + 256 + 4 * 256) and "deepseek_v2.py" in source
    assert per_head_mla_attention(card, "vllm", "0.5.1", 2)[0] == 8 * 1472
    assert per_head_mla_attention(card, "vllm", "0.7.1", 1) == (0, "")
    assert next(r for r in evaluate(point) if r.check == "full").within


@requires_shared
def test_vllm_takes_the_cuda_graph_estimate_off_the_pool_from_020() -> None:
    """VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1 from vLLM 0.20.0 (envs.py:1724-1726; 0.19.1 :1654-1656
    defaulted to 0): the jethac/dgx-spark-hijinks 0.20.0 log says its 1.69 GiB estimate is taken off the pool, so
    the release rule starts there, not at the 0.21 that the engine's own message names."""
    from doctor.model.memory import non_kv_bytes

    point = next(p for p in datapoints() if p["id"] == "dgx-hijinks-gemma4-26b-a4b-bf16-gb10")
    card, _ = _card_and_facts(point)

    def graphs(version: str) -> int:
        found = non_kv_bytes(card, "vllm", version, gpu_name="GB10", gpu_memory_bytes=120 * GIB, gpu_sm=121)
        assert found is not None
        return found.cudagraphs

    assert graphs("0.19.1") == 0 and graphs("0.20.0") == graphs("0.21.0") == int(0.84 * GIB)


@requires_shared
def test_an_mtp_draft_adds_its_attention_layers_to_vllms_kv_groups() -> None:
    """vLLM builds an MTP draft into the engine's own config, so its attention layer gets a KV spec and joins the
    groups (vllm 0.11.1 v1/spec_decode/eagle.py:925-952, v1/worker/gpu_model_runner.py:5054-5065). Nemotron-3-Super
    with --speculative-config method mtp: 8 attention + 1 draft layer beside 40 Mamba layers make groups of 9 and 45
    state slots ('Add 5 padding layers' in the vLLM 0.19.2 log): 54 slots of 512 B, the layout the engine logged
    exactly (1,399,712 tokens from 36.25 GiB), where 48 slots were 13 % off; without the flag nothing changes."""
    from doctor.model.memory import attention_group_slots, mtp_draft_layers

    point = next(p for p in datapoints() if p["id"] == "dgxspark-bench-nemotron3-super-120b-nvfp4-mtp-gb10")
    card, facts = _card_and_facts(point)
    assert attention_group_slots(card) == (48, 8, 8) and attention_group_slots(card, 1) == (54, 9, 9)
    assert mtp_draft_layers(card, facts)[0] == 1 and facts.get("model.kv_bytes_per_token") == 54 * 512
    layout = next(r for r in evaluate(point) if r.check == "layout")
    assert abs(layout.error) < 0.01
    plain = {**point, "flags": {k: v for k, v in point["flags"].items() if k != "speculative"}}
    assert _card_and_facts(plain)[1].get("model.kv_bytes_per_token") == 48 * 512
    eagle = {**point, "flags": {**point["flags"], "speculative": {"method": "eagle3"}}}
    assert _card_and_facts(eagle)[1].get("model.kv_bytes_per_token") == 48 * 512  # another model's draft: unknown


@requires_shared
def test_a_hybrids_bf16_in_projections_are_priced_apart_from_its_output_projection() -> None:
    """Quantized builds of hybrids keep the linear-attention/SSM in-projections 16-bit for the recurrent state's
    sake and quantize the output projection (the R9700 rig's FP8 caster: ignore `.*\\.in_proj_\\w+$`, "out_proj
    is post-state, OK to quant", quantize_fp8_manual.py:36-52 at 8913dcf): the ignore list's in_proj keeps only
    the mixer's input side 16-bit. Qwen3.6-35B-A3B's 30 GDN layers: 3/4 of their weights are in-projections."""
    point = next(p for p in datapoints() if p["id"] == "r9700-qwen36-35b-a3b-fp8-tp2-mfs085-256k")
    card, facts = _card_and_facts(point)
    kept = card.quantization.unquantized
    assert "linear_attention" in kept and "linear_attention_out" not in kept
    mixer_in, mixer_out = card.param_parts["linear_attention"], card.param_parts["linear_attention_out"]
    assert mixer_out == 30 * 32 * 128 * 2048 and 0.7 < mixer_in / (mixer_in + mixer_out) < 0.8
    full = next(r for r in evaluate(point) if r.check == "full")
    assert 0.15 < full.error < 0.16  # +20 % when every mixer weight was priced FP8


@requires_shared
def test_the_cuda_graph_estimate_follows_the_launchs_switch() -> None:
    """VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS turns the CUDA graph estimate's removal from the pool on in 0.19.1
    (envs.py:1654-1656, default 0) and off from 0.20.0 (default 1); before 0.19.1 the switch is not read."""
    from doctor.model.memory import non_kv_bytes

    point = next(p for p in datapoints() if p["id"] == "autokernel5090-gemma4-26b-nvfp4-modelopt-rtx5090-4k")
    card, _ = _card_and_facts(point)

    def graphs(version: str, switch: bool | None) -> int:
        found = non_kv_bytes(card, "vllm", version, gpu_name="RTX 5090", gpu_memory_bytes=32 * GIB, gpu_sm=120,
                             estimate_cudagraphs=switch)
        assert found is not None
        return found.cudagraphs

    estimate = int(0.84 * GIB)
    assert graphs("0.19.1", None) == 0 and graphs("0.19.1", True) == estimate
    assert graphs("0.20.0", None) == estimate and graphs("0.20.0", False) == 0
    assert graphs("0.11.0", True) == 0
    assert next(r for r in evaluate(point) if r.check == "full").within


@requires_shared
def test_an_mtp_draft_adds_its_layers_weights_on_vllm() -> None:
    """vLLM loads an MTP draft's layers as a model of their own inside the measurement it logs as "Model loading
    took" (vllm 0.33.0 v1/worker/gpu_model_runner.py:4989-5012), sharing only the target's embedding and lm_head
    (v1/spec_decode/llm_base_proposer.py:1466-1473, :1548-1551): the weights per rank grow by the draft's layers,
    priced at the model's format. Nemotron-3-Super NVFP4 with --speculative-config method mtp: one attention and one
    LatentMoE block (mtp_hybrid_override_pattern "*E"), about 1.6 GiB, which moves the weights estimate toward the
    75.03 GiB the engine logged; no flag, another draft method, or SGLang: nothing changes."""
    from doctor.model.weights import mtp_draft_bytes

    point = next(p for p in datapoints() if p["id"] == "dgxspark-bench-nemotron3-super-120b-nvfp4-mtp-gb10")
    card, facts = _card_and_facts(point)
    extra, experts = mtp_draft_bytes(card)
    assert card.mtp_layers == 1 and 1.4 * GIB < extra < 1.8 * GIB and 0 < experts < extra
    plain = {**point, "flags": {k: v for k, v in point["flags"].items() if k != "speculative"}}
    base = _card_and_facts(plain)[1].get("model.weight_bytes")
    assert facts.get("model.weight_bytes") == base + extra
    eagle = {**point, "flags": {**point["flags"], "speculative": {"method": "eagle3"}}}
    assert _card_and_facts(eagle)[1].get("model.weight_bytes") == base
    sglang = {**point, "engine": "sglang", "version": "0.5.9"}
    assert _card_and_facts(sglang)[1].get("model.weight_bytes") == _card_and_facts(
        {**plain, "engine": "sglang", "version": "0.5.9"})[1].get("model.weight_bytes")
    dense = next(p for p in datapoints() if p["id"] == "club3090-652-qwen36-35b-a3b-nvfp4-rtx5090")
    assert mtp_draft_bytes(_card_and_facts(dense)[0])[0] > 0  # Qwen3.6 has an MTP layer: priced only when drafted


@requires_shared
def test_the_generated_error_record_is_current() -> None:
    """doctor/model/capacity_record.json (every printed band reads it) and docs/plan.md's per-stratum table are
    regenerated from this table by one command; a data point or a model change that moves a prediction makes
    them stale until `python tools/capacity_record.py` is run."""
    import subprocess

    tool = Path(__file__).resolve().parents[1] / "tools" / "capacity_record.py"
    result = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr


GOAL_SHARE, GOAL_STRATUM_MIN = 0.85, 10


@requires_shared
@pytest.mark.xfail(strict=True, reason="issue 25's goal is not reached yet (docs/plan.md, error record): the "
                   "hybrid stratum is below 85 % within ±15 %; strict: passing means remove this mark")
def test_full_predictions_reach_the_goal_in_every_stratum() -> None:
    """Issue 25's bar: within ±15 % on at least 85 % overall and in every stratum with at least 10 points."""
    from doctor.model.band import STRATA

    rows = json.loads((Path(__file__).resolve().parents[1] / "doctor" / "model" / "capacity_record.json")
                      .read_text(encoding="utf-8"))["runs"]
    groups = [rows] + [[r for r in rows if r[key] == value] for key in STRATA for value in {r[key] for r in rows}]
    below = [(len(g), sum(abs(r["error"]) <= TOLERANCE for r in g)) for g in groups if len(g) >= GOAL_STRATUM_MIN]
    assert all(within / n >= GOAL_SHARE for n, within in below), below
