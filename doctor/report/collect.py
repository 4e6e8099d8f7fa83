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

import functools
import math
import re
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from doctor.facts import Facts
from doctor.redact import redact_shapes, redact_text
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
from doctor.report.recorded import Recorded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Charts: (id, fact whose template is plotted, title, unit). GPU utilization is per GPU.
CHARTS = (
    ("kv_usage", "metrics.kv_usage", "KV cache usage", "ratio"),
    ("queued", "metrics.queued", "Queued requests", "count"),
    ("preemptions", "metrics.preemptions_per_s", "Preemptions per second", "rate"),
    ("gpu_util", "gpu.util", "GPU utilization per GPU", "ratio"),
)
#: Points per chart series: about one per pixel of a chart (Prometheus would give up to 11,000; more only costs).
MAX_CHART_POINTS = 360
#: Instances looked at closely: charted one by one, and asked the facts no playbook reads (``detail: true`` in
#: promql.yaml: latencies, token rates). A larger fleet is drawn as distributions of its instances' facts
#: (analysis.py, no query) with its DETAIL_CHARTS worst instances charted: a line per instance of ten thousand
#: is neither readable nor cheap, and a fleet-wide range query reads every sample of the window again (at 1,000
#: instances one took 10-30 s: bench/bench_report_fleet.py).
DETAIL_CHARTS = 24
#: A chart query that exceeds its budget is asked again with this many times fewer points (then given up).
DEGRADE_FACTOR = 4
DEGRADE_TRIES = 2
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

    @property
    def start(self) -> float:
        return self.end - self.since

    @property
    def chart_step(self) -> float:
        return max(self.step, math.ceil(self.since / MAX_CHART_POINTS))


@dataclass(frozen=True)
class Observation:
    value: Any
    source: str
    engine: str | None


#: chart id → owner (an instance, a host for GPUs, or a band name for the fleet) → series label → points
ChartData = dict[str, dict[str, dict[str, list[tuple[float, float]]]]]


@dataclass
class Collected:
    """Everything read from Prometheus, before any playbook runs (the charts after: they depend on findings)."""

    #: instance → fact key → observation
    instances: dict[str, dict[str, Observation]] = field(default_factory=dict)
    #: host → fact key (a GPU list) → {gpu: (value, source)}
    hosts: dict[str, dict[str, dict[str, tuple[float, str]]]] = field(default_factory=dict)
    #: fact key → why it could not be read for anyone (a failed query)
    errors: dict[str, str] = field(default_factory=dict)
    #: the charts of the instances charted one by one (all of a small fleet, the worst of a large one)
    charts: ChartData = field(default_factory=dict)
    #: chart id → seconds between its points (the window's, or coarser where the query had to be degraded)
    chart_steps: dict[str, float] = field(default_factory=dict)
    #: what the reader should know about the charts (a degraded query, a fleet summarised)
    notes: list[str] = field(default_factory=list)
    #: the instances asked the detail facts and charted (collect_detail)
    detailed: set[str] = field(default_factory=set)

    def any_data(self) -> bool:
        return bool(self.instances)


def collect(client: PromClient, catalog: Catalog, window: Window, params: Params,
            recorded: Recorded | None = None) -> Collected:
    """Ask every report fact for the whole fleet at once; ``params`` carries the selector (ranges are the
    window's). Queries run a few at a time: Prometheus evaluates them side by side. A query the store already
    records (``llmdoctor rules --report``, doctor/report/recorded.py) is read from its recorded series instead:
    the store evaluated it ahead of time, the report reads one sample per answer."""
    out = Collected()
    asks = [_ask_entry(client, catalog, entry, window, fleet_params(window, params), out,
                       None if _of_the_last_minutes(entry) else recorded)
            for entry in catalog.entries.values() if entry.report is not None and not entry.detail]
    asks += [_ask_label(client, catalog, fact, fleet_params(window, params), out, recorded)
             for fact in catalog.label_facts]
    _run_all(asks)
    if recorded is not None and recorded.used:
        out.notes.append(f"{len(recorded.used)} fleet-wide facts read from the store's recording rules "
                         f"(llmdoctor rules --report, evaluated every {recorded.every}): their window ends at the "
                         "last evaluation, at most that long before the report's end")
    return out


def fleet_params(window: Window, params: Params) -> Params:
    """The parameters of the fleet-wide queries: every range the whole window."""
    return Params(selector=params.selector, range=window.since, trend=window.trend, step=window.step,
                  lookback=window.since)


def fleet_queries(catalog: Catalog, window: Window, params: Params) -> list[tuple[str, str]]:
    """(fact, query) of every fleet-wide query ``collect`` asks, in its order: what ``llmdoctor rules --report``
    records, as the exact text the report would send (a recorded series is used only for the same text)."""
    fleet = fleet_params(window, params)
    out = [(entry.key, entry_query(catalog, entry, window, fleet)[0]) for entry in catalog.entries.values()
           if entry.report is not None and not entry.detail and not _of_the_last_minutes(entry)]
    return out + [(fact.key, label_query(catalog, fact, fleet)[0]) for fact in catalog.label_facts]


def _of_the_last_minutes(entry: Entry) -> bool:
    """A fact of the last --trend (the KV slope), not of the window: read from an evaluation up to --every
    before the report's end it would be another slope (a fleet filling in its last minutes would not show),
    and asked live it reads only --trend of samples. Not recorded."""
    return any("{trend}" in template or "{step}" in template for template in entry.templates.values())


def collect_detail(client: PromClient, catalog: Catalog, window: Window, params: Params, out: Collected,
                   detail: list[str]) -> None:
    """The facts no playbook reads and the charts, for ``detail`` (instances, worst first) only: a bounded
    plan (one query per detail fact and per chart, whatever the fleet's size), matched to those instances so
    Prometheus reads only their series; each chart under its own budget, degraded to fewer points rather
    than lost."""
    if len(detail) < len(out.instances):
        out.notes.append(f"{len(out.instances)} instances: charted, and asked their latencies and token rates, "
                         f"are the {len(detail)} with findings most in need of a look; the fleet is drawn as "
                         "distributions")
    if not detail:
        return
    out.detailed = set(detail)
    if len(detail) < len(out.instances):
        params = replace(params, selector=params.selector.with_matcher("instance", "=~", _alternation(detail)),
                         gpu_hosts=tuple(sorted({host_of(i) for i in detail})))
    fact_params = fleet_params(window, params)
    asks = [_ask_entry(client, catalog, entry, window, fact_params, out)
            for entry in catalog.entries.values() if entry.report is not None and entry.detail]
    asks += [_ask_chart(client, catalog, chart_id, key, title, window, params, out)
             for chart_id, key, title, _unit in CHARTS]
    _run_all(asks)


def _alternation(instances: list[str]) -> str:
    """A PromQL regex (as written inside its double quotes) matching exactly these label values."""
    return "|".join(re.escape(i) for i in instances).replace("\\", "\\\\")


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


def entry_query(catalog: Catalog, entry: Entry, window: Window, params: Params) -> tuple[str, list[Alternative]]:
    """One fact's query for the fleet, each alternative tagged. ``p95``: each series' 95th percentile over the
    window, then the template's aggregation over ranks (the worst rank's KV, the ranks' queues added up): one
    pass over the samples, where a subquery of the aggregate would evaluate it at every step."""
    if entry.report == "p95":
        params = replace(params, p95_over=window.since)
    alternatives = catalog.alternatives(entry.key, params, catalog.inline)
    query = join_or([f'label_replace({alt.expr}, "{TAG}", "{i}", "", "")' for i, alt in enumerate(alternatives)],
                    entry.or_on)
    return query, alternatives


def _ask_entry(client: PromClient, catalog: Catalog, entry: Entry, window: Window, params: Params,
               out: Collected, recorded: Recorded | None = None) -> _Ask:
    """One fact for the fleet (entry_query), from its recorded series where the store has it."""
    query, alternatives = entry_query(catalog, entry, window, params)
    how = f" ({entry.note})" if entry.note else ""
    run, cited = _recorded_or(client, recorded, entry.key, query)

    def apply(samples: list[Sample]) -> None:
        # one source per alternative, shared by every instance it answers for: redacted once, here
        sources = [redact_text(f"promql{how}: {alt.expr}{cited()}") for alt in alternatives]
        for sample in samples:
            index = int(sample.labels.get(TAG, -1))
            if 0 <= index < len(alternatives) and math.isfinite(sample.value):
                _observe(out, entry, alternatives[index], sources[index], sample)

    return _Ask(run, apply, lambda exc: out.errors.__setitem__(entry.key, str(exc)))


def _recorded_or(client: PromClient, recorded: Recorded | None, key: str, query: str
                 ) -> tuple[Callable[[], list[Sample]], Callable[[], str]]:
    """(the query's run, what its source adds once it ran): the recorded series of exactly ``query`` when the
    store has it, else (or when the recording holds no answer at the report's end: rules stopped, a window
    past the recording) ``query`` itself."""
    series = recorded.series(key, query) if recorded is not None else None
    said = [""]

    def run() -> list[Sample]:
        if series is not None and recorded is not None:
            samples = client.instant(key, series)
            if samples:
                said[0] = f" [recorded: {recorded.name(key)}, every {recorded.every}]"
                return samples
            recorded.used.remove(key)
        return client.instant(key, query)

    return run, lambda: said[0]


def _observe(out: Collected, entry: Entry, alt: Alternative, source: str, sample: Sample) -> None:
    if entry.kind == "list":
        host, gpu = sample.labels.get("host"), sample.labels.get("gpu", "")
        if host:
            out.hosts.setdefault(shown_label(host), {}).setdefault(entry.key, {})[shown_label(gpu)] = (sample.value, source)
        return
    instance = shown_label(sample.labels.get("instance", ""))
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


def label_query(catalog: Catalog, fact: LabelFact, params: Params) -> tuple[str, list[Alternative]]:
    """``group by (instance, engine, <label>) (last_over_time(<info metric>[window]))``, each alternative tagged."""
    alternatives = catalog.label_selector(fact, params)
    window = format_duration(params.range)
    parts = [f'label_replace(group by (instance, engine, {fact.label}) (last_over_time({alt.expr}[{window}])), '
             f'"{TAG}", "{i}", "", "")' for i, alt in enumerate(alternatives)]
    return join_or(parts, ("instance",)), alternatives


def _ask_label(client: PromClient, catalog: Catalog, fact: LabelFact, params: Params, out: Collected,
               recorded: Recorded | None = None) -> _Ask:
    """A label fact for the fleet (label_query): smallest value wins for numbers (each DP engine has its own
    pool), first for the rest."""
    query, alternatives = label_query(catalog, fact, params)
    run, cited = _recorded_or(client, recorded, fact.key, query)

    def apply(samples: list[Sample]) -> None:
        for sample in samples:
            instance, text = shown_label(sample.labels.get("instance", "")), sample.labels.get(fact.label)
            value = fact.convert(text) if text is not None else None
            if not instance or value is None:
                continue
            index = int(sample.labels.get(TAG, 0))
            name = alternatives[index].names[0] if 0 <= index < len(alternatives) else fact.family
            observed = out.instances.setdefault(instance, {})
            previous = observed.get(fact.key)
            if previous is not None and (fact.type == "bool" or previous.value <= value):
                continue
            observed[fact.key] = Observation(value, f"promql: {name} label {fact.label}{cited()}", fact.engine)

    return _Ask(run, apply, lambda exc: out.errors.setdefault(fact.key, str(exc)))


def _ask_chart(client: PromClient, catalog: Catalog, chart_id: str, key: str, title: str, window: Window,
               params: Params, out: Collected) -> _Ask:
    """One line per charted instance (per GPU of its host, for GPU charts)."""
    entry = catalog.entries[key]

    def apply(answer: tuple[list[Sample], float]) -> None:
        samples, step = answer
        series: dict[str, dict[str, list[tuple[float, float]]]] = {}
        for sample in samples:
            if entry.kind == "list":
                owner, name = sample.labels.get("host", ""), f"gpu {sample.labels.get('gpu', '?')}"
            else:
                owner, name = sample.labels.get("instance", ""), title
            if owner:
                series.setdefault(shown_label(owner), {})[name] = list(sample.points)
        out.charts[chart_id] = series
        out.chart_steps[chart_id] = step

    return _Ask(lambda: _degrading_range(client, f"chart: {title}", lambda p: catalog.chain(key, p, catalog.inline),
                                         window, params, out), apply,
                lambda exc: out.errors.setdefault(f"chart {chart_id}", str(exc)))


def _degrading_range(client: PromClient, label: str, query: Callable[[Params], str], window: Window,
                     params: Params, out: Collected) -> tuple[list[Sample], float]:
    """A range query at the window's chart step; when it exceeds its budget, again with DEGRADE_FACTOR times
    fewer points (DEGRADE_TRIES times): a coarser chart with a note beats no chart."""
    step, attempt = window.chart_step, 0
    while True:
        chart_params = replace(params, range=max(step, MIN_CHART_RANGE_S), trend=window.trend, step=window.step,
                               lookback=window.since)
        try:
            samples = client.range(label, query(chart_params), window.start, step)
            break
        except QueryError as exc:
            if not exc.timed_out or attempt == DEGRADE_TRIES:
                raise
            step, attempt = step * DEGRADE_FACTOR, attempt + 1
    if attempt:
        out.notes.append(f"{label}: the query at {math.ceil(window.since / window.chart_step)} points did not "
                         f"answer within --timeout; drawn at {math.ceil(window.since / step)} points")
    return samples, step


@functools.lru_cache(maxsize=65536)
def shown_label(value: str) -> str:
    """A label value as the report shows it: secret shapes masked, once per distinct value (an instance's
    label comes back in every one of the ~30 answers)."""
    return redact_shapes(value)


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
        if key not in facts:
            facts.error(key, collected.errors.get(key) or _absent_reason(key, catalog))
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
    keys = [e.key for e in catalog.entries.values() if e.report is not None and e.is_fact and not e.detail]
    return keys + [f.key for f in catalog.label_facts]


def detail_facts(collected: Collected, instance: str, catalog: Catalog, facts: Facts) -> None:
    """The detail facts (latencies, token rates: no playbook reads them), added after the diagnosis: their
    values for a closely looked-at instance, else why each is unknown."""
    if instance not in collected.detailed:
        for entry in catalog.entries.values():
            if entry.detail and entry.is_fact:
                facts.error(entry.key, f"asked only for the (at most {DETAIL_CHARTS}) instances with findings the "
                                       "report looks at closely (no playbook reads it; llmdoctor check --endpoint "
                                       "reads it live)")
        return
    observed = collected.instances.get(instance, {})
    for entry in catalog.entries.values():
        if entry.detail and entry.kind != "list":
            obs = observed.get(entry.key)
            if obs is not None:
                facts.set(entry.key, obs.value, obs.source, observed=True)
    _gpu_lists(facts, {key: per_gpu for key, per_gpu in collected.hosts.get(host_of(instance), {}).items()
                       if catalog.entries[key].detail})
    for entry in catalog.entries.values():
        if entry.detail and entry.is_fact and entry.key not in facts:
            facts.error(entry.key, collected.errors.get(entry.key) or _absent_reason(entry.key, catalog))


def _absent_reason(key: str, catalog: Catalog) -> str:
    entry = catalog.entries.get(key)
    if entry is not None and entry.kind == "list":
        return "no GPU exporter series for this instance's host in Prometheus over the window"
    if key.startswith("launch."):
        return "no label in Prometheus over the window shows it"
    return "no series for this instance in Prometheus over the window"
