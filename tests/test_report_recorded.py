"""`llmdoctor rules --report` and the report reading what they record: a real Prometheus, the rules checked by
promtool, their history backfilled by ``promtool tsdb create-blocks-from rules`` over the same SCENARIO history
as test_report_prometheus.py (fixtures/prometheus/scenarios.py, not real captures).

The report must reach the same verdicts from the recorded series as from asking every query itself, say in the
sources which facts came from a recording, and never use a recording of another query (another window here).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import run_cli
from support.prometheus import (
    PROMTOOL,
    PrivatePrometheus,
    PrivateVictoria,
    backfill,
    backfill_rules,
    free_port,
    requires_prometheus,
    requires_victoria,
    scenarios,
)

pytestmark = requires_prometheus

SELECTOR = '{job="llm"}'


def _report(url: str, end: int, *args: str) -> dict:
    result = run_cli("report", "--prometheus", url, "--until", str(end), "--format", "json", "--selector", SELECTOR,
                     *args, timeout=120)
    assert result.returncode == 1, result.stderr  # findings at warning and above
    return json.loads(result.stdout)


def _rules(path: Path, *args: str) -> Path:
    result = run_cli("rules", "--report", "--selector", SELECTOR, "-o", str(path), *args)
    assert result.returncode == 0, result.stderr
    checked = subprocess.run([str(PROMTOOL), "check", "rules", str(path)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0 and "SUCCESS" in checked.stdout, checked.stdout + checked.stderr
    return path


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict]]:
    """Reports of one history: asking everything, from the recordings, and with only another window's recorded."""
    workdir = tmp_path_factory.mktemp("prometheus-recorded")
    end = int(time.time()) // 600 * 600 - 600
    data = backfill(scenarios().history(end), workdir)
    rules = _rules(workdir / "report-rules.yml")
    other = _rules(workdir / "other-window.yml", "--since", "12h")
    with PrivatePrometheus(workdir, data=data) as prom:
        asked = _report(prom.url, end)
        # the rules' history: evaluations every 10 minutes over the last half hour, through the report's end
        backfill_rules(other, prom.url, end - 1800, end + 600, data)
    with PrivatePrometheus(workdir, data=data) as prom:
        other_window = _report(prom.url, end)
    with PrivatePrometheus(workdir, data=data) as prom:
        backfill_rules(rules, prom.url, end - 1800, end + 600, data)
    with PrivatePrometheus(workdir, data=data) as prom:
        yield {"asked": asked, "other": other_window, "recorded": _report(prom.url, end),
               "refused": _report(prom.url, end, "--no-recorded")}


def _by_instance(doc: dict) -> dict[str, dict]:
    return {i["instance"]: i for i in doc["instances"]}


def test_the_rules_record_every_fleet_wide_query_the_report_asks(tmp_path: Path, reports: dict[str, dict]) -> None:
    import yaml

    body = yaml.safe_load(_rules(tmp_path / "r.yml").read_text())
    (group,) = body["groups"]
    asked = {e["query"] for e in reports["asked"]["queries"]["list"] if e["kind"] == "instant"}
    recorded = [rule["expr"] for rule in group["rules"]]
    # the very text the report sends (a recording is used only for it), one rule per fleet-wide query
    assert group["interval"] == "10m" and len(recorded) > 20 and set(recorded) <= asked
    assert all(rule["record"].startswith("llmdoctor:report:") and set(rule["labels"]) ==
               {"llmdoctor_query", "llmdoctor_every"} for rule in group["rules"])


def test_same_verdicts_from_the_recordings(reports: dict[str, dict]) -> None:
    mod = scenarios()
    asked, recorded = _by_instance(reports["asked"]), _by_instance(reports["recorded"])
    assert set(asked) == set(recorded) == {mod.instance_of(s) for s in mod.SCENARIOS}
    for scenario in mod.SCENARIOS:
        instance = mod.instance_of(scenario)
        assert recorded[instance]["findings"] == asked[instance]["findings"] == list(scenario.expect), scenario.name
    assert reports["recorded"]["summary"]["findings"] == reports["asked"]["summary"]["findings"]
    assert reports["recorded"]["problems"] == [] and reports["recorded"]["queries"]["failed"] == 0


def test_recorded_facts_say_so_and_the_store_read_one_sample_each(reports: dict[str, dict]) -> None:
    doc = reports["recorded"]
    mod = scenarios()
    facts = _by_instance(doc)[mod.instance_of(mod.SCENARIOS[0])]["facts"]["facts"]
    assert "recorded: llmdoctor:report:metrics_kv_usage" in facts["metrics.kv_usage"]["source"]
    assert "quantile_over_time(0.95" in facts["metrics.kv_usage"]["source"]  # what was recorded, still cited
    reads = [e for e in doc["queries"]["list"] if e["kind"] == "instant" and "llmdoctor:report:" in e["query"]]
    assert reads and all(e["query"].startswith("last_over_time(llmdoctor:report:") for e in reads)
    assert any(e["kind"] == "labels" for e in doc["queries"]["list"])  # which recordings: the index, once
    assert any("recording rules" in note for note in doc["notes"])


def test_a_recording_of_another_window_is_not_used(reports: dict[str, dict]) -> None:
    other, asked = reports["other"], reports["asked"]
    assert not any("recorded:" in fact["source"] for item in other["instances"]
                   for fact in item["facts"]["facts"].values())
    # every query asked as without any recording: the same facts, values and sources
    assert {i: item["facts"]["facts"] for i, item in _by_instance(other).items()} == \
        {i: item["facts"]["facts"] for i, item in _by_instance(asked).items()}


def test_the_kv_slope_is_asked_live(reports: dict[str, dict]) -> None:
    """Of the last --trend, not of the window: an evaluation up to --every old would be another slope."""
    for item in reports["recorded"]["instances"]:
        for key in ("metrics.kv_fill_rate", "metrics.time_to_full_s"):
            fact = item["facts"]["facts"].get(key)
            assert fact is None or "recorded:" not in fact["source"], (item["instance"], key)


def test_no_recorded_asks_everything_itself(reports: dict[str, dict]) -> None:
    refused = reports["refused"]
    assert not any("llmdoctor:report:" in e["query"] for e in refused["queries"]["list"])
    assert [(f["instance"], f["id"]) for f in refused["findings"]] == \
        [(f["instance"], f["id"]) for f in reports["recorded"]["findings"]]


VMALERT = shutil.which("vmalert")


@requires_victoria
@pytest.mark.skipif(VMALERT is None, reason="vmalert not installed (Debian: apt-get install victoria-metrics)")
def test_victoria_metrics_with_vmalert_recordings(tmp_path: Path, reports: dict[str, dict]) -> None:
    """The same rules file evaluated by VictoriaMetrics' own rule engine (vmalert's replay over the history, its
    results written back to VictoriaMetrics): the same verdicts as Prometheus asked everything."""
    end = reports["asked"]["window"]["end_s"]
    rules = _rules(tmp_path / "report-rules.yml")
    with PrivateVictoria(tmp_path) as vm:
        assert vm.load(scenarios().history(int(end)).splitlines()) > 100_000
        stamp = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
        replay = subprocess.run([VMALERT, f"-rule={rules}", f"-datasource.url={vm.url}", f"-remoteWrite.url={vm.url}",
                                 f"-replay.timeFrom={stamp(end - 1800)}", f"-replay.timeTo={stamp(end)}",
                                 "-replay.disableProgressBar", "-replay.rulesDelay=0s", "-loggerLevel=ERROR",
                                 f"-httpListenAddr=127.0.0.1:{free_port()}"],
                                capture_output=True, text=True, timeout=300)
        assert replay.returncode == 0, replay.stderr[-2000:]
        vm.flush()
        doc = _report(vm.url, int(end))
    recorded = {key for item in doc["instances"] for key, fact in item["facts"]["facts"].items()
                if "recorded:" in fact["source"]}
    assert "metrics.kv_usage" in recorded and "metrics.kv_fill_rate" not in recorded
    assert [(f["instance"], f["id"]) for f in doc["findings"]] == \
        [(f["instance"], f["id"]) for f in reports["asked"]["findings"]]
