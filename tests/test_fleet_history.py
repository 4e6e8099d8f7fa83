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
def test_a_fleet_past_the_detail_limit_is_drawn_as_its_spread_and_its_worst(tmp_path: Path) -> None:
    from doctor.report.collect import DETAIL_CHARTS

    size = DETAIL_CHARTS + 11
    info = build(tmp_path / "fleet", size, 3, 60, str(PROMTOOL))
    with PrivatePrometheus(tmp_path, data=tmp_path / "fleet" / "data") as prom:
        doc, _findings = run(ReportOptions(prometheus=prom.url, since="3h", until=str(info["end"])))
    charted = [i for i in doc["instances"] if i["charts"]]
    assert len(doc["instances"]) == size and len(charted) == DETAIL_CHARTS
    assert all(i["findings"] for i in charted)  # the worst ones; a healthy instance is only in the spread
    assert {i["worst"] for i in charted} >= {"critical"}
    assert doc["notes"] == [f"{size} instances: charted, and asked their latencies and token rates, are the "
                            f"{DETAIL_CHARTS} with findings most in need of a look; the fleet is drawn as distributions"]
    # the detail facts (no playbook reads them) only for those, and each other instance says why not
    for inst in doc["instances"]:
        facts = inst["facts"]
        if inst["charts"]:
            assert "metrics.ttft_p99" in facts["facts"], inst["instance"]
        else:
            assert "metrics.ttft_p99" not in facts["facts"]
            assert facts["errors"]["metrics.ttft_p99"].startswith(f"asked only for the (at most {DETAIL_CHARTS})")
    detail_queries = [q for q in doc["queries"]["list"] if q["label"] == "metrics.ttft_p99"]
    assert len(detail_queries) == 1 and 'instance=~"' in detail_queries[0]["query"]
    assert detail_queries[0]["series"] == DETAIL_CHARTS  # Prometheus answered for those only
    # the spread counts every instance once, from the facts the diagnosis read
    spread = {c["id"]: c for c in doc["fleet_charts"]}
    kv = spread["kv_usage"]
    assert sum(b["instances"] for b in kv["bins"]) + kv["unknown"] == size and kv["unknown"] == 0
    exhausted = sum(1 for i in doc["instances"] if i["facts"]["facts"]["metrics.kv_usage"]["value"] > 0.9)
    assert kv["bins"][-1]["instances"] == exhausted > 0
    # GPU charts only for the charted instances' hosts: the {gpusel} matcher reached Prometheus
    hosts = {i["instance"].rsplit(":", 1)[0] for i in charted}
    gpu_query = next(q["query"] for q in doc["queries"]["list"] if q["label"] == "chart: GPU utilization per GPU")
    assert all(h.replace(".", "\\\\.") in gpu_query for h in hosts)


@requires_prometheus
def test_a_fleet_diagnosed_in_worker_processes_gives_the_same_document(tmp_path: Path, monkeypatch) -> None:
    # past PROCESS_FROM instances the playbooks run in one forked worker per CPU: same document, byte for byte
    import json
    import os

    from doctor.report import analysis

    info = build(tmp_path / "fleet", 13, 3, 60, str(PROMTOOL))
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})  # two workers, even on a one-CPU runner
    workers: list[int] = []
    real = analysis._diagnosed
    monkeypatch.setattr(analysis, "_diagnosed", lambda *a: workers.append(os.getpid()) or real(*a))
    with PrivatePrometheus(tmp_path, data=tmp_path / "fleet" / "data") as prom:
        options = ReportOptions(prometheus=prom.url, since="3h", until=str(info["end"]))
        documents = []
        for processes_from in (10**9, 2):
            monkeypatch.setattr(analysis, "PROCESS_FROM", processes_from)
            doc, findings = run(options)
            del doc["generated_at"], doc["queries"]
            documents.append((json.dumps(doc, sort_keys=True), [f.id for f in findings]))
    assert workers == [os.getpid()]  # the forked workers' calls are in their own copies of the list
    assert documents[0] == documents[1]
    assert len(json.loads(documents[1][0])["instances"]) == 13
