"""``--targets FILE``: the instances worth a live look, and what Prometheus cannot know about them.

Prometheus holds the history, but not the launch flags, the model or the GPUs' names; a targets file names
instances (as Prometheus labels them) with an endpoint to probe live and optional hints, so the trees that
need configuration can run for them too::

    targets:
      - instance: 10.0.0.4:30000            # the `instance` label in Prometheus
        endpoint: http://10.0.0.4:30000     # optional: default http://<instance>
        command: "python -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B --tp 8 --enable-dp-attention"
        config: Qwen/Qwen3-235B-A22B        # a path, a directory, or a repo id in the local HF cache
        gpu: H200:8
        engine_version: 0.5.23

A reachable endpoint is probed exactly as ``check`` probes it (doctor.probes.runner.run_probes: /server_info,
/v1/models, /version, /metrics); an unreachable one is a note in the report, never a failure of the run.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from doctor.errors import InputError
from doctor.facts import Facts

#: Only the remote probes: the process and GPU probes read the machine llmdoctor runs on, not the target's.
LIVE_PROBES = ("server", "metrics")
_KEYS = ("instance", "endpoint", "command", "config", "gpu", "engine_version")
_HINTS = ("command", "config", "gpu", "engine_version")
MAX_PARALLEL = 8


@dataclass(frozen=True)
class TargetSpec:
    instance: str
    endpoint: str | None = None
    command: str | None = None
    config: str | None = None
    gpu: str | None = None
    engine_version: str | None = None

    @property
    def has_hints(self) -> bool:
        return any(getattr(self, key) for key in _HINTS)


@dataclass
class LiveResult:
    """What the live look at one target gave: facts, and a one-line note when something failed."""

    facts: Facts
    note: str | None = None


def load_targets(path: str) -> list[TargetSpec]:
    """Read and check a targets file (YAML or JSON); every problem names the file, line and key."""
    from doctor.yamlsafe import line_of, load_yaml

    try:
        raw = Path(path).expanduser().read_bytes()
    except FileNotFoundError:
        raise InputError(f"--targets {path}: no such file") from None
    except OSError as exc:
        raise InputError(f"--targets {path}: cannot read: {exc.strerror or exc}") from None
    data, node = load_yaml(raw, path)
    items = data.get("targets") if isinstance(data, dict) else data
    where_root: list[Any] = ["targets"] if isinstance(data, dict) else []
    if not isinstance(items, list) or not items:
        raise InputError(f"{path}: targets: expected a list of {{instance: HOST:PORT, ...}} entries")
    specs: list[TargetSpec] = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        where = f"{path}:{line_of(node, [*where_root, index])}: targets[{index}]"
        if not isinstance(item, dict):
            raise InputError(f"{where}: expected a mapping with an 'instance' key")
        unknown = [k for k in item if k not in _KEYS]
        if unknown:
            raise InputError(f"{where}.{unknown[0]}: unknown key (known: {', '.join(_KEYS)})")
        values: dict[str, str] = {}
        for key in _KEYS:
            value = item.get(key)
            if value is None:
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool) and key == "engine_version":
                value = str(value)
            if not isinstance(value, str) or not value.strip():
                raise InputError(f"{where}.{key}: expected a non-empty string")
            values[key] = value.strip()
        if "instance" not in values:
            raise InputError(f"{where}.instance: missing (the instance label Prometheus gives this server)")
        if values["instance"] in seen:
            raise InputError(f"{where}.instance: {values['instance']} is listed twice")
        seen.add(values["instance"])
        spec = TargetSpec(**values)
        _endpoint(spec, where)  # a bad endpoint is bad input, found before any query is sent
        specs.append(spec)
    return specs


def _endpoint(spec: TargetSpec, where: str) -> Any:
    from doctor.probes.base import Target

    return Target.parse(spec.endpoint or spec.instance, flag=f"{where}.endpoint")


def look(specs: list[TargetSpec], *, timeout_s: float) -> dict[str, LiveResult]:
    """Probe every target (side by side) and add its hints; one result per instance."""
    if not specs:
        return {}
    with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(specs)), thread_name_prefix="target") as pool:
        results = list(pool.map(lambda s: _look_one(s, timeout_s), specs))
    return {spec.instance: result for spec, result in zip(specs, results, strict=True)}


def _look_one(spec: TargetSpec, timeout_s: float) -> LiveResult:
    from doctor.probes.base import ProbeOptions
    from doctor.probes.runner import run_probes

    target = _endpoint(spec, spec.instance)
    facts = Facts()
    failed = []
    for result in run_probes(target, ProbeOptions(timeout_s=timeout_s), LIVE_PROBES):
        facts.update(result.facts)
        if not result.ok:
            failed.append(f"{result.name}: {result.error}")
    note = None
    if len(failed) == len(LIVE_PROBES):
        note = f"live check of {target.display()} failed ({'; '.join(failed)}): history only"
    if spec.has_hints:
        facts, hint_note = _with_hints(spec, facts)
        note = "; ".join(n for n in (note, hint_note) if n) or None
    return LiveResult(facts, note)


def _with_hints(spec: TargetSpec, live: Facts) -> tuple[Facts, str | None]:
    """The command/config/GPU hints as facts, through the offline sources ``check`` uses.

    SEAM: doctor.sources (the lead's offline sources: ``gather(OfflineInputs, live)``) is not in this branch's
    main yet. Until it is merged the hints are reported as unused rather than parsed a second way here.
    """
    try:
        from doctor.sources import OfflineInputs, gather  # type: ignore[import-not-found]
    except ImportError:
        return live, (f"hints for {spec.instance} not used: this build has no doctor.sources "
                      "(command/config/gpu parsing)")
    inputs = OfflineInputs(command=spec.command, engine_version=spec.engine_version, config=spec.config,
                           gpu=spec.gpu)
    try:
        return gather(inputs, live).facts, None
    except InputError as exc:
        return live, f"hints for {spec.instance}: {exc}"
