"""`check --targets FILE`: many endpoints at once, each checked like `check --endpoint`, in a bounded pool.

A fleet check must finish in about one timeout even when some servers never answer: targets run
concurrently (a pool much wider than the usual number of dead hosts), each bounded by its own timeout, and
only the HTTP probes run (the process and NVML probes describe *this* host, not the targets). Results keep
facts and findings only (no raw answers, no "could not check" lists), so memory stays flat however many
targets there are.

Past PROCESS_FROM targets the fleet is dealt out to one worker process per CPU, each with its own pool: a
target costs ~3.5 ms of CPU (four GETs, parsing its /metrics, running the playbooks), so one interpreter would
cap a 10,000-target check at one core (bench/bench_fleet.py). Targets are dealt round-robin, so hung ones
spread over the workers, and the results come back in the file's order. Per target, the pool thread runs one
probe itself and starts one thread for the other, and every request's deadline sits on the process's one
watchdog thread (doctor/probes/http.py): no thread is started per request.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from doctor.errors import DoctorError, InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.commands.check import CheckRun

SCHEMA = "llmdoctor.fleet/1"
MAX_TARGETS = 10_000
MAX_WORKERS = 64
#: From this many targets the check runs in one worker process per CPU (below it, starting them costs more).
PROCESS_FROM = 500
#: Results a worker process sends back at once (its pool stays full meanwhile).
CHUNK = 256
FLEET_PROBES = ("server", "metrics")
_TARGET_KEYS = {"name", "endpoint", "api_key_env", "gpu", "config", "command", "engine_version", "log", "manifest"}


@dataclass(frozen=True)
class TargetSpec:
    endpoint: str
    name: str
    api_key_env: str | None = None
    gpu: str | None = None
    config: str | None = None
    command: str | None = None
    engine_version: str | None = None
    #: the server's log file (a relative path is relative to the targets file)
    log: str | None = None
    #: a Kubernetes manifest (doctor/sources/manifest.py) for the command and GPUs the entry does not give (relative to
    #: the targets file, as log is)
    manifest: str | None = None

    @property
    def shown(self) -> str:
        """The endpoint as printed: a password in the URL (http://user:pw@host) masked."""
        from doctor.redact import redact_text

        return redact_text(self.endpoint)


@dataclass
class TargetResult:
    spec: TargetSpec
    run: CheckRun | None = None
    error: str | None = None  # a per-target input problem (bad endpoint, unknown GPU, missing env var)

    @property
    def reachable(self) -> bool:
        return self.run is not None and self.run.unreachable is None

    @property
    def notes(self) -> list[str]:
        """What the check says of this target's inputs (a command it could not read): shown on its row, since the
        server was still checked and the row would otherwise not say that the command's flags were not."""
        return list(self.run.gathered.notes) if self.run is not None else []

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.spec.name, "endpoint": self.spec.shown, "error": self.error,
                               "notes": self.notes}
        if self.run is not None:
            doc = self.run.to_dict()
            out.update(reachable=self.reachable, unreachable=self.run.unreachable,
                       **{k: doc[k] for k in ("engine", "engine_version", "model", "elapsed_ms", "probes",
                                              "findings")})
        else:
            out.update(reachable=False, findings=[])
        return out


@dataclass
class FleetRun:
    results: list[TargetResult] = field(default_factory=list)

    def findings(self) -> list[Any]:
        return [f for r in self.results if r.run is not None for f in r.run.diagnosis.findings]

    def to_dict(self) -> dict[str, Any]:
        reachable = sum(r.reachable for r in self.results)
        return {"schema": SCHEMA, "summary": {"targets": len(self.results), "reachable": reachable,
                                              "findings": len(self.findings())},
                "targets": [r.to_dict() for r in self.results]}


def load_targets(path: str) -> list[TargetSpec]:
    """A YAML or JSON list of endpoints (strings or objects), or ``{targets: [...]}``; errors name file and index."""
    from doctor.redact import redact_text
    from doctor.sources.offline import read_text
    from doctor.yamlsafe import MAX_YAML_BYTES, load_yaml

    data, _node = load_yaml(read_text(path, "--targets", limit=MAX_YAML_BYTES), path)
    items = data.get("targets") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: expected a list of targets (or targets: [...])")
    if len(items) > MAX_TARGETS:
        raise InputError(f"{path}: {len(items)} targets is more than {MAX_TARGETS}")
    specs: list[TargetSpec] = []
    for index, item in enumerate(items):
        where = f"{path}: targets[{index}]"
        if isinstance(item, str):
            item = {"endpoint": item}
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected an endpoint string or an object")
        unknown = set(item) - _TARGET_KEYS
        if unknown:
            raise InputError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} "
                             f"(known: {', '.join(sorted(_TARGET_KEYS))})")
        if "api_key" in item or "key" in item:
            raise InputError(f"{where}: put the key in an environment variable and name it with api_key_env")
        endpoint = item.get("endpoint")
        if not isinstance(endpoint, str) or not endpoint.strip():
            raise InputError(f"{where}: endpoint: missing")
        values = {k: (str(v) if v is not None else None) for k, v in item.items()}
        _check_numbers(where, endpoint.strip(), values.get("gpu"))
        for key in ("log", "manifest"):
            if values.get(key):
                values[key] = str(Path(path).expanduser().parent / Path(values[key]).expanduser())
                _refuse_special(f"{where}: {key}: {item[key]}", values[key])
        specs.append(TargetSpec(**{**values, "endpoint": endpoint.strip(),
                                   "name": str(item.get("name") or redact_text(endpoint.strip()))}))
    return specs


def _check_numbers(where: str, endpoint: str, gpu: str | None) -> None:
    """The entry's port and GPU count read as --endpoint and --gpu read them, refused when the file is read
    (exit 2, naming the entry), not as one target's "input error" after the others were checked."""
    from doctor.hardware.spec import UnknownGpu, parse_gpu_spec
    from doctor.probes.base import Target

    Target.parse(endpoint, flag=f"{where}: endpoint")
    if gpu:
        try:
            parse_gpu_spec(gpu)
        except UnknownGpu:
            pass  # checked as --gpu is: with the GPU facts unknown
        except InputError as exc:
            raise InputError(f"{where}: gpu: {str(exc).removeprefix('--gpu: ')}") from None


def _refuse_special(label: str, file: str) -> None:
    """A target's log or manifest is a file: a device or a FIFO there (``log: /dev/zero``) is refused when the
    targets file is read, before any target is checked, not found per target after its --timeout."""
    from doctor.inio import not_a_file

    special = not_a_file(file, fifo=True)
    if special:
        raise InputError(f"{label}: {special}, not a file")


def run_fleet(specs: Iterable[TargetSpec], *, timeout_s: float, symptoms: tuple[str, ...] = (),
              playbook_dirs: tuple[str, ...] = (), workers: int = MAX_WORKERS, processes: int | None = None
              ) -> FleetRun:
    """Every target checked, in the given order; ``processes`` defaults to one per CPU past PROCESS_FROM."""
    from doctor.playbook.loader import load_playbooks

    specs = list(specs)
    load_playbooks(playbook_dirs)  # a bad --playbooks fails once, before any network (and before any fork)
    if processes is None:
        processes = len(os.sched_getaffinity(0)) if len(specs) >= PROCESS_FROM else 1
    processes = max(1, min(processes, len(specs)))
    if processes == 1:
        return FleetRun(_run_pool(specs, timeout_s, symptoms, playbook_dirs, workers))
    from doctor.forkshare import deal_out

    # the workers inherit the loaded playbooks and imports instead of paying for them again; each checks its
    # share through one pool that stays full for its whole share and hands results back CHUNK at a time as they
    # complete: no barrier per batch, where one hung target would hold the other 255 of its batch for its whole
    # timeout
    def work(share: list[TargetSpec], send: Any) -> None:
        batch: list[tuple[int, TargetResult]] = []
        with ThreadPoolExecutor(max_workers=max(1, min(workers, len(share)))) as pool:
            for offset, result in enumerate(pool.map(lambda s: _checked(s, timeout_s, symptoms, playbook_dirs),
                                                     share)):
                batch.append((offset, result))
                if len(batch) >= CHUNK:
                    send(batch)
                    batch = []
        if batch:
            send(batch)

    return FleetRun(deal_out(specs, processes, work, "fleet"))


def _checked(spec: TargetSpec, timeout_s: float, symptoms: tuple[str, ...], playbook_dirs: tuple[str, ...]
             ) -> TargetResult:
    return _compact(check_target(spec, timeout_s, symptoms, playbook_dirs, unchecked=False))


def _run_pool(specs: list[TargetSpec], timeout_s: float, symptoms: tuple[str, ...], playbook_dirs: tuple[str, ...],
              workers: int) -> list[TargetResult]:
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(specs)))) as pool:
        return list(pool.map(lambda s: _checked(s, timeout_s, symptoms, playbook_dirs), specs))


def _compact(result: TargetResult) -> TargetResult:
    """What a fleet keeps of one target: its facts and findings; the probes' raw answers (most of a result's
    size) are dropped, as no fleet output reads them (nor the "could not check" lists, not collected)."""
    if result.run is None:
        return result
    run = result.run
    from doctor.facts import Facts

    return replace(result, run=replace(run, probes=[replace(p, raw={}, facts=Facts()) for p in run.probes]))


def check_target(spec: TargetSpec, timeout_s: float, symptoms: tuple[str, ...], playbook_dirs: tuple[str, ...],
                 unchecked: bool = True) -> TargetResult:
    """One target, as ``check --endpoint`` with its hints would see it (also what ``serve`` runs per alert);
    ``unchecked=False``: findings only (a fleet's outputs show no "could not check" lines)."""
    from doctor.commands.check import CheckOptions, run_check
    from doctor.sources.offline import OfflineInputs

    try:
        command, gpu = spec.command, spec.gpu
        if spec.manifest:
            from doctor.sources.manifest import read_manifest

            launch = read_manifest(spec.manifest, "manifest")
            command, gpu = command or launch.command, gpu or launch.gpu
        # every target has an endpoint: a command naming no launch llmdoctor reads is said, the server still checked
        offline = OfflineInputs(command=command, engine_version=spec.engine_version, config=spec.config, gpu=gpu,
                                log=spec.log, command_optional=True)
        run = run_check(CheckOptions(endpoint=spec.endpoint, api_key_env=spec.api_key_env, timeout_s=timeout_s,
                                     offline=offline, symptoms=symptoms, playbook_dirs=playbook_dirs,
                                     probes=FLEET_PROBES, unchecked=unchecked, inline_probe=True))
    except DoctorError as exc:
        return TargetResult(spec, error=str(exc))
    return TargetResult(spec, run)
