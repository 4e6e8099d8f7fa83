"""Recorded public GPU faults (fixtures/gpu-faults, each cited in its SOURCES.md) replayed through `check`, the path
a user takes with a saved `nvidia-smi -q` or kernel log: each must be named with its first action. And the plain
`nvidia-smi -q` text reader against the other forms of the same real capture."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from doctor.probes.gpu import gpu_probe_facts, read_nvidia_smi

ROOT = Path(__file__).resolve().parents[1]
FAULTS = ROOT / "fixtures" / "gpu-faults"
NVML = ROOT / "fixtures" / "nvml"


def _check(*args: str) -> dict:
    result = run_cli("check", *args, "--format", "json", timeout=120)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(("flag", "name", "cause", "says", "action"), [
    ("--nvidia-smi", "gpud-h100x8-hw-power-brake-535.161.08.txt", "gpu-clocks-slowed",
     "GPU 7: hardware slowdown", "power delivery serviced"),
    ("--nvidia-smi", "gpud-h100x8-gpu2-power-brake-thermal-535.183.01.txt", "gpu-clocks-slowed",
     "GPU 2: software power cap", "power delivery serviced"),
    ("--nvidia-smi", "gpud-a10-row-remap-pending-535.129.03.txt", "gpu-memory-errors",
     "GPU 0: row remapping pending, 4 row(s)", "reset the GPU"),
    ("--nvidia-smi", "dcgm-232-a10g-pcie-x8-of-x16-535.247.01.txt", "gpu-pcie-degraded",
     "GPU 0: PCIe gen 4 x8 where it supports gen 4 x16", "reseat the GPU"),
    ("--nvidia-smi", "thermald-300-mx330-at-max-operating-temp-465.27.txt", "gpu-too-hot",
     "GPU 0 at 56 °C against its max operating temperature of 57 °C", "cooling serviced"),
    ("--nvidia-smi", "owod-81-nvidia-smi-gpu-is-lost.txt", "gpu-lost", "GPU 0000:02:00.0", "reboot"),
    ("--nvidia-smi", "nvidia-docker-1553-nvidia-smi-a-unknown-error.txt", "gpu-lost", "Unknown Error", "reboot"),
    ("--log", "gpud-xid119-gsp-timeout.log", "gpu-xid-error", "Xid 119 on GPU 0000:9b:00", "reset it"),
    ("--log", "gpud-xid13-xid43-pytorch.log", "gpu-xid-error", "Xid 13 on GPU 0000:38:00", "restart the server"),
    ("--log", "nvsentinel-155-fallen-off-bus-without-xid.log", "gpu-xid-error", "Xid 79 on GPU 0000:b3:00.0",
     "reboot"),
])
def test_each_recorded_fault_is_named_with_its_action(flag: str, name: str, cause: str, says: str,
                                                      action: str) -> None:
    doc = _check(flag, str(FAULTS / name))
    found = {f["id"]: f for f in doc["findings"]}
    assert cause in found, sorted(found)
    assert says in found[cause]["what"], found[cause]["what"]
    assert action in found[cause]["what"] + found[cause]["fix"], found[cause]


def test_only_the_slowed_gpu_of_eight_is_named() -> None:
    facts = gpu_probe_facts(read_nvidia_smi((FAULTS / "gpud-h100x8-gpu2-power-brake-thermal-535.183.01.txt")
                                            .read_text(), "q"), "q")
    assert [s["gpu"] for s in facts.get("gpu.clocks_slowed")] == [2]
    assert facts.get("gpu.count") == 8 and facts.get("gpu.pcie_degraded") == []


@pytest.mark.parametrize(("name", "symptom"), [
    ("gpud-h100x8-hw-power-brake-535.161.08.txt", "slow-decode"),
    ("dcgm-232-a10g-pcie-x8-of-x16-535.247.01.txt", "slow-decode"),
    ("thermald-300-mx330-at-max-operating-temp-465.27.txt", "slow-decode"),
    ("gpud-a10-row-remap-pending-535.129.03.txt", "hung"),
    ("owod-81-nvidia-smi-gpu-is-lost.txt", "hung"),
    ("owod-81-nvidia-smi-gpu-is-lost.txt", "launch-failure"),
])
def test_the_symptom_trees_reach_the_recorded_fault(name: str, symptom: str) -> None:
    doc = _check("--nvidia-smi", str(FAULTS / name), "--symptom", symptom)
    assert any(f["id"].startswith("gpu-") and f.get("symptom") == symptom for f in doc["findings"]), doc["findings"]


def test_a_lost_gpu_is_not_counted() -> None:
    facts = gpu_probe_facts(read_nvidia_smi((FAULTS / "owod-81-nvidia-smi-gpu-is-lost.txt").read_text(), "x"), "x")
    assert facts.get("gpu.count") == 0
    assert facts.get("gpu.lost")[0]["action"] == "reboot-node"


def _health(reading: object) -> tuple:
    keys = ("clocks_event_reasons", "temp_c", "sm_clock_mhz", "sm_clock_max_mhz", "pcie_gen", "pcie_gen_max",
            "pcie_width", "pcie_width_max", "persistence", "remap_pending", "remap_failure", "ecc_uncorrected")
    return tuple(getattr(reading, k) for k in keys)


@pytest.mark.parametrize("capture", [
    "nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt",
    "nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80.txt",
    "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
])
def test_q_text_reads_what_the_csv_of_the_same_capture_reads(capture: str) -> None:
    """The real captures hold `-q` and `--query-gpu` of the same moment: the two readers must agree."""
    text = (NVML / capture).read_text()
    load = text.split("# load :: query (-q)")[1]
    q_text, csv = load.split("# load :: query-gpu")[0], "# load :: query-gpu" + load.split("# load :: query-gpu")[1]
    [from_q] = read_nvidia_smi(q_text, "q")
    [from_csv] = read_nvidia_smi(csv.split("# load :: query-compute-apps")[0], "csv")
    assert _health(from_q) == _health(from_csv)
    assert from_q.temp_slowdown_c and from_q.temp_shutdown_c > from_q.temp_slowdown_c > from_q.temp_c


def test_t_limit_margins_give_absolute_thresholds() -> None:
    """R550+ prints margins to T.Limit (H200: 52 C now, 35 C below T.Limit, slowdown at -2, shutdown at -8)."""
    text = (NVML / "nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt").read_text()
    q_text = text.split("# load :: query (-q)")[1].split("# load :: query-gpu")[0]
    [gpu] = read_nvidia_smi(q_text, "q")
    assert (gpu.temp_c, gpu.temp_slowdown_c, gpu.temp_shutdown_c) == (52, 89, 95)


def test_a_grep_excerpt_without_its_gpu_header_is_read_as_one_gpu() -> None:
    text = (FAULTS / "gpud-h100x8-hw-power-brake-535.161.08.txt").read_text()
    block = text.split("\n")
    start = next(i for i, line in enumerate(block) if line.strip() == "Clocks Event Reasons")
    excerpt = "\n".join(block[start:start + 9])  # nvidia-smi -q | grep -A8 'Clocks Event Reasons'
    [gpu] = read_nvidia_smi(excerpt, "excerpt")
    assert gpu.clocks_event_reasons == ["hw_slowdown", "hw_power_brake_slowdown"]
    assert any("without its GPU header" in p for p in gpu.problems)


def test_attached_count_against_blocks_is_reported() -> None:
    text = (FAULTS / "gpud-a10-row-remap-pending-535.129.03.txt").read_text().replace(
        "Attached GPUs                             : 1", "Attached GPUs                             : 2")
    [gpu] = read_nvidia_smi(text, "q")
    assert any("Attached GPUs says 2" in p for p in gpu.problems)


def test_text_that_is_no_nvidia_smi_output_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("Name : value\nOther thing : 3\n")
    result = subprocess.run([sys.executable, "-m", "doctor", "check", "--nvidia-smi", str(bad)],
                            capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert str(bad) in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.parametrize("name", ["gpud-h100x8-hw-power-brake-535.161.08.txt",
                                  "dcgm-232-a10g-pcie-x8-of-x16-535.247.01.txt"])
def test_a_q_paste_cut_anywhere_reads_or_fails_with_one_line(name: str) -> None:
    """A paste cut short (a terminal's scrollback, a size limit) is read as far as it goes, or is an InputError
    naming the source: never another exception."""
    from doctor.errors import InputError

    text = (FAULTS / name).read_text()
    for cut in range(0, len(text), max(1, len(text) // 97)):
        try:
            readings = read_nvidia_smi(text[:cut], "cut")
        except InputError as exc:
            assert "cut: no GPU found" in str(exc)
            continue
        gpu_probe_facts(readings, "cut")


def test_values_nvidia_smi_never_prints_read_as_unknown() -> None:
    text = (FAULTS / "dcgm-232-a10g-pcie-x8-of-x16-535.247.01.txt").read_text()
    text = text.replace("Current                   : 8x", "Current                   : eight").replace(
        "GPU Current Temp                  : 27 C", "GPU Current Temp                  : 2.7.1 C")
    [gpu] = read_nvidia_smi(text, "odd")
    assert gpu.pcie_width is None and gpu.pcie_width_max == 16 and gpu.temp_c is None
    assert "gpu.pcie_degraded" not in gpu_probe_facts([gpu], "odd")  # unknown, not "fine"
