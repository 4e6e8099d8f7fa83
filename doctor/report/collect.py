"""The fleet from Prometheus: one query per fact for every instance at once, and the charts' series.

Every fact of promql.yaml with a ``report`` reducer is asked once, at the end of the window, over the whole
fleet; PromQL does the heavy lifting on the server (``quantile_over_time``, ``rate``, ``deriv``,
``histogram_quantile``), so the answer is one number per instance however long the window. Each alternative
of a fact is tagged (``label_replace(..., "llmdoctor_alt", "3", "", "")``) so the answer also says which
metric name, and so which engine, it came from: that expression becomes the fact's source.

A query that fails costs only its facts (recorded as errors, so the trees say what they could not check);
the run ends only when Prometheus cannot be reached at all.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from doctor.facts import Facts
from doctor.report.client import PromClient, QueryError, Sample
from doctor.report.promql import (
    HOST_RE,
    TAG,
    Alternative,
    Catalog,
    Entry,
    LabelFact,
    Params,
    format_duration,
    join_or,
)

#: Charts drawn per instance: (id, fact whose template is plotted, title, unit). GPU utilization is per GPU.
CHARTS = (
    ("kv_usage", "metrics.kv_usage", "KV cache usage", "ratio"),
    ("queued", "metrics.queued", "Queued requests", "count"),
    ("preemptions", "metrics.preemptions_per_s", "Preemptions per second", "rate"),
    ("gpu_util", "gpu.util", "GPU utilization per GPU", "ratio"),
)
#: Points per chart series: about one per pixel of a chart (Prometheus would give up to 11,000; more only costs).
MAX_CHART_POINTS = 360
#: Points of one chart's series all together. Past ~330 instances each series gets fewer (never under
#: MIN_CHART_POINTS): the points are most of a large report's memory, and 1,000 instances at 360 points peaked
#: at ~950 MiB (bench/bench_report_fleet.py); at 120 points, ~280 MiB.
CHART_POINT_BUDGET = 120_000
MIN_CHART_POINTS = 90
#: Queries in flight at once.
PARALLEL_QUERIES = 4
#: Rates on charts look back at least this far, so a rate always has two scrapes to work with.
MIN_CHART_RANGE_S = 120.0
_HOST = re.compile(HOST_RE)
#: Why whole namespaces stay unknown in a report, and which --targets key (the check --targets file) fills them.
NOT_IN_HISTORY = {
    "launch": "Prometheus does not hold the launch command: give the instance a `command:` in --targets",
    "model": "Prometheus does not hold the model config: give the instance a `config:` in --targets",
    "gpu": "Prometheus does not hold the GPU model: give the instance a `gpu:` in --targets",
    "server": "Prometheus does not hold /server_info: list the instance's endpoint in --targets",
    "workload": "a report does not know the workload",
}


@dataclass(frozen=True)
class Window:
    """What the report covers: ``since`` seconds up to ``end``, subqueries every ``step``."""

    since: float
    step: float
    trend: float
    end: float
    chart_points: int = MAX_CHART_POINTS

    @property
    def start(self) -> float:
        return self.end - self.since

    @property
    def chart_step(self) -> float:
        return max(self.step, math.ceil(self.since / self.chart_points))


def chart_points(instances: int) -> int:
    """Points per chart series for a fleet of ``instances``: MAX_CHART_POINTS within CHART_POINT_BUDGET."""
    return max(MIN_CHART_POINTS, min(MAX_CHART_POINTS, CHART_POINT_BUDGET // max(1, instances)))


@dataclass(frozen=True)
class Observation:
    value: Any
    source: str
    engine: str | None


@dataclass
class Collected:
    """Everything read from Prometheus, before any playbook runs."""

    #: instance → fact key → observation
    instances: dict[str, dict[str, Observation]] = field(default_factory=dict)
    #: host → fact key (a GPU list) → {gpu: (value, source)}
    hosts: dict[str, dict[str, dict[str, tuple[float, str]]]] = field(default_factory=dict)
    #: fact key → why it could not be read for anyone (a failed query)
    errors: dict[str, str] = field(default_factory=dict)
    #: chart id → instance (or host, for GPUs) → series label → points
    charts: dict[str, dict[str, dict[str, list[tuple[float, float]]]]] = field(default_factory=dict)
    #: seconds between chart points: the window's, thinned for a large fleet (chart_points)
    chart_step: float = 0.0

    def any_data(self) -> bool:
        return bool(self.instances)


def collect(client: PromClient, catalog: Catalog, window: Window, params: Params) -> Collected:
    """Ask every report fact, then (when there was anything) every chart; ``params`` carries the selector
    (ranges are the window's). Queries run a few at a time: Prometheus evaluates them side by side."""
    out = Collected(chart_step=window.chart_step)
    report_params = Params(selector=params.selector, range=window.since, trend=window.trend, step=window.step,
                           lookback=window.since)
    asks = [_ask_entry(client, catalog, entry, window, report_params, out)
            for entry in catalog.entries.values() if entry.report is not None]
    asks += [_ask_label(client, catalog, fact, report_params, out) for fact in catalog.label_facts]
    _run_all(asks)
    if out.any_data():
        window = replace(window, chart_points=chart_points(len(out.instances)))
        out.chart_step = window.chart_step
        chart_params = Params(selector=params.selector, range=max(window.chart_step, MIN_CHART_RANGE_S),
                              trend=window.trend, step=window.step, lookback=window.since)
        _run_all([_ask_chart(client, catalog, chart_id, key, title, window, chart_params, out)
                  for chart_id, key, title, _unit in CHARTS])
    return out


@dataclass
class _Ask:
    """One query: ``run`` in a worker thread, then ``apply`` (or ``fail``) in the calling thread, in order."""

    run: Callable[[], list[Sample]]
    apply: Callable[[list[Sample]], None]
    fail: Callable[[QueryError], None]


def _run_all(asks: list[_Ask]) -> None:
    pool = ThreadPoolExecutor(max_workers=PARALLEL_QUERIES, thread_name_prefix="promql")
    try:
        futures = [pool.submit(ask.run) for ask in asks]
        for ask, future in zip(asks, futures, strict=True):
            try:
                samples = future.result()
            except QueryError as exc:
                ask.fail(exc)
                continue
            ask.apply(samples)
    finally:  # Prometheus unreachable (TargetError): the queued queries are not sent
        pool.shutdown(wait=True, cancel_futures=True)


def _ask_entry(client: PromClient, catalog: Catalog, entry: Entry, window: Window, params: Params,
               out: Collected) -> _Ask:
    """One fact for the fleet. ``p95``: each series' 95th percentile over the window, then the template's
    aggregation over ranks (the worst rank's KV, the ranks' queues added up): one pass over the samples,
    where a subquery of the aggregate would evaluate it at every step."""
    if entry.report == "p95":
        params = replace(params, p95_over=window.since)
    alternatives = catalog.alternatives(entry.key, params, catalog.inline)
    query = join_or([f'label_replace({alt.expr}, "{TAG}", "{i}", "", "")' for i, alt in enumerate(alternatives)],
                    entry.or_on)

    def apply(samples: list[Sample]) -> None:
        for sample in samples:
            index = int(sample.labels.get(TAG, -1))
            if 0 <= index < len(alternatives) and math.isfinite(sample.value):
                alt = alternatives[index]
                how = f" ({entry.note})" if entry.note else ""
                _observe(out, entry, alt, f"promql{how}: {alt.expr}", sample)

    return _Ask(lambda: client.instant(entry.key, query), apply,
                lambda exc: out.errors.__setitem__(entry.key, str(exc)))


def _observe(out: Collected, entry: Entry, alt: Alternative, source: str, sample: Sample) -> None:
    if entry.kind == "list":
        host, gpu = sample.labels.get("host"), sample.labels.get("gpu", "")
        if host:
            out.hosts.setdefault(host, {}).setdefault(entry.key, {})[gpu] = (sample.value, source)
        return
    instance = sample.labels.get("instance")
    if not instance:
        return
    value: Any = _number(sample.value)
    if entry.kind == "engine":
        value = alt.engine
    elif entry.kind == "flag":
        value = True
    elif entry.kind == "bool":
        value = sample.value >= 1
    out.instances.setdefault(instance, {})[entry.key] = Observation(value, source, alt.engine)


def _ask_label(client: PromClient, catalog: Catalog, fact: LabelFact, params: Params, out: Collected) -> _Ask:
    """``group by (instance, engine, <label>) (last_over_time(<info metric>[window]))``, smallest value wins
    for numbers (each DP engine has its own pool), first for the rest."""
    alternatives = catalog.label_selector(fact, params)
    window = format_duration(params.range)
    parts = [f'label_replace(group by (instance, engine, {fact.label}) (last_over_time({alt.expr}[{window}])), '
             f'"{TAG}", "{i}", "", "")' for i, alt in enumerate(alternatives)]

    def apply(samples: list[Sample]) -> None:
        for sample in samples:
            instance, text = sample.labels.get("instance"), sample.labels.get(fact.label)
            value = fact.convert(text) if text is not None else None
            if not instance or value is None:
                continue
            index = int(sample.labels.get(TAG, 0))
            name = alternatives[index].names[0] if 0 <= index < len(alternatives) else fact.family
            observed = out.instances.setdefault(instance, {})
            previous = observed.get(fact.key)
            if previous is not None and (fact.type == "bool" or previous.value <= value):
                continue
            observed[fact.key] = Observation(value, f"promql: {name} label {fact.label}", fact.engine)

    return _Ask(lambda: client.instant(fact.key, join_or(parts, ("instance",))), apply,
                lambda exc: out.errors.setdefault(fact.key, str(exc)))


def _ask_chart(client: PromClient, catalog: Catalog, chart_id: str, key: str, title: str, window: Window,
               params: Params, out: Collected) -> _Ask:
    entry = catalog.entries[key]
    query = catalog.chain(key, params, catalog.inline)

    def apply(samples: list[Sample]) -> None:
        series: dict[str, dict[str, list[tuple[float, float]]]] = {}
        for sample in samples:
            if entry.kind == "list":
                owner, label = sample.labels.get("host", ""), f"gpu {sample.labels.get('gpu', '?')}"
            else:
                owner, label = sample.labels.get("instance", ""), title
            if owner:
                series.setdefault(owner, {})[label] = list(sample.points)
        out.charts[chart_id] = series

    return _Ask(lambda: client.range(f"chart: {title}", query, window.start, window.chart_step), apply,
                lambda exc: out.errors.setdefault(f"chart {chart_id}", str(exc)))


# -- per instance ---------------------------------------------------------------------------------------------
def host_of(instance: str) -> str:
    """The instance label without its port, as the GPU queries write it (promql.HOST_RE)."""
    m = _HOST.fullmatch(instance)
    return m.group(1) if m else instance


def instance_facts(collected: Collected, instance: str, catalog: Catalog) -> Facts:
    """The facts Prometheus gave for one instance, with the reason for every fact it could not give."""
    facts = Facts()
    observed = collected.instances.get(instance, {})
    for key, obs in observed.items():
        # launch.* read from labels are configuration, not observation (a label says how it was launched)
        facts.set(key, obs.value, obs.source, observed=not key.startswith("launch."))
    engines = Counter(obs.engine for obs in observed.values() if obs.engine)
    if engines:
        engine = engines.most_common(1)[0][0]
        facts.set("metrics.engine", engine, f"promql: {engine} metric names", observed=True)
        facts.set_default("launch.engine", engine, f"promql: {engine} metric names")
    _gpu_lists(facts, collected.hosts.get(host_of(instance), {}))
    if "metrics.kv_fill_rate" in facts and "metrics.time_to_full_s" not in facts and \
            "metrics.time_to_full_s" not in collected.errors:
        # the template answers only while filling: no answer is "never full at this pace" (docs/facts.md)
        fill = facts.fact("metrics.kv_fill_rate")
        assert fill is not None
        facts.set("metrics.time_to_full_s", None, f"{fill.source} <= 0: not filling", observed=True)
    for key in _known_keys(catalog):
        if key in facts:
            continue
        reason = collected.errors.get(key) or _absent_reason(key, catalog)
        facts.error(key, reason)
    for namespace, why in NOT_IN_HISTORY.items():
        facts.error(namespace, why)
    return facts


def _number(value: float) -> float | int:
    """Six significant digits (``increase()`` extrapolates: 1440.5013927 preemptions reads as 1440.5), and a
    whole number as one (counts come back as 48.0)."""
    rounded = float(f"{value:.6g}")
    return int(rounded) if rounded.is_integer() else rounded


def _gpu_lists(facts: Facts, lists: dict[str, dict[str, tuple[float, str]]]) -> None:
    for key, per_gpu in lists.items():
        ordered = sorted(per_gpu.items(), key=lambda item: _gpu_order(item[0]))
        values = [round(v, 4) if key == "gpu.util" else int(v) for _, (v, _) in ordered]
        source = ordered[0][1][1] if ordered else ""
        facts.set(key, values, f"{source} (per GPU on this host: {', '.join(g for g, _ in ordered)})", observed=True)


def _gpu_order(gpu: str) -> tuple[int, str]:
    return (int(gpu), "") if gpu.isdigit() else (1 << 30, gpu)


def _known_keys(catalog: Catalog) -> list[str]:
    keys = [e.key for e in catalog.entries.values() if e.report is not None and e.is_fact]
    return keys + [f.key for f in catalog.label_facts]


def _absent_reason(key: str, catalog: Catalog) -> str:
    entry = catalog.entries.get(key)
    if entry is not None and entry.kind == "list":
        return "no GPU exporter series for this instance's host in Prometheus over the window"
    if key.startswith("launch."):
        return "no label in Prometheus over the window shows it"
    return "no series for this instance in Prometheus over the window"
