"""The fact → PromQL table: names come from metric_names.yaml only, every alternative is generated, and the
user's selector and durations are checked before anything is sent."""

from __future__ import annotations

import re

import pytest
import yaml
from conftest import ROOT, run_cli

from doctor.errors import InputError
from doctor.report.promql import (
    DATA,
    Catalog,
    Params,
    Selector,
    format_duration,
    load_catalog,
    parse_duration,
)

NAMES = yaml.safe_load((ROOT / "doctor" / "probes" / "metric_names.yaml").read_text())


def test_no_engine_metric_name_is_written_twice() -> None:
    """promql.yaml reuses metric_names.yaml: none of the engines' names appears in its data (comments may cite
    the engines' source)."""
    data = yaml.safe_load(DATA.read_text())
    table = yaml.safe_dump(data["series"]) + yaml.safe_dump({k: {**v, "engine": None} for k, v in data["labels"].items()})
    for family in NAMES.values():
        for engine in ("vllm", "sglang"):
            for name in family.get(engine, []):
                bare = name.split(":", 1)[1]
                assert not re.search(rf"(vllm|sglang)[:_]{re.escape(bare)}\b", table), name


def test_every_name_and_separator_is_an_alternative() -> None:
    catalog = load_catalog()
    alternatives = catalog.alternatives("metrics.kv_usage", Params(), catalog.inline)
    names = [a.names[0] for a in alternatives]
    for engine in ("vllm", "sglang"):
        for name in NAMES["kv_usage"][engine]:
            assert name in names and name.replace(":", "_", 1) in names
    # newest first, ':' before '_', vLLM before SGLang (the first an instance has wins)
    assert names[0] == NAMES["kv_usage"]["vllm"][0]
    assert names.index("vllm:gpu_cache_usage_perc") > names.index("vllm_kv_cache_usage_perc")
    assert {a.engine for a in alternatives} == {"vllm", "sglang"}


def test_counters_histograms_and_selector_in_expressions() -> None:
    catalog = load_catalog()
    params = Params(selector=Selector.parse('{job="llm",env=~"prod.*"}'), range=3600)
    chain = catalog.chain("metrics.preemptions_per_s", params, catalog.inline)
    assert 'rate(vllm:num_preemptions_total{job="llm",env=~"prod.*"}[1h])' in chain
    assert "sglang_num_retracted_requests_total{" in chain
    ttft = catalog.chain("metrics.ttft_p99", params, catalog.inline)
    assert "sglang:time_to_first_token_seconds_bucket{" in ttft and "histogram_quantile(0.99" in ttft
    # an engine without the family has no alternative (SGLang has no prefix_queries counter)
    hit = catalog.alternatives("metrics.prefix_hit_rate", params, catalog.inline)
    assert {a.source for a in hit} == {"vllm", "sglang"}
    assert all("cached_tokens" in a.expr for a in hit if a.source == "sglang")
    # references are inlined for the report
    skew = catalog.chain("gpu.util_skew", params, catalog.inline)
    assert "DCGM_FI_DEV_GPU_UTIL[1h]" in skew and "nvidia_smi_utilization_gpu_ratio[1h]" in skew


def test_broken_table_is_one_line_naming_the_problem() -> None:
    with pytest.raises(InputError, match=r"metrics.x: \{kv_usge\} is not a family"):
        Catalog({"series": {"metrics.x": {"any": "max by (instance) ({kv_usge})"}}}, NAMES)
    with pytest.raises(InputError, match="name its suffix"):
        Catalog({"series": {"metrics.x": {"any": "rate({ttft}[5m])"}}}, NAMES)
    with pytest.raises(InputError, match=r"\{@nope\} is not an entry"):
        Catalog({"series": {"metrics.x": {"expr": "{@nope}"}}}, NAMES)


@pytest.mark.parametrize("text, seconds", [("24h", 86400), ("90s", 90), ("1h30m", 5400), ("7d", 604800),
                                           ("60", 60), ("500ms", 0.5)])
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--since") == seconds


@pytest.mark.parametrize("text", ["", "24x", "h", "-5m", "0s", "1.5h"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(InputError, match="--since"):
        parse_duration(text, "--since")


def test_until_accepts_unix_seconds_and_iso_times() -> None:
    from doctor.report.pipeline import parse_time

    assert parse_time("1795910400") == parse_time("2026-11-29T00:00:00Z") == parse_time("2026-11-29T01:00:00+01:00")


def test_format_duration_round_trips() -> None:
    for seconds in (1, 59, 60, 3600, 5400, 86400, 90061):
        assert parse_duration(format_duration(seconds), "x") == seconds


def test_selector() -> None:
    sel = Selector.parse('{job="llm", env!="dev",model=~"Qwen.*"}')
    assert sel.inner() == 'job="llm",env!="dev",model=~"Qwen.*"' and sel.has_equality()
    assert Selector.parse('job="llm"').text == '{job="llm"}'
    assert Selector.parse("").text == "" and not Selector.parse('{env=~"p.*"}').has_equality()
    assert Selector.parse(r'{path="a\"b"}').matchers[0][2] == r'a\"b'


@pytest.mark.parametrize("text, says", [
    ('up{job="llm"}', "without a metric name"),
    ('{job="llm"', "unbalanced"),
    ("{job=llm}", 'expected label="value"'),
    ('{job="a" env="b"}', "expected ','"),
    ('{__name__="x"}', "__name__"),
    ('{job=~"(unclosed"}', "bad regular expression"),
])
def test_bad_selectors(text: str, says: str) -> None:
    with pytest.raises(InputError, match=re.escape(says)):
        Selector.parse(text)


@pytest.mark.parametrize("args, says", [
    (["--prometheus", "ftp://prom:9090"], "--prometheus: 'ftp://prom:9090': scheme 'ftp' is not http or https"),
    (["--prometheus", "prom"], "--prometheus: 'prom': no port"),
    (["--prometheus", "http://127.0.0.1:9", "--since", "24x"], "--since: '24x' is not a duration"),
    (["--prometheus", "http://127.0.0.1:9", "--step", "2d"], "--step 2d: longer than --since 24h"),
    (["--prometheus", "http://127.0.0.1:9", "--step", "10m", "--trend", "15m"], "--trend 15m: the KV slope needs"),
    (["--prometheus", "http://127.0.0.1:9", "--selector", "{job=llm}"], "--selector"),
    (["--prometheus", "http://127.0.0.1:9", "--until", "yesterday"], "--until 'yesterday'"),
    (["--prometheus", "http://127.0.0.1:9", "-o", "report.pdf"], "-o report.pdf: cannot tell the format"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    result = run_cli("report", *args)
    assert result.returncode == 2, result.stderr
    assert says in result.stderr and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_no_playbook_reads_a_detail_fact() -> None:
    """A fact marked ``detail`` is asked only for a large fleet's worst instances: that is safe only while no
    playbook condition or cause text reads it (else a finding would silently depend on which instances were
    looked at closely)."""
    from doctor.report.promql import load_catalog

    detail = [e.key for e in load_catalog().entries.values() if e.detail]
    assert "metrics.ttft_p99" in detail
    # every tree, cause file and trap; not the fact registry (playbooks/facts/), which names every fact
    texts = {p: p.read_text() for p in (ROOT / "playbooks").rglob("*.yaml") if "facts" not in p.parent.parts}
    for key in detail:
        readers = [str(p.relative_to(ROOT)) for p, text in texts.items() if re.search(rf"\b{re.escape(key)}\b", text)]
        assert readers == [], (key, readers)
