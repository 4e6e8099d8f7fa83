"""PromQL from data: the fact → expression table (promql.yaml) expanded over the engines' metric names.

The names live in one place, doctor/probes/metric_names.yaml, shared with the live /metrics probe; this module
only knows how to turn a template such as ``max by (instance) ({kv_usage})`` into one alternative per name an
engine has used (``vllm:kv_cache_usage_perc``, the old ``vllm:gpu_cache_usage_perc``, ``sglang:token_usage``),
each also with ``_`` instead of ``:`` after the engine prefix, joined with ``or on (instance)`` so the first
one an instance exposes wins. The report and the alert rules both build their queries here, so a fact means
the same thing in a nightly report as in an alert.

Also here: the user's ``--selector`` and durations (``24h``, ``1h30m``), checked locally so that a typo is one
clear line instead of a 400 from Prometheus.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DATA = Path(__file__).with_name("promql.yaml")
ENGINES = ("vllm", "sglang")
GPU_EXPORTERS = ("dcgm", "nvidia_smi")
#: Order of alternatives: engines first (newest names first, ':' before '_'), then GPU exporters.
SOURCES = (*ENGINES, *GPU_EXPORTERS, "expr")
KINDS = ("number", "flag", "bool", "engine", "list")
REDUCERS = ("p95", "window")
#: The label the report puts on each alternative, so an answer says which name (and engine) it came from.
TAG = "llmdoctor_alt"
#: Drops the port from an instance label (anchored by PromQL): "10.0.0.4:9400" → "10.0.0.4", "[::1]:80" → "[::1]".
HOST_RE = "(.+?)(?::[0-9]+)?"
_SEPARATORS = (":", "_")
_PARAMS = ("range", "trend", "step", "lookback")
_PLACEHOLDER = re.compile(r"\{(@?[A-Za-z_][A-Za-z0-9_.]*)(?::(_[a-z]+))?(?:\|([^{}]*))?\}")
_DEFAULT_SUFFIX = {"counter": "_total", "gauge": "", "info": ""}


# -- durations ---------------------------------------------------------------------------------------------
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")


def parse_duration(text: str, flag: str) -> float:
    """Seconds in a Prometheus duration (``90s``, ``1h30m``, ``7d``) or a plain number of seconds."""
    value = (text or "").strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        seconds = float(value)
    elif value and _DURATION.sub("", value) == "":
        seconds = sum(int(n) * _UNITS[unit] for n, unit in _DURATION.findall(value))
    else:
        raise InputError(f"{flag}: {text!r} is not a duration (use e.g. 30s, 15m, 24h, 7d, 1h30m)")
    if seconds <= 0:
        raise InputError(f"{flag}: {text!r} must be longer than 0")
    from doctor.bounds import check

    check("duration", seconds, flag)
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest Prometheus duration for whole seconds (86400 → ``1d``, 5400 → ``1h30m``)."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    rest = int(round(seconds))
    parts = []
    for unit in ("d", "h", "m", "s"):
        size = _UNITS[unit]
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    return "".join(parts) or "0s"


# -- the user's selector -----------------------------------------------------------------------------------
_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')


@dataclass(frozen=True)
class Selector:
    """Label matchers added to every engine series the queries read (``{job="llm",env=~"prod.*"}``)."""

    matchers: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def parse(cls, text: str | None, flag: str = "--selector") -> Selector:
        raw = (text or "").strip()
        if not raw:
            return cls()
        inner = raw
        if "{" in raw and not raw.startswith("{"):
            raise InputError(f"{flag}: {raw!r}: give label matchers only, without a metric name "
                             '(e.g. {job="llm"})')
        if raw.startswith("{") or raw.endswith("}"):
            if not (raw.startswith("{") and raw.endswith("}")):
                raise InputError(f"{flag}: {raw!r}: unbalanced braces")
            inner = raw[1:-1]
        matchers: list[tuple[str, str, str]] = []
        pos = 0
        while pos < len(inner):
            m = _MATCHER.match(inner, pos)
            if m is None:
                raise InputError(f"{flag}: {raw!r}: expected label=\"value\" (or !=, =~, !~) at "
                                 f"{inner[pos:pos + 20]!r}")
            name, op, value = m.groups()
            if name == "__name__":
                raise InputError(f"{flag}: {raw!r}: __name__ cannot be matched here (llmdoctor picks the metrics)")
            if op in ("=~", "!~"):
                try:
                    re.compile(value.encode().decode("unicode_escape"))
                except re.error as exc:
                    raise InputError(f"{flag}: {raw!r}: label {name}: bad regular expression: {exc}") from None
            matchers.append((name, op, value))
            pos = m.end()
            if pos < len(inner):
                if inner[pos] != ",":
                    raise InputError(f"{flag}: {raw!r}: expected ',' between matchers at {inner[pos:pos + 20]!r}")
                pos += 1
        return cls(tuple(matchers))

    def inner(self) -> str:
        return ",".join(f'{name}{op}"{value}"' for name, op, value in self.matchers)

    @property
    def text(self) -> str:
        return "{" + self.inner() + "}" if self.matchers else ""

    def with_matcher(self, name: str, op: str, value: str) -> Selector:
        """These matchers and one more (``value`` as written inside PromQL's double quotes)."""
        return Selector((*self.matchers, (name, op, value)))

    def has_equality(self) -> bool:
        """absent() keeps only equality matchers' labels; without one it would name no target at all."""
        return any(op == "=" for _, op, _ in self.matchers)


# -- parameters a template is rendered with ----------------------------------------------------------------
@dataclass(frozen=True)
class Params:
    selector: Selector = field(default_factory=Selector)
    range: float = 300.0
    trend: float = 900.0
    step: float = 60.0
    lookback: float = 86400.0
    #: the report's ``p95`` reducer: every family selector reads as its series' 95th percentile over this many
    #: seconds (``quantile_over_time(0.95, sel[1d])``), before the template aggregates over ranks
    p95_over: float | None = None
    #: GPU exporter series only of these hosts (``{gpusel}``): the report's charts of its worst instances
    gpu_hosts: tuple[str, ...] = ()

    def value(self, name: str) -> str:
        return format_duration(getattr(self, name))


# -- the table -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    """One row of promql.yaml: a fact (or a helper series) and its templates per source."""

    key: str
    templates: dict[str, str]
    kind: str = "number"
    by: tuple[str, ...] = ("instance",)
    or_on: tuple[str, ...] = ("instance",)
    report: str | None = None
    absent: str | None = None
    note: str | None = None
    #: no playbook reads it: the report asks it only for the instances it looks at closely (collect.py)
    detail: bool = False

    @property
    def is_fact(self) -> bool:
        return "." in self.key


@dataclass(frozen=True)
class LabelFact:
    """A fact read from a label of an info metric (``launch.prefix_caching`` from enable_prefix_caching)."""

    key: str
    family: str
    engine: str
    label: str
    type: str
    true: str | None = None
    false: str | None = None

    def convert(self, text: str) -> Any:
        """The label's value as the fact's type; None when it does not parse (``None``, ``auto``)."""
        if self.type == "bool":
            return {self.true: True, self.false: False}.get(text)
        try:
            return int(text) if self.type == "int" else float(text)
        except ValueError:
            return None


@dataclass(frozen=True)
class Alternative:
    """One way to read a fact: the source (engine or GPU exporter), the metric names it reads, the PromQL."""

    source: str
    names: tuple[str, ...]
    expr: str

    @property
    def engine(self) -> str | None:
        return self.source if self.source in ENGINES else None


#: How a ``{@key}`` reference is written: the report inlines the referenced chain, rules name its record.
RefWriter = Callable[[str, "Params"], str]


class Catalog:
    """promql.yaml over metric_names.yaml: expand a fact into its alternatives, or one query."""

    def __init__(self, data: dict[str, Any], names: dict[str, Any], source: str = str(DATA)) -> None:
        self.names = names
        self.source = source
        self.entries: dict[str, Entry] = {}
        self.label_facts: list[LabelFact] = []
        for key, body in (data.get("series") or {}).items():
            self.entries[key] = self._entry(key, body)
        for family, body in (data.get("labels") or {}).items():
            for key, spec in body["facts"].items():
                self.label_facts.append(LabelFact(key, family, body["engine"], spec["label"], spec["type"],
                                                  spec.get("true"), spec.get("false")))
        self._check()

    # -- loading ------------------------------------------------------------------------------------------
    def _entry(self, key: str, body: dict[str, Any]) -> Entry:
        templates: dict[str, str] = {}
        for source in ("any", *SOURCES):
            if source in body:
                for name in (ENGINES if source == "any" else (source,)):
                    templates[name] = str(body[source])
        by = tuple(body.get("by", ("instance",)))
        return Entry(key, templates, body.get("kind", "number"), by, tuple(body.get("or_on", by)),
                     body.get("report"), body.get("absent"), body.get("note"), bool(body.get("detail", False)))

    def _check(self) -> None:
        """Our own data must be right: a family or reference typo here would silently read nothing."""
        problems = []
        for entry in self.entries.values():
            if not entry.templates:
                problems.append(f"{entry.key}: no template")
            if entry.kind not in KINDS:
                problems.append(f"{entry.key}: kind {entry.kind!r} is not one of {', '.join(KINDS)}")
            if entry.report is not None and entry.report not in REDUCERS:
                problems.append(f"{entry.key}: report {entry.report!r} is not one of {', '.join(REDUCERS)}")
            checked = dict(entry.templates)
            if entry.absent is not None:
                checked["expr"] = entry.absent
            for source, template in checked.items():
                for m in _PLACEHOLDER.finditer(template):
                    name, suffix = m.group(1), m.group(2)
                    if name.startswith("@"):
                        if name[1:] not in self.entries:
                            problems.append(f"{entry.key}: {{{name}}} is not an entry")
                    elif name in (*_PARAMS, "hostre", "gpusel", "up"):
                        continue
                    elif name not in self.names:
                        problems.append(f"{entry.key}: {{{name}}} is not a family of metric_names.yaml")
                    elif source not in ENGINES:
                        problems.append(f"{entry.key}: {{{name}}} in a {source} template (families are per engine)")
                    elif source in ENGINES and suffix is None and self.names[name]["kind"] not in _DEFAULT_SUFFIX:
                        problems.append(f"{entry.key}: {{{name}}} is a {self.names[name]['kind']}: name its suffix")
        for fact in self.label_facts:
            if fact.family not in self.names:
                problems.append(f"labels.{fact.family}: not a family of metric_names.yaml")
        if problems:
            raise InputError(f"{self.source}: " + "; ".join(problems))

    # -- expansion ------------------------------------------------------------------------------------------
    def alternatives(self, key: str, params: Params, refs: RefWriter) -> list[Alternative]:
        """Every way to read ``key``, in the order they are tried."""
        entry = self.entries[key]
        out: list[Alternative] = []
        for source in SOURCES:
            template = entry.templates.get(source)
            if template is None:
                continue
            if source not in ENGINES:
                out.append(Alternative(source, _raw_names(template), _render(template, {}, params, refs)))
                continue
            families = list(dict.fromkeys(m.group(1) for m in _PLACEHOLDER.finditer(template)
                                          if m.group(1) in self.names))
            name_lists = [self.names[f].get(source, []) for f in families]
            if not all(name_lists):
                continue  # this engine has no such metric (SGLang has no prefix_queries)
            for combo in itertools.product(*name_lists):
                for sep in _SEPARATORS:
                    mapping = {f: _rename(n, sep) for f, n in zip(families, combo, strict=True)}
                    names = tuple(mapping.values())
                    out.append(Alternative(source, names, _render(template, mapping, params, refs, self.names)))
        return out

    def chain(self, key: str, params: Params, refs: RefWriter) -> str:
        """All alternatives of ``key`` as one expression (no tags): what a rule records, what a chart plots."""
        entry = self.entries[key]
        return join_or([a.expr for a in self.alternatives(key, params, refs)], entry.or_on)

    def inline(self, key: str, params: Params) -> str:
        """``{@key}`` as the report writes it: the referenced chain, in parentheses."""
        return f"({self.chain(key, params, self.inline)})"

    def absent_expr(self, key: str, params: Params) -> str | None:
        """The ``absent`` companion of an entry (promql.yaml), rendered; None when it has none."""
        template = self.entries[key].absent
        return None if template is None else _render(template, {}, params, self.inline)

    def label_selector(self, fact: LabelFact, params: Params, extra: str = "") -> list[Alternative]:
        """Selectors of the info family behind a label fact (every name and separator)."""
        out = []
        for name in self.names[fact.family].get(fact.engine, []):
            for sep in _SEPARATORS:
                renamed = _rename(name, sep)
                out.append(Alternative(fact.engine, (renamed,), selector(renamed, params.selector, extra)))
        return out


def join_or(parts: list[str], on: tuple[str, ...]) -> str:
    if len(parts) == 1:
        return parts[0]
    return f" or on ({', '.join(on)}) ".join(f"({p})" for p in parts)


def selector(name: str, sel: Selector, extra: str = "") -> str:
    matchers = ",".join(m for m in (sel.inner(), extra) if m)
    return f"{name}{{{matchers}}}" if matchers else name


def _gpu_selector(hosts: tuple[str, ...]) -> str:
    """``{instance=~"(h1|h2)(:[0-9]+)?"}`` for a GPU exporter's series on these hosts; nothing for all hosts."""
    if not hosts:
        return ""
    alternation = "|".join(re.escape(h) for h in hosts).replace("\\", "\\\\")
    return f'{{instance=~"({alternation})(:[0-9]+)?"}}'


def _rename(name: str, sep: str) -> str:
    """``sglang:token_usage`` as a renaming pipeline writes it (``sglang_token_usage``) when sep is '_'."""
    return name.replace(":", sep, 1)


def _raw_names(template: str) -> tuple[str, ...]:
    """Metric names written out in a GPU template (``DCGM_FI_DEV_GPU_UTIL``): what its evidence cites."""
    return tuple(dict.fromkeys(re.findall(r"\b(DCGM_FI_[A-Z_]+|nvidia_smi_[a-z_]+)\b", template)))


def _render(template: str, mapping: dict[str, str], params: Params, refs: RefWriter,
            names: dict[str, Any] | None = None) -> str:
    def sub(m: re.Match[str]) -> str:
        name, suffix, extra = m.group(1), m.group(2), m.group(3) or ""
        if name.startswith("@"):
            return refs(name[1:], params)
        if name in _PARAMS:
            return params.value(name)
        if name == "hostre":
            return HOST_RE
        if name == "gpusel":
            return _gpu_selector(params.gpu_hosts)
        if name == "up":
            return selector("up", params.selector, extra)
        assert names is not None, name  # _check: family placeholders only in engine templates
        kind = names[name]["kind"]
        sel = selector(mapping[name] + (suffix if suffix is not None else _DEFAULT_SUFFIX.get(kind, "")),
                       params.selector, extra)
        if params.p95_over is not None:
            return f"quantile_over_time(0.95, {sel}[{format_duration(params.p95_over)}])"
        return sel

    return _PLACEHOLDER.sub(sub, template)


@functools.cache
def load_catalog() -> Catalog:
    """The shipped table, read once."""
    from doctor.probes.base import load_data
    from doctor.yamlsafe import load_yaml

    data, _ = load_yaml(DATA.read_bytes(), str(DATA))
    return Catalog(data, load_data("metric_names.yaml"))
