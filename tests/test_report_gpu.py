"""`llmdoctor report` names the GPU behind a sick instance, from the DCGM exporter in the same Prometheus: a real
private Prometheus holding SCENARIO history (fixtures/prometheus/scenarios.py GPU_SCENARIOS) whose DCGM metric
names and labels are those of a recorded dcgm-exporter scrape (fixtures/dcgm/SOURCES.md). The GPU series are
joined to the engine on the same host; the faults go through the live probe's rules (doctor/hardware)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli
from support.prometheus import PrivatePrometheus, backfill, requires_prometheus, scenarios

pytestmark = requires_prometheus
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    workdir = tmp_path_factory.mktemp("prometheus-gpu")
    end = int(time.time()) // 60 * 60 - 60
    data = backfill(scenarios().gpu_history(end), workdir)
    with PrivatePrometheus(workdir, data=data) as prom:
        result = run_cli("report", "--prometheus", prom.url, "--until", str(end), "--since", "2h",
                         "--format", "json", "--selector", '{job="llm"}', timeout=120)
        assert result.stdout.strip().startswith("{"), result.stderr
        yield json.loads(result.stdout)


def _instance(doc: dict, index: int) -> dict:
    mod = scenarios()
    scenario = mod.GPU_SCENARIOS[index]
    name = f"10.9.0.{index + 1}:{scenario.port}"
    return next(i for i in doc["instances"] if i["instance"] == name)


def test_each_instance_is_named_with_the_gpu_that_made_it_sick(report: dict) -> None:
    for index, scenario in enumerate(scenarios().GPU_SCENARIOS):
        inst = _instance(report, index)
        assert set(scenario.expect) <= set(inst["findings"]), (scenario.name, inst["findings"])
        if not scenario.expect:
            assert not {f for f in inst["findings"] if f.startswith("gpu-")}, inst["findings"]


def test_the_throttled_gpu_is_gpu_2_with_its_reasons(report: dict) -> None:
    facts = _instance(report, 0)["facts"]["facts"]
    slowed = facts["gpu.clocks_slowed"]["value"]
    assert [s["gpu"] for s in slowed] == [2]
    assert "power brake" in slowed[0]["reasons"] and slowed[0]["sm_clock_mhz"] == 600
    assert "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" in facts["gpu.clock_reasons"]["source"]


def test_the_lost_gpu_is_gpu_5_with_xid_79_and_its_action(report: dict) -> None:
    facts = _instance(report, 1)["facts"]["facts"]
    [event] = facts["gpu.xid_events"]["value"]
    assert event["code"] == 79 and event["gpu"] == "GPU 5" and event["action"] == "reboot-node"
    assert "DCGM_FI_DEV_XID_ERRORS" in facts["gpu.xid_last"]["source"]


def test_a_kubernetes_pod_is_joined_to_its_gpus_by_namespace_and_pod(report: dict) -> None:
    """The exporter runs at another address than the engine pod: only its namespace/pod labels join them."""
    facts = _instance(report, 3)["facts"]["facts"]
    [event] = facts["gpu.xid_events"]["value"]
    assert event["code"] == 94 and event["gpu"] == "GPU 1" and event["action"] == "restart-app"


def test_names_and_labels_come_from_the_recorded_dcgm_scrape() -> None:
    """Every DCGM name the report's GPU-fault templates read and the scenario writes is in the recorded scrape
    (fixtures/dcgm), with the scenario's labels a subset of the recorded ones (plus Prometheus's own)."""
    import re

    import yaml

    recorded = "".join((ROOT / "fixtures" / "dcgm" / name).read_text()
                       for name in ("datadog-dcgm-t4.prom", "tmax-dcgm-exporter-1.4.6.prom"))
    names = set(re.findall(r"^(DCGM_FI_\w+)\{", recorded, re.M))
    labels = set(re.findall(r'(\w+)="', recorded))
    series = yaml.safe_load((ROOT / "doctor" / "report" / "promql.yaml").read_text())["series"]
    read = {n for key in ("gpu.xid_last", "gpu.clock_reasons", "gpu.sm_clock", "gpu.temp_max",
                          "gpu.slowdown_temp", "gpu.pcie_replays", "gpu.nvlink_errors") for n in re.findall(r"DCGM_FI_\w+", series[key]["dcgm"])}
    renamed = {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS"}  # the newer spelling, an alternative in the same template
    assert read - renamed <= names, read - names
    history = scenarios().gpu_history(int(time.time()) // 60 * 60, hours=0.05)
    written = set(re.findall(r"^(DCGM_FI_\w+)\{", history, re.M))
    assert written <= names, written - names
    scenario_labels = {k for line in history.splitlines() if line.startswith("DCGM_FI_")
                       for k in re.findall(r'(\w+)="', line)}
    # the Kubernetes labels are on the file's last sample (fixtures/dcgm/SOURCES.md), left out of the kept lines
    assert scenario_labels - {"instance", "job", "namespace", "pod", "container"} <= labels, scenario_labels - labels


def test_the_replaying_pcie_link_is_gpu_4_with_its_action(report: dict) -> None:
    facts = _instance(report, 4)["facts"]["facts"]
    [replaying] = facts["gpu.pcie_replays_growing"]["value"]
    assert replaying["gpu"] == 4 and replaying["replays"] >= 1000 and replaying["action"] == "service"
    assert "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" in facts["gpu.pcie_replays"]["source"]


def test_the_nvlink_errors_are_gpu_6s_with_its_action(report: dict) -> None:
    facts = _instance(report, 5)["facts"]["facts"]
    [erring] = facts["gpu.nvlink_errors_growing"]["value"]
    assert erring["gpu"] == 6 and erring["errors"] >= 150 and erring["action"] == "reset-gpu"
    assert "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL" in facts["gpu.nvlink_errors"]["source"]
