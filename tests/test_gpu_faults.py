"""GPU faults from recorded public outputs, through the parsers the live probe uses: kernel-log Xid lines
(fixtures/kernel-log/public, each cited in its SOURCES.md) through `check --log`, the real `nvidia-smi
--query-gpu` captures (fixtures/nvml) through the CSV reader and the health faults, and the Xid catalog's own
consistency with NVIDIA's action buckets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli

from doctor.hardware import gpu_health, xid
from doctor.probes.gpu import gpu_probe_facts, read_nvidia_smi

ROOT = Path(__file__).resolve().parents[1]
KERNEL = ROOT / "fixtures" / "kernel-log" / "public"
NVML = ROOT / "fixtures" / "nvml"


def _check(*args: str) -> dict:
    result = run_cli("check", *args, "--format", "json", timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(("name", "code", "gpu", "action"), [
    ("xid79-rtx5080-open-gpu-kernel-modules-1151.log", 79, "0000:2b:00", "reboot"),
    ("xid79-pid-gist-zackmattor.log", 79, "0000:10:00", "reboot"),
    ("xid63-row-remap-ml-engineering.log", 63, "0000:10:1c", "reset"),
    ("xid3-old-driver-pastebin.log", 3, "0000:01:00", "NVIDIA's Xid catalog"),
])
def test_recorded_xid_is_named_with_its_action(name: str, code: int, gpu: str, action: str) -> None:
    doc = _check("--log", str(KERNEL / name))
    found = {f["id"]: f for f in doc["findings"]}
    assert "gpu-xid-error" in found, sorted(found)
    finding = found["gpu-xid-error"]
    assert f"Xid {code} on GPU {gpu}" in finding["what"], finding["what"]
    assert action in finding["what"] and action in finding["fix"], finding
    assert doc["facts"]["log.xid_events"]["value"][0]["code"] == code


def test_xid_79_explains_a_hang_and_a_failed_start() -> None:
    doc = _check("--log", str(KERNEL / "xid79-pid-gist-zackmattor.log"), "--symptom", "hung")
    finding = next(f for f in doc["findings"] if f["id"] == "gpu-xid-error")
    assert finding["symptom"] == "hung"
    assert doc["facts"]["gpu.xid_explains"]["value"] == ["hung", "launch-failure"]


def test_catalog_actions_are_the_buckets_it_defines() -> None:
    cat = xid.catalog()
    assert {e["action"] for e in cat["codes"].values()} <= set(cat["actions"])
    for code in (48, 63, 64, 74, 79, 94, 95, 119, 120):  # the codes the issue names
        assert xid.explain(code)["known"], code
    assert xid.explain(79)["action"] == "reboot-node" and xid.explain(94)["action"] == "restart-app"


@pytest.mark.parametrize(("capture", "persistence_off"), [
    ("nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt", []),
    ("nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80.txt", [{"gpu": 0}]),
])
def test_real_query_gpu_captures_read_every_health_field(capture: str, persistence_off: list) -> None:
    readings = read_nvidia_smi((NVML / capture).read_text(), capture)
    gpu = readings[0]
    # the last --query-gpu block of each capture is the one under load
    assert gpu.clocks_event_reasons == [] and gpu.temp_c and gpu.temp_slowdown_c > gpu.temp_c
    assert gpu.sm_clock_mhz == gpu.sm_clock_max_mhz and gpu.pcie_width == gpu.pcie_width_max == 16
    facts = gpu_probe_facts(readings, "nvidia-smi")
    # a loaded healthy GPU: no slowdown, not hot, the link at full width and generation
    assert facts.get("gpu.clocks_slowed") == [] and facts.get("gpu.too_hot") == []
    assert facts.get("gpu.pcie_degraded") == []
    assert facts.get("gpu.persistence_off") == persistence_off


def test_idle_capture_downtrains_pcie_generation_without_a_fault() -> None:
    """The idle block of the H100 capture: the link's generation at idle is not a degraded link."""
    text = (NVML / "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt").read_text()
    idle = text.split("# load ::")[0]
    gpu = read_nvidia_smi(idle, "idle")[0]
    assert "gpu_idle" in (gpu.clocks_event_reasons or [])
    assert gpu_health.faults(gpu)["clocks"] is None and gpu_health.faults(gpu)["pcie"] is None


def test_dcgm_bitmask_decodes_to_nvml_reason_names() -> None:
    # 1 is the value fixtures/dcgm's recorded T4 reports (idle); 0x80|0x40 the power brake + HW thermal bits
    assert gpu_health.reasons_from_mask(1) == ["gpu_idle"]
    assert gpu_health.reasons_from_mask(0xC0) == ["hw_thermal_slowdown", "hw_power_brake_slowdown"]


@pytest.mark.parametrize(("capture", "gen", "persistence_off"), [
    ("telegraf__a100-sxm4-v12.xml", (4, 4), [{"gpu": 0}]),  # persistence mode Disabled in the capture
    ("telegraf__rtx-3090-v12.xml", (1, 4), []),  # idle: the link downtrained to gen 1, not a fault
])
def test_real_xml_captures_read_the_health_fields(capture: str, gen: tuple, persistence_off: list) -> None:
    [gpu] = read_nvidia_smi((NVML / capture).read_text(), capture)
    assert (gpu.pcie_gen, gpu.pcie_gen_max) == gen and gpu.pcie_width == gpu.pcie_width_max == 16
    assert gpu.temp_slowdown_c > gpu.temp_c and gpu.temp_shutdown_c > gpu.temp_slowdown_c
    assert gpu.sm_clock_max_mhz and gpu.clocks_event_reasons is not None
    facts = gpu_probe_facts([gpu], "nvidia-smi -q -x")
    assert facts.get("gpu.pcie_degraded") == [] and facts.get("gpu.clocks_slowed") == []
    assert facts.get("gpu.persistence_off") == persistence_off
