"""From what Prometheus (and the live looks) said to the ``llmdoctor.report/1`` document.

Per instance: the history facts, merged with the live facts and hints of ``--targets``, derived
(``derive_all``) and run through every playbook whose entry conditions hold (``diagnose``), exactly as
``check`` does for one server. Then the fleet: findings ranked across all instances (most severe, then most
certain first), causes counted, and the "could not check" lines folded into one line per cause with the
instances it concerns, so a hundred instances do not repeat the same missing launch command a hundred times.

The document (docs/report.md) is the single thing every renderer reads. It is redacted at its sources, not
walked when finished: what Prometheus answered is numbers under PromQL the report wrote (each distinct source
string redacted once, doctor/report/collect.py), and the text that can carry a user's secret (the selector,
the queries, label values, the live facts of --targets, errors) is redacted where it enters the document; a
walk over ten thousand instances' facts cost seconds.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone

from doctor.facts import Facts
from doctor.findings import SEVERITIES, Finding, worst_severity
from doctor.playbook.engine import Diagnosis
from doctor.report.client import PromClient
from doctor.report.collect import (
    CHARTS,
    DETAIL_CHARTS,
    Collected,
    Window,
    detail_facts,
    host_of,
    instance_facts,
)
from doctor.report.promql import Catalog, Selector, format_duration
from doctor.report.targets import LiveResult

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "llmdoctor.report/1"
#: A chart point; a None value marks a hole in the data (the line breaks there).
Point = tuple[float, "float | None"]
#: Points per chart series in the document (each keeps the min and max of its slice, so spikes survive).
CHART_POINTS = 360


@dataclass
class InstanceResult:
    instance: str
    facts: Facts
    diagnosis: Diagnosis
    live: LiveResult | None = None
    charts: dict[str, dict[str, list[Point]]] = field(default_factory=dict)

    @property
    def engine(self) -> str | None:
        return self.facts.get("metrics.engine") or self.facts.get("launch.engine")

    @property
    def has_data(self) -> bool:
        """Anything observed of its serving (history or a live scrape): without it, no finding is no news."""
        return bool(self.facts.under("metrics"))


def analyze(collected: Collected, catalog: Catalog, pbset: Any, live: dict[str, LiveResult], window: Window,
            processes: int | None = None) -> list[InstanceResult]:
    """Diagnose every instance Prometheus or ``--targets`` knows of, in instance order. Past PROCESS_FROM
    instances (or with ``processes``) the fleet is dealt out to one forked worker per CPU: the playbooks over
    every instance are most of a large report's own CPU (bench/bench_report_fleet.py), and one interpreter
    would hold them to one core."""
    instances = sorted(set(collected.instances) | set(live))
    if processes is None:
        processes = len(os.sched_getaffinity(0)) if len(instances) >= PROCESS_FROM else 1
    processes = max(1, min(processes, len(instances)))
    if processes == 1:
        return _diagnosed(instances, collected, catalog, pbset, live)
    from doctor.forkshare import deal_out

    # each worker inherits what Prometheus said and the loaded playbooks; only its results travel back
    def work(share: list[str], send: Any) -> None:
        send(list(enumerate(_diagnosed(share, collected, catalog, pbset, live))))

    return deal_out(instances, processes, work, "report")


#: From this many instances the diagnosis runs in one worker process per CPU (below it, a fork and sending the
#: results back cost more than the second core saves: ~0.7 ms of playbooks per instance, ~0.2 ms of pickling).
PROCESS_FROM = 2000


def _diagnosed(instances: list[str], collected: Collected, catalog: Catalog, pbset: Any,
               live: dict[str, LiveResult]) -> list[InstanceResult]:
    from doctor.derive import derive_all
    from doctor.playbook.engine import diagnose

    results = []
    for instance in instances:
        facts = merge(live[instance].facts if instance in live else None,
                      instance_facts(collected, instance, catalog))
        derive_all(facts)
        # a report sends no requests of its own and reads no server logs
        diagnosis = diagnose(pbset, facts, unreachable=("active", "log"))
        results.append(InstanceResult(instance, facts, diagnosis, live.get(instance)))
    return results


def charted(results: list[InstanceResult]) -> list[str]:
    """The instances charted one by one: every one of a small fleet; of a larger one the DETAIL_CHARTS most in
    need of a look (worst finding first, then most findings), the rest drawn as the fleet's band."""
    if len(results) <= DETAIL_CHARTS:
        return [r.instance for r in results]
    ranked = sorted((r for r in results if r.diagnosis.findings),
                    key=lambda r: (min(f.sort_key() for f in r.diagnosis.findings), -len(r.diagnosis.findings),
                                   r.instance))
    return [r.instance for r in ranked[:DETAIL_CHARTS]]


def attach_detail(results: list[InstanceResult], collected: Collected, catalog: Catalog) -> None:
    """Each closely looked-at instance's detail facts and chart series (thinned, with breaks where the data
    has holes)."""
    for result in results:
        detail_facts(collected, result.instance, catalog, result.facts)
        if result.instance in collected.detailed:
            result.charts = _charts_of(collected, result.instance)


def merge(live: Facts | None, history: Facts) -> Facts:
    """History facts describe the window and win for metrics/GPU; launch facts read from labels only fill
    what the live server (server_info) or the hints did not say."""
    facts = Facts()
    if live is not None:
        facts.update(live)
    for fact in history:
        if fact.key.startswith("launch."):
            facts.set_default(fact.key, fact.value, fact.source, observed=fact.observed, learnt=fact.learnt)
        else:
            facts.set(fact.key, fact.value, fact.source, observed=fact.observed, learnt=fact.learnt)
    for key, message in history.errors.items():
        facts.error(key, message)
    return facts


def _charts_of(collected: Collected, instance: str) -> dict[str, dict[str, list[Point]]]:
    out = {}
    for chart_id, key, _title, _unit in CHARTS:
        owner = host_of(instance) if key.startswith("gpu.") else instance
        series = collected.charts.get(chart_id, {}).get(owner)
        if series:
            gap = 2.5 * collected.chart_steps.get(chart_id, 0.0)
            out[chart_id] = {label: thin(points, gap) for label, points in sorted(series.items())}
    return out


def thin(points: list[tuple[float, float]], gap: float, limit: int = CHART_POINTS) -> list[Point]:
    """At most about ``limit`` points, with a ``(t, None)`` break wherever the data has a hole longer than
    ``gap`` (a scrape outage stays visible as one)."""
    runs: list[list[tuple[float, float]]] = []
    for point in points:
        if runs and point[0] - runs[-1][-1][0] <= gap:
            runs[-1].append(point)
        else:
            runs.append([point])
    out: list[Point] = []
    for run in runs:
        if out:
            out.append((run[0][0], None))
        out.extend(downsample(run, max(2, limit * len(run) // max(1, len(points)))))
    return out


def downsample(points: list[tuple[float, float]], limit: int = CHART_POINTS) -> list[tuple[float, float]]:
    """At most ``limit`` points: each slice keeps its lowest and highest point, in time order."""
    if len(points) <= limit:
        return points
    size = -(-len(points) * 2 // limit)
    out: list[tuple[float, float]] = []
    for start in range(0, len(points), size):
        chunk = points[start:start + size]
        low, high = min(chunk, key=lambda p: p[1]), max(chunk, key=lambda p: p[1])
        out.extend(sorted({low, high}))
    return out


# -- the document ---------------------------------------------------------------------------------------------
def document(*, client: PromClient, window: Window, selector: Selector, results: list[InstanceResult],
             collected: Collected, catalog: Catalog, elapsed_s: float) -> dict[str, Any]:
    """The ``llmdoctor.report/1`` document, redacted at its sources (docs/report.md)."""
    from doctor import __version__
    from doctor.redact import redact_text

    ranked = sorted(((r, f) for r in results for f in r.diagnosis.findings),
                    key=lambda pair: (*pair[1].sort_key(), pair[0].instance))
    problems = [e.problem for e in client.log if e.problem]
    problems += [redact_text(r.live.note) for r in results if r.live is not None and r.live.note]
    step = collected.chart_steps.get("kv_usage", window.chart_step)
    return {
        "schema": SCHEMA,
        "generated_at": iso(datetime.now(timezone.utc).timestamp()),
        "llmdoctor_version": __version__,
        "prometheus": redact_text(client.display),
        "window": {"since": format_duration(window.since), "since_s": window.since, "step_s": window.step,
                   "trend_s": window.trend, "chart_step_s": step, "start": iso(window.start),
                   "end": iso(window.end), "start_s": window.start, "end_s": window.end,
                   "selector": redact_text(selector.text)},
        "queries": {"count": client.count, "failed": client.failed, "seconds": round(elapsed_s, 3),
                    "list": [{"label": e.label, "kind": e.kind, "seconds": round(e.seconds, 4), "series": e.series,
                              "error": e.error, "query": redact_text(e.query)} for e in client.log]},
        "problems": problems,
        "notes": list(collected.notes),
        "summary": _summary(results, ranked),
        "findings": [{"instance": r.instance, "engine": r.engine, **f.to_dict()} for r, f in ranked],
        "instances": [_instance(r) for r in results],
        "unchecked": _unchecked(results),
        "charts": [{"id": cid, "fact": key, "title": title, "unit": unit} for cid, key, title, unit in CHARTS],
        "fleet_charts": distributions(results) if len(results) > DETAIL_CHARTS else [],
    }


#: A fleet past DETAIL_CHARTS is drawn as how its instances spread over each of these facts (already read for
#: the diagnosis: no query): (id, fact, title, unit, upper bounds of the bins).
DISTRIBUTIONS = (
    ("kv_usage", "metrics.kv_usage", "KV cache usage (p95)", "ratio", tuple(i / 10 for i in range(1, 11))),
    ("queued", "metrics.queued", "Queued requests (p95)", "count", (0, 1, 10, 100, 1000, math.inf)),
    ("preemptions", "metrics.preemptions_per_s", "Preemptions per second", "rate", (0, 0.001, 0.01, 0.1, 1, math.inf)),
    ("gpu_util", "gpu.util_max", "Busiest GPU's utilization", "ratio", tuple(i / 10 for i in range(1, 11))),
)


def distributions(results: list[InstanceResult]) -> list[dict[str, Any]]:
    """For each DISTRIBUTIONS fact, how many instances fall in each bin (``to`` inclusive), and how many do
    not have it."""
    out = []
    for chart_id, key, title, unit, bounds in DISTRIBUTIONS:
        counts, unknown = [0] * len(bounds), 0
        for result in results:
            value = result.facts.get(key)
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                unknown += 1
                continue
            counts[next((i for i, top in enumerate(bounds) if value <= top), len(bounds) - 1)] += 1
        lows = (-math.inf, *bounds[:-1])
        out.append({"id": chart_id, "fact": key, "title": title, "unit": unit, "unknown": unknown,
                    "bins": [{"from": None if math.isinf(lo) else lo, "to": None if math.isinf(hi) else hi,
                              "instances": n} for lo, hi, n in zip(lows, bounds, counts, strict=True)]})
    return out


def _points(points: list[Point]) -> list[list[float | None]]:
    return [[int(t), None if v is None else round(v, 5)] for t, v in points]


def _summary(results: list[InstanceResult], ranked: list[tuple[InstanceResult, Finding]]) -> dict[str, Any]:
    by_cause: dict[str, list[str]] = {}
    for r, f in ranked:
        by_cause.setdefault(f.id, [])
        if r.instance not in by_cause[f.id]:
            by_cause[f.id].append(r.instance)
    counts = Counter(f.severity for _, f in ranked)
    return {
        "instances": len(results),
        "engines": dict(Counter(r.engine or "unknown" for r in results)),
        "with_findings": sum(1 for r in results if r.diagnosis.findings),
        "healthy": [r.instance for r in results if r.has_data and not r.diagnosis.findings],
        "no_data": [r.instance for r in results if not r.has_data],
        "findings": {s: counts.get(s, 0) for s in reversed(SEVERITIES)},
        "worst": worst_severity([f for _, f in ranked]),
        "causes": by_cause,
    }


def _instance(result: InstanceResult) -> dict[str, Any]:
    from doctor.redact import redact_obj, redact_text

    facts = result.facts.to_dict()
    return {
        "instance": result.instance,
        "engine": result.engine,
        "worst": worst_severity(result.diagnosis.findings),
        "has_data": result.has_data,
        "findings": [f.id for f in result.diagnosis.findings],
        # the live look read a server's own answers (server_info, the hints' files): redacted here, per instance
        "live": None if result.live is None else {"note": result.live.note and redact_text(result.live.note)},
        "facts": facts if result.live is None else redact_obj(facts),
        # the series names are the only text (a GPU label): the points are numbers
        "charts": {cid: {redact_text(label): _points(points) for label, points in series.items()}
                   for cid, series in result.charts.items()},
    }


def _unchecked(results: list[InstanceResult]) -> list[dict[str, Any]]:
    folded: dict[tuple[str, str], dict[str, Any]] = {}
    for r in results:
        for item in r.diagnosis.unchecked:
            entry = folded.setdefault((item.symptom, item.cause), {**item.to_dict(), "instances": []})
            entry["missing"] = list(dict.fromkeys([*entry["missing"], *item.missing]))
            entry["instances"].append(r.instance)
    return sorted(folded.values(), key=lambda e: (-len(e["instances"]), e["symptom"], e["cause"]))


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
