"""bench/fleet_history.py (the 1,000-instance SCENARIO history behind bench_report_fleet.py) kept honest at a small
size: its windows backfill with the real promtool, a real Prometheus serves them, and `report` names, for each
deployment kind, the cause that kind was written to show — and nothing for the healthy one."""

from __future__ import annotations

import sys
from pathlib import Path

from conftest import ROOT
from support.prometheus import PROMTOOL, PrivatePrometheus, requires_prometheus

sys.path.insert(0, str(ROOT / "bench"))

from fleet_history import EXPECT, KINDS, Fleet, build  # noqa: E402

from doctor.report.pipeline import ReportOptions, run  # noqa: E402


def test_values_are_closed_forms_so_windows_are_independent() -> None:
    fleet = Fleet(5, 0, 7200)
    assert len(fleet.instances) == 5 and set(fleet.instances.values()) == set(KINDS)
    for _kind, series in fleet.families.values():
        for s in series[:3]:
            assert s.value(3600) == s.value(3600)  # no hidden state: any window can be written alone


@requires_prometheus
def test_small_fleet_backfills_and_report_names_each_kind(tmp_path: Path) -> None:
    info = build(tmp_path / "fleet", 10, 3, 60, str(PROMTOOL))
    assert info["instances"] == 10 and info["windows"] >= 2
    assert not list((tmp_path / "fleet").glob("*.om"))  # each window deleted once backfilled
    with PrivatePrometheus(tmp_path, data=tmp_path / "fleet" / "data") as prom:
        doc, _findings = run(ReportOptions(prometheus=prom.url, since="3h", until=str(info["end"])))
    named: dict[str, set[str]] = {}
    for item in doc["instances"]:
        kind = KINDS[int(item["instance"].split(":")[0].rsplit(".", 1)[1]) - 1]
        named.setdefault(kind, set()).update(item["findings"])
    assert len(named) == len(KINDS)
    for kind, expected in EXPECT.items():
        assert set(expected) <= named[kind], (kind, named[kind])
    assert not named["healthy"] & {"kv-cache-exhausted", "max-num-seqs-limit", "kv-filling-fast"}


def test_chart_points_shrink_only_for_large_fleets() -> None:
    from doctor.report.collect import MAX_CHART_POINTS, MIN_CHART_POINTS, Window, chart_points

    assert chart_points(1) == chart_points(100) == MAX_CHART_POINTS  # reports up to ~330 instances unchanged
    assert chart_points(1000) == 120 and chart_points(100_000) == MIN_CHART_POINTS
    day = Window(86400, 60, 900, 0)
    assert day.chart_step == 240 and Window(86400, 60, 900, 0, chart_points(1000)).chart_step == 720
