"""`plan`: from config.json, the GPUs and the traffic to a serving design per engine, checked by the playbooks.

Order of the work, each step a module of its own:
request (options, --rps → users) → weights (checkpoint or --weights-dtype) → parallelism over candidate layouts,
sized by capacity (doctor/model/fit.py arithmetic) → flags to set / to leave to the engine → the launch command from
the engine version's catalog → the verdict: the playbooks over the command, the config and the GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from doctor.errors import InputError
from doctor.model.weights import WeightPlan, plan_weights
from doctor.plan.capacity import Capacity, Sizer, default_fraction, seed_method_users
from doctor.plan.flags import (
    Delegation,
    FlagChoice,
    KVPolicy,
    delegations,
    kv_policy,
    model_flags,
    parallel_flags,
    users_note,
)
from doctor.plan.parallelism import Decision, Parallelism, choose, gpus_text
from doctor.plan.request import Demand, PlanRequest, demand_for
from doctor.plan.verdict import DOES_NOT_RUN, CommandCheck, check_command, overall

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.engines.catalog import Catalog
    from doctor.engines.command import LaunchCommand
    from doctor.engines.families import Family
    from doctor.findings import Finding
    from doctor.hardware.spec import GpuSpec
    from doctor.model.band import Band
    from doctor.model.card import ModelCard

SCHEMA = "llmdoctor.plan/1"
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


@dataclass
class EnginePlan:
    engine: str
    catalog: Catalog
    version: str
    fraction: float
    fraction_source: str
    kv: KVPolicy
    decision: Decision
    rows: list[Capacity]
    flags: list[FlagChoice]
    delegated: list[Delegation]
    notes: list[str]
    argv: list[str]
    command: LaunchCommand
    check: CommandCheck

    @property
    def label(self) -> str:
        return f"{ENGINE_NAMES[self.engine]} {self.version}"

    @property
    def status(self) -> str:
        return DOES_NOT_RUN if not self.decision.fits else self.check.status

    @property
    def capacity(self) -> Capacity:
        return self.decision.capacity

    def band(self, plan: Plan) -> Band:
        """The error band of this engine's predicted KV pool: the user's own runs of the model on this GPU
        (`llmdoctor calibrate`), else the memory model's record (docs/plan.md)."""
        from doctor.model.band import band_from_card

        return band_from_card(plan.card, self.engine, plan.gpu.gpu.sm, gpu_name=plan.gpu.gpu.name)

    def flag_text(self, flag: FlagChoice) -> str:
        from doctor.plan.commands import option_name

        name = option_name(self.engine, self.catalog, flag.dest)
        return name if flag.value is True else f"{name} {flag.value}"


@dataclass
class Plan:
    request: PlanRequest
    card: ModelCard
    gpu: GpuSpec
    demand: Demand
    weights: WeightPlan
    model_path: str
    family: Family | None
    engines: dict[str, EnginePlan]
    #: engines asked for that cannot serve this model at all, and why
    unsupported: dict[str, str] = field(default_factory=dict)
    instead: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return overall([p.status for p in self.engines.values()])

    def findings(self) -> list[tuple[Finding, list[str]]]:
        """Every engine's findings, once per cause, with the engines it concerns (most severe first)."""
        merged: dict[str, tuple[Finding, list[str]]] = {}
        for name, plan in self.engines.items():
            for finding in plan.check.diagnosis.findings:
                merged.setdefault(finding.id, (finding, []))[1].append(name)
        return sorted(merged.values(), key=lambda item: item[0].sort_key())

    def to_dict(self) -> dict[str, Any]:
        from doctor.plan.document import plan_document

        return plan_document(self)


def make_plan(request: PlanRequest) -> Plan:
    from doctor.engines.catalog import load_catalog
    from doctor.engines.families import match_family
    from doctor.model.resolve import model_card

    request.check()
    gpu = _gpu_spec(request)
    sized = model_card(request.config, offline=request.offline)
    card = sized.card
    request = replace(request, config_raw=sized.resolved.config.raw)  # its checks read this, not the Hub again
    demand = demand_for(request, card.max_context, card.source)
    weights = plan_weights(card, request.weights_dtype, model_path=request.model_path)
    model_path = request.model_path or default_model_path(request.config)
    family = match_family(architectures=list(card.architectures), model_type=card.model_type, name=model_path)
    sizer = Sizer(card, weights, gpu.gpu.memory_bytes, gpu.gpu.name)
    engines, unsupported = {}, {}
    for engine in request.engines:
        why = sizer.unsupported(engine)
        if why is not None:
            unsupported[engine] = why
            continue
        catalog = load_catalog(engine, request.engine_version)
        engines[engine] = _engine_plan(engine, catalog, request, card, gpu, demand, weights, model_path, family, sizer)
    plan = Plan(request, card, gpu, demand, weights, model_path, family, engines, unsupported)
    if plan.status == DOES_NOT_RUN and engines:
        plan.instead = _instead(plan)
    return plan


def _gpu_spec(request: PlanRequest) -> GpuSpec:
    """--gpu (and --gpu-mem): a plan sizes weights and KV against each GPU's memory, so an unknown GPU needs
    --gpu-mem; with it the plan runs on that memory alone and says what it could not check."""
    from doctor.hardware.spec import UnknownGpu, parse_gpu_spec
    from doctor.model.units import parse_bytes

    memory = parse_bytes(request.gpu_mem, flag="--gpu-mem") if request.gpu_mem else None
    try:
        return parse_gpu_spec(request.gpu, gpu_mem=memory, gpu_mem_text=request.gpu_mem)
    except UnknownGpu as exc:
        near = f"did you mean {', '.join(exc.near)}? " if exc.near else ""
        raise InputError(f"--gpu: unknown GPU {exc.name!r}; {near}plan needs each GPU's memory to size weights and "
                         "KV: pass --gpu-mem SIZE (e.g. --gpu-mem 48G) with this name, or a known name "
                         "(`llmdoctor gpus` lists them)") from None


def _engine_plan(engine: str, catalog: Catalog, request: PlanRequest, card: ModelCard, gpu: GpuSpec, demand: Demand,
                 weights: WeightPlan, model_path: str, family: Family | None, sizer: Sizer) -> EnginePlan:
    from doctor.plan.commands import build_argv, launch_command

    fraction, fraction_source = default_fraction(engine, catalog)
    kv = kv_policy(card, gpu.gpu, engine, catalog)
    decision = _decide(engine, card, gpu, gpu.count, demand, kv, sizer, fraction)
    par = decision.parallelism
    rows = _rows(engine, catalog, gpu, sizer, par, fraction, demand.context)
    pflags, notes = parallel_flags(engine, catalog, par, card.moe is not None)
    mflags, more = model_flags(engine, catalog, card, family, kv, decision.kv_dtype, weights, demand,
                               decision.capacity, par, request.text_only)
    flags = pflags + mflags
    notes += more
    short = users_note(decision.capacity, demand)
    if short:
        notes.insert(0, short)
    if decision.idle_gpus:
        notes.append(f"{gpus_text(decision.idle_gpus)} left idle: replicas need {gpus_text(par.instance_gpus)} "
                     "each")
    version = request.engine_version or catalog.version
    if catalog.note and request.engine_version:
        notes.append(catalog.note)
    argv = build_argv(engine, catalog, model_path, flags)
    command = launch_command(engine, catalog, version, model_path, flags)
    weight_facts = {"model.weight_bytes": (weights.total_bytes, weights.source),
                    "model.expert_weight_bytes": (weights.expert_bytes, weights.source),
                    "model.weight_source": (card.weight_source if weights.requested == "auto" else "estimate",
                                            weights.source)}
    gpu_text = f"{gpu.gpu.name}:{gpu.count}"
    check = check_command(argv, version, config=request.config, config_json=request.config_raw, gpu=gpu_text,
                          context=demand.context, users=demand.users, text_only=request.text_only,
                          weight_facts=weight_facts, gpu_mem=request.gpu_mem,
                          planned={"fit.users_fit": (decision.capacity.users_total,
                                                     f"plan: {decision.parallelism.label()} with "
                                                     f"{decision.capacity.kv_dtype} KV")} if decision.fits else None)
    return EnginePlan(engine, catalog, version, fraction, fraction_source, kv, decision, rows, flags,
                      delegations(card, kv, decision.kv_dtype), notes, argv, command, check)


def _decide(engine: str, card: ModelCard, gpu: GpuSpec, count: int, demand: Demand, kv: KVPolicy, sizer: Sizer,
            fraction: float) -> Decision:
    def evaluate(par: Parallelism, kv_dtype: str) -> Capacity | None:
        return sizer.evaluate(engine, kv_dtype, par.layout, fraction=fraction, context=demand.context,
                              replicas=par.replicas)

    # Only dtypes this engine has a layout for (the model's own always: unsupported engines never get here).
    options = tuple(o for o in kv.options if sizer.model(engine, o) is not None) or ("auto",)
    return choose(card, gpu.gpu, count, demand, options, evaluate)


def _rows(engine: str, catalog: Catalog, gpu: GpuSpec, sizer: Sizer, par: Parallelism, fraction: float,
          context: int) -> list[Capacity]:
    """The chosen layout at each KV dtype this GPU and engine version offer (fp4 only with FP4 tensor cores)."""
    from doctor.plan.flags import kv_spelling

    rows = []
    for dtype, offered in (("bf16", True), ("fp8", gpu.gpu.fp8), ("fp4", gpu.gpu.nvfp4)):
        if not offered or (dtype != "bf16" and kv_spelling(engine, catalog, dtype) is None):
            continue
        found = sizer.evaluate(engine, dtype, par.layout, fraction=fraction, context=context, replicas=par.replicas)
        if found is not None:
            rows.append(found)
    return rows


def seed_method(plan: Plan, engine_plan: EnginePlan) -> dict[str, Any] | None:
    """The seed's arithmetic for GQA/MHA under TP, at the chosen KV dtype, for comparison (docs/plan.md)."""
    par = engine_plan.decision.parallelism
    if plan.card.attention not in ("gqa", "mha", "mqa") or par.dp_attention or par.pp > 1:
        return None
    cap = engine_plan.capacity
    users = seed_method_users(par.instance_gpus, plan.gpu.gpu.memory_bytes, plan.weights.total_bytes,
                              cap.kv.bytes_per_token, cap.context)
    return {"users_per_replica": users,
            "formula": f"({par.instance_gpus} × {plan.gpu.gpu.memory_bytes} B − {plan.weights.total_bytes} B weights) "
                       f"÷ ({cap.kv.bytes_per_token} B/token × {cap.context} tokens)",
            "note": "the seed's method: whole GPU memory, no memory fraction or activation reserve, no sliding "
                    "windows or state"}


def _instead(plan: Plan) -> list[str]:
    from doctor.plan.instead import alternatives

    first = next(iter(plan.engines.values()))
    causes = {f.id for p in plan.engines.values() for f in p.check.gating}
    short = not first.decision.fits or "model-does-not-fit" in causes
    sizer_cache: dict[tuple[int, str], Decision] = {}

    def replan(count: int, weights: WeightPlan) -> Decision:
        key = (count, weights.requested)
        if key not in sizer_cache:
            sizer = Sizer(plan.card, weights, plan.gpu.gpu.memory_bytes, plan.gpu.gpu.name)
            sizer_cache[key] = _decide(first.engine, plan.card, plan.gpu, count, plan.demand, first.kv, sizer,
                                       first.fraction)
        return sizer_cache[key]

    def runs(count: int, weights: WeightPlan) -> bool:
        """The alternative passes the plan's own gates: the playbooks over its command do not say "does not
        run" (an fp8 checkpoint on sm_70, DSA on sm_89 stay refused on any number of those GPUs)."""
        sizer = Sizer(plan.card, weights, plan.gpu.gpu.memory_bytes, plan.gpu.gpu.name)
        other = _engine_plan(first.engine, first.catalog, plan.request, plan.card, replace(plan.gpu, count=count),
                             plan.demand, weights, plan.model_path, plan.family, sizer)
        return other.status != DOES_NOT_RUN

    return alternatives(plan.card, plan.gpu.gpu, plan.gpu.count, plan.weights, first.fraction,
                        weights_short=short, replan=replan, runs=runs)


def default_model_path(spec: str) -> str:
    """What the command should load when --model-path is not given: the repo id, the model directory, or a
    Hugging Face-style file name (``org__name.json`` → ``org/name``, the fixtures' convention)."""
    from doctor.model.config import EXAMPLE_PREFIX

    if spec.startswith(EXAMPLE_PREFIX):
        return spec[len(EXAMPLE_PREFIX):]
    path = Path(spec).expanduser()
    if path.is_dir():
        return spec
    if path.is_file():
        if path.name == "config.json":
            return str(path.parent)
        return path.stem.replace("__", "/", 1) if "__" in path.stem else path.stem
    return spec
