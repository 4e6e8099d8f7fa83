"""`check`: the on-call runbook step. Probe a live server (or replay a snapshot), add what the user handed
over (command, config, GPU, recorded files), derive, run the playbooks.

Live facts win over offline ones: they were observed just now. Offline inputs fill what the probes could not
reach (the process on another host, a GPU without NVML, a server without /metrics). The launch command comes,
in order, from --command, the server's own report, or the process found listening on the port
(doctor.sources.offline.gather).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field, replace

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.sources.offline import Gathered, OfflineInputs

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.playbook.engine import Diagnosis
    from doctor.probes.base import ProbeOptions, ProbeResult, Target
    from doctor.probes.runner import PendingProbes

SCHEMA = "llmdoctor.check/1"
#: Probes whose answer proves an LLM server is there; if none answers, the target could not be examined.
SERVER_PROBES = ("server", "metrics")
#: The hung tree's evidence over time: two /metrics scrapes this far apart (unless --sample asks more), and
#: SGLang's /health_generate (doctor.probes.liveness). Only when the symptom is asked: a healthy check stays
#: one scrape; the process tree it always reads (~1 ms) names a stopped or dead worker without them.
HUNG = "hung"
HUNG_SAMPLE_S = 3.0
#: Seconds a live check waits for the served model's lookup (the Hub's answer), from when the server probe named
#: it, or --timeout when that is longer; past it the check answers without the model, and says why.
HUB_BUDGET_S = 2.0


@dataclass
class CheckOptions:
    """Everything `check` was asked to look at: a live target, a snapshot, offline inputs, which playbooks."""

    endpoint: str | None = None
    api_key_env: str | None = None
    timeout_s: float = 2.0
    sample_s: float = 0.0
    pid: int | None = None
    snapshot: str | None = None
    offline: OfflineInputs = field(default_factory=OfflineInputs)
    symptoms: tuple[str, ...] = ()
    playbook_dirs: tuple[str, ...] = ()
    active: bool = False
    model: str | None = None
    #: which passive probes run (None: all); a fleet check runs only the HTTP ones
    probes: tuple[str, ...] | None = None
    #: per-request deadline of the active probes (None: --timeout)
    active_timeout_s: float | None = None
    #: collect the "could not check" lines (a fleet check, which shows findings only, spares their cost)
    unchecked: bool = True
    #: run the last probe in the calling thread (a fleet check's pool thread: one thread start fewer per target)
    inline_probe: bool = False
    #: --target-version V: also read the launch command as release V would (doctor/engines/upgrade.py)
    target_version: str | None = None


@dataclass
class CheckRun:
    """One check: the probes' results, the gathered facts and the diagnosis, as every renderer reads them."""

    target: Target | None
    probes: list[ProbeResult]
    gathered: Gathered
    diagnosis: Diagnosis
    elapsed_ms: float

    @property
    def facts(self) -> Facts:
        return self.gathered.facts

    @property
    def unreachable(self) -> str | None:
        """Why the target could not be examined at all (None when it could, or when there is no target)."""
        return None if self.target is None else unreachable_reason(self.probes)

    def to_dict(self) -> dict[str, Any]:
        facts = self.facts
        return {
            "schema": SCHEMA,
            "target": self.target.display() if self.target else None,
            "engine": facts.get("launch.engine") or facts.get("server.engine"),
            "engine_version": facts.get("launch.version") or facts.get("server.version"),
            "model": facts.get("server.model") or facts.get("launch.model") or facts.get("model.name"),
            "elapsed_ms": round(self.elapsed_ms, 1),
            "probes": [_probe_entry(p, facts) for p in self.probes],
            "notes": list(self.gathered.notes),
            **facts.to_dict(),
            **self.diagnosis.to_dict(),
        }


def _probe_entry(probe: ProbeResult, facts: Facts) -> dict[str, Any]:
    entry = {"name": probe.name, "ok": probe.ok, "error": probe.error, "elapsed_ms": round(probe.elapsed_ms, 1)}
    moot = probe_not_applicable(probe, facts)
    if moot:
        entry["not_applicable"] = moot
    if probe.name.startswith("active."):  # what was sent (never the key), how long it took, what was seen
        from doctor.probes.active import is_active, observation

        if is_active(probe.name):
            entry.update(observation(probe))
    return entry


def probe_not_applicable(probe: ProbeResult, facts: Facts) -> str | None:
    """Why a probe that failed had nothing to read here, or None: the GPU probe on a server that runs on the CPU
    (derive.derive_device) is not a failure — there is no GPU to find."""
    from doctor.derive.analyzers import absent_on_this_device

    if probe.ok or probe.name != "gpu" or not absent_on_this_device(facts):
        return None
    return facts.unknown_reason("gpu")


def unreachable_reason(results: list[ProbeResult]) -> str | None:
    """Why nothing could be examined: every probe that would prove an LLM server failed (None otherwise)."""
    answers = [p for p in results if p.name in SERVER_PROBES]
    if answers and not any(p.ok for p in answers):
        # A process launched with this port that does not listen yet is a server still loading, not a dead one.
        starting = next((p.error for p in results if p.name == "process" and (p.raw or {}).get("starting")), None)
        return starting or next((p.error for p in answers if p.error), "no answer")
    return None


def run_check(opts: CheckOptions) -> CheckRun:
    started = time.perf_counter()
    early = _early_probes(opts)  # waiting on the network while the playbooks load
    from doctor.derive import derive_all
    from doctor.derive.analyzers import absent_on_this_device
    from doctor.playbook.engine import diagnose
    from doctor.playbook.loader import load_playbooks
    from doctor.sources.offline import gather

    pbset = load_playbooks(opts.playbook_dirs)  # fail on a bad --playbooks before touching the network
    if opts.playbook_dirs:  # the user's causes' log signatures read the log as the built-ins' do
        from doctor.logs.source import signatures

        opts = replace(opts, offline=replace(opts.offline, log_signatures=signatures(pbset)))
    opts = replace(opts, offline=with_log_read(opts.offline))
    if opts.endpoint:  # the served model's lookup runs beside the probes, bounded (not 5 s per Hub request)
        opts = replace(opts, offline=replace(opts.offline, hub_budget_s=max(HUB_BUDGET_S, opts.timeout_s)))
    for symptom in opts.symptoms:  # and on a bad --symptom before any active request is sent
        if pbset.find(symptom) is None:
            raise InputError(f"--symptom {symptom}: no such playbook (known: {', '.join(sorted(pbset.playbooks))})")
    target, results, extra = _probe(opts, tuple(pbset.find(s).symptom for s in opts.symptoms), early)
    live = Facts()
    for result in results:
        live.update(result.facts)
    offline = _with_snapshot_inputs(opts.offline, extra) if opts.snapshot else opts.offline
    gathered = gather(offline, live=live if results else None)
    if opts.target_version and gathered.command is not None:
        from doctor.engines.upgrade import upgrade_facts

        # the command as given, else the one the server's process or /server_info was read from
        text = offline.command if offline.command is not None else gathered.command.render()
        upgrade_facts(text, gathered.command, opts.target_version, gathered.facts)
    derive_all(gathered.facts)
    active_ran = opts.active or any(p.name.startswith("active.") for p in results)
    # Without a log, the branches only a log can decide are not "could not check" lines on every run.
    unreachable: tuple[str, ...] = (() if active_ran else ("active",)) + \
        (() if offline.log_excerpt is not None else ("log",))
    unreachable += absent_on_this_device(gathered.facts)  # nothing asked about GPUs a CPU server does not use
    diagnosis = diagnose(pbset, gathered.facts, opts.symptoms, unreachable=unreachable, unchecked=opts.unchecked)
    return CheckRun(target, results, gathered, diagnosis, (time.perf_counter() - started) * 1000)


def _early_probes(opts: CheckOptions) -> PendingProbes | None:
    """The passive probes, started before anything else when nothing the playbooks hold decides which run: no
    --playbooks (a bad one fails before the network is touched), no --symptom (the hung tree adds probes), and no
    --log (read first, as a bad one is an input error and ``--log -`` may take its whole cut-off)."""
    if not opts.endpoint or opts.snapshot or opts.playbook_dirs or opts.symptoms or opts.offline.log \
            or opts.offline.client_output:
        return None
    from doctor.probes.runner import PendingProbes

    target, probe_opts = _probe_target(opts)
    return PendingProbes(target, probe_opts, names=list(opts.probes) if opts.probes else None,
                         on_result=_served_model_seen(opts.offline), inline_last=opts.inline_probe)


def _served_model_seen(offline: OfflineInputs) -> Callable[[ProbeResult], None]:
    """Start resolving the model the server names (/v1/models root, /server_info model_path) the moment the server
    probe has it, so that a Hub lookup runs beside the other probes (gather waits for it, within --timeout)."""

    def seen(result: ProbeResult) -> None:
        if result.name == "server" and not offline.config and not offline.replay:
            from doctor.model.resolve import prefetch

            prefetch(result.facts.get("server.model_path"), offline=offline.offline)

    return seen


def _probe_target(opts: CheckOptions) -> tuple[Target, ProbeOptions]:
    from doctor.probes.base import ProbeOptions, Target, api_key_from_env

    assert opts.endpoint is not None
    target = Target.parse(opts.endpoint)
    api_key = api_key_from_env(opts.api_key_env) if opts.api_key_env else None
    return target, ProbeOptions(timeout_s=opts.timeout_s, api_key=api_key, sample_s=opts.sample_s, pid=opts.pid)


def _probe(opts: CheckOptions, symptoms: tuple[str, ...], early: PendingProbes | None = None,
           ) -> tuple[Target | None, list[ProbeResult], dict[str, Any]]:
    from doctor.probes.runner import run_probes

    if opts.snapshot and opts.endpoint:
        raise InputError("--snapshot replays a recorded run: give it or --endpoint, not both")
    if opts.snapshot:
        from doctor.probes import active
        from doctor.sources.snapshot import read_snapshot, replay, snapshot_target

        snap = read_snapshot(opts.snapshot)
        # Active probes are opt-in, so the default probe registry does not list them: replay them here.
        recorded = {name: entry for name, entry in snap["probes"].items() if active.is_active(name)}
        passive = {**snap, "probes": {k: v for k, v in snap["probes"].items() if k not in recorded}}
        return snapshot_target(snap), replay(passive) + active.replay(recorded), snap.get("extra", {})
    if not opts.endpoint:
        return None, [], {}
    target, probe_opts = _probe_target(opts)
    names = list(opts.probes) if opts.probes else None
    if HUNG in symptoms:
        from doctor.probes.runner import DEFAULT

        probe_opts = replace(probe_opts, sample_s=max(opts.sample_s, HUNG_SAMPLE_S))
        names = [*(names or DEFAULT), "liveness"]
    results = early.results() if early is not None else run_probes(target, probe_opts, names=names,
                                                                   on_result=_served_model_seen(opts.offline))
    if opts.active:
        results += active_results(target, probe_opts, results, opts.offline, model=opts.model, symptoms=symptoms,
                                  timeout_s=opts.active_timeout_s)
    return target, results, {}


def active_results(target: Target, probe_opts: ProbeOptions, passive: list[ProbeResult], offline: OfflineInputs, *,
                   model: str | None, symptoms: tuple[str, ...] = (), timeout_s: float | None = None
                   ) -> list[ProbeResult]:
    """The opt-in active probes, after the passive ones told which model is served and what its family expects
    (none when the target could not be examined: a dead server would cost a timeout per request)."""
    if unreachable_reason(passive):
        return []
    from doctor.derive import derive
    from doctor.probes.active import ActiveContext, run_active, served_models
    from doctor.sources.offline import gather

    live = Facts()
    for result in passive:
        live.update(result.facts)
    facts = derive(gather(offline, live=live).facts, ("expect.*",))  # what the model's family expects
    ctx = ActiveContext.from_facts(facts, model=model, served=served_models(passive), symptoms=symptoms)
    return run_active(target, replace(probe_opts, timeout_s=timeout_s or probe_opts.timeout_s), ctx)


def _with_snapshot_inputs(offline: OfflineInputs, extra: dict[str, Any]) -> OfflineInputs:
    """A snapshot carries the offline inputs it was taken with; the command line overrides them."""
    recorded = extra.get("inputs") or {}
    if not recorded:
        return replace(offline, replay=True)
    from doctor.sources.offline import Workload

    config_json = recorded.get("config_json")
    workload = offline.workload
    recorded_workload = recorded.get("workload") or {}
    if workload == Workload() and recorded_workload:
        workload = Workload(**{k: v for k, v in recorded_workload.items() if k in Workload.__dataclass_fields__})
    return replace(
        offline,
        command=offline.command if offline.command is not None else recorded.get("command"),
        engine_version=offline.engine_version or recorded.get("engine_version"),
        config_json=offline.config_json if offline.config else config_json,
        # A snapshot comes from someone else's machine: its config is the content it carries, never a name
        # looked up here (a Hub request with this user's token, a path like ../../etc/passwd on this disk).
        config=offline.config or (recorded.get("config_name") or "config.json (recorded)" if config_json else None),
        generation_config_json=None if offline.config else recorded.get("generation_config_json"),
        replay=True,
        offline=offline.offline or not offline.config,
        gpu=offline.gpu or recorded.get("gpu"),
        gpu_mem=offline.gpu_mem or recorded.get("gpu_mem"),
        workload=workload,
        log_excerpt=offline.log_excerpt if offline.log_excerpt is not None else recorded.get("log"),
    )


def with_log_read(offline: OfflineInputs) -> OfflineInputs:
    """``--log`` read once per run: every later gather (the active probes' context, the served-model lookup,
    the diagnosis) parses the redacted excerpt it gave — the same facts by design (doctor.logs.source) — so
    ``--log -`` is not consumed by the first gather and a large log is not read three times."""
    if not offline.log and not offline.client_output:
        return offline
    from doctor.logs.source import read_log_input

    return replace(offline, log=None, client_output=None, log_excerpt=read_log_input(
        offline.log, offline.log_signatures, offline.client_output).excerpt)


def snapshot_inputs(offline: OfflineInputs) -> dict[str, Any]:
    """What `llmdoctor snapshot` records of the offline inputs, so a replay anywhere finds the same facts."""
    from doctor.hardware.spec import UnknownGpu
    from doctor.model.resolve import resolve_model
    from doctor.sources.offline import command_facts, gpu_facts_for, model_facts_for

    # Check every input now: a snapshot that cannot be replayed is worse than no snapshot.
    if offline.command is not None:
        command_facts(offline.command, offline.engine_version)
    if offline.gpu:
        with suppress(UnknownGpu):  # replays as it runs now: with the GPU facts unknown
            gpu_facts_for(offline.gpu, offline.gpu_mem)
    inputs: dict[str, Any] = {"command": offline.command, "engine_version": offline.engine_version,
                              "gpu": offline.gpu, "gpu_mem": offline.gpu_mem, "workload": vars(offline.workload)}
    if offline.config:
        resolved = resolve_model(offline.config, offline=offline.offline)
        loaded = resolved.config
        model_facts_for(str(loaded.path or offline.config), kv_cache_dtype=None, engine=None, raw=loaded.raw)
        inputs["config_json"], inputs["config_name"] = loaded.raw, loaded.name
        if resolved.generation is not None:
            inputs["generation_config_json"] = resolved.generation
    if offline.log_excerpt is not None:  # the redacted lines that gave facts (with_log_read), not the log
        inputs["log"] = offline.log_excerpt
    return inputs


def served_model_inputs(results: list[ProbeResult], offline: OfflineInputs) -> dict[str, Any]:
    """The served model's config.json and generation_config.json, as this run finds them from the launch
    command's model, for a snapshot: a replay elsewhere (or after the model moved, or where another model now
    sits at that path) must see the files this run saw. Empty when the user named --config (recorded already)
    or the served model's config cannot be found."""
    if offline.config:
        return {}
    from doctor.model.resolve import resolve_model
    from doctor.sources.offline import _config_from_launch, gather

    live = Facts()
    for result in results:
        live.update(result.facts)
    spec = _config_from_launch(gather(offline, live=live).facts)
    if not spec:
        return {}
    try:
        resolved = resolve_model(str(spec), offline=offline.offline)
    except InputError:
        return {}
    inputs: dict[str, Any] = {"config_json": resolved.config.raw, "config_name": str(spec), "config_served": True}
    if resolved.generation is not None:
        inputs["generation_config_json"] = resolved.generation
    return inputs
