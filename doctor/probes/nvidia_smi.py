"""Parsers for what nvidia-smi prints, so a user can hand ``check`` a paste instead of a live GPU.

Understood: ``nvidia-smi -q -x`` (XML, schemas v12/v13), ``nvidia-smi -q`` text (whole, ``-d`` subsets or
``grep -A`` excerpts: doctor/probes/nvidia_smi_text.py), ``--query-gpu=… --format=csv`` (with or without
units, ``[N/A]`` cells), ``--query-compute-apps`` CSV, the default table (GPU rows, MIG devices, processes)
and ``nvidia-smi topo -m``. A paste may hold several of them (``nvidia-smi; nvidia-smi topo -m``): GPUs come
from the richest form present (XML, then CSV, then ``-q`` text, then the table, then a headerless ``-q``
excerpt; the last block of a kind, i.e. the most
recent, when a log holds several), processes and links are attached by index or bus id. Damaged cells
are skipped and reported, never fatal; only text with no GPU at all is an InputError.
"""

from __future__ import annotations

import csv
import re

from doctor.errors import InputError
from doctor.probes.gpu import GpuProcess, GpuReading
from doctor.probes.nvidia_smi_text import parse_excerpt, parse_text
from doctor.probes.nvidia_smi_values import NA as _NA
from doctor.probes.nvidia_smi_values import UNITS as _UNITS
from doctor.probes.nvidia_smi_values import bytes_of as _bytes
from doctor.probes.nvidia_smi_values import flag as _yes
from doctor.probes.nvidia_smi_values import na as _na
from doctor.probes.nvidia_smi_values import number as _number
from doctor.probes.nvidia_smi_values import whole as _int

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_XML_DOC = re.compile(r"<nvidia_smi_log\b.*?</nvidia_smi_log>", re.DOTALL)
_TOPO_CELL = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")
#: nvidia-smi's line for a GPU it cannot open: ``Unable to determine the device handle for GPU 0000:02:00.0: GPU
#: is lost.  Reboot the system to recover this GPU`` (newer drivers: ``for GPU1: 0000:0A:00.0: …``)
_LOST = re.compile(r"Unable to determine the device handle for GPU\d*:?\s*"
                   r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]):\s*(.+?)\s*$", re.MULTILINE)


def parse(text: str, source: str) -> list[GpuReading]:
    text = _ANSI.sub("", text.replace("\r\n", "\n"))
    problems: list[str] = []
    readings = (_from_xml(text, problems) or _from_query_csv(text, problems) or parse_text(text, problems)
                or _from_table(text, problems) or parse_excerpt(text, problems))
    readings += _lost(text, readings)
    if not readings:
        detail = f" ({'; '.join(problems)})" if problems else ""
        raise InputError(f"{source}: no GPU found: expected nvidia-smi -q (text or -x XML), --query-gpu CSV or "
                         f"the default nvidia-smi table{detail}")
    _attach_compute_apps(text, readings, problems)
    _attach_topology(text, readings, problems)
    readings[0].problems.extend(problems)
    return readings


# ------------------------------------------------------------------------------------------ values
def _sm(value: str | None) -> int | None:
    m = re.fullmatch(r"\s*(\d+)\.(\d)\s*", value or "")
    return int(m.group(1)) * 10 + int(m.group(2)) if m else None


def _lost(text: str, readings: list[GpuReading]) -> list[GpuReading]:
    """The GPUs nvidia-smi names but cannot open: each one a reading with ``lost`` set and nothing else."""
    seen = {(r.bus_id or "").lower()[-12:] for r in readings}
    lost: dict[str, GpuReading] = {}
    for m in _LOST.finditer(text):
        bus = m.group(1)
        if bus.lower()[-12:] not in seen and bus not in lost:
            lost[bus] = GpuReading(index=len(readings) + len(lost), name="", bus_id=bus, lost=m.group(2))
    return list(lost.values())


# ------------------------------------------------------------------------------------------ XML
def _from_xml(text: str, problems: list[str]) -> list[GpuReading]:
    import xml.etree.ElementTree as ET  # stdlib; expat rejects entity-expansion bombs and never fetches the DTD

    docs = _XML_DOC.findall(text)
    if not docs:
        return []
    try:
        root = ET.fromstring(docs[-1])
    except ET.ParseError as exc:
        problems.append(f"XML: {exc}")
        return []
    readings = [_xml_gpu(i, gpu) for i, gpu in enumerate(root.findall("gpu"))]
    attached = _int(root.findtext("attached_gpus"))
    if attached is not None and attached != len(readings):
        problems.append(f"XML: attached_gpus says {attached} but {len(readings)} <gpu> elements are present")
    return readings


def _xml_health(reading: GpuReading, gpu: Any, find: Any) -> None:
    """The health fields of ``-q -x`` (schemas v12/v13; ``clocks_throttle_reasons`` before R535)."""
    from doctor.hardware.gpu_health import REASONS

    block = gpu.find("clocks_event_reasons")
    prefix = "clocks_event_reason_"
    if block is None:
        block, prefix = gpu.find("clocks_throttle_reasons"), "clocks_throttle_reason_"
    if block is not None:
        values = {e.tag.removeprefix(prefix): (e.text or "").strip().lower() for e in block}
        names = {n for n, _, _ in REASONS.values()} | {"display_clocks_setting"}
        reading.clocks_event_reasons = [n.replace("display_clocks_setting", "display_clock_setting")
                                        for n, v in values.items() if n in names and v == "active"]
    reading.temp_c = _number(find("temperature/gpu_temp"))
    reading.temp_slowdown_c = _number(find("temperature/gpu_temp_slow_threshold"))
    reading.temp_shutdown_c = _number(find("temperature/gpu_temp_max_threshold"))
    reading.temp_max_operating_c = _number(find("temperature/gpu_temp_max_gpu_threshold"))
    reading.sm_clock_mhz = _number(find("clocks/sm_clock"))
    reading.sm_clock_max_mhz = _number(find("max_clocks/sm_clock"))
    reading.pcie_gen = _int(find("pci/pci_gpu_link_info/pcie_gen/current_link_gen"))
    reading.pcie_gen_max = _int(find("pci/pci_gpu_link_info/pcie_gen/max_link_gen"))
    reading.pcie_width = _int(find("pci/pci_gpu_link_info/link_widths/current_link_width"))
    reading.pcie_width_max = _int(find("pci/pci_gpu_link_info/link_widths/max_link_width"))
    reading.pcie_replays = _int(find("pci/replay_counter"))
    reading.persistence = _yes(find("persistence_mode"))


def _xml_gpu(index: int, gpu: Any) -> GpuReading:
    def find(*paths: str) -> str | None:
        """The first of ``paths`` with a value (schemas moved fields between versions)."""
        values = [gpu.findtext(p) for p in paths]
        return next((v for v in values if not _na(v)), values[0])

    reading = GpuReading(index=index, name=find("product_name") or f"GPU {index}", uuid=find("uuid"),
                         bus_id=find("pci/pci_bus_id") or gpu.get("id"))
    reading.memory_total = _bytes(find("fb_memory_usage/total"))
    reading.memory_used = _bytes(find("fb_memory_usage/used"))
    util = _number(find("utilization/gpu_util"))
    reading.util = util / 100 if util is not None else None
    reading.mig = _yes(find("mig_mode/current_mig"))
    if reading.mig:
        reading.mig_devices = len(gpu.findall("mig_devices/mig_device"))
    # v12/v13 split volatile uncorrectable errors by memory; older schemas have volatile/double_bit/total.
    counts = [_int(e.text) for e in gpu.findall("ecc_errors/volatile/*") if "uncorrectable" in e.tag]
    counts += [_int(find("ecc_errors/volatile/double_bit/total"))]
    known = [c for c in counts if c is not None]
    reading.ecc_uncorrected = sum(known) if known else None
    reading.remap_pending = _yes(find("remapped_rows/remapped_row_pending"))
    reading.remap_failure = _yes(find("remapped_rows/remapped_row_failure"))
    reading.retire_pending = _yes(find("retired_pages/pending_retirement"))
    reading.power_w = _number(find("gpu_power_readings/power_draw", "power_readings/power_draw"))
    reading.power_limit_w = _number(find("gpu_power_readings/current_power_limit", "power_readings/power_limit"))
    _xml_health(reading, gpu, find)
    for proc in gpu.findall("processes/process_info"):
        pid = _int(proc.findtext("pid"))
        if pid is None:
            reading.problems.append(f"XML GPU {index}: a process without a pid")
            continue
        reading.processes.append(GpuProcess(pid=pid, name=proc.findtext("process_name"),
                                            used_bytes=_bytes(proc.findtext("used_memory")),
                                            gpu_instance=_int(proc.findtext("gpu_instance_id"))))
    return reading


# ------------------------------------------------------------------------------------------ CSV
def _csv_blocks(text: str, first_column: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every CSV table whose header starts a line with ``first_column``: (header, rows)."""
    lines = text.split("\n")
    blocks = []
    for i, line in enumerate(lines):
        header = [h.strip() for h in line.split(",")]
        if first_column not in header or len(header) < 2 or line.lstrip().startswith(("#", "|")):
            continue
        rows = []
        for row_line in lines[i + 1:]:
            if not row_line.strip() or row_line.startswith("#"):
                break
            rows.append([c.strip() for c in next(csv.reader([row_line], skipinitialspace=True))])
        blocks.append((header, rows))
    return blocks


def _column(header: list[str], name: str) -> tuple[int, str] | None:
    """Index and unit of column ``name`` (``memory.total [MiB]`` or, with nounits, ``memory.total``)."""
    for i, h in enumerate(header):
        m = re.fullmatch(rf"{re.escape(name)}(?:\s*\[(.+)\])?", h)
        if m:
            return i, (m.group(1) or "").lower()
    return None


def _from_query_csv(text: str, problems: list[str]) -> list[GpuReading]:
    blocks = [b for b in _csv_blocks(text, "name") if _column(b[0], "memory.total") or _column(b[0], "index")]
    if not blocks:
        return []
    if len(blocks) > 1:
        problems.append(f"CSV: {len(blocks)} --query-gpu tables found; read the last one")
    header, rows = blocks[-1]
    readings = []
    for n, row in enumerate(rows):
        if len(row) != len(header):
            problems.append(f"CSV row {n + 1}: {len(row)} cells for {len(header)} columns; skipped")
            continue
        readings.append(_csv_gpu(n, header, row))
    return readings


def _csv_gpu(n: int, header: list[str], row: list[str]) -> GpuReading:
    def cell(name: str) -> tuple[str | None, str]:
        found = _column(header, name)
        return (row[found[0]], found[1]) if found else (None, "")

    index = _int(cell("index")[0])
    reading = GpuReading(index=n if index is None else index, name=cell("name")[0] or f"GPU {n}",
                         uuid=cell("uuid")[0], bus_id=cell("pci.bus_id")[0], sm=_sm(cell("compute_cap")[0]))
    for attr, name in (("memory_total", "memory.total"), ("memory_used", "memory.used")):
        value, unit = cell(name)
        setattr(reading, attr, _bytes(value, unit if unit in _UNITS else "mib"))
    util = _number(cell("utilization.gpu")[0])
    reading.util = util / 100 if util is not None else None
    reading.mig = _yes(cell("mig.mode.current")[0])
    reading.ecc_uncorrected = _int(cell("ecc.errors.uncorrected.volatile.total")[0])
    reading.remap_pending = _yes(cell("remapped_rows.pending")[0])
    reading.remap_failure = _yes(cell("remapped_rows.failure")[0])
    reading.retire_pending = _yes(cell("retired_pages.pending")[0])
    reading.power_w = _number(cell("power.draw")[0])
    reading.power_limit_w = _number(cell("power.limit")[0])
    _csv_health(reading, cell)
    return reading


def _csv_health(reading: GpuReading, cell: Any) -> None:
    """The health columns of --query-gpu (names: ``nvidia-smi --help-query-gpu``); ``clocks_throttle_reasons.*``
    is the pre-R535 spelling of ``clocks_event_reasons.*``."""
    from doctor.hardware.gpu_health import REASONS

    active, seen = [], False
    for name, _, _ in REASONS.values():
        value = cell(f"clocks_event_reasons.{name}")[0] or cell(f"clocks_throttle_reasons.{name}")[0]
        if value is not None and value.strip().lower() not in _NA:
            seen = True
            if value.strip().lower() == "active":
                active.append(name)
    reading.clocks_event_reasons = active if seen else None
    reading.temp_c = _number(cell("temperature.gpu")[0])
    margin = _number(cell("temperature.gpu.tlimit")[0])  # degrees left before the GPU slows down (T.Limit)
    if reading.temp_c is not None and margin is not None:  # T.Limit is the margin to the max operating temperature
        reading.temp_slowdown_c = reading.temp_max_operating_c = reading.temp_c + margin
    reading.sm_clock_mhz = _number(cell("clocks.current.sm")[0] or cell("clocks.sm")[0])
    reading.sm_clock_max_mhz = _number(cell("clocks.max.sm")[0])
    reading.pcie_gen, reading.pcie_gen_max = _int(cell("pcie.link.gen.current")[0]), _int(cell("pcie.link.gen.max")[0])
    reading.pcie_width = _int(cell("pcie.link.width.current")[0])
    reading.pcie_width_max = _int(cell("pcie.link.width.max")[0])
    reading.persistence = _yes(cell("persistence_mode")[0])


def _attach_compute_apps(text: str, readings: list[GpuReading], problems: list[str]) -> None:
    """``--query-compute-apps`` rows go to the GPU with the same bus id (the last such table wins)."""
    blocks = [b for b in _csv_blocks(text, "pid") if _column(b[0], "used_gpu_memory")]
    if not blocks or any(r.processes for r in readings):
        return
    header, rows = blocks[-1]
    by_bus = {(r.bus_id or "").lower(): r for r in readings}
    by_uuid = {(r.uuid or "").lower(): r for r in readings}
    for row in rows:
        values = dict(zip([h.split(" [")[0] for h in header], row, strict=False))
        gpu = by_bus.get(values.get("gpu_bus_id", "").lower()) or by_uuid.get(values.get("gpu_uuid", "").lower())
        pid = _int(values.get("pid"))
        if gpu is None or pid is None:
            problems.append(f"compute-apps row {row[:6]!r}: no matching GPU or pid")
            continue
        used = _column(header, "used_gpu_memory")
        unit = used[1] if used and used[1] in _UNITS else "mib"
        gpu.processes.append(GpuProcess(pid=pid, name=values.get("process_name"),
                                        used_bytes=_bytes(values.get("used_gpu_memory"), unit)))


# ------------------------------------------------------------------------------------------ table
_GPU_ROW = re.compile(r"^\s*(\d+)\s+(.+?)\s+(On|Off)\s*$")
_MEM = re.compile(r"(\d+)\s*MiB\s*/\s*(\d+)\s*MiB")
_POWER = re.compile(r"([\d.]+)\s*W\s*/\s*([\d.]+)\s*W")
_PROC_ROW = re.compile(r"^\|\s+(\d+)\s+(?:(\S+)\s+(\S+)\s+)?(\d+)\s+(C\+G|C|G|M\+C|M)\s+(.*?)\s+(\d+MiB|N/A)\s*\|$")


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _section(lines: list[str], title: str) -> list[str]:
    """Rows of the table titled ``title`` (``GPU  Name``, ``MIG devices:``, ``Processes:``) after its ``|===`` line."""
    for i, line in enumerate(lines):
        if line.startswith("|") and line[1:].lstrip().startswith(title):
            rows = []
            started = False
            for row in lines[i + 1:]:
                if row.startswith("|="):
                    started = True
                    continue
                if not row.startswith(("|", "+")):
                    break
                if started:
                    rows.append(row)
            return rows
    return []


def _from_table(text: str, problems: list[str]) -> list[GpuReading]:
    lines = [line.rstrip() for line in text.split("\n")]
    starts = [i for i, line in enumerate(lines) if line.startswith("| GPU  Name")]
    if not starts:
        return []
    lines = lines[starts[-1]:]  # the last table of a log is the most recent reading
    blocks: list[list[str]] = [[]]
    for row in _section(lines, "GPU  Name"):
        if row.startswith("+"):
            blocks.append([])
        else:
            blocks[-1].append(row)
    readings = [r for r in (_table_gpu(b, problems) for b in blocks if b) if r is not None]
    _table_mig(lines, readings, problems)
    _table_processes(lines, readings, problems)
    return readings


def _table_gpu(block: list[str], problems: list[str]) -> GpuReading | None:
    first = _cells(block[0])
    head = _GPU_ROW.match(first[0]) if first else None
    if head is None:
        problems.append(f"table row {block[0].strip()!r}: not a GPU row; skipped")
        return None
    reading = GpuReading(index=int(head.group(1)), name=head.group(2))
    if len(first) > 1:
        reading.bus_id = first[1].split()[0] if first[1].split() else None
    if len(first) > 2:
        reading.ecc_uncorrected = _int(first[2])  # "Volatile Uncorr. ECC"; N/A or On (MIG) read as None
    if len(block) > 1:
        second = _cells(block[1])
        power = _POWER.search(second[0]) if second else None
        memory = _MEM.search(second[1]) if len(second) > 1 else None
        if power:
            reading.power_w, reading.power_limit_w = float(power.group(1)), float(power.group(2))
        if memory:
            reading.memory_used, reading.memory_total = int(memory.group(1)) * 2**20, int(memory.group(2)) * 2**20
        else:
            problems.append(f"table GPU {reading.index}: memory cell unreadable: {block[1].strip()!r}")
        util = re.match(r"(\d+)%", second[2]) if len(second) > 2 else None
        reading.util = int(util.group(1)) / 100 if util else None
    if len(block) > 2:
        third = _cells(block[2])
        reading.mig = _yes(third[-1]) if third else None
    return reading


def _table_mig(lines: list[str], readings: list[GpuReading], problems: list[str]) -> None:
    by_index = {r.index: r for r in readings}
    for row in _section(lines, "GPU  GI  CI  MIG"):
        cells = _cells(row) if row.startswith("|") else []
        ids = cells[0].split() if cells else []
        if len(ids) == 4 and all(x.isdigit() for x in ids):
            gpu = by_index.get(int(ids[0]))
            if gpu is None:
                problems.append(f"MIG table: device on unknown GPU {ids[0]}")
                continue
            gpu.mig = True
            gpu.mig_devices = (gpu.mig_devices or 0) + 1


def _table_processes(lines: list[str], readings: list[GpuReading], problems: list[str]) -> None:
    by_index = {r.index: r for r in readings}
    for row in _section(lines, "Processes:"):
        if row.startswith("+") or "No running processes found" in row:
            continue
        m = _PROC_ROW.match(row)
        if m is None:
            if re.match(r"^\|\s+\d", row):
                problems.append(f"process row unreadable: {row.strip()!r}")
            continue
        gpu = by_index.get(int(m.group(1)))
        if gpu is None:
            problems.append(f"process row on unknown GPU: {row.strip()!r}")
            continue
        gpu.processes.append(GpuProcess(pid=int(m.group(4)), name=m.group(6), used_bytes=_bytes(m.group(7)),
                                        gpu_instance=_int(m.group(2)) if m.group(2) else None))


# ------------------------------------------------------------------------------------------ topo -m
def _attach_topology(text: str, readings: list[GpuReading], problems: list[str]) -> None:
    """GPU-to-GPU link kinds from ``nvidia-smi topo -m`` (NV# = NVLink; PIX/PXB/PHB/NODE/SYS = PCIe)."""
    lines = text.split("\n")
    headers = [i for i, line in enumerate(lines) if line.startswith(("\t", " ")) and "GPU0" in line.split()]
    if not headers:
        return
    start = headers[-1]
    columns = [c.strip() for c in lines[start].split("\t")[1:]]
    gpus = [c for c in columns if re.fullmatch(r"GPU\d+", c)]
    rows = []
    for line in lines[start + 1:]:
        if re.match(r"GPU\d+\t", line):
            rows.append([c.strip() for c in line.split("\t")])
        elif line.strip() and not re.match(r"NIC\d+\t", line):
            break
    # nvidia-smi itself writes an empty cell before "GPU NUMA ID": a whole row is one cell longer than
    # the header there. A row of another width had cells merged or lost in a paste.
    width = len(columns) + (2 if columns and columns[-1] == "GPU NUMA ID" else 1)
    by_index = {r.index: r for r in readings}
    for cells in rows:
        if len(cells) != width:
            problems.append(f"topo -m row {cells[0]}: {len(cells)} cells where {width} were expected "
                            "(cells merged or lost in the paste); only its GPU columns were read")
        reading = by_index.get(int(cells[0][3:]))
        if reading is None:
            continue
        for peer, cell in zip(gpus, cells[1:1 + len(gpus)], strict=False):
            if _TOPO_CELL.match(cell):
                reading.links[int(peer[3:])] = cell
            else:
                problems.append(f"topo -m {cells[0]}-{peer}: unreadable cell {cell!r}")
