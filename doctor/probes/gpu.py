"""The GPU probe: what each GPU is, how full and how busy it is, and whether it is healthy.

Two readers feed one seam (:class:`GpuReading`): live NVML through ``pynvml`` (package nvidia-ml-py), and
offline nvidia-smi output a user hands over (``--nvidia-smi FILE``: ``-q -x`` XML, ``--query-gpu`` CSV, the
default table, ``topo -m``; parsers in :mod:`doctor.probes.nvidia_smi`). :func:`gpu_probe_facts` turns
readings into ``gpu.*`` facts, all ``observed``, with catalog properties (FP8/NVFP4 support, class,
kernel gating) looked up from the reported name.

Never raises on a machine without a driver or GPU: that is an error fact ("NVML unavailable: …"), after
which ``check`` takes the GPU from ``--gpu`` or from the server's own report.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from doctor.facts import Facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NVML_SOURCE = "nvml"
#: The longest a sampling run waits for NVML Xid events (bounded: the run's budget includes it).
XID_WAIT_S = 2.0


@dataclass
class GpuProcess:
    """A process holding memory on a GPU (``gpu_instance``: the MIG GPU instance, when MIG is on)."""

    pid: int
    name: str | None = None
    used_bytes: int | None = None
    gpu_instance: int | None = None


@dataclass
class GpuReading:
    """One physical GPU as a reader saw it. None means "not reported", never zero."""

    index: int
    name: str
    uuid: str | None = None
    bus_id: str | None = None
    sm: int | None = None
    memory_total: int | None = None
    memory_used: int | None = None
    util: float | None = None
    mig: bool | None = None
    mig_devices: int | None = None
    ecc_uncorrected: int | None = None
    remap_pending: bool | None = None
    remap_failure: bool | None = None
    remap_uncorrectable: int | None = None  # rows remapped after uncorrectable errors (a count, -q text)
    retire_pending: bool | None = None
    retired_pages: int | None = None  # pages retired after single- and double-bit errors (pre-Ampere)
    power_w: float | None = None
    power_limit_w: float | None = None
    # health (doctor/hardware/gpu_health.py): None = not reported
    temp_c: float | None = None
    temp_slowdown_c: float | None = None
    temp_shutdown_c: float | None = None
    temp_max_operating_c: float | None = None  # where software thermal slowdown holds the GPU (T.Limit)
    clocks_event_reasons: list[str] | None = None  # active reason names (gpu_health.REASONS)
    sm_clock_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    pcie_gen: int | None = None
    pcie_gen_max: int | None = None
    pcie_width: int | None = None
    pcie_width_max: int | None = None
    pcie_replays: int | None = None
    nvlink_down: list[int] | None = None  # links inactive while others of this GPU are active
    nvlink_errors: int | None = None  # replay + recovery + CRC errors over all links
    persistence: bool | None = None
    recovery_action: str | None = None  # the driver's "GPU Recovery Action" (R550+): None, Reset, Reboot, ...
    lost: str | None = None  # why nvidia-smi could not open the GPU ("GPU is lost", "Unknown Error"): no reading
    xid_events: list[dict[str, Any]] = field(default_factory=list)  # seen during the probe's event wait
    links: dict[int, str] = field(default_factory=dict)
    processes: list[GpuProcess] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GpuReading:
        data = dict(data)
        data["processes"] = [GpuProcess(**p) for p in data.get("processes") or ()]
        data["links"] = {int(k): v for k, v in (data.get("links") or {}).items()}
        return cls(**data)


@dataclass
class ProbeOutput:
    """What one reader returned: readings, or the one-line reason there are none."""

    source: str
    readings: list[GpuReading] = field(default_factory=list)
    driver: str | None = None
    error: str | None = None
    elapsed_ms: float = 0.0

    def to_raw(self) -> dict[str, Any]:
        """JSON-able, for snapshots; :meth:`from_raw` restores it so a replay gives the same facts."""
        return {"source": self.source, "driver": self.driver, "error": self.error,
                "elapsed_ms": self.elapsed_ms, "readings": [asdict(r) for r in self.readings]}

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> ProbeOutput:
        return cls(source=str(raw.get("source", NVML_SOURCE)), driver=raw.get("driver"), error=raw.get("error"),
                   elapsed_ms=float(raw.get("elapsed_ms") or 0.0),
                   readings=[GpuReading.from_dict(r) for r in raw.get("readings") or ()])


# ------------------------------------------------------------------------------------------ live NVML
def read_nvml(timeout_s: float = 2.0, *, nvml: Any = None, xid_wait_s: float = 0.0) -> ProbeOutput:
    """Read every GPU through NVML within ``timeout_s`` (a wedged driver can hang nvmlInit forever).

    ``nvml`` is the pynvml module (imported here, lazily, when None): the seam tests use to exercise the
    error and timeout paths without a driver. ``xid_wait_s`` > 0 also waits that long for Xid events (a run
    that samples over time: --sample, --symptom hung).
    """
    started = time.perf_counter()
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            module = nvml
            if module is None:
                absent = _no_driver()
                if absent:  # skips importing pynvml (~50 ms) where it cannot work
                    box["error"] = f"NVML unavailable: {absent}"
                    return
                import pynvml as module  # lazy: nvidia-ml-py is only needed when a live GPU is read
            box["out"] = _read_nvml_blocking(module, int(xid_wait_s * 1000))
        except Exception as exc:  # noqa: BLE001 - any NVML failure is a fact, never a crash
            box["error"] = f"NVML unavailable: {_one_line(exc)}"

    worker = threading.Thread(target=work, name="llmdoctor-nvml", daemon=True)
    worker.start()
    worker.join(timeout_s + xid_wait_s)
    elapsed = (time.perf_counter() - started) * 1000
    if worker.is_alive():
        return ProbeOutput(NVML_SOURCE, error=f"NVML did not answer within {timeout_s:g}s", elapsed_ms=elapsed)
    if "error" in box:
        return ProbeOutput(NVML_SOURCE, error=box["error"], elapsed_ms=elapsed)
    out: ProbeOutput = box["out"]
    out.elapsed_ms = elapsed
    return out


def _no_driver() -> str | None:
    """On Linux the NVIDIA driver shows as /proc/driver/nvidia (and /dev/nvidiactl, also inside containers given
    GPUs); without either NVML cannot load. None elsewhere (other systems answer through nvmlInit)."""
    import sys

    if not sys.platform.startswith("linux"):
        return None
    if Path("/proc/driver/nvidia").exists() or Path("/dev/nvidiactl").exists():
        return None
    return "no NVIDIA driver on this host (neither /proc/driver/nvidia nor /dev/nvidiactl exists)"


def _read_nvml_blocking(nvml: Any, xid_wait_ms: int = 0) -> ProbeOutput:
    nvml.nvmlInit()
    try:
        driver = _text(_try(nvml.nvmlSystemGetDriverVersion))
        readings = [_read_device(nvml, i) for i in range(nvml.nvmlDeviceGetCount())]
        if xid_wait_ms > 0:
            _wait_xid(nvml, readings, xid_wait_ms)
    finally:
        _try(nvml.nvmlShutdown)
    return ProbeOutput(NVML_SOURCE, readings=readings, driver=driver)


def _read_device(nvml: Any, index: int) -> GpuReading:
    handle = nvml.nvmlDeviceGetHandleByIndex(index)
    reading = GpuReading(index=index, name=_text(nvml.nvmlDeviceGetName(handle)) or f"GPU {index}")
    reading.uuid = _text(_try(nvml.nvmlDeviceGetUUID, handle))
    pci = _try(nvml.nvmlDeviceGetPciInfo, handle)
    reading.bus_id = _text(getattr(pci, "busId", None))
    cc = _try(nvml.nvmlDeviceGetCudaComputeCapability, handle)
    if cc:
        reading.sm = int(cc[0]) * 10 + int(cc[1])
    memory = _try(nvml.nvmlDeviceGetMemoryInfo, handle)  # NotSupported on GB10's unified memory
    if memory is not None:
        reading.memory_total, reading.memory_used = int(memory.total), int(memory.used)
    util = _try(nvml.nvmlDeviceGetUtilizationRates, handle)  # NotSupported while MIG is on
    if util is not None:
        reading.util = float(util.gpu) / 100
    mig = _try(nvml.nvmlDeviceGetMigMode, handle)
    if mig is not None:
        reading.mig = mig[0] == nvml.NVML_DEVICE_MIG_ENABLE
        if reading.mig:
            reading.mig_devices = _count_mig_devices(nvml, handle)
    reading.ecc_uncorrected = _try(nvml.nvmlDeviceGetTotalEccErrors, handle,
                                   nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC)
    remap = _try(nvml.nvmlDeviceGetRemappedRows, handle)
    if remap is not None:
        reading.remap_pending, reading.remap_failure = bool(remap[2]), bool(remap[3])
    power = _try(nvml.nvmlDeviceGetPowerUsage, handle)
    limit = _try(nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
    reading.power_w = power / 1000 if power is not None else None
    reading.power_limit_w = limit / 1000 if limit is not None else None
    _read_health(nvml, handle, reading)
    for proc in _try(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or ():
        used = getattr(proc, "usedGpuMemory", None)
        gi = getattr(proc, "gpuInstanceId", None)
        reading.processes.append(GpuProcess(
            pid=int(proc.pid), name=_text(_try(nvml.nvmlSystemGetProcessName, proc.pid)),
            used_bytes=int(used) if isinstance(used, int) and used < 2**63 else None,
            gpu_instance=gi if reading.mig and isinstance(gi, int) and gi < 2**31 else None))
    return reading


def _read_health(nvml: Any, handle: Any, reading: GpuReading) -> None:
    """Temperatures and thresholds, clocks-event reasons, clocks, PCIe link, NVLink links, persistence mode: each an
    optional query, None where this pynvml or driver lacks it (tools/capture_nvml.py reads the same calls on a
    real GPU into a fixture)."""
    from doctor.hardware.gpu_health import reasons_from_mask

    def query(name: str, *consts: str, link: int | None = None) -> Any:
        fn = getattr(nvml, name, None)
        values = [getattr(nvml, c, None) for c in consts]
        if fn is None or any(v is None for v in values):
            return None
        return _try(fn, handle, *([] if link is None else [link]), *values)

    reading.temp_c = query("nvmlDeviceGetTemperature", "NVML_TEMPERATURE_GPU")
    reading.temp_slowdown_c = query("nvmlDeviceGetTemperatureThreshold", "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN")
    reading.temp_shutdown_c = query("nvmlDeviceGetTemperatureThreshold", "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN")
    reading.temp_max_operating_c = query("nvmlDeviceGetTemperatureThreshold", "NVML_TEMPERATURE_THRESHOLD_GPU_MAX")
    mask = query("nvmlDeviceGetCurrentClocksEventReasons")  # renamed from …ThrottleReasons in R535
    mask = query("nvmlDeviceGetCurrentClocksThrottleReasons") if mask is None else mask
    reading.clocks_event_reasons = reasons_from_mask(int(mask)) if mask is not None else None
    reading.sm_clock_mhz = query("nvmlDeviceGetClockInfo", "NVML_CLOCK_SM")
    reading.sm_clock_max_mhz = query("nvmlDeviceGetMaxClockInfo", "NVML_CLOCK_SM")
    reading.pcie_gen = query("nvmlDeviceGetCurrPcieLinkGeneration")
    reading.pcie_gen_max = query("nvmlDeviceGetMaxPcieLinkGeneration")
    reading.pcie_width = query("nvmlDeviceGetCurrPcieLinkWidth")
    reading.pcie_width_max = query("nvmlDeviceGetMaxPcieLinkWidth")
    reading.pcie_replays = query("nvmlDeviceGetPcieReplayCounter")
    persistence = query("nvmlDeviceGetPersistenceMode")
    reading.persistence = None if persistence is None else persistence == getattr(nvml, "NVML_FEATURE_ENABLED", 1)
    states: dict[int, bool] = {}
    errors = 0
    for link in range(int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))):
        state = query("nvmlDeviceGetNvLinkState", link=link)
        if state is None:  # no such link (or no NVLink at all)
            continue
        states[link] = state == getattr(nvml, "NVML_FEATURE_ENABLED", 1)
        for counter in ("NVML_NVLINK_ERROR_DL_REPLAY", "NVML_NVLINK_ERROR_DL_RECOVERY", "NVML_NVLINK_ERROR_DL_CRC_FLIT"):
            errors += query("nvmlDeviceGetNvLinkErrorCounter", counter, link=link) or 0
    if any(states.values()):
        reading.nvlink_down = [link for link, up in states.items() if not up]
        reading.nvlink_errors = errors


def _wait_xid(nvml: Any, readings: list[GpuReading], wait_ms: int) -> None:
    """Xid events NVML delivers within ``wait_ms`` (NVML reports only events that happen while registered: the
    kernel log holds the past ones)."""
    from doctor.hardware.xid import event

    create = getattr(nvml, "nvmlEventSetCreate", None)
    events = _try(create) if create else None
    if events is None:
        return
    try:
        handles = {}
        for reading in readings:
            handle = nvml.nvmlDeviceGetHandleByIndex(reading.index)
            _try(nvml.nvmlDeviceRegisterEvents, handle, nvml.nvmlEventTypeXidCriticalError, events)
            handles[reading.uuid] = reading
        deadline = time.monotonic() + wait_ms / 1000
        while (left := deadline - time.monotonic()) > 0:
            data = _try(nvml.nvmlEventSetWait_v2, events, max(1, int(left * 1000)))
            if data is None:  # NVML_ERROR_TIMEOUT: nothing happened
                break
            uuid = _text(_try(nvml.nvmlDeviceGetUUID, data.device))
            target = handles.get(uuid) or readings[0]
            target.xid_events.append(event(int(data.eventData), target.bus_id or str(target.index),
                                           "NVML event (nvmlEventTypeXidCriticalError)"))
    finally:
        _try(nvml.nvmlEventSetFree, events)


def _count_mig_devices(nvml: Any, handle: Any) -> int | None:
    slots = _try(nvml.nvmlDeviceGetMaxMigDeviceCount, handle)
    if slots is None:
        return None
    return sum(_try(nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, i) is not None for i in range(slots))


def _try(fn: Any, *args: Any) -> Any:
    """One optional NVML query: unsupported or failing queries read as None (older drivers, MIG, GB10)."""
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - pynvml raises a distinct class per NVML return code
        return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


#: Probe name, and the facts namespace its errors are recorded under (doctor/probes/base.py contract).
NAME = "gpu"


def fetch(target: object, opts: object) -> dict[str, Any]:
    """Probe-runner entry (doctor/probes contract). NVML reads the GPUs of the host llmdoctor runs on, so for a
    remote endpoint it would describe the wrong machine: then it reports why instead (pass --gpu for those)."""
    from doctor.probes.base import not_this_host

    host = getattr(target, "host", None)
    elsewhere = not_this_host(host) if isinstance(host, str) else None
    if elsewhere is not None:
        return ProbeOutput(NVML_SOURCE, error=f"{elsewhere}: the GPUs here are not its GPUs (pass --gpu "
                           "NAME:COUNT, or run llmdoctor on the server's host)").to_raw()
    sample_s = float(getattr(opts, "sample_s", 0.0) or 0.0)
    return read_nvml(float(getattr(opts, "timeout_s", 2.0)), xid_wait_s=min(sample_s, XID_WAIT_S)).to_raw()


def interpret(raw: dict[str, Any]) -> Facts:
    """Probe-runner entry: facts from a raw reading (live or replayed from a snapshot)."""
    return nvml_facts(ProbeOutput.from_raw(raw))


# ------------------------------------------------------------------------------------------ offline
def read_nvidia_smi(text: str, source: str) -> list[GpuReading]:
    """Readings from nvidia-smi output (XML, CSV, table, topo -m, or several pasted together).

    What could not be read is listed in each reading's ``problems``; InputError (naming ``source``)
    only when the text holds no GPU at all.
    """
    from doctor.probes.nvidia_smi import parse

    return parse(text, source)


# ------------------------------------------------------------------------------------------ facts
def gpu_probe_facts(readings: list[GpuReading], source: str) -> Facts:
    """``gpu.*`` facts from readings: observations as ``observed``, catalog properties from the name. GPUs
    nvidia-smi could not open are gpu.lost, not counted in gpu.count (a server cannot use them)."""
    from doctor.redact import redact_text

    facts = Facts()
    _set_lost(facts, readings, source)
    readings = [r for r in readings if r.lost is None]
    if not readings:
        if "gpu.lost" in facts:
            facts.set("gpu.count", 0, f"{source}: no GPU answers", observed=True)
        else:
            facts.error("gpu", f"{source}: no GPU found")
        return facts
    first = readings[0]
    if first.name:  # a -q -d subset or excerpt names no product: the catalog cannot be asked
        _set_name(facts, first, source)
    names = sorted({r.name for r in readings if r.name})
    if len(names) > 1:
        facts.set("gpu.models", names, f"{source} names", observed=True)
    facts.set("gpu.count", len(readings), f"{source} GPU count", observed=True)
    if first.sm is not None:
        facts.set("gpu.sm", first.sm, f"{source} compute capability", observed=True)
    _set_lists(facts, readings, source)
    _set_interconnect(facts, readings, source)
    facts.set("gpu.devices", [_device_summary(r) for r in readings], f"{source} per GPU", observed=True)
    processes = [dict(asdict(p), gpu=r.index, name=redact_text(p.name) if p.name else p.name)
                 for r in readings for p in r.processes]
    facts.set("gpu.processes", processes, f"{source} compute processes", observed=True)
    facts.set("gpu.health_issues", [issue for r in readings for issue in _health(r)], f"{source} health", observed=True)
    _fault_facts(facts, readings, source)
    problems = [p for r in readings for p in r.problems]
    if problems:
        facts.set("gpu.read_problems", problems, f"{source} parse", observed=True)
    return facts


def _set_name(facts: Facts, first: GpuReading, source: str) -> None:
    from doctor.hardware.catalog import lookup_gpu
    from doctor.hardware.spec import catalog_facts

    model = lookup_gpu(first.name)
    if model is not None:
        facts.update(catalog_facts(model))
        facts.set("gpu.name", model.name, f"{source} name {first.name!r} = gpu catalog {model.name}", observed=True)
        return
    facts.set("gpu.name", first.name, f"{source} name", observed=True)
    facts.set("gpu.known", False, f"{source} name {first.name!r} is not in the GPU catalog")
    facts.set("gpu.vendor", "nvidia", f"{source} (an NVIDIA tool)")
    facts.error("gpu", f"{first.name!r} is not in the GPU catalog: FP8/NVFP4 support and class unknown")


def _set_lost(facts: Facts, readings: list[GpuReading], source: str) -> None:
    """gpu.lost: the GPUs nvidia-smi could not open. "GPU is lost" is NVML's NVML_ERROR_GPU_IS_LOST (the GPU
    stopped answering on the bus: Xid 79); "Unknown Error" on a GPU the node has is the same state as far as a
    server is concerned. Either way the GPU is gone until the node reboots (NVIDIA's action for Xid 79)."""
    from doctor.hardware.xid import explain

    lost = [r for r in readings if r.lost is not None]
    if not lost:
        return
    action = explain(79)
    facts.set("gpu.lost", [{"gpu": r.bus_id, "reason": r.lost, "action": action["action"],
                            "action_text": action["action_text"]} for r in lost],
              f"{source}: Unable to determine the device handle", observed=True)


def nvml_facts(out: ProbeOutput) -> Facts:
    """Facts of one live read: the readings' facts, or the error fact when NVML could not be read."""
    if out.error is not None:
        facts = Facts()
        facts.error("gpu", out.error)
        return facts
    facts = gpu_probe_facts(out.readings, out.source)
    if out.driver:
        facts.set("gpu.driver_version", out.driver, out.source, observed=True)
    return facts


def _set_lists(facts: Facts, readings: list[GpuReading], source: str) -> None:
    totals = [r.memory_total for r in readings if r.memory_total is not None]
    if totals:
        facts.set("gpu.memory_bytes", min(totals), f"{source} memory.total (smallest GPU)", observed=True)
    if all(r.memory_used is not None for r in readings):
        facts.set("gpu.memory_used", [r.memory_used for r in readings], f"{source} memory.used", observed=True)
    else:
        facts.error("gpu.memory_used", f"{source}: memory used not reported for every GPU")
    mig = [r.mig for r in readings if r.mig is not None]
    if mig:
        facts.set("gpu.mig", any(mig), f"{source} MIG mode", observed=True)
    utils = [r.util for r in readings]
    if any(u is None for u in utils):
        why = "MIG mode is on: no whole-GPU utilization" if any(mig) else "utilization not reported"
        facts.error("gpu.util", f"{source}: {why}")
        return
    facts.set("gpu.util", utils, f"{source} utilization.gpu", observed=True)
    mean = sum(utils) / len(utils)
    # All idle is perfectly even, not infinitely skewed.
    skew = max(utils) / mean if mean > 0 else 1.0
    facts.set("gpu.util_skew", round(skew, 3), f"derived: max/mean of {source} utilization.gpu", observed=True)


def _set_interconnect(facts: Facts, readings: list[GpuReading], source: str) -> None:
    """``topo -m`` seen: NVLink between every pair of GPUs, or not (PCIe, or only bridged pairs)."""
    pairs = [(r.index, peer, kind) for r in readings for peer, kind in r.links.items() if peer != r.index]
    if len(readings) < 2 or not pairs:
        return
    nvlink = sum(kind.startswith("NV") for _, _, kind in pairs)
    value = "nvlink" if nvlink == len(pairs) else "pcie"
    facts.set("gpu.interconnect", value, f"{source} topo -m: {nvlink} of {len(pairs)} GPU pairs on NVLink",
              observed=True)


def _device_summary(r: GpuReading) -> dict[str, Any]:
    keys = ("index", "name", "bus_id", "sm", "memory_total", "memory_used", "util", "mig", "mig_devices",
            "ecc_uncorrected", "power_w", "power_limit_w")
    return {k: getattr(r, k) for k in keys}


#: gpu_health.faults kind -> the fact listing the GPUs with it (each set only where the readings report the field)
FAULT_FACTS = {"clocks": ("gpu.clocks_slowed", "clocks_event_reasons"), "hot": ("gpu.too_hot", "temp_c"),
               "pcie": ("gpu.pcie_degraded", "pcie_width"), "nvlink": ("gpu.nvlink_down", "nvlink_down"),
               "persistence": ("gpu.persistence_off", "persistence")}


def _fault_facts(facts: Facts, readings: list[GpuReading], source: str) -> None:
    """One list fact per health fault (doctor/hardware/gpu_health.py), empty when every GPU reporting the field
    is fine, unset when none reports it; the Xid events NVML delivered during the probe as gpu.xid_live."""
    from doctor.hardware.gpu_health import faults

    found = [faults(r) for r in readings]
    for kind, (key, attr) in FAULT_FACTS.items():
        if any(getattr(r, attr) is not None for r in readings):
            facts.set(key, [f[kind] for f in found if f[kind]], f"{source} {attr.replace('_', ' ')}", observed=True)
    events = [e for r in readings for e in r.xid_events]
    if source == NVML_SOURCE:
        facts.set("gpu.xid_live", events, f"{source} Xid event wait", observed=True)


def _health(r: GpuReading) -> list[str]:
    """XID-style trouble that is cheap to see: uncorrectable ECC errors, row remapping, page retirement, and the
    recovery the driver itself asks for. Each says its first action (the Xid catalog's buckets: Xid 48, 63/64)."""
    issues = []
    if r.ecc_uncorrected:
        issues.append(f"GPU {r.index}: {r.ecc_uncorrected} uncorrectable ECC errors since the driver loaded "
                      "(drain and reset the GPU)")
    if r.remap_failure:
        issues.append(f"GPU {r.index}: row remapping failed (the GPU needs service)")
    if r.remap_pending:
        rows = f", {r.remap_uncorrectable} row(s) after uncorrectable errors" if r.remap_uncorrectable else ""
        issues.append(f"GPU {r.index}: row remapping pending{rows} (reset the GPU to apply it)")
    if r.retire_pending:
        count = f", {r.retired_pages} page(s) retired so far" if r.retired_pages else ""
        issues.append(f"GPU {r.index}: page retirement pending{count} (reset the GPU to apply it)")
    if r.recovery_action and r.recovery_action.strip().lower() not in ("none", "no"):
        issues.append(f"GPU {r.index}: the driver asks for recovery: {r.recovery_action} (drain the GPU first)")
    return issues
