"""The GPU probe against real nvidia-smi readings (fixtures/nvml) and the NVML seam.

The fake NVML module below exists only for the seam's mechanics (init failure, a hung driver, the call
sequence); every value it returns is taken from a real reading parsed in the same test.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import ROOT, SHARED_FIXTURES, requires_shared, unavailable
from hypothesis import given, settings
from hypothesis import strategies as st

from doctor.errors import InputError
from doctor.hardware.catalog import lookup_gpu
from doctor.probes import gpu as gpu_probe
from doctor.probes.gpu import GpuReading, ProbeOutput, gpu_probe_facts, read_nvidia_smi, read_nvml

NVML = SHARED_FIXTURES / "nvml"
H200 = "nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt"
H100 = "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
H100_MIG = "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-mig__590.48.01.txt"
H200_MIG = "nvidia_gpu_exporter__linux-x86_64__nvidia-h200-mig__590.48.01.txt"
L40S = "nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80.txt"
RTX4080S = "nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt"
B200 = "b200x8_nvidia-smi_and_topo-m.txt"
CAPTURES = [H200, H100, H100_MIG, H200_MIG, L40S, RTX4080S]
MIB = 2**20


def _text(name: str) -> str:
    path = NVML / name
    if not path.is_file():
        unavailable(f"real reading {path} not available")
    return path.read_text(encoding="utf-8", errors="replace")


def _section(name: str, title: str) -> str:
    """One command's output from an exporter capture (sections start '# <phase> :: <what>')."""
    text = _text(name)
    start = text.index(f"# {title}")
    body = text.index("\n", text.index("# $", start)) + 1
    end = text.find("\n####", body + 90)
    return text[body: end if end > 0 else len(text)]


def _read(name: str, title: str | None = None) -> list[GpuReading]:
    return read_nvidia_smi(_section(name, title) if title else _text(name), name)


# --------------------------------------------------------------------------- XML (-q -x)
@requires_shared
def test_xml_v12_a100_in_mig_mode_reports_the_trimmed_gpu_list() -> None:
    [a100] = _read("telegraf__a100-sxm4-v12.xml")
    assert (a100.name, a100.memory_total, a100.memory_used) == ("NVIDIA A100-SXM4-80GB", 81920 * MIB, 50 * MIB)
    assert a100.mig is True and a100.mig_devices == 4 and a100.util is None
    assert a100.ecc_uncorrected == 0 and a100.power_w == 67.03 and a100.power_limit_w == 500.0
    assert any("attached_gpus says 4" in p for p in a100.problems)
    facts = gpu_probe_facts([a100], "nvidia-smi a100.xml")
    assert facts.get("gpu.name") == "A100 80GB" and facts.get("gpu.sm") == 80 and facts.get("gpu.mig") is True
    assert "gpu.util" not in facts and "MIG" in facts.unknown_reason("gpu.util")
    assert facts.fact("gpu.memory_bytes").observed


@requires_shared
def test_xml_v12_consumer_card_without_ecc() -> None:
    [rtx] = _read("telegraf__rtx-3090-v12.xml")
    assert (rtx.name, rtx.memory_total, rtx.util, rtx.mig) == ("NVIDIA GeForce RTX 3090", 24576 * MIB, 0.0, None)
    assert rtx.ecc_uncorrected is None and rtx.power_limit_w == 200.0
    facts = gpu_probe_facts([rtx], "x")
    assert facts.get("gpu.fp8") is False and facts.get("gpu.fp8_fallback") is True
    assert facts.get("gpu.health_issues") == []


@requires_shared
def test_xml_v13_processes_with_their_memory() -> None:
    [ada] = _read("telegraf__rtx-4000-sff-ada-v13.xml")
    assert ada.memory_total == 20475 * MIB and ada.memory_used == 3534 * MIB
    assert [(p.pid, p.name, p.used_bytes) for p in ada.processes] == [
        (1842, "cosmic-comp", 410 * MIB), (3190, "/usr/bin/code", 451 * MIB),
        (4937, "python", 160 * MIB), (34626, "/usr/lib/chromium/chromium", 183 * MIB)]
    assert ada.remap_pending is False and ada.remap_failure is False
    facts = gpu_probe_facts([ada], "x")
    assert facts.get("gpu.name") == "RTX 4000 SFF Ada" and len(facts.get("gpu.processes")) == 4


# --------------------------------------------------------------------------- --query-gpu CSV
@requires_shared
@pytest.mark.parametrize("capture", CAPTURES)
def test_csv_and_table_agree_on_the_same_real_gpu(capture: str) -> None:
    """Two parsers, one GPU: the query-gpu CSV and the default table name the same card and memory total.

    The table cuts long names ("NVIDIA GeForce RTX 4080 ..."): the catalog still resolves them.
    """
    [csv_reading] = _read(capture, "idle :: query-gpu")
    [table_reading] = _read(capture, "idle :: nvidia-smi (default table)")
    model = lookup_gpu(csv_reading.name)
    assert model is not None and lookup_gpu(table_reading.name) is model
    assert table_reading.memory_total == csv_reading.memory_total
    assert table_reading.mig == csv_reading.mig
    assert csv_reading.sm is not None and csv_reading.sm >= 89


@requires_shared
def test_h200_idle_and_under_load() -> None:
    [idle] = _read(H200, "idle :: query-gpu")
    [load] = _read(H200, "load :: query-gpu")
    assert (idle.name, idle.sm, idle.memory_total) == ("NVIDIA H200", 90, 143771 * MIB)
    assert (idle.util, idle.memory_used, idle.power_w) == (0.0, 0, 77.71)
    assert (load.util, load.memory_used, load.power_w, load.power_limit_w) == (1.0, 32362 * MIB, 627.4, 700.0)
    assert load.mig is False and load.ecc_uncorrected == 0 and load.remap_pending is False
    facts = gpu_probe_facts([load], "nvidia-smi h200.txt")
    assert facts.get("gpu.util") == [1.0] and facts.get("gpu.memory_used") == [32362 * MIB]
    assert facts.fact("gpu.util").observed and facts.fact("gpu.sm").source == "nvidia-smi h200.txt compute capability"


@requires_shared
def test_two_real_gpus_give_the_utilization_skew() -> None:
    """The idle and the loaded H200 side by side: max/mean = 1.0/0.5."""
    [idle] = _read(H200, "idle :: query-gpu")
    [load] = _read(H200, "load :: query-gpu")
    load.index = 1
    facts = gpu_probe_facts([idle, load], "x")
    assert facts.get("gpu.util") == [0.0, 1.0] and facts.get("gpu.util_skew") == 2.0
    assert facts.get("gpu.count") == 2


@requires_shared
def test_compute_apps_attach_to_the_gpu() -> None:
    text = _section(H200, "load :: query-gpu") + "\n\n" + _section(H200, "load :: query-compute-apps")
    [h200] = read_nvidia_smi(text, "paste")
    assert [(p.pid, p.name, p.used_bytes) for p in h200.processes] == [
        (10291, "/root/tools/memhog", 2566 * MIB), (10293, "/root/tools/memhog", 1542 * MIB),
        (10309, "./gpu_burn", 28234 * MIB)]


@requires_shared
@pytest.mark.parametrize("capture", [H100_MIG, H200_MIG])
def test_mig_captures(capture: str) -> None:
    [csv_reading] = _read(capture, "load :: query-gpu")
    assert csv_reading.mig is True and csv_reading.util is None
    [table] = _read(capture, "load :: nvidia-smi (default table)")
    assert table.mig is True and table.mig_devices and table.mig_devices >= 1
    assert all(p.gpu_instance is not None for p in table.processes)
    facts = gpu_probe_facts([table], capture)
    assert facts.get("gpu.mig") is True and "gpu.util_skew" not in facts


@requires_shared
def test_h100_mig_table_lists_four_instances_and_their_processes() -> None:
    [h100] = _read(H100_MIG, "load :: nvidia-smi (default table)")
    assert h100.mig_devices == 4  # -L in the same capture lists MIG devices 0..3
    assert [(p.pid, p.gpu_instance, p.used_bytes) for p in h100.processes] == [
        (21180, 2, 2296 * MIB), (21181, 2, 1272 * MIB), (21198, 2, 7484 * MIB)]


@requires_shared
def test_whole_capture_reads_the_most_recent_blocks() -> None:
    [h200] = _read(H200)
    assert h200.util == 1.0 and len(h200.processes) == 3 and h200.links == {0: "X"}
    assert any("read the last one" in p for p in h200.problems)


# --------------------------------------------------------------------------- damaged 8x B200 paste
@requires_shared
def test_damaged_b200_table_and_topology() -> None:
    readings = _read(B200)
    assert [r.index for r in readings] == list(range(8))
    assert {r.name for r in readings} == {"NVIDIA B200"}
    assert {r.memory_total for r in readings} == {183359 * MIB}
    assert [r.power_w for r in readings][:2] == [141.0, 139.0]
    for r in readings:
        assert set(r.links) == set(range(8)) and {r.links[p] for p in r.links if p != r.index} == {"NV18"}
    damaged = [p for p in readings[0].problems if p.startswith("topo -m row")]
    assert [p.split()[3] for p in damaged] == ["GPU2:", "GPU4:", "GPU5:", "GPU6:", "GPU7:"]
    facts = gpu_probe_facts(readings, B200)
    assert facts.get("gpu.interconnect") == "nvlink" and facts.fact("gpu.interconnect").observed
    assert "56 of 56 GPU pairs" in facts.fact("gpu.interconnect").source
    assert facts.get("gpu.count") == 8 and facts.get("gpu.sm") == 100 and facts.get("gpu.util_skew") == 1.0
    assert len(facts.get("gpu.read_problems")) == 5


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("text", ["", "hello", "<nvidia_smi_log><gpu>", "name, memory.total\n",
                                  "| GPU  Name |\n|====|\n| garbage |\n"])
def test_text_without_a_gpu_is_an_input_error_naming_the_file(text: str) -> None:
    with pytest.raises(InputError) as err:
        read_nvidia_smi(text, "smi.txt")
    assert str(err.value).startswith("smi.txt: no GPU found")


@requires_shared
def test_truncated_real_xml_is_reported_not_crashed() -> None:
    text = _text("telegraf__rtx-3090-v12.xml")
    with pytest.raises(InputError, match="no GPU found"):
        read_nvidia_smi(text[: len(text) // 2], "cut.xml")


@requires_shared
@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=8000), st.integers(min_value=1, max_value=400))
def test_cut_out_pieces_of_a_real_table_never_crash(start: int, length: int) -> None:
    text = _text(B200)
    piece = text[start:start + length * 20]
    try:
        readings = read_nvidia_smi(piece, "piece")
    except InputError:
        return
    gpu_probe_facts(readings, "piece")


# --------------------------------------------------------------------------- NVML seam
def test_nvml_on_a_machine_without_a_driver_is_an_error_fact() -> None:
    out = read_nvml(5.0)
    if out.readings:  # a real GPU machine: the live path must read it
        assert out.error is None and all(r.memory_total for r in out.readings)
        return
    assert out.error is not None and out.error.startswith("NVML unavailable:")
    facts = gpu_probe.nvml_facts(out)
    assert len(facts) == 0 and facts.unknown_reason("gpu.util") == out.error


def test_nvml_init_failure_and_hang_never_raise() -> None:
    class Broken:
        def nvmlInit(self) -> None:
            raise RuntimeError("Driver/library version mismatch")

    assert read_nvml(1.0, nvml=Broken()).error == "NVML unavailable: RuntimeError: Driver/library version mismatch"
    release = threading.Event()

    class Hung:
        def nvmlInit(self) -> None:
            release.wait(10)

    started = time.perf_counter()
    out = read_nvml(0.2, nvml=Hung())
    release.set()
    assert out.error == "NVML did not answer within 0.2s" and time.perf_counter() - started < 2


class _NvmlFromReading:
    """pynvml's call surface, answering with the values of a real reading (seam mechanics only)."""

    NVML_DEVICE_MIG_ENABLE = 1
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
    NVML_VOLATILE_ECC = 0

    def __init__(self, reading: GpuReading, driver: str) -> None:
        self.r, self.driver, self.calls = reading, driver, []

    def nvmlInit(self) -> None:
        self.calls.append("init")

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return self.r.name.encode()

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return self.r.uuid

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(busId=self.r.bus_id)

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return divmod(self.r.sm, 10)

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(total=self.r.memory_total, used=self.r.memory_used)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(gpu=round(self.r.util * 100), memory=0)

    def nvmlDeviceGetMigMode(self, h: int) -> tuple[int, int]:
        return (int(self.r.mig), int(self.r.mig))

    def nvmlDeviceGetTotalEccErrors(self, h: int, kind: int, counter: int) -> int:
        return self.r.ecc_uncorrected

    def nvmlDeviceGetRemappedRows(self, h: int) -> tuple[int, int, int, int]:
        return (0, 0, int(self.r.remap_pending), int(self.r.remap_failure))

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        return round(self.r.power_w * 1000)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: int) -> int:
        return round(self.r.power_limit_w * 1000)

    def nvmlDeviceGetComputeRunningProcesses(self, h: int) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=p.pid, usedGpuMemory=p.used_bytes, gpuInstanceId=0xFFFFFFFF)
                for p in self.r.processes]

    def nvmlSystemGetProcessName(self, pid: int) -> str:
        raise PermissionError("NVML_ERROR_NO_PERMISSION")  # what a non-root reader gets


@requires_shared
def test_nvml_seam_gives_the_same_facts_as_the_real_nvidia_smi_reading() -> None:
    text = _section(H200, "load :: query-gpu") + "\n\n" + _section(H200, "load :: query-compute-apps")
    [real] = read_nvidia_smi(text, "nvidia-smi")
    fake = _NvmlFromReading(real, "590.48.01")
    out = read_nvml(2.0, nvml=fake)
    assert out.error is None and fake.calls == ["init", "shutdown"]
    [live] = out.readings
    for attr in ("name", "sm", "memory_total", "memory_used", "util", "mig", "ecc_uncorrected", "power_w"):
        assert getattr(live, attr) == getattr(real, attr), attr
    assert [(p.pid, p.used_bytes, p.name) for p in live.processes] == [(p.pid, p.used_bytes, None) for p in real.processes]
    live_facts, smi_facts = gpu_probe.nvml_facts(out), gpu_probe_facts([real], "nvidia-smi")
    for key in ("gpu.name", "gpu.sm", "gpu.memory_bytes", "gpu.util", "gpu.memory_used", "gpu.mig", "gpu.count"):
        assert live_facts.get(key) == smi_facts.get(key), key
        assert live_facts.fact(key).observed
    assert live_facts.get("gpu.driver_version") == "590.48.01"
    # Snapshot round trip: the runner's fetch/interpret split replays the same facts.
    replayed = gpu_probe.interpret(json.loads(json.dumps(out.to_raw())))
    assert replayed.to_dict() == live_facts.to_dict()


def test_probe_output_from_raw_tolerates_an_error_snapshot() -> None:
    facts = gpu_probe.interpret({"source": "nvml", "error": "NVML unavailable: x", "readings": []})
    assert facts.unknown_reason("gpu.memory_used") == "NVML unavailable: x"
    assert ProbeOutput.from_raw({}).readings == []


# --------------------------------------------------------------------------- recorded live readings
def _captures() -> list[Path]:
    return sorted((ROOT / "fixtures" / "nvml").glob("*.json"))


@pytest.mark.skipif(not _captures(), reason="no real NVML capture recorded yet (tools/capture_nvml.py on a GPU host)")
@pytest.mark.parametrize("path", _captures(), ids=lambda p: p.name)
def test_recorded_nvml_capture_agrees_with_its_own_nvidia_smi_xml(path: Path) -> None:
    capture = json.loads(path.read_text(encoding="utf-8"))
    live = ProbeOutput.from_raw(capture["nvml"])
    assert live.error is None and live.readings
    xml = read_nvidia_smi(capture["nvidia_smi_xml"], path.name)
    assert [(r.name, r.memory_total) for r in live.readings] == [(r.name, r.memory_total) for r in xml]
    assert gpu_probe.nvml_facts(live).get("gpu.known") is True


def test_a_remote_endpoint_does_not_get_this_hosts_gpus() -> None:
    """NVML reads the GPUs where llmdoctor runs: for a remote endpoint those are someone else's."""
    from doctor.probes.base import ProbeOptions, Target

    raw = gpu_probe.fetch(Target.parse("192.0.2.10:8000"), ProbeOptions())
    facts = gpu_probe.interpret(raw)
    assert "gpu.name" not in facts and "192.0.2.10 is not this machine" in facts.unknown_reason("gpu.name")
    assert "--gpu NAME:COUNT" in facts.unknown_reason("gpu.name")


@pytest.mark.skipif(Path("/proc/driver/nvidia").exists() or Path("/dev/nvidiactl").exists(),
                    reason="this host has an NVIDIA driver")
def test_no_driver_is_said_without_loading_nvml() -> None:
    import sys

    sys.modules.pop("pynvml", None)
    out = read_nvml(2.0)
    assert out.error == ("NVML unavailable: no NVIDIA driver on this host (neither /proc/driver/nvidia nor "
                         "/dev/nvidiactl exists)")
    assert "pynvml" not in sys.modules
