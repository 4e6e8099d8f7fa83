"""`llmdoctor report` against a horizontally scalable store: VictoriaMetrics (Debian's `victoria-metrics`),
through its Prometheus-compatible query API, holding the same backfilled history as a real Prometheus.

The history is SCENARIO data (fixtures/prometheus/scenarios.py, as in test_report_prometheus.py): the same
OpenMetrics text is backfilled into Prometheus by promtool and imported into VictoriaMetrics by its import
API. The report must reach the same verdicts from both; the numbers may differ where the two engines differ
on purpose (VictoriaMetrics' rate() does not extrapolate to the window's edges; docs/report.md "Stores").
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from conftest import run_cli
from support.prometheus import (
    PrivatePrometheus,
    PrivateVictoria,
    backfill,
    requires_prometheus,
    requires_victoria,
    scenarios,
)

pytestmark = [requires_prometheus, requires_victoria]

#: Facts read as levels (quantiles, last values, label counts): the same samples give the same value.
LEVELS = ("metrics.kv_usage", "metrics.running", "metrics.queued", "metrics.prefix_hit_rate",
          "metrics.kv_capacity_tokens", "metrics.scrape_up_ratio", "launch.ep", "launch.dp", "gpu.util",
          "gpu.memory_used", "launch.prefix_caching", "launch.mem_fraction")


def _report(url: str, end: int, *args: str) -> dict:
    result = run_cli("report", "--prometheus", url, "--until", str(end), "--format", "json",
                     "--selector", '{job="llm"}', *args, timeout=120)
    assert result.returncode == 1, result.stderr  # findings at warning and above
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict, dict]]:
    """The report of one history from Prometheus and from VictoriaMetrics."""
    end = int(time.time()) // 60 * 60 - 60
    text = scenarios().history(end)
    prom_dir, vm_dir = tmp_path_factory.mktemp("prometheus"), tmp_path_factory.mktemp("victoria")
    with PrivatePrometheus(prom_dir, data=backfill(text, prom_dir)) as prom:
        from_prometheus = _report(prom.url, end)
    with PrivateVictoria(vm_dir) as vm:
        assert vm.load(text.splitlines()) > 100_000
        from_victoria = _report(vm.url, end)
    yield from_prometheus, from_victoria


def _by_instance(doc: dict) -> dict[str, dict]:
    return {i["instance"]: i for i in doc["instances"]}


def test_same_verdicts_as_prometheus(both: tuple[dict, dict]) -> None:
    prom, vm = both
    mod = scenarios()
    p, v = _by_instance(prom), _by_instance(vm)
    assert set(p) == set(v) == {mod.instance_of(s) for s in mod.SCENARIOS}
    for scenario in mod.SCENARIOS:
        instance = mod.instance_of(scenario)
        assert v[instance]["findings"] == p[instance]["findings"] == list(scenario.expect), scenario.name
    assert vm["summary"]["findings"] == prom["summary"]["findings"]
    assert [(f["instance"], f["id"]) for f in vm["findings"]] == [(f["instance"], f["id"]) for f in prom["findings"]]
    assert vm["problems"] == [] and vm["queries"]["failed"] == 0
    assert vm["queries"]["count"] == prom["queries"]["count"]  # the same plan, query for query


def test_level_facts_agree_and_cite_the_same_sources(both: tuple[dict, dict]) -> None:
    prom, vm = both
    p, v = _by_instance(prom), _by_instance(vm)
    for instance, item in p.items():
        pf, vf = item["facts"]["facts"], v[instance]["facts"]["facts"]
        assert set(pf) - {"metrics.time_to_full_s"} == set(vf) - {"metrics.time_to_full_s"}, instance
        for key in LEVELS:
            if key in pf:
                assert vf[key]["value"] == pytest.approx(pf[key]["value"], rel=0.01), (instance, key)
        for key, fact in pf.items():  # the same alternative answered (the slope of a flat, full cache aside)
            if key not in ("metrics.time_to_full_s", "metrics.kv_fill_rate"):
                assert vf[key]["source"] == fact["source"], (instance, key)
        # rates: VictoriaMetrics does not extrapolate to the window's edges; within a few per mille here
        for key in ("metrics.gen_tokens_per_s", "metrics.prompt_tokens_per_s"):
            if key in pf:
                assert vf[key]["value"] == pytest.approx(pf[key]["value"], rel=0.01), (instance, key)


def test_range_queries_draw_the_same_charts(both: tuple[dict, dict]) -> None:
    prom, vm = both
    p, v = _by_instance(prom), _by_instance(vm)
    for instance, item in p.items():
        assert set(v[instance]["charts"]) == set(item["charts"]), instance
        for chart, series in item["charts"].items():
            assert set(v[instance]["charts"][chart]) == set(series)
            for name, points in series.items():
                assert abs(len(v[instance]["charts"][chart][name]) - len(points)) <= 3, (instance, chart)
