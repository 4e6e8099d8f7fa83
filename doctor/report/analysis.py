"""From what Prometheus (and the live looks) said to the ``llmdoctor.report/1`` document.

Per instance: the history facts, merged with the live facts and hints of ``--targets``, derived
(``derive_all``) and run through every playbook whose entry conditions hold (``diagnose``), exactly as
``check`` does for one server. Then the fleet: findings ranked across all instances (most severe, then most
certain first), causes counted, and the "could not check" lines folded into one line per cause with the
instances it concerns, so a hundred instances do not repeat the same missing launch command a hundred times.

The document (docs/report.md) is the single thing every renderer reads; it is redacted once, here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from doctor.facts import Facts
from doctor.findings import SEVERITIES, Finding, worst_severity
from doctor.playbook.engine import Diagnosis
from doctor.report.client import PromClient
from doctor.report.collect import CHARTS, Collected, Window, host_of, instance_facts
from doctor.report.promql import Catalog, Selector, format_duration
from doctor.report.targets import LiveResult

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


def analyze(collected: Collected, catalog: Catalog, pbset: Any, live: dict[str, LiveResult], window: Window
            ) -> list[InstanceResult]:
    """Diagnose every instance Prometheus or ``--targets`` knows of."""
    from doctor.derive import derive_all
    from doctor.playbook.engine import diagnose

    results = []
    for instance in sorted(set(collected.instances) | set(live)):
        facts = merge(live[instance].facts if instance in live else None,
                      instance_facts(collected, instance, catalog))
        derive_all(facts)
        # a report sends no requests of its own and reads no server logs
        diagnosis = diagnose(pbset, facts, unreachable=("active", "log"))
        results.append(InstanceResult(instance, facts, diagnosis, live.get(instance),
                                      _charts_of(collected, instance, gap=2.5 * collected.chart_step)))
    return results


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


def _charts_of(collected: Collected, instance: str, gap: float) -> dict[str, dict[str, list[Point]]]:
    out = {}
    for chart_id, key, _title, _unit in CHARTS:
        owner = host_of(instance) if key.startswith("gpu.") else instance
        series = collected.charts.get(chart_id, {}).get(owner)
        if series:
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
    """The ``llmdoctor.report/1`` document, redacted (docs/report.md)."""
    from doctor import __version__
    from doctor.redact import redact_obj, redact_text

    ranked = sorted(((r, f) for r in results for f in r.diagnosis.findings),
                    key=lambda pair: (*pair[1].sort_key(), pair[0].instance))
    problems = [e.error for e in client.log if e.error]
    problems += [r.live.note for r in results if r.live is not None and r.live.note]
    doc = {
        "schema": SCHEMA,
        "generated_at": iso(datetime.now(timezone.utc).timestamp()),
        "llmdoctor_version": __version__,
        "prometheus": client.display,
        "window": {"since": format_duration(window.since), "since_s": window.since, "step_s": window.step,
                   "trend_s": window.trend, "chart_step_s": collected.chart_step, "start": iso(window.start),
                   "end": iso(window.end), "start_s": window.start, "end_s": window.end,
                   "selector": selector.text},
        "queries": {"count": client.count, "failed": client.failed, "seconds": round(elapsed_s, 3),
                    "list": [{"label": e.label, "kind": e.kind, "seconds": round(e.seconds, 4), "series": e.series,
                              "error": e.error, "query": e.query} for e in client.log]},
        "problems": problems,
        "summary": _summary(results, ranked),
        "findings": [{"instance": r.instance, "engine": r.engine, **f.to_dict()} for r, f in ranked],
        "instances": [_instance(r) for r in results],
        "unchecked": _unchecked(results),
        "charts": [{"id": cid, "fact": key, "title": title, "unit": unit} for cid, key, title, unit in CHARTS],
    }
    doc = redact_obj(doc)
    # The charts are numbers under series names; only the names can hold text (a GPU label), so only they go
    # through the redactor (walking a hundred instances' points would cost a second).
    for inst, result in zip(doc["instances"], results, strict=True):
        inst["charts"] = {cid: {redact_text(label): [[int(t), None if v is None else round(v, 5)] for t, v in points]
                                for label, points in series.items()} for cid, series in result.charts.items()}
    return doc


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
    return {
        "instance": result.instance,
        "engine": result.engine,
        "worst": worst_severity(result.diagnosis.findings),
        "has_data": result.has_data,
        "findings": [f.id for f in result.diagnosis.findings],
        "live": None if result.live is None else {"note": result.live.note},
        "facts": result.facts.to_dict(),
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
