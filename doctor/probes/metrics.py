"""The metrics probe: scrape ``/metrics`` and map vLLM's and SGLang's names onto canonical ``metrics.*`` facts.

The seed's first advice for a new deployment is to "launch with a minimum configuration and measure
empirically": ``curl -s localhost:30000/metrics | grep token_usage``. This probe is that curl, for both
engines and every name they have used (metric_names.yaml), turned into facts a playbook can test:
KV usage, running/queued requests, preemptions (vLLM) or retractions (SGLang), the prefix-cache hit rate
from counters (never SGLang's per-batch ``cache_hit_rate`` gauge), TTFT/ITL quantiles from histogram
buckets, speculative acceptance, the KV capacity the engine reports, and per-rank breakdowns. With
``sample_s > 0`` it scrapes twice and adds rates: preemptions/s, tokens/s, how fast KV fills and when it
will be full.

Speed: a many-rank exposition runs to megabytes (vllm_1.prom's families x 64 DP ranks is 2.3 MB); so only the
lines of the families the mapper needs are kept (:func:`select_families`) before anything is parsed, only those
lines are stored as raw material (snapshots stay small; replay maps them the same way), and they are parsed by
doctor.probes.exposition (a regex per line and a cache of label sets, several times faster than
prometheus_client's parser, whose import alone costs ~90 ms).
"""

from __future__ import annotations

import functools
import math
import re
import sys
import time

from doctor.facts import Facts
from doctor.probes.base import ProbeOptions, Target, auth_headers, load_data
from doctor.probes.http import HttpError, get
from doctor.redact import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "metrics"
ENGINES = ("vllm", "sglang")
# Sample suffixes the mapper reads (not ``_created``: a counter's start time is never used).
_SUFFIXES = ("_total", "_bucket", "_count", "_sum")
#: Labels that tell ranks apart. DP ranks (vLLM ``engine``, SGLang ``dp_rank``) are separate pools and add
#: up; TP/PP/EP ranks of one DP group report the same requests (SGLang with metrics on all schedulers).
_DP_LABELS = ("engine", "dp_rank")
_REPLICA_LABELS = ("tp_rank", "pp_rank", "moe_ep_rank")
_TEXT_KEPT = 500
_NOT_ENABLED = ("no /metrics (HTTP 404): SGLang serves it only when launched with --enable-metrics "
                "(vLLM always serves it)")
#: (hit, lookup) token counters of the prefix cache, per engine (metric_names.yaml)
_HIT_COUNTERS = {"vllm": ("prefix_hits", "prefix_queries"), "sglang": ("cached_tokens", "prompt_tokens")}
_RATE_FACTS = ("metrics.preemptions_per_s", "metrics.gen_tokens_per_s", "metrics.prompt_tokens_per_s",
               "metrics.kv_fill_rate", "metrics.time_to_full_s")

Sample = tuple[dict[str, str], float]
_PROM_FLOAT = {"nan": "NaN", "inf": "+Inf", "-inf": "-Inf"}


# -- the name table -----------------------------------------------------------------------------------

def _norm(name: str) -> str:
    """``sglang:token_usage`` and ``sglang_token_usage`` (a renaming pipeline) are the same family."""
    return name.replace(":", "_")


@functools.cache
def _table() -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """(canonical -> spec, every sample/family name a wanted family can show -> its normalized base)."""
    spec: dict[str, dict[str, Any]] = load_data("metric_names.yaml")
    wanted: dict[str, str] = {}
    for entry in spec.values():
        for engine in ENGINES:
            for name in entry.get(engine, []):
                base = _norm(name)
                wanted[base] = base
                for suffix in _SUFFIXES:
                    wanted[base + suffix] = base
    return spec, wanted


def select_families(text: str) -> tuple[str, bool]:
    """Keep only the samples and ``# TYPE`` lines of families the mapper reads (``# HELP`` prose is not
    needed); say whether the exposition was cut mid-line.

    A body whose last line is incomplete (the server or a proxy cut it) loses that line, so the rest
    still parses; the flag lets the facts say the picture is partial. One small regular expression finds each
    line's metric name and a set decides. It compiles in a fraction of a millisecond, where a pattern of the
    160 wanted names themselves cost ~20 ms to build and compile in every run, on a `check` path whose scrape is
    tens of kB; and it selects from a 10 MB, 280-rank exposition in ~0.11 s (bench/bench_probes.py).
    """
    tail = text.rfind("\n") + 1
    truncated = tail < len(text) and not _parses(text[tail:])
    _, wanted = _table()
    kept = [line.group(0) for line in _NAMED_LINE.finditer(text[:tail] if truncated else text)
            if _norm(line.group(1)) in wanted]
    return "\n".join(kept) + ("\n" if kept else ""), truncated


#: A whole line (without its break) that is a sample or a ``# TYPE`` line, with the metric name it is about.
_NAMED_LINE = re.compile(r"^(?:#[ \t]+TYPE[ \t]+)?([a-zA-Z_:][a-zA-Z0-9_:]*)(?=[{ \t\r]|$)[^\n\r]*", re.MULTILINE)


def _line_name(line: str) -> str:
    """The metric name a line is about: a sample's name, or the name a ``# TYPE`` line declares."""
    if line.startswith("#"):
        parts = line.split(None, 3)
        return parts[2] if len(parts) > 2 and parts[1] == "TYPE" else ""
    end = len(line)
    for stop in ("{", " "):
        at = line.find(stop)
        if at != -1 and at < end:
            end = at
    return line[:end]


def _parses(line: str) -> bool:
    from doctor.probes.exposition import is_sample_or_comment

    return is_sample_or_comment(line)


# -- fetch --------------------------------------------------------------------------------------------

def fetch(target: Target, opts: ProbeOptions) -> dict[str, Any]:
    """One scrape, or two ``sample_s`` apart; each keeps only the wanted lines, redacted."""
    url = target.url("/metrics")
    headers = auth_headers(target, opts)
    start = time.monotonic()
    scrapes = [_scrape(url, opts, headers, start)]
    if opts.sample_s > 0 and "error" not in scrapes[0]:
        time.sleep(opts.sample_s)
        scrapes.append(_scrape(url, opts, headers, start))
    return {"url": url, "sample_s": opts.sample_s, "scrapes": scrapes}


def raw_from_text(text: str, source: str) -> dict[str, Any]:
    """A saved scrape (``check --metrics FILE``) as the raw a live fetch records, for the same ``interpret``."""
    kept, truncated = select_families(text)
    scrape = {"at_s": 0.0, "status": 200, "content_type": "text/plain", "elapsed_ms": 0.0, "bytes": len(text),
              "text": _redacted(kept), "truncated": truncated}
    return {"url": source, "sample_s": 0.0, "scrapes": [scrape]}


def _scrape(url: str, opts: ProbeOptions, headers: dict[str, str], start: float) -> dict[str, Any]:
    try:
        response = get(url, timeout_s=opts.timeout_s, headers=headers, max_bytes=opts.max_body_bytes)
    except HttpError as exc:
        return {"error": str(exc), "kind": exc.kind, "status": exc.status}
    record: dict[str, Any] = {"at_s": round(time.monotonic() - start, 6), "status": response.status,
                              "content_type": response.content_type, "elapsed_ms": round(response.elapsed_ms, 3),
                              "bytes": len(response.body)}
    failure = response.status_error() or response.page_error()
    if failure is not None:
        record.update(error=str(failure), kind=failure.kind, text=redact_text(response.text()[:_TEXT_KEPT]))
        return record
    text, truncated = select_families(response.text())
    record.update(text=_redacted(text), truncated=truncated)
    return record


# A label pair (name="value", escapes allowed) or a comment line: the only places a secret can sit in the
# kept lines (metric names are [a-zA-Z_:][a-zA-Z0-9_:]* and values are numbers).
_PIECES = re.compile(r'[A-Za-z_][A-Za-z0-9_]*="(?:[^"\\]|\\.)*"|^#.*$', re.M)


def _redacted(text: str) -> str:
    """redact_text for an exposition, fast: a 64-rank scrape repeats the same few label pairs thousands of
    times, so the redactor first reads each distinct piece once and the whole text only if one changed."""
    pieces = "\n".join(sorted(set(_PIECES.findall(text))))
    return text if _clean(pieces) else redact_text(text)


@functools.lru_cache(maxsize=64)
def _clean(pieces: str) -> bool:
    """Whether redaction leaves these label pairs and comments as they are. The distinct pieces are a scrape's
    shape (its label names and values, not its numbers), which the targets of a fleet serving one model
    share: ``check --targets`` reads each shape once."""
    return redact_text(pieces) == pieces


# -- interpretation (pure) ----------------------------------------------------------------------------

class _Scrape:
    """One parsed exposition: samples by normalized name, and the families that would not parse."""

    def __init__(self, record: dict[str, Any]) -> None:
        from doctor.probes.exposition import ExpositionError, SampleParser

        _, wanted = _table()
        self.at_s = float(record.get("at_s") or 0.0)
        self.samples: dict[str, list[Sample]] = {}
        self.errors: list[str] = []
        self.ignored: list[str] = []  # samples whose value is not a finite number
        parser = SampleParser()
        parsed: dict[str, list[tuple[str, dict[str, str], float]]] = {}
        broken: dict[str, str] = {}
        for line in str(record.get("text") or "").splitlines():
            if line.startswith("#") or not line.strip():
                continue
            try:
                name, labels, value = parser.parse(line)
            except ExpositionError as exc:
                base = wanted.get(_norm(_line_name(line)))
                if base is not None:
                    broken.setdefault(base, " ".join(str(exc).split()))
                continue
            base = wanted.get(_norm(name))
            if base is not None:
                parsed.setdefault(base, []).append((name, labels, value))
        self.errors = [f"{base}: {why}" for base, why in broken.items()]
        for base, samples in parsed.items():
            if base in broken:  # one bad line makes the whole family untrusted (a corrupted or cut scrape)
                continue
            for name, labels, value in samples:
                if not math.isfinite(value):  # NaN (no data yet) or ±Inf says nothing a fact can hold
                    self.ignored.append(f"{name} = {_PROM_FLOAT.get(str(value), value)}")
                    continue
                self.samples.setdefault(_norm(name), []).append((labels, value))

    def find(self, canonical: str, engine: str) -> tuple[str, list[Sample]] | None:
        """The first of the engine's names for ``canonical`` present here, and its main samples
        (counters: ``_total``; histograms and summaries: ``_count``)."""
        spec, _ = _table()
        entry = spec[canonical]
        suffix = {"counter": ("_total", ""), "histogram": ("_count",), "summary": ("_count",)}.get(
            entry["kind"], ("",))
        for name in entry.get(engine, []):
            for end in suffix:
                samples = self.samples.get(_norm(name) + end)
                if samples:
                    return name, samples
        return None

    def series(self, name: str, suffix: str) -> list[Sample]:
        return self.samples.get(_norm(name) + suffix, [])


def interpret(raw: dict[str, Any]) -> Facts:
    facts = Facts()
    records = raw.get("scrapes") or []
    if not records:
        facts.error(NAME, "no scrape was made")
        return facts
    first = records[0]
    if "error" in first:
        if first.get("status") == 404:
            facts.set("metrics.available", False, "/metrics HTTP 404", observed=True)
            facts.error(NAME, _NOT_ENABLED)
        else:
            facts.error(NAME, str(first["error"]))
        return facts
    facts.set("metrics.available", True, f"/metrics HTTP {first.get('status', 200)}", observed=True)
    scrapes = [_Scrape(r) for r in records if "error" not in r]
    now = scrapes[-1]
    engine = _engine(now)
    if engine is None:
        facts.error(NAME, "no vLLM or SGLang metric names in /metrics" + _errors_note(now))
        return facts
    facts.set("metrics.engine", engine, "/metrics metric names", observed=True)
    if any(r.get("truncated") for r in records):
        facts.set("metrics.truncated", True, "/metrics body ended mid-line", observed=True)
    parse_errors = [e for s in scrapes for e in s.errors]
    if parse_errors:
        facts.set("metrics.parse_errors", sorted(set(parse_errors)), "/metrics", observed=True)

    _gauges(facts, now, engine)
    _counters(facts, now, engine)
    _latency(facts, scrapes, engine)
    _speculative(facts, scrapes, engine)
    _capacity(facts, now, engine)
    if len(scrapes) == 2:
        _rates(facts, scrapes[0], now, engine)
        _progress(facts, scrapes[0], now, engine)
    else:
        _throughput_gauges(facts, now, engine)
        why = (str(records[1]["error"]) if len(records) > 1 else
               "one scrape cannot give a rate: sample twice (--sample SECONDS)")
        for key in _RATE_FACTS:
            if key not in facts:
                facts.error(key, why)
    return facts


def _engine(scrape: _Scrape) -> str | None:
    spec, _ = _table()
    hits = {e: sum(scrape.find(c, e) is not None for c in spec) for e in ENGINES}
    best = max(ENGINES, key=lambda e: hits[e])
    return best if hits[best] else None


def _errors_note(scrape: _Scrape) -> str:
    notes = []
    if scrape.errors:
        notes.append(f" (could not parse: {'; '.join(scrape.errors)})")
    if scrape.ignored:
        shown = sorted(set(scrape.ignored))
        notes.append(f" (ignored: {', '.join(shown[:5])}{f' and {len(shown) - 5} more' if len(shown) > 5 else ''})")
    return "".join(notes)


def _source(name: str, suffix: str = "") -> str:
    return f"/metrics {name}{suffix}"


# -- aggregation over ranks -----------------------------------------------------------------------------

def _total(samples: list[Sample]) -> float:
    """Sum over DP ranks and other label sets, counting TP/PP/EP replicas of one DP group once."""
    groups: dict[tuple[tuple[str, str], ...], float] = {}
    for labels, value in samples:
        key = tuple(sorted((k, v) for k, v in labels.items() if k not in _REPLICA_LABELS))
        groups[key] = max(groups.get(key, value), value)
    # Samples are finite (non-finite ones are dropped when parsing), but a sum of huge ones can still overflow:
    # keep it finite (clamped, with the true sign) so every fact stays a number JSON and int() can take.
    try:
        return math.fsum(groups.values())
    except OverflowError:
        return math.copysign(sys.float_info.max, math.fsum(v / 2**1000 for v in groups.values()))


def _by_rank(samples: list[Sample]) -> dict[str, float] | None:
    """Per-rank values keyed ``engine=1`` / ``dp_rank=3``: by DP rank when there are DP labels (each DP
    rank is its own pool), else by the TP/PP/EP labels that vary (``tp_rank=0``)."""
    for group in (_DP_LABELS, _REPLICA_LABELS):
        present = [k for k in group if any(k in labels for labels, _ in samples)]
        if present:
            break
    else:
        return None
    varying = [k for k in present if len({labels.get(k) for labels, _ in samples}) > 1] or present[:1]
    ranks: dict[str, float] = {}
    for labels, value in samples:
        key = ",".join(f"{k}={labels.get(k, '')}" for k in varying)
        ranks[key] = max(ranks.get(key, value), value)
    return dict(sorted(ranks.items()))


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


# -- facts ----------------------------------------------------------------------------------------------

def _missing(facts: Facts, key: str, canonical: str, engine: str, scrape: _Scrape) -> None:
    spec, _ = _table()
    names = ", ".join(spec[canonical].get(engine, [])) or "no such metric in this engine"
    facts.error(key, f"not in /metrics (looked for {names}){_errors_note(scrape)}")


def _gauges(facts: Facts, scrape: _Scrape, engine: str) -> None:
    found = scrape.find("kv_usage", engine)
    if found:
        name, samples = found
        facts.set("metrics.kv_usage", max(v for _, v in samples), _source(name), observed=True)
        ranks = _by_rank(samples)
        if ranks:
            facts.set("metrics.rank_kv_usage", ranks, _source(name), observed=True)
    else:
        _missing(facts, "metrics.kv_usage", "kv_usage", engine, scrape)
    for canonical, key in (("running", "running"), ("queued", "queued")):
        found = scrape.find(canonical, engine)
        if not found:
            _missing(facts, f"metrics.{key}", canonical, engine, scrape)
            continue
        name, samples = found
        facts.set(f"metrics.{key}", int(_total(samples)), _source(name), observed=True)
        ranks = _by_rank(samples)
        if ranks:
            facts.set(f"metrics.rank_{key}", {k: int(v) for k, v in ranks.items()}, _source(name), observed=True)
    found = scrape.find("eplb_balancedness", engine)
    if found:
        name, counts = found
        count, total = _total(counts), _total(scrape.series(name, "_sum"))
        if count > 0:
            facts.set("metrics.eplb_balancedness", total / count, f"derived: {_source(name, '_sum')} / _count",
                      observed=True)


def _counters(facts: Facts, scrape: _Scrape, engine: str) -> None:
    found = scrape.find("preemptions", engine)
    if found:
        facts.set("metrics.preemptions_total", _number(_total(found[1])), _source(found[0], "_total"),
                  observed=True)
    else:
        _missing(facts, "metrics.preemptions_total", "preemptions", engine, scrape)
        _absent_counter(facts, "preemptions", engine, {"metrics.preemptions_total": 0})
    found = scrape.find("retracted_recent", engine)
    if found:
        facts.set("metrics.retracted_recent", int(_total(found[1])), _source(found[0]), observed=True)
    hit_rate = _hit_rate(scrape, None, engine)
    if hit_rate is not None:
        facts.set("metrics.prefix_hit_rate", hit_rate[0], hit_rate[1], observed=True)
    else:
        absent = next((c for c in _HIT_COUNTERS[engine] if scrape.find(c, engine) is None), None)
        if absent is not None:
            _missing(facts, "metrics.prefix_hit_rate", absent, engine, scrape)
            prompts = _counter(scrape, _HIT_COUNTERS[engine][1], engine)
            if absent == _HIT_COUNTERS[engine][0] and prompts:  # prompts counted, hits absent: none yet?
                _absent_counter(facts, absent, engine, {"metrics.prefix_hit_rate": 0.0})
        else:
            facts.error("metrics.prefix_hit_rate", "no prompt tokens counted yet")


def _absent_counter(facts: Facts, canonical: str, engine: str, implied: dict[str, float]) -> None:
    """Record a counter the engine shows only once it counts (``absent_means_zero`` in metric_names.yaml), with the
    facts its absence would give if it means zero (``implied``: 0 retractions, a 0 hit rate, a 0 rate).

    Whether it means zero depends on the engine version, which the scrape does not carry: doctor/derive/analyzers.py decides
    once the server has said its version.
    """
    spec, _ = _table()
    since = (spec[canonical].get("absent_means_zero") or {}).get(engine)
    if since is None:
        return
    absent = dict(facts.get("metrics.absent_counters") or {})
    entry = absent.get(canonical) or {"family": spec[canonical][engine][0] + "_total", "since": since, "implies": {}}
    absent[canonical] = {**entry, "implies": {**entry["implies"], **implied}}
    facts.set("metrics.absent_counters", absent, "/metrics (families a server shows only once they count)",
              observed=True)


def _hit_rate(now: _Scrape, before: _Scrape | None, engine: str) -> tuple[float, str] | None:
    """Prefix-cache hit rate from token counters: since start, or over the window between two scrapes."""
    pair = _HIT_COUNTERS[engine]
    hits, queries = now.find(pair[0], engine), now.find(pair[1], engine)
    if not hits or not queries:
        return None
    h, q = _total(hits[1]), _total(queries[1])
    window = ""
    if before is not None:
        h0, q0 = _counter(before, pair[0], engine), _counter(before, pair[1], engine)
        if h0 is None or q0 is None or q - q0 <= 0 or h < h0:
            return None
        h, q = h - h0, q - q0
        window = f" over {now.at_s - before.at_s:.1f}s"
    if q <= 0 or h < 0 or not math.isfinite(h / q):  # counters never go negative: not a rate we can trust
        return None
    return h / q, f"derived: {_source(hits[0], '_total')} / {queries[0]}_total{window}"


def _counter(scrape: _Scrape, canonical: str, engine: str) -> float | None:
    found = scrape.find(canonical, engine)
    return _total(found[1]) if found else None


def _buckets(scrape: _Scrape, name: str) -> list[tuple[float, float]]:
    """Cumulative (upper bound, count) pairs merged over ranks, sorted by bound."""
    by_le: dict[float, list[Sample]] = {}
    for labels, value in scrape.series(name, "_bucket"):
        try:
            le = float(labels.get("le", "+Inf"))
        except ValueError:
            continue
        if math.isnan(le):  # not a bucket bound: no quantile can use it
            continue
        rest = {k: v for k, v in labels.items() if k != "le"}
        by_le.setdefault(le, []).append((rest, value))
    return sorted((le, _total(samples)) for le, samples in by_le.items())


def quantile(q: float, buckets: list[tuple[float, float]]) -> tuple[float, bool] | None:
    """Prometheus ``histogram_quantile``: linear interpolation inside the bucket that holds rank q·N.

    Returns (value, open_ended): an answer in the +Inf bucket is the highest finite bound, and only a
    lower bound (the histogram cannot say more), which the fact's source then says.
    """
    if not buckets or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for upper, count in buckets:
        if count >= rank:
            if math.isinf(upper):
                return lower, True
            return lower + (upper - lower) * (rank - below) / (count - below), False
        lower, below = upper, count
    return lower, True


def _latency(facts: Facts, scrapes: list[_Scrape], engine: str) -> None:
    now = scrapes[-1]
    for canonical, prefix in (("ttft", "metrics.ttft"), ("itl", "metrics.itl")):
        found = now.find(canonical, engine)
        if not found:
            _missing(facts, f"{prefix}_p50", canonical, engine, now)
            _missing(facts, f"{prefix}_p99", canonical, engine, now)
            continue
        name = found[0]
        buckets, how = _buckets(now, name), "since start"
        if len(scrapes) == 2:
            before = dict(_buckets(scrapes[0], name))
            window = [(le, count - before.get(le, 0.0)) for le, count in buckets]
            if window and window[-1][1] > 0 and all(c >= 0 for _, c in window):
                buckets, how = window, f"over {now.at_s - scrapes[0].at_s:.1f}s"
        for q, suffix in ((0.5, "p50"), (0.99, "p99")):
            found_q = quantile(q, buckets)
            if found_q is None:
                facts.error(f"{prefix}_{suffix}", f"no observations in {name} yet")
                continue
            value, open_ended = found_q
            bound = f" (above the highest bucket, {value:g}s: a lower bound)" if open_ended else ""
            facts.set(f"{prefix}_{suffix}", value, f"derived: {_source(name, '_bucket')} {how}{bound}",
                      observed=True)


def _speculative(facts: Facts, scrapes: list[_Scrape], engine: str) -> None:
    """Acceptance only where speculative decoding runs (vLLM exports the counters only then:
    vllm/v1/spec_decode/metrics.py:211-212; SGLang's gauges read 0 when it does not speculate)."""
    now = scrapes[-1]
    if engine == "vllm":
        drafted, accepted = now.find("spec_draft_tokens", engine), now.find("spec_accepted_tokens", engine)
        if not drafted or not accepted:
            return
        d, a = _total(drafted[1]), _total(accepted[1])
        if len(scrapes) == 2:
            d0, a0 = _counter(scrapes[0], "spec_draft_tokens", engine), _counter(scrapes[0], "spec_accepted_tokens",
                                                                              engine)
            if d0 is not None and a0 is not None and d - d0 > 0:
                d, a = d - d0, a - a0
        if d > 0:
            facts.set("metrics.spec_accept_rate", a / d, f"derived: {_source(accepted[0], '_total')} / "
                      f"{drafted[0]}_total", observed=True)
        return
    rate, length = now.find("spec_accept_rate", engine), now.find("spec_accept_length", engine)
    if rate and length and max(v for _, v in length[1]) > 0:
        values = [v for _, v in rate[1]]
        facts.set("metrics.spec_accept_rate", sum(values) / len(values), _source(rate[0]), observed=True)


def _capacity(facts: Facts, scrape: _Scrape, engine: str) -> None:
    """KV tokens per DP rank as the engine reports them (each rank has its own pool)."""
    if engine == "sglang":
        found = scrape.find("max_total_tokens", engine)
        if found:
            facts.set("metrics.kv_capacity_tokens", int(min(v for _, v in found[1])), _source(found[0]),
                      observed=True)
        return
    found = scrape.find("cache_config", engine)
    if not found:
        return
    name, samples = found
    labels = min(samples, key=lambda s: s[0].get("engine", ""))[0]
    facts.set("metrics.cache_config", {k: v for k, v in sorted(labels.items()) if k != "engine"},
              _source(name), observed=True)
    # kv_cache_size_tokens is group-aware (hybrid models); blocks x block size can overstate those
    # (vllm/config/cache.py:344-347). Older versions only have the blocks.
    sizes = [_int(s[0].get("kv_cache_size_tokens")) for s in samples]
    if all(v is not None for v in sizes):
        facts.set("metrics.kv_capacity_tokens", min(sizes), _source(name, " kv_cache_size_tokens"), observed=True)
    else:
        blocks = [(_int(s[0].get("num_gpu_blocks")), _int(s[0].get("block_size"))) for s in samples]
        if all(b is not None and size is not None for b, size in blocks):
            facts.set("metrics.kv_capacity_tokens", min(b * size for b, size in blocks),
                      f"derived: {_source(name)} num_gpu_blocks x block_size", observed=True)
    if labels.get("enable_prefix_caching") in ("True", "False"):
        facts.set("launch.prefix_caching", labels["enable_prefix_caching"] == "True",
                  _source(name, " enable_prefix_caching"))
    utilization = _float(labels.get("gpu_memory_utilization"))
    if utilization is not None and 0 < utilization <= 1:
        facts.set("launch.mem_fraction", utilization, _source(name, " gpu_memory_utilization"))


def _int(text: str | None) -> int | None:
    # isdigit() alone admits "²" and other Unicode digits that int() refuses
    return int(text) if text is not None and text.isascii() and text.isdigit() else None


def _float(text: str | None) -> float | None:
    """A label's number, or None (labels are free text: "INF", "nan" and "" are not settings)."""
    try:
        value = float(text) if text is not None else None
    except ValueError:
        return None
    return value if value is not None and math.isfinite(value) else None


def _rates(facts: Facts, before: _Scrape, now: _Scrape, engine: str) -> None:
    dt = now.at_s - before.at_s
    if dt <= 0:
        for key in _RATE_FACTS:
            facts.error(key, "the two scrapes carry no time between them")
        return
    span = f"over {dt:.1f}s"
    for canonical, key in (("preemptions", "preemptions_per_s"), ("gen_tokens", "gen_tokens_per_s"),
                           ("prompt_tokens", "prompt_tokens_per_s")):
        old, new = before.find(canonical, engine), now.find(canonical, engine)
        if not old and new:  # created by its first increment between the scrapes: it counted from zero
            old = (new[0], [])
        if not old or not new:
            _missing(facts, f"metrics.{key}", canonical, engine, now)
            if not old and not new:  # absent from both scrapes: no increase in between, if absence means zero
                _absent_counter(facts, canonical, engine, {f"metrics.{key}": 0.0})
            continue
        delta = _total(new[1]) - _total(old[1])
        if delta < 0:
            facts.error(f"metrics.{key}", f"{new[0]} went backwards between the scrapes (server restarted?)")
            continue
        facts.set(f"metrics.{key}", delta / dt, f"derived: rate of {_source(new[0], '_total')} {span}",
                  observed=True)
    old, new = before.find("kv_usage", engine), now.find("kv_usage", engine)
    if old and new:
        usage = max(v for _, v in new[1])
        slope = (usage - max(v for _, v in old[1])) / dt
        source = f"derived: slope of {_source(new[0])} {span}"
        facts.set("metrics.kv_fill_rate", slope, source, observed=True)
        # null: not filling, so never full at this pace
        facts.set("metrics.time_to_full_s", (1.0 - usage) / slope if slope > 0 else None, source, observed=True)
    hit_rate = _hit_rate(now, before, engine)
    if hit_rate is not None:
        facts.set("metrics.prefix_hit_rate", hit_rate[0], hit_rate[1], observed=True)


def _progress(facts: Facts, before: _Scrape, now: _Scrape, engine: str) -> None:
    """Whether the engine moved between the scrapes: requests in flight (running or queued, in either scrape)
    while neither the prompt nor the generated-token counter grew is an engine that stopped making progress;
    metrics.queued_delta says whether the queue grew meanwhile. Unknown when a counter is absent."""
    in_flight = max(sum(int(_total(found[1])) for found in (s.find(c, engine) for c in ("running", "queued")) if found)
                    for s in (before, now))
    old_q, new_q = before.find("queued", engine), now.find("queued", engine)
    span = f"over {now.at_s - before.at_s:.1f}s"
    if old_q and new_q:
        facts.set("metrics.queued_delta", int(_total(new_q[1]) - _total(old_q[1])),
                  f"derived: change of {_source(new_q[0])} {span}", observed=True)
    moved = [facts.get(f"metrics.{k}") for k in ("gen_tokens_per_s", "prompt_tokens_per_s")]
    if any(m is None for m in moved):
        facts.error("metrics.stalled", "a token counter is missing from a scrape: progress cannot be told")
        return
    facts.set("metrics.in_flight", in_flight, f"derived: most running + queued requests in either scrape {span}",
              observed=True)
    facts.set("metrics.stalled", in_flight > 0 and not any(moved),
              f"derived: {in_flight} request(s) in flight and the prompt/generation token counters "
              f"{'unchanged' if not any(moved) else 'moving'} {span}", observed=True)


def _throughput_gauges(facts: Facts, scrape: _Scrape, engine: str) -> None:
    """With one scrape, an engine's own recent throughput average is the best there is."""
    for canonical, key in (("gen_throughput", "gen_tokens_per_s"), ("prompt_throughput", "prompt_tokens_per_s")):
        found = scrape.find(canonical, engine)
        if found:
            facts.set(f"metrics.{key}", _total(found[1]), _source(found[0]), observed=True)
