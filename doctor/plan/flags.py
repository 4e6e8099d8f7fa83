"""Flags to set and flags to leave to the engine (seed § New Model Diagnosis Procedure › 5).

Set: the parallel layout, expert parallelism (essential for MoE), the parsers of the model family, a
--quantization matching the weights, an FP8 KV cache where the architecture lets the user choose, the
multimodal switches, SGLang's metrics. Left to the engine: everything it decides better from config.json and
the hardware (rules.yaml ``delegate``): DSA precision and kernels, MLA routing, hybrid block sizes, memory.

Every flag is named by its destination in the engine's catalog and only set when that version has it (and
accepts the value); what a version lacks becomes a note instead of a broken flag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from doctor.hardware.catalog import GpuModel
from doctor.model.card import ModelCard
from doctor.model.units import format_tokens
from doctor.plan.rules import rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.engines.catalog import Catalog
    from doctor.engines.families import Family
    from doctor.model.weights import WeightPlan
    from doctor.plan.capacity import Capacity
    from doctor.plan.parallelism import Parallelism
    from doctor.plan.request import Demand


@dataclass(frozen=True)
class FlagChoice:
    """A flag the plan sets: the catalog destination, the value (True for a switch) and why."""

    dest: str
    value: Any
    why: str


@dataclass(frozen=True)
class Delegation:
    flag: str
    why: str
    ref: str

    def to_dict(self) -> dict[str, str]:
        return {"flag": self.flag, "why": self.why, "ref": self.ref}


@dataclass(frozen=True)
class KVPolicy:
    """The KV dtypes to size with (preferred first) and whether the plan sets the flag or the engine decides."""

    options: tuple[str, ...]
    set_by_plan: bool
    why: str


def is_dsa(card: ModelCard) -> bool:
    return "dsa" in (card.attention, card.full_attention)


def kv_policy(card: ModelCard, gpu: GpuModel, engine: str, catalog: Catalog) -> KVPolicy:
    if is_dsa(card):
        from doctor.engines.dsa_kv import dsa_auto_kv

        auto = dsa_auto_kv()[engine]
        above = gpu.sm is not None and gpu.sm >= auto.get("min_sm", 10**6)
        dtype = auto["at_or_above"] if above else auto["below"]
        if any(g.kind == "dsv4" for g in card.kv_groups):
            dtype = "auto"  # DeepSeek V4 resolves to fp8 in both engines (doctor/model/kvcache.py)
        return KVPolicy((dtype,), False, f"DSA: the engine picks the KV precision per layer group "
                                         f"({'fp8' if dtype == 'auto' else dtype} here: {auto['source']})")
    fp8 = gpu.fp8 and kv_spelling(engine, catalog, "fp8") is not None
    if not fp8:
        why = (f"{gpu.name} has no FP8 tensor cores: KV stays 16-bit" if not gpu.fp8 else
               f"{engine} {catalog.version} has no FP8 --kv-cache-dtype value")
        return KVPolicy(("auto",), False, why)
    if card.attention == "hybrid":
        return KVPolicy(("auto", "fp8"), True, "hybrid: KV only in the full-attention layers, so 16-bit unless "
                                               "the users need FP8 (the seed's Qwen3.5 commands set none)")
    return KVPolicy(("fp8",), True, "FP8 KV: half the cache of 16-bit on a GPU with FP8 tensor cores (seed: "
                                    "'TP2, FP8 standard')")


def kv_spelling(engine: str, catalog: Catalog, dtype: str) -> str | None:
    """This engine version's --kv-cache-dtype value for a canonical dtype (None: not offered)."""
    choices = catalog.choices("kv_cache_dtype") or ()
    return next((s for s in rules()["kv_cache_dtype"][engine].get(dtype, ()) if s in choices), None)


def parallel_flags(engine: str, catalog: Catalog, par: Parallelism, moe: bool) -> tuple[list[FlagChoice], list[str]]:
    """The layout in this engine's flags. Replicas of a dense model are the engine's own data parallelism (one
    server, one port); replicas of an MoE instance are separate servers (a shared DP group would be DP
    attention over all of them)."""
    out: list[FlagChoice] = []
    notes: list[str] = []
    replicas_inside = not moe and par.replicas > 1
    if engine == "vllm":
        if par.attn_tp > 1:
            out.append(FlagChoice("tensor_parallel_size", par.attn_tp, "attention and dense layers sharded over "
                                  f"{par.attn_tp} GPUs"))
        if par.dp_attention:
            out.append(FlagChoice("data_parallel_size", par.attn_dp, "DP attention: each rank serves its own "
                                  "requests and holds only their KV (with expert parallelism)"))
        elif replicas_inside:
            out.append(FlagChoice("data_parallel_size", par.replicas, f"{par.replicas} replicas in one server "
                                  "(vLLM balances requests across them)"))
        if par.pp > 1:
            out.append(FlagChoice("pipeline_parallel_size", par.pp, "layers split across nodes: the weights fit "
                                  "no single node"))
        if par.ep > 1:
            out.append(FlagChoice("enable_expert_parallel", True, f"experts sharded whole over the TP×DP group "
                                  f"(EP{par.ep}); without it every GPU holds a slice of every expert"))
    else:
        tp = par.attn_tp * par.attn_dp
        if tp > 1:
            out.append(FlagChoice("tp_size", tp, f"the {tp} GPUs of a replica" +
                                  (" (DP attention splits attention inside them)" if par.dp_attention else "")))
        if par.dp_attention:
            if catalog.has_dest("attn_dp_size"):
                out.append(FlagChoice("attn_dp_size", par.attn_dp, "DP attention: each rank serves its own requests "
                                      "and holds only their KV"))
            else:
                out.append(FlagChoice("dp_size", par.attn_dp, "DP attention groups inside the TP group"))
                out.append(FlagChoice("enable_dp_attention", True, "attention data-parallel, experts shared"))
        elif replicas_inside:
            out.append(FlagChoice("dp_size", par.replicas, f"{par.replicas} replicas in one server (SGLang's "
                                  "data-parallel controller balances requests)"))
        if par.pp > 1:
            out.append(FlagChoice("pp_size", par.pp, "layers split across nodes: the weights fit no single node"))
        if par.ep > 1:
            out.append(FlagChoice("ep_size", par.ep, f"experts sharded whole over {par.ep} GPUs; without it every "
                                  "GPU holds a slice of every expert"))
    if moe and par.replicas > 1:
        notes.append(f"run {par.replicas} copies of this command, one per "
                     f"{'GPU' if par.instance_gpus == 1 else f'{par.instance_gpus} GPUs'} "
                     "(CUDA_VISIBLE_DEVICES), behind a load balancer")
    if par.pp > 1:
        notes.append("pipeline stages span nodes: start it with the engine's multi-node options "
                     "(SGLang --nnodes/--node-rank/--dist-init-addr, vLLM a Ray cluster)")
    return [f for f in out if catalog.has_dest(f.dest)], notes


def model_flags(engine: str, catalog: Catalog, card: ModelCard, family: Family | None, kv: KVPolicy, kv_dtype: str,
                weights: WeightPlan, demand: Demand, capacity: Capacity, par: Parallelism, text_only: bool
                ) -> tuple[list[FlagChoice], list[str]]:
    """Quantization, KV dtype, context cap, parsers, multimodal, metrics — each only where this version has it."""
    from doctor.model.weights import quantization_value

    out: list[FlagChoice] = []
    notes: list[str] = []
    quant = quantization_value(weights, catalog)
    if quant:
        how = "quantizes the 16-bit checkpoint to FP8 while loading" if weights.online else \
            f"matches the checkpoint ({weights.detail})"
        out.append(FlagChoice("quantization", quant, how))
    elif weights.method is not None:
        notes.append(f"--quantization left unset: {engine} {catalog.version} reads {weights.detail} from the "
                     "checkpoint's quantization_config")
    if kv.set_by_plan and kv_dtype != "auto":
        spelling = kv_spelling(engine, catalog, kv_dtype)
        if spelling:
            out.append(FlagChoice("kv_cache_dtype", spelling, kv.why))
    cap = _context_cap(capacity, demand)
    if cap is not None:
        dest = "max_model_len" if engine == "vllm" else "context_length"
        out.append(FlagChoice(dest, cap, f"one request of the model's full {format_tokens(card.max_context or 0)} "
                              f"would not fit a replica's KV pool; capped at {format_tokens(cap)}"))
    out += _parser_flags(engine, catalog, family, notes)
    if card.multimodal:
        if text_only:
            if catalog.has_dest("language_model_only"):
                out.append(FlagChoice("language_model_only", True, "text only: the vision encoder is not loaded, "
                                      "its memory goes to KV (seed § Multimodal)"))
            else:
                notes.append(f"{engine} {catalog.version} has no --language-model-only (vLLM 0.17, SGLang 0.5.20 "
                             "add it): the vision tower stays loaded")
        elif engine == "vllm":
            if par.instance_gpus > 1 and catalog.has_dest("mm_encoder_tp_mode"):
                out.append(FlagChoice("mm_encoder_tp_mode", "data", "the vision encoder runs data-parallel instead "
                                      "of sharded like the language model (seed § Multimodal)"))
            if catalog.has_dest("mm_processor_cache_type"):
                out.append(FlagChoice("mm_processor_cache_type", "shm", "preprocessed images are reused across "
                                      "requests with the same image (seed § Multimodal)"))
    if engine == "sglang" and catalog.has_dest("enable_metrics"):
        out.append(FlagChoice("enable_metrics", True, "SGLang serves /metrics only when asked: KV usage, queueing "
                              "and preemptions are how you verify this plan"))
    return [f for f in out if _accepted(catalog, f)], notes


def _accepted(catalog: Catalog, flag: FlagChoice) -> bool:
    choices = catalog.choices(flag.dest)
    return catalog.has_dest(flag.dest) and (choices is None or flag.value is True or flag.value in choices)


def _context_cap(capacity: Capacity, demand: Demand) -> int | None:
    """vLLM refuses to start when one request of --max-model-len cannot fit the KV pool; cap it where needed."""
    longest = capacity.max_context(1)
    limit = capacity.max_context_limit
    if limit is None or longest >= limit or longest < demand.context:
        return None
    return max(demand.context, longest // 1024 * 1024)


def _parser_flags(engine: str, catalog: Catalog, family: Family | None, notes: list[str]) -> list[FlagChoice]:
    if family is None:
        notes.append("no model family matched (doctor/engines/families.yaml): no tool-call or reasoning parser set")
        return []
    from doctor.engines.families import expected_facts
    from doctor.playbook.conditions import evaluate

    expect = expected_facts(family, engine, catalog.version)
    expect.set("launch.version", catalog.version, f"{engine} catalog")
    out: list[FlagChoice] = []
    for job, dest, registry in (("tool_parser", "tool_call_parser", catalog.tool_parsers),
                                ("reasoning_parser", "reasoning_parser", catalog.reasoning_parsers)):
        name = expect.get(f"expect.{job}")
        what = "tool calls" if job == "tool_parser" else "reasoning"
        if name is None:
            why = expect.get(f"expect.{job}_why_none")
            if why:
                notes.append(f"no {what} parser for {family.id} on {engine}: {why}")
            continue
        since = expect.get(f"expect.{job}_since")
        if name not in registry or (since and evaluate({"fact": "launch.version", "op": "version_ge", "value": since},
                                                       expect).value is not True):
            # Not registered yet, or registered but handling this family only from `since` (families.yaml).
            notes.append(f"{family.id} needs --{dest.replace('_', '-')} {name}, which {engine} {catalog.version} "
                         f"does not handle for it" + (f" (from {since}): upgrade" if since else ""))
            continue
        out.append(FlagChoice(dest, name, f"{family.id} {what} parser on {engine} (doctor/engines/families.yaml); "
                              f"without it {'tool calls stay text' if job == 'tool_parser' else 'thinking lands in the answer'}"))
        if job == "tool_parser" and engine == "vllm" and expect.get("expect.auto_tool_choice"):
            out.append(FlagChoice("enable_auto_tool_choice", True, "vLLM extracts tool calls for tool_choice "
                                  "'auto' only with this flag and a parser"))
    return out


def delegations(card: ModelCard, kv: KVPolicy, kv_dtype: str) -> list[Delegation]:
    """What the plan leaves unset on purpose: rules.yaml ``delegate`` for this architecture, plus the KV dtype
    where the plan chose the engine's default."""
    kinds = {card.attention, card.full_attention, "always"}
    out = []
    for item in rules()["delegate"]:
        when = item["when"]
        if kinds & ({when} if isinstance(when, str) else set(when)):
            out.append(Delegation(item["flag"], " ".join(item["why"].split()), item["ref"]))
    if not is_dsa(card) and not (kv.set_by_plan and kv_dtype != "auto"):
        out.insert(0, Delegation("--kv-cache-dtype", f"auto (the model's 16-bit dtype): {kv.why}",
                                 "seed § New Model Diagnosis Procedure › 5"))
    return out


def users_note(capacity: Capacity, demand: Demand) -> str | None:
    """A shortfall in words, with the GPUs it would take at this layout."""
    if demand.users is None or capacity.users_total >= demand.users or capacity.users_per_instance <= 0:
        return None
    replicas = math.ceil(demand.users / capacity.users_per_instance)
    return (f"serves {capacity.users_total} of {demand.users} concurrent requests of {format_tokens(demand.context)}: "
            f"{replicas} replicas ({replicas * capacity.fit.layout.gpus} GPUs) at this layout would hold them")
