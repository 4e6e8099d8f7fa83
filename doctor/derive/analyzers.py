"""Facts computed from other facts, once every source has spoken and before the playbooks run.

Each function here is one small analyzer with one concern; it reads facts, writes facts (with a
``derived: …`` source that names its inputs) and does nothing when its inputs are unknown, so the trees see
"unknown" rather than a guess. Each declares what it reads and produces (doctor/derive/registry.py), and
``doctor.derive.derive_all`` runs them in the order those declarations give.
"""

from __future__ import annotations

import math
import re

from doctor.derive.registry import analyzer
from doctor.facts import Facts

#: What derive_kernel_support writes for each kernel of doctor/hardware/kernels.yaml (a test keeps the two equal):
#: whether this GPU has it on the release in use, and for which releases that answer holds.
KERNEL_FACTS = tuple(f"gpu.{kernel}{end}" for kernel in ("dsa_kernels", "flashmla", "fa3", "fa3_mla", "fp8_fallback",
                                                           "nvfp4_fallback") for end in ("", "_releases"))

#: The facts a counter's absence from /metrics implies (doctor/probes/metrics.py ``_absent_counter``), which
#: derive_absent_counters sets or makes unknown once the server's version is known.
ABSENT_IMPLIED = ("metrics.preemptions_total", "metrics.prefix_hit_rate", "metrics.preemptions_per_s",
                  "metrics.gen_tokens_per_s", "metrics.prompt_tokens_per_s")

#: vLLM aligns the hybrid attention block size to this many tokens (kernel block alignment).
VLLM_HYBRID_ALIGNMENT = 16


@analyzer(reads=("launch.engine", "launch.env.VLLM_TARGET_DEVICE", "launch.device", "gpu.name"),
          produces=("launch.device", "launch.mem_fraction", "gpu"))
def derive_device(facts: Facts) -> None:
    """launch.device = "cpu" for a server that runs on CPU: vLLM's CPU backend (``VLLM_TARGET_DEVICE=cpu``) or
    SGLang's ``--device cpu``. Such a server has no GPU to examine, and its KV cache is not a fraction of GPU
    memory (vLLM sizes it by ``VLLM_CPU_KVCACHE_SPACE`` GiB, SGLang by ``--max-total-tokens``), so the GPU
    memory fraction is not a fact about it."""
    engine = facts.get("launch.engine")
    if engine == "vllm":
        found = facts.fact("launch.env.VLLM_TARGET_DEVICE")
        if found is None or str(found.value).strip().lower() != "cpu":
            return
        source = f"VLLM_TARGET_DEVICE=cpu ({found.source})"
    elif engine == "sglang":
        # launch.device: --device from the command (engines/semantics.yaml), or the device the server resolved
        # (/server_info `device`: also "cpu" when SGLang picked the CPU itself)
        found = facts.fact("launch.device")
        if found is None or str(found.value).strip().lower() != "cpu":
            return
        source = f"device cpu ({found.source})"
    else:
        return
    facts.set("launch.device", "cpu", source)
    facts.forget("launch.mem_fraction", f"the server runs on CPU ({source}): no GPU memory fraction applies")
    if "gpu.name" not in facts:
        facts.forget("gpu", f"the server runs on CPU ({source}): there is no GPU to examine")


#: What a server on the CPU has none of: the GPU, and what is sized from GPU memory (fit per GPU, capacity).
CPU_ABSENT = ("gpu", "fit", "capacity")


def absent_on_this_device(facts: Facts) -> tuple[str, ...]:
    """Fact namespaces no input can give for this deployment (for ``diagnose(unreachable=...)``): on the CPU,
    ``CPU_ABSENT`` — nothing is asked about GPUs a CPU server does not use (``check`` and ``lint`` alike)."""
    return CPU_ABSENT if facts.get("launch.device") == "cpu" and "gpu.name" not in facts else ()


@analyzer(reads=("launch.engine", "launch.env.VLLM_ALLOW_LONG_MAX_MODEL_LEN", "process.env", "launch.model"),
          produces=("launch.allow_long_max_model_len",))
def derive_allow_long_max_len(facts: Facts) -> None:
    """launch.allow_long_max_model_len: vLLM only warns about --max-model-len above the model's length when
    VLLM_ALLOW_LONG_MAX_MODEL_LEN is "1" or "true" (vllm/envs.py:1123-1126 in 0.32.0, case and spaces ignored)."""
    if facts.get("launch.engine") != "vllm":
        return
    found = facts.fact("launch.env.VLLM_ALLOW_LONG_MAX_MODEL_LEN")
    if found is not None:
        facts.set("launch.allow_long_max_model_len", str(found.value).strip().lower() in ("1", "true"),
                  f"VLLM_ALLOW_LONG_MAX_MODEL_LEN={found.value} ({found.source})")
    elif "process.env" in facts or facts.get("launch.model") is not None:
        facts.set("launch.allow_long_max_model_len", False,
                  "VLLM_ALLOW_LONG_MAX_MODEL_LEN not in the launch environment (vLLM's default: off)")


#: What clients see when the server has no tool-call parser, per engine (doctor/playbooks tool-parser-missing).
_NO_TOOL_PARSER = {
    "vllm": ('a request with tools and tool_choice "auto" (the default when tools are sent, '
             'vllm/entrypoints/openai/chat_completion/protocol.py:951-954) is refused with HTTP 400 '
             '("\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set", '
             'vllm/renderers/online_renderer.py:265-270); with tool_choice "none" the markup comes back in `content`'),
    "sglang": "clients get the markup in `content` and an empty `tool_calls`",
}


@analyzer(reads=("launch.engine",),
          produces=("engine.no_tool_parser_effect",))
def derive_no_tool_parser_effect(facts: Facts) -> None:
    engine = facts.get("launch.engine")
    if engine in _NO_TOOL_PARSER:
        facts.set("engine.no_tool_parser_effect", _NO_TOOL_PARSER[engine], f"{engine} behaviour without a parser")


@analyzer(reads=("launch.engine", "server.engine", "metrics.engine", "log.engine"),
          produces=("engine.name",))
def derive_engine_name(facts: Facts) -> None:
    """engine.name: the engine in use, from whichever source saw it (command, server, /metrics names, log), so
    trees and fixes follow the engine even when the launch command is unknown."""
    for key in ("launch.engine", "server.engine", "metrics.engine", "log.engine"):
        fact = facts.fact(key)
        if fact is not None and fact.value in ("vllm", "sglang"):
            facts.set("engine.name", fact.value, fact.source, observed=fact.observed)
            return


@analyzer(reads=("engine.name", "launch.version", "log.reasoning_end_only"),
          produces=("engine.reasoning_split_without_open_tag",))
def derive_reasoning_split(facts: Facts) -> None:
    """engine.reasoning_split_without_open_tag: whether the release's reasoning parsers can split an output that
    closes a thinking block it never opened (doctor/engines/release_rules.yaml reasoning_split_without_open_tag).
    Decided only where an output like that was seen and the engine and its release are known (a rule that says
    "per parser" decides nothing): the newest rule is no claim about the release in use."""
    engine, version = facts.get("engine.name"), facts.get("launch.version")
    if "log.reasoning_end_only" not in facts or engine not in ("vllm", "sglang") or not version:
        return
    from doctor.engines.release_rules import rule
    from doctor.versions import orderable_version

    found = rule("reasoning_split_without_open_tag", engine, orderable_version(version))
    if found is None or found.values.get("splits") is None:
        return
    facts.set("engine.reasoning_split_without_open_tag", bool(found.values["splits"]),
              f"{engine} {version} ({found.evidence})")


@analyzer(reads=("gpu.util",),
          produces=("gpu.util_max", "gpu.util_skew"))
def derive_gpu_balance(facts: Facts) -> None:
    """gpu.util_skew (max/mean) and gpu.util_max (0..1) from per-GPU utilization, whatever read it (NVML reads
    percent, a Prometheus GPU exporter ratios)."""
    util = facts.fact("gpu.util")
    if util is None or not isinstance(util.value, list) or len(util.value) < 2:
        return
    values = [v for v in util.value if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(values) != len(util.value):
        return
    scale = 100.0 if max(values) > 1 else 1.0
    facts.set("gpu.util_max", round(max(values) / scale, 4), f"derived: max of {util.source}", observed=True)
    if "gpu.util_skew" not in facts:
        mean = sum(values) / len(values)
        facts.set("gpu.util_skew", round(max(values) / mean, 3) if mean > 0 else 1.0,
                  f"derived: max/mean of {util.source}", observed=True)


@analyzer(reads=("metrics.cache_config", "log.kv_override", "launch.flags.num_gpu_blocks_override",
                   "launch.flags.kv_cache_memory_bytes", "launch.flags.max_total_tokens", "launch.engine", "log.engine"),
          produces=("capacity.kv_override",))
def derive_kv_override(facts: Facts) -> None:
    """capacity.kv_override: the KV size fixed by hand instead of measured by the engine (vLLM
    num_gpu_blocks_override / kv_cache_memory_bytes, SGLang --max-total-tokens), from the server's own
    cache_config_info or from the command line."""
    found: list[str] = []
    sources: list[str] = []
    config = facts.fact("metrics.cache_config")
    if config is not None and isinstance(config.value, dict):
        for label in ("num_gpu_blocks_override", "kv_cache_memory_bytes"):
            value = config.value.get(label)
            if value not in (None, "", "None"):
                found.append(f'{label}="{value}"')
                sources.append(config.source)
    logged = facts.fact("log.kv_override")
    if logged is not None:
        found.extend(logged.value)
        sources.append(logged.source)
    for dest in ("num_gpu_blocks_override", "kv_cache_memory_bytes", "max_total_tokens"):
        flag = facts.fact(f"launch.flags.{dest}")
        if flag is not None and flag.value not in (None, "") and not any(dest in f for f in found):
            found.append(f"{dest}={flag.value}")
            sources.append(flag.source)
    if found:
        facts.set("capacity.kv_override", found, "; ".join(dict.fromkeys(sources)))
    elif config is not None or "launch.engine" in facts or "log.engine" in facts:
        facts.set("capacity.kv_override", [], "derived: no KV size override in cache_config_info or the command")


@analyzer(reads=("launch.model", "server.model", "model.name"),
          produces=("model.label",))
def derive_model_label(facts: Facts) -> None:
    """model.label: how findings name the model — the served name first, the config's name when that is all."""
    for key in ("launch.model", "server.model", "model.name"):
        fact = facts.fact(key)
        if fact is not None and fact.value:
            facts.set("model.label", str(fact.value), fact.source)
            return


@analyzer(reads=("launch.engine", "launch.version", "gpu.name", "gpu.vendor"),
          produces=KERNEL_FACTS)
def derive_kernel_support(facts: Facts) -> None:
    """Re-read the GPU's kernel facts for the engine release in use (DSA on sm_12x arrived in vLLM 0.25.0...).

    The GPU catalog alone answers for "the newest release of any engine"; once the launch command names the
    engine (and version), the same rules from doctor/hardware/kernels.yaml answer for that release.
    """
    engine = facts.get("launch.engine")
    name = facts.get("gpu.name")
    if engine is None or name is None or facts.get("gpu.vendor") != "nvidia":
        return
    from doctor.hardware.catalog import lookup_gpu
    from doctor.hardware.gating import kernel_support

    gpu = lookup_gpu(name)
    if gpu is None:
        return
    from doctor.errors import InputError

    version = facts.get("launch.version")
    try:
        support = kernel_support(gpu, engine, version) if version is not None else None
    except InputError:  # a version we cannot order ("latest", "nightly"): as unknown
        version, support = None, None
    if support is None:  # unknown version: not the newest release's answer, but which releases each holds for
        from doctor.hardware.gating import kernel_support_unknown_version

        for kernel, (available, releases) in kernel_support_unknown_version(gpu, engine).items():
            facts.set(f"gpu.{kernel}", available, f"doctor/hardware/kernels.yaml: {kernel} for sm_{gpu.sm}: "
                                                  f"{'has it on' if available else 'missing on'} {releases}")
            facts.set(f"gpu.{kernel}_releases", releases, "doctor/hardware/kernels.yaml")
        return
    for kernel, available in support.items():
        facts.set(f"gpu.{kernel}", available, f"doctor/hardware/kernels.yaml: {kernel} for sm_{gpu.sm} on "
                                              f"{engine} {version}")
        facts.set(f"gpu.{kernel}_releases", f"{engine} {version}", "launch.version")


@analyzer(reads=("launch.quantization", "model.quantization", "model.same_checkpoint", "model.name", "launch.engine",
                 "launch.version",
                   "launch.model", "server.model_path"),
          produces=("launch.quantization_matches", "launch.quantization_undetected"))
def derive_quantization_match(facts: Facts) -> None:
    if "launch.quantization" not in facts:
        return
    given = facts.get("launch.quantization")
    if given is not None:
        facts.set("launch.quantization_undetected", False, f"--quantization {given} is given")
    elif _quantization_undetected(facts):
        return
    if given is None:
        facts.set("launch.quantization_matches", None, "no --quantization: the engine reads the checkpoint's")
        return
    if "model.quantization" not in facts:
        return
    if facts.get("model.same_checkpoint") is False:
        facts.error("launch.quantization_matches", f"the config ({facts.get('model.name')}) is not the served "
                    f"checkpoint's ({facts.get('launch.model') or facts.get('server.model_path')})")
        return
    from doctor.model.quantization import QUANTIZATION_LOADERS

    checkpoint = facts.get("model.quantization")
    loaders = QUANTIZATION_LOADERS.get(checkpoint)
    if loaders is None:  # a checkpoint format we have no table for: do not guess
        return
    facts.set("launch.quantization_matches", given in loaders,
              f"derived: --quantization {given} vs checkpoint {checkpoint or 'unquantized'}")


def _quantization_undetected(facts: Facts) -> bool:
    """A quantized checkpoint without --quantization on a release that does not read the checkpoint's method
    (doctor/engines/release_rules.yaml quantization_from_checkpoint): it loads as unquantized. Sets
    launch.quantization_undetected wherever that is decided — False on a release that reads the checkpoint (the
    newest when the version is unknown), for an unquantized checkpoint, or for another checkpoint's config — and
    returns it; left unknown only on a release that does not read it, with the checkpoint unknown."""
    from doctor.engines.release_rules import rule

    engine, version, checkpoint = facts.get("launch.engine"), facts.get("launch.version"), facts.get("model.quantization")
    if engine not in ("vllm", "sglang"):
        return False
    found = rule("quantization_from_checkpoint", engine, str(version) if version else None)
    if found is None or found.values.get("detects") is not False:
        facts.set("launch.quantization_undetected", False,
                  f"{engine} {version or '(newest)'} takes the method from the checkpoint's config"
                  + (f" ({found.evidence})" if found is not None else " (no release rule says otherwise)"))
        return False
    if "model.quantization" not in facts or facts.get("model.same_checkpoint") is False:
        return False  # the checkpoint is not known: undecided
    if not checkpoint:
        facts.set("launch.quantization_undetected", False, "the checkpoint is not quantized (no quantization_config)")
        return False
    facts.set("launch.quantization_undetected", True,
              f"derived: a {checkpoint} checkpoint, no --quantization, on {engine} {version} ({found.evidence})")
    return True


@analyzer(reads=("log.block_size", "model.attention", "launch.engine", "model.layers.kv", "model.layers.linear",
                   "model.kv_bytes_per_token", "model.state_bytes_per_sequence"),
          produces=("engine.block_size",))
def derive_hybrid_block_size(facts: Facts) -> None:
    """engine.block_size for hybrid models on vLLM: tokens per block so one attention page = one state page.

    vLLM's hybrid KV cache manager sets attention block size = 16 × ceil(state page / (16 × attention bytes per
    token)), per layer (seed "How vLLM Solved It"; e.g. 544 tokens for Qwen3-Next-80B in BF16).
    """
    logged = facts.fact("log.block_size")
    if logged is not None:  # what the engine set beats what it should have set
        facts.set("engine.block_size", logged.value, logged.source, observed=True)
        return
    if facts.get("model.attention") != "hybrid" or facts.get("launch.engine") not in (None, "vllm"):
        return
    kv_layers = facts.get("model.layers.kv")
    linear_layers = facts.get("model.layers.linear")
    kv_per_token = facts.get("model.kv_bytes_per_token")
    state = facts.get("model.state_bytes_per_sequence")
    if not all(isinstance(v, int) and v > 0 for v in (kv_layers, linear_layers, kv_per_token, state)):
        return
    attn_per_token_layer = kv_per_token / kv_layers
    state_per_layer = state / linear_layers
    n = VLLM_HYBRID_ALIGNMENT * math.ceil(state_per_layer / (VLLM_HYBRID_ALIGNMENT * attn_per_token_layer))
    facts.set("engine.block_size", n,
              "derived: vLLM hybrid block = 16·ceil(state/layer ÷ (16·KV bytes/token/layer))")


@analyzer(reads=("engine.block_size", "launch.engine", "launch.max_num_batched_tokens",
                   "launch.chunked_prefill_size", "launch.lmcache_chunk_size"),
          produces=("launch.misaligned_chunks",))
def derive_misaligned_chunks(facts: Facts) -> None:
    block = facts.get("engine.block_size")
    if not isinstance(block, int) or block <= 0 or "launch.engine" not in facts:
        return
    sizes = {
        "--max-num-batched-tokens": facts.get("launch.max_num_batched_tokens"),
        "--chunked-prefill-size": facts.get("launch.chunked_prefill_size"),
        "LMCache chunk size": facts.get("launch.lmcache_chunk_size"),
    }
    bad = [{"flag": name, "value": value} for name, value in sizes.items()
           if isinstance(value, int) and value > 0 and value % block]
    facts.set("launch.misaligned_chunks", bad, f"derived: sizes not multiples of engine.block_size {block}")


@analyzer(reads=("launch.engine", "launch.flags.cuda_graph_bs", "launch.flags.cuda_graph_max_bs",
                 "launch.flags.cuda_graph_max_bs_decode"),
          produces=("launch.cuda_graph_max_bs",))
def derive_cuda_graph_cap(facts: Facts) -> None:
    """launch.cuda_graph_max_bs: the largest decode batch SGLang captures a CUDA graph for, when the command sets
    it — the largest of --cuda-graph-bs, else --cuda-graph-max-bs (--cuda-graph-max-bs-decode in newer releases).
    A batch above it runs eagerly (sglang 0.4.3 cuda_graph_runner.py:259-284 ``can_run``, model_runner.py:784-790);
    left to the engine, the cap depends on the GPU and is not known here."""
    if facts.get("launch.engine") != "sglang":
        return
    listed = facts.fact("launch.flags.cuda_graph_bs")
    if listed is not None and isinstance(listed.value, list) and listed.value \
            and all(isinstance(b, int) for b in listed.value):
        facts.set("launch.cuda_graph_max_bs", max(listed.value), f"derived: max of {listed.source}")
        return
    for key in ("launch.flags.cuda_graph_max_bs", "launch.flags.cuda_graph_max_bs_decode"):
        given = facts.fact(key)
        if given is not None and isinstance(given.value, int):
            facts.set("launch.cuda_graph_max_bs", given.value, f"derived: {given.source}")
            return


@analyzer(reads=("metrics.running", "launch.ep"),
          produces=("metrics.running_per_ep_rank",))
def derive_ep_load(facts: Facts) -> None:
    running, ep = facts.get("metrics.running"), facts.get("launch.ep")
    if isinstance(running, (int, float)) and isinstance(ep, int) and ep > 1:
        facts.set("metrics.running_per_ep_rank", running / ep, "derived: metrics.running / launch.ep",
                  observed=True)


@analyzer(reads=("server.max_total_tokens", "metrics.kv_capacity_tokens", "log.kv_cache_tokens",
                   "fit.kv_tokens_per_group",
                   # the band of comparable predictions (doctor/model/band.py band_from_facts)
                   "gpu.sm", "launch.engine", "launch.quantization", "model.attention", "model.moe",
                   "model.quantization", "model.name", "launch.model", "server.model", "gpu.name"),
          produces=("capacity.measured_tokens", "capacity.measured_source", "capacity.expected_tokens",
                      "capacity.ratio", "capacity.ratio_note"))
def derive_capacity(facts: Facts) -> None:
    """The seed's "measure it, then infer back": compare the KV tokens the server holds with what should fit."""
    measured = facts.fact("server.max_total_tokens") or facts.fact("metrics.kv_capacity_tokens") or \
        facts.fact("log.kv_cache_tokens")
    expected = facts.get("fit.kv_tokens_per_group")
    if measured is None or not isinstance(measured.value, (int, float)) or not expected:
        return
    facts.set("capacity.measured_tokens", int(measured.value), measured.source, observed=True)
    facts.set("capacity.measured_source", measured.source, measured.source)
    facts.set("capacity.expected_tokens", int(expected), "derived: fit.kv_tokens_per_group")
    facts.set("capacity.ratio", round(measured.value / expected, 3), "derived: measured / expected", observed=True)
    from doctor.model.band import band_from_facts, margin_note

    note = margin_note(abs(1 - measured.value / expected), band_from_facts(facts), facts.get("launch.engine"),
                       "shortfall", measured=True)
    facts.set("capacity.ratio_note", note, "derived: 1 − capacity.ratio against fit.kv_tokens_band")


@analyzer(reads=("metrics.absent_counters", "launch.version", "server.version"),
          produces=ABSENT_IMPLIED)
def derive_absent_counters(facts: Facts) -> None:
    """Counters a server shows only once they count (metric_names.yaml ``absent_means_zero``): what their absence
    implies (0 retractions, a 0 prefix-hit rate), when the server's version is one whose absence means zero.

    SGLang 0.5.23 shows ``sglang:num_retracted_requests_total`` only after its first retraction and
    ``sglang:cached_tokens_total`` only after its first prefix-cache hit, so a healthy server has neither. If the
    version is unknown or older than the one that behaviour was read from, absence cannot be told from "not
    exported", and the implied facts stay unknown, saying so.
    """
    absent = facts.get("metrics.absent_counters")
    if not isinstance(absent, dict):
        return
    from doctor.playbook.conditions import evaluate

    version = facts.fact("launch.version") or facts.fact("server.version")
    for info in absent.values():
        family, since = info.get("family"), str(info.get("since"))
        # metric_names.yaml's `since`, as a condition: a version we cannot order ("nightly") is not known to
        # have the behaviour, and then absence proves nothing
        has_it = version is not None and evaluate(
            {"fact": version.key, "op": "version_ge", "value": since}, facts).value is True
        for key, value in (info.get("implies") or {}).items():
            if has_it:
                facts.set(key, value, f"derived: {family} absent from /metrics, which {version.value} (>= {since}) "
                          "shows only once it counts (doctor/probes/metric_names.yaml)", observed=True)
            else:
                known = f"this server's version is {version.value}" if version is not None else "its version is unknown"
                facts.forget(key, f"{family} is not in /metrics: from {since} on that means none yet (it appears "
                             f"only once it counts), and {known}")


#: SGLang's EnvBool (sglang/srt/environ.py:143-150): these spell true; "false", "0", "no", "n" false; else it raises
_SGLANG_TRUE = ("true", "1", "yes", "y")


@analyzer(reads=("launch.engine", "launch.env.SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN",
                   "launch.env.SGLANG_IS_IN_CI", "process.env", "launch.model"),
          produces=("launch.sglang_allow_long_context",))
def derive_sglang_allow_long_context(facts: Facts) -> None:
    """launch.sglang_allow_long_context: SGLang only warns about --context-length above the model's length when
    SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is true, or in its own CI (SGLANG_IS_IN_CI; sglang 0.5.23
    sglang/srt/configs/model_config.py:1302-1307)."""
    if facts.get("launch.engine") != "sglang":
        return
    for name in ("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "SGLANG_IS_IN_CI"):
        found = facts.fact(f"launch.env.{name}")
        if found is not None and str(found.value).strip().lower() in _SGLANG_TRUE:
            facts.set("launch.sglang_allow_long_context", True, f"{name}={found.value} ({found.source})")
            return
    if "process.env" in facts or facts.get("launch.model") is not None:
        facts.set("launch.sglang_allow_long_context", False,
                  "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN not true in the launch environment (SGLang's default: off)")


@analyzer(reads=("launch.mem_fraction", "launch.engine", "launch.flags.*"),
          produces=("launch.mem_fraction_picked_by_engine",))
def derive_mem_fraction_picked(facts: Facts) -> None:
    """launch.mem_fraction_picked_by_engine: SGLang sizes --mem-fraction-static itself when it is not given (the GPU
    memory less what activations and CUDA graphs need: sglang 0.5.23 sglang/srt/arg_groups/memory_hook.py:281-342),
    and /server_info reports that resolved value. A fraction the engine picked for this GPU is not "low" (the
    playbook's note; ``lint`` of the same command leaves it unknown for the same reason)."""
    fraction = facts.fact("launch.mem_fraction")
    if fraction is None:
        return
    picked = (facts.get("launch.engine") == "sglang" and fraction.source.startswith("server_info")
              and bool(facts.under("launch.flags")) and "launch.flags.mem_fraction_static" not in facts)
    why = ("the launch command gives no --mem-fraction-static: SGLang resolved it at start-up"
           if picked else f"given or a fixed default ({fraction.source})")
    facts.set("launch.mem_fraction_picked_by_engine", picked, f"derived: {why}")


@analyzer(reads=("launch.engine", "launch.flags.gpu_memory_utilization", "launch.flags.mem_fraction_static",
                 "launch.tp", "model.attention_heads", "model.kv_heads"),
          produces=("launch.refused_values",))
def derive_refused_values(facts: Facts) -> None:
    """Values the engine's own start-up checks refuse (doctor/engines/refusals.yaml, each rule with its wheel
    file:line): a memory fraction out of range, a TP size that does not split the heads."""
    from doctor.engines.refusals import refused_values

    refused_values(facts)


@analyzer(reads=("engine.name", "launch.version", "server.version", "log.version", "log.catalog.matches"),
          produces=("engine.pins.*",))
def derive_engine_pins(facts: Facts) -> None:
    """engine.pins.<package>: what the engine release's wheel requires of the layers below it (torch, transformers,
    tokenizers, FlashInfer, Ray, …; doctor/engines/pins.json), set where a log line matched one of those layers'
    own messages: the finding's fix can then name the release of the layer this engine release installs. Read only
    then, so a check without such a line never opens the table."""
    matches = facts.get("log.catalog.matches")
    if not isinstance(matches, list) or not any(isinstance(m, dict) and m.get("catalog") == "lower" for m in matches):
        return
    engine = facts.get("engine.name")
    version = facts.get("launch.version") or facts.get("server.version") or facts.get("log.version")
    if engine not in ("vllm", "sglang") or not isinstance(version, str):
        return
    from doctor.engines.pins import effective_pins, source

    where = source(engine, version)
    for package, (spec, origin) in effective_pins(engine, version).items():
        # a pin only the engine below sets (SGLang 0.4.2's torch, through its vllm==0.6.4.post1) says so
        facts.set(f"engine.pins.{package.replace('-', '_')}", spec, f"{where}; {origin}" if origin else where)


@analyzer(reads=("model.architectures", "log.error"), produces=("model.vllm_pp_class",))
def derive_vllm_pp_class(facts: Facts) -> None:
    """model.vllm_pp_class: where the newest vLLM release read implements pipeline parallelism for the checkpoint's
    architecture (doctor/engines/pp_architectures.json, from the wheel); set only when it does, so a release that
    refused PP for it ("Pipeline parallelism is not supported for this model") is older than the support. Only a
    log's error is read against it (launch-failure.yaml), so a run without one does not open the table."""
    if not facts.get("log.error"):
        return
    from doctor.engines.pp_architectures import pp_class

    found = facts.fact("model.architectures")
    architectures = found.value if found is not None and isinstance(found.value, list) else []
    for architecture in architectures:
        where = pp_class(str(architecture))
        if where:
            facts.set("model.vllm_pp_class", where, f"derived: {architecture} in doctor/engines/pp_architectures.json")
            return


#: the registry's refusal and the architectures it lists (vLLM's "Model architectures ['X'] are not supported for
#: now", SGLang's the same words, and SGLang 0.1.x's "Unsupported architectures: ['X']")
_REFUSED = re.compile(r"(?:Model architectures \[([^\]]*)\] are not supported|Unsupported architectures: \[?([^\]]*))")
#: transformers' refusal of a model type it does not know (transformers/models/auto/configuration_auto.py)
_UNKNOWN_TYPE = re.compile(r"has model type `?(\w+)`? but Transformers does not recognize this architecture")
_REFUSAL_LINES = ("log.seen.model_architecture_refused", "log.seen.engine_too_old",
                  "log.seen.transformers_too_old_for_architecture")


@analyzer(reads=(*_REFUSAL_LINES, "model.architectures", "engine.name", "launch.version"),
          produces=("engine.architecture_since", "engine.architecture_not_too_old"))
def derive_architecture_release(facts: Facts) -> None:
    """engine.architecture_since / engine.architecture_not_too_old: for a log whose engine refused the architecture
    ("are not supported"), or whose transformers did not know the model type, whether the release is older than the
    first one that registers the architecture (doctor/engines/architectures.json, every release's registry read from
    its wheel): only then is an upgrade the fix. A release that registers it refused it because the model's module
    failed to import, or ran a transformers too old for the model type."""
    lines = [str(facts.get(key)) for key in _REFUSAL_LINES if facts.get(key)]
    refused = next((m for m in map(_REFUSED.search, lines) if m), None)
    unknown = next((m for m in map(_UNKNOWN_TYPE.search, lines) if m), None) if refused is None else None
    if refused is None and unknown is None:
        return
    from doctor.engines.architectures import NAMES, could_be, model_type_architectures, registration

    found = facts.fact("model.architectures")
    configured = [str(a) for a in found.value] if found is not None and isinstance(found.value, list) else []
    if refused:
        architectures = re.findall(r"[A-Za-z_]\w*", refused.group(1) or refused.group(2) or "") or configured
    else:
        architectures = configured or model_type_architectures(unknown.group(1))
    if not architectures:
        return
    # the same words in both engines: with the engine unknown, each engine's answer is given, and the release is
    # cleared only when both clear it
    engine = facts.get("engine.name")
    version = facts.get("launch.version")
    engines = ([engine] if engine in ("vllm", "sglang")
               else [e for e in ("vllm", "sglang") if could_be(e, str(version) if version else None)])
    answers = [r for r in (registration(e, a, str(version) if version else None)
                           for a in architectures for e in engines) if r]
    source = f"derived: {', '.join(architectures)} in doctor/engines/architectures.json"
    blame = [r for r in answers if r.state in ("later", "unknown")]
    if blame:  # with the engine unknown, the other engine's answer too: which engine it is decides
        said = "; ".join(r.sentence() for r in (answers if len(engines) > 1 else blame))
        facts.set("engine.architecture_since", said if len(blame) == len(answers) else f"the engine decides: {said}",
                  source)
    elif answers and all(r.state == "registered" for r in answers):  # dropped or never registered: vLLM may still
        # run it by conversion or the Transformers backend, so nothing is claimed
        said = "; ".join(r.sentence() if refused else
                         f"{NAMES[r.engine]} {r.version} registers {r.architecture} (from {r.since}: {r.where}), so "
                         f"transformers' refusal of model type `{unknown.group(1)}` is the transformers release's, "
                         f"not the engine's" for r in answers)
        facts.set("engine.architecture_not_too_old", said, source)
