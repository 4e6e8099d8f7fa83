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


@requires_prometheus
def test_a_fleet_past_the_detail_limit_is_charted_as_its_band_and_its_worst(tmp_path: Path) -> None:
    from doctor.report.collect import DETAIL_CHARTS

    size = DETAIL_CHARTS + 11
    info = build(tmp_path / "fleet", size, 3, 60, str(PROMTOOL))
    with PrivatePrometheus(tmp_path, data=tmp_path / "fleet" / "data") as prom:
        doc, _findings = run(ReportOptions(prometheus=prom.url, since="3h", until=str(info["end"])))
    charted = [i for i in doc["instances"] if i["charts"]]
    assert len(doc["instances"]) == size and len(charted) == DETAIL_CHARTS
    assert all(i["findings"] for i in charted)  # the worst ones; a healthy instance is in the band only
    assert {i["worst"] for i in charted} >= {"critical"}
    band = doc["fleet_charts"]["kv_usage"]
    assert set(band) == {"median", "p95", "max"}
    # Prometheus's max across the fleet is at least every charted instance's value at the same moment
    top = {t: v for t, v in band["max"] if v is not None}
    for inst in charted:
        for t, v in inst["charts"]["kv_usage"]["KV cache usage"]:
            if v is not None and t in top:
                assert v <= top[t] + 1e-9, (inst["instance"], t)
    median = dict(band["median"])
    assert all(median[t] <= top[t] + 1e-9 for t in top if median.get(t) is not None)
    assert any("each chart shows the fleet" in note for note in doc["notes"])
    # GPU charts only for the charted instances' hosts: the {gpusel} matcher reached Prometheus
    hosts = {i["instance"].rsplit(":", 1)[0] for i in charted}
    gpu_query = next(q["query"] for q in doc["queries"]["list"] if q["label"] == "chart: GPU utilization per GPU")
    assert all(h.replace(".", "\\\\.") in gpu_query for h in hosts)
