"""The plain-text form of ``nvidia-smi -q`` (and its ``-d PERFORMANCE,PCIE,…`` subsets and ``| grep -A`` excerpts).

The text is an indented outline: section titles alone on a line, ``Key : Value`` lines under them, four spaces a
level, one ``GPU 00000000:83:00.0`` block per GPU after the ``Attached GPUs`` count. Each GPU's lines become a flat
map of lower-case paths (``pci/gpu link info/link width/current`` -> ``8x``) read into the same
:class:`~doctor.probes.gpu.GpuReading` fields the XML and CSV readers fill, so every form gives the same facts.
Spellings that changed across drivers are all read: ``Clocks Throttle Reasons`` (before R535) and ``Clocks Event
Reasons``; absolute ``GPU Slowdown Temp`` (before R550) and the ``T.Limit`` margins that replaced it; ``Power
Readings`` and ``GPU Power Readings``; ``Pending Page Blacklist`` / ``Pending Page Retirement``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from doctor.probes.gpu import GpuProcess, GpuReading
from doctor.probes.nvidia_smi_values import bytes_of, flag, na, number, whole

#: the value at the first of several paths that has one (fields moved between driver versions)
Get = Callable[..., "str | None"]

_LOG_TITLE = re.compile(r"^=+\s*NVSMI LOG\s*=+\s*$", re.MULTILINE)
_GPU_HEAD = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_LINE = re.compile(r"^( *)(\S.*?)(?:\s+:\s?(.*))?\s*$")
#: a headerless excerpt (``nvidia-smi -q | grep -A8 'Clocks Event Reasons'``) is read as one GPU only when it
#: holds one of these sections: an arbitrary "key : value" text is not a GPU
_EXCERPT_SECTIONS = ("clocks event reasons", "clocks throttle reasons", "remapped rows", "retired pages",
                     "gpu link info", "temperature", "ecc errors")
#: ``Clocks Event Reasons`` line -> reason name (doctor/hardware/gpu_health.py REASONS)
_REASON_LINES = {"idle": "gpu_idle", "applications clocks setting": "applications_clocks_setting",
                 "sw power cap": "sw_power_cap", "hw slowdown": "hw_slowdown",
                 "hw slowdown/hw thermal slowdown": "hw_thermal_slowdown",
                 "hw slowdown/hw power brake slowdown": "hw_power_brake_slowdown", "sync boost": "sync_boost",
                 "sw thermal slowdown": "sw_thermal_slowdown", "display clock setting": "display_clock_setting"}


def parse_text(text: str, problems: list[str]) -> list[GpuReading]:
    """Readings from the last ``-q`` log in ``text`` (a capture may hold several: the last is the most recent)."""
    starts = [m.start() for m in _LOG_TITLE.finditer(text)]
    body = text[starts[-1]:] if starts else text
    lines = body.split("\n")
    heads = [i for i, line in enumerate(lines) if _GPU_HEAD.match(line)]
    if not heads:
        return []
    readings = []
    for n, start in enumerate(heads):
        end = heads[n + 1] if n + 1 < len(heads) else _block_end(lines, start)
        bus = _GPU_HEAD.match(lines[start]).group(1)  # type: ignore[union-attr]
        readings.append(_reading(n, bus, _outline(lines[start + 1:end])))
    attached = whole(_header_value(lines[:heads[0]], "attached gpus"))
    if attached is not None and attached != len(readings):
        problems.append(f"nvidia-smi -q: Attached GPUs says {attached} but {len(readings)} GPU blocks are present")
    return readings


def _block_end(lines: list[str], start: int) -> int:
    """The last GPU block ends at the first unindented line that is not part of it (a prompt, a capture's ####)."""
    for i in range(start + 1, len(lines)):
        if lines[i].strip() and not lines[i].startswith((" ", "\t")):
            return i
    return len(lines)


def _header_value(lines: list[str], key: str) -> str | None:
    for line in lines:
        m = _LINE.match(line)
        if m and not m.group(1) and m.group(2).lower() == key:
            return m.group(3)
    return None


def _outline(lines: list[str]) -> list[tuple[str, str | None]]:
    """(path, value) for each line, in order; the path joins the section titles above it by indentation."""
    stack: list[tuple[int, str]] = []
    out: list[tuple[str, str | None]] = []
    for line in lines:
        line = line.expandtabs(4).rstrip()
        m = _LINE.match(line)
        if not m or not line.strip():
            continue
        indent, key = len(m.group(1)), m.group(2).strip().lower()
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "/".join([k for _, k in stack] + [key])
        out.append((path, m.group(3)))
        stack.append((indent, key))
    return out


def parse_excerpt(text: str, problems: list[str]) -> list[GpuReading]:
    """One GPU from a ``-q`` excerpt that lost its ``GPU …`` header (the weakest form: read last)."""
    items = _outline(text.split("\n"))
    roots = {path.split("/")[0] for path, _ in items}
    if not roots & set(_EXCERPT_SECTIONS):
        return []
    problems.append("nvidia-smi -q excerpt without its GPU header: read as one GPU (index 0)")
    return [_reading(0, None, items)]


def _reading(index: int, bus: str | None, items: list[tuple[str, str | None]]) -> GpuReading:
    fields: dict[str, str | None] = {}
    for path, value in items:
        fields.setdefault(path, value)  # the first of a repeated path (processes are read in order below)

    def get(*paths: str) -> str | None:
        values = [fields.get(p) for p in paths]
        return next((v for v in values if not na(v)), values[0])

    reading = GpuReading(index=index, name=get("product name") or "", uuid=get("gpu uuid"),
                         bus_id=get("pci/bus id") or bus)
    reading.memory_total = bytes_of(get("fb memory usage/total"))
    reading.memory_used = bytes_of(get("fb memory usage/used"))
    util = number(get("utilization/gpu", "utilization/gpu util"))
    reading.util = util / 100 if util is not None else None
    reading.mig = flag(get("mig mode/current"))
    reading.persistence = flag(get("persistence mode"))
    reading.power_w = number(get("gpu power readings/power draw", "gpu power readings/average power draw",
                                 "power readings/power draw", "gpu power readings/instantaneous power draw"))
    reading.power_limit_w = number(get("gpu power readings/current power limit", "power readings/power limit",
                                       "power readings/enforced power limit"))
    _memory_health(reading, fields)
    _clocks(reading, fields)
    _temperature(reading, get)
    _pcie(reading, get)
    _processes(reading, items)
    return reading


def _memory_health(reading: GpuReading, fields: dict[str, str | None]) -> None:
    """Volatile uncorrectable ECC (R5xx: ``SRAM/DRAM Uncorrectable…``; older: ``Double Bit/Total``), row
    remapping, retired pages."""
    volatile = [whole(v) for p, v in fields.items() if p.startswith("ecc errors/volatile/")
                and ("uncorrectable" in p.rsplit("/", 1)[-1] or p.endswith("double bit/total"))]
    known = [c for c in volatile if c is not None]
    reading.ecc_uncorrected = sum(known) if known else None
    reading.remap_pending = flag(fields.get("remapped rows/pending"))
    reading.remap_failure = flag(fields.get("remapped rows/remapping failure occurred"))
    reading.remap_uncorrectable = whole(fields.get("remapped rows/uncorrectable error"))
    pending = next((fields[p] for p in ("retired pages/pending page blacklist", "retired pages/pending page retirement",
                                        "retired pages/pending") if not na(fields.get(p))), None)
    reading.retire_pending = flag(pending)
    counts = [whole(fields.get(p)) for p in ("retired pages/single bit ecc", "retired pages/double bit ecc")]
    reading.retired_pages = sum(c for c in counts if c is not None) if any(c is not None for c in counts) else None


def _clocks(reading: GpuReading, fields: dict[str, str | None]) -> None:
    for section in ("clocks event reasons", "clocks throttle reasons"):
        values = {name: fields.get(f"{section}/{line}") for line, name in _REASON_LINES.items()}
        if any(not na(v) for v in values.values()):
            reading.clocks_event_reasons = [n for n, v in values.items() if (v or "").strip().lower() == "active"]
            break
    reading.sm_clock_mhz = number(fields.get("clocks/sm"))
    reading.sm_clock_max_mhz = number(fields.get("max clocks/sm"))
    reading.recovery_action = _recovery(fields)


def _recovery(fields: dict[str, str | None]) -> str | None:
    """``GPU Recovery Action`` (R560+), or the ``GPU Reset Status`` pair it replaced (R535-R550)."""
    action = fields.get("gpu recovery action")
    if not na(action):
        return action
    if flag(fields.get("gpu reset status/drain and reset recommended")):
        return "Drain and Reset"
    if flag(fields.get("gpu reset status/reset required")):
        return "Reset"
    return None


def _temperature(reading: GpuReading, get: Get) -> None:
    """Absolute thresholds (``GPU Slowdown Temp : 89 C``) or, from R550, margins to T.Limit: ``GPU T.Limit Temp``
    is how far the GPU is below it, ``GPU Slowdown T.Limit Temp : -2 C`` where slowdown starts relative to it."""
    reading.temp_c = number(get("temperature/gpu current temp"))
    reading.temp_slowdown_c = number(get("temperature/gpu slowdown temp"))
    reading.temp_shutdown_c = number(get("temperature/gpu shutdown temp"))
    reading.temp_max_operating_c = number(get("temperature/gpu max operating temp"))
    margin = number(get("temperature/gpu t.limit temp"))
    if reading.temp_c is None or margin is None:
        return
    for attr, key in (("temp_slowdown_c", "gpu slowdown t.limit temp"), ("temp_shutdown_c", "gpu shutdown t.limit temp"),
                      ("temp_max_operating_c", "gpu max operating t.limit temp")):
        offset = number(get(f"temperature/{key}"))
        if getattr(reading, attr) is None and offset is not None:
            setattr(reading, attr, reading.temp_c + margin - offset)


def _pcie(reading: GpuReading, get: Get) -> None:
    link = "pci/gpu link info"
    reading.pcie_gen = whole(get(f"{link}/pcie generation/current"))
    reading.pcie_gen_max = whole(get(f"{link}/pcie generation/max"))
    reading.pcie_width = whole(get(f"{link}/link width/current"))
    reading.pcie_width_max = whole(get(f"{link}/link width/max"))
    reading.pcie_replays = whole(get("pci/replays since reset", "pci/replay counter"))


def _processes(reading: GpuReading, items: list[tuple[str, str | None]]) -> None:
    instance: int | None = None
    for path, value in items:
        if path == "processes/gpu instance id":
            instance = whole(value)
        elif path == "processes/process id":
            pid = whole(value)
            if pid is None:
                reading.problems.append(f"nvidia-smi -q GPU {reading.index}: a process without a pid")
                continue
            reading.processes.append(GpuProcess(pid=pid, gpu_instance=instance if reading.mig else None))
        elif reading.processes and path == "processes/process id/name":
            reading.processes[-1].name = value
        elif reading.processes and path == "processes/process id/used gpu memory":
            reading.processes[-1].used_bytes = bytes_of(value)
