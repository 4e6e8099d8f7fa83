"""The report document and its renderers, from a hand-made SCENARIO of what Prometheus answered (no server
here: test_report_prometheus.py runs the real thing), plus the lazy-import promise and the targets seam."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from conftest import run_cli
from support.httpserver import LocalServer

from doctor.commands.fleet import load_targets
from doctor.playbook.loader import load_playbooks
from doctor.render.report_html import html_report
from doctor.render.report_text import markdown_report, text_summary
from doctor.render.svg import line_chart
from doctor.report.analysis import analyze, document, downsample, merge, thin
from doctor.report.client import connect
from doctor.report.collect import Collected, Observation, Window
from doctor.report.promql import Selector, load_catalog
from doctor.report.targets import LiveResult, look

END = 1_800_000_000.0
EXHAUSTED = "10.9.0.1:8000"
ODD = 'x"><script>alert(1)</script>:1'


def _scenario_doc() -> dict:
    """SCENARIO: one vLLM instance out of KV and preempting, one oddly named healthy one (HTML escaping)."""
    src = "promql: scenario"
    collected = Collected()
    collected.instances[EXHAUSTED] = {
        "metrics.kv_usage": Observation(0.98, src, "vllm"),
        "metrics.preemptions_total": Observation(120, src, "vllm"),
        "metrics.preemptions_per_s": Observation(0.0014, src, "vllm"),
        "metrics.queued": Observation(12, src, "vllm"),
        "metrics.kv_fill_rate": Observation(0.0, src, "vllm"),
    }
    collected.instances[ODD] = {"metrics.kv_usage": Observation(0.2, src, "sglang"),
                                "metrics.queued": Observation(0, src, "sglang")}
    points = [(END - 3600 + 60 * i, 0.5 + i / 200) for i in range(61)]
    collected.charts["kv_usage"] = {EXHAUSTED: {"KV cache usage": points}}
    client = connect("http://127.0.0.1:9", timeout_s=1, end=END)
    window = Window(3600, 60, 900, END)
    results = analyze(collected, load_catalog(), load_playbooks(), {}, window)
    return document(client=client, window=window, selector=Selector.parse('{job="llm"}'),
                    results=results, collected=collected, catalog=load_catalog(), elapsed_s=0.1)


def test_document_shape() -> None:
    doc = _scenario_doc()
    assert doc["schema"] == "llmdoctor.report/1" and doc["window"]["since"] == "1h"
    assert [f["id"] for f in doc["findings"]] == ["kv-cache-exhausted"]
    assert doc["findings"][0]["instance"] == EXHAUSTED and doc["summary"]["healthy"] == [ODD]
    facts = doc["instances"][0]["facts"]
    # a fact Prometheus did not give says why, so "could not check" lines carry the reason
    assert facts["errors"]["metrics.ttft_p99"] == "no series for this instance in Prometheus over the window"
    # the fill rate is known and not positive: never full at this pace
    assert facts["facts"]["metrics.time_to_full_s"]["value"] is None
    assert facts["facts"]["launch.engine"]["value"] == "vllm"
    json.dumps(doc)  # plain JSON all the way down


def test_html_escapes_and_draws() -> None:
    page = html_report(_scenario_doc())
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert page.count('data-chart="kv_usage"') == 2  # one per instance, "no data" drawn for the one without
    assert "no data in the window" in page and 'class="threshold"' in page
    assert re.search(r"https?://(?!127\.0\.0\.1:9)", page) is None


def test_markdown_and_terminal_summary() -> None:
    doc = _scenario_doc()
    md = markdown_report(doc)
    assert "| 1 | critical | `kv-cache-exhausted` | `10.9.0.1:8000` |" in md and "| KV usage (p95) | 98.0% |" in md
    screen = text_summary(doc, written="r.html", height=12)
    assert "CRITICAL kv-cache-exhausted  10.9.0.1:8000" in click.unstyle(screen)
    assert screen.rstrip().endswith("report written to r.html") and len(screen.splitlines()) <= 12


def test_charts_keep_gaps_and_spikes() -> None:
    points = [(60 * i, 0.1) for i in range(100)] + [(60 * i, 0.4) for i in range(110, 200)]
    thinned = thin(points, gap=150, limit=40)
    assert (6600, None) in thinned and len(thinned) <= 42  # the 10-minute hole is kept, as a break
    svg = line_chart({"kv": thinned}, start=0, end=12000, title="KV", unit="ratio", threshold=0.95)
    assert svg.count("<polyline") == 2 and "://" not in svg and "<script" not in svg
    many = [(i, 1.0 if i == 777 else 0.0) for i in range(2000)]
    small = downsample(many, 100)
    assert len(small) <= 100 and (777, 1.0) in small and small == sorted(small)


def test_merge_history_wins_for_metrics_live_for_launch() -> None:
    from doctor.facts import Facts

    live, history = Facts(), Facts()
    live.set("metrics.kv_usage", 0.1, "/metrics vllm:kv_cache_usage_perc", observed=True)
    live.set("launch.prefix_caching", False, "server_info enable_prefix_caching")
    history.set("metrics.kv_usage", 0.9, "promql: …", observed=True)
    history.set("launch.prefix_caching", True, "promql: vllm:cache_config_info label enable_prefix_caching")
    history.error("metrics.ttft_p99", "no series")
    merged = merge(live, history)
    assert merged.get("metrics.kv_usage") == 0.9 and merged.get("launch.prefix_caching") is False
    assert merged.unknown_reason("metrics.ttft_p99") == "no series"


def test_targets_are_checked_as_check_does(tmp_path: Path) -> None:
    """The hints of a target go through doctor.sources.offline like `check --targets`; a target is matched to the
    Prometheus instance by its endpoint's host:port."""
    with LocalServer() as srv:  # answers 404 everywhere: reachable, but not an LLM server
        path = tmp_path / "t.yaml"
        path.write_text(f"- endpoint: http://{srv.endpoint}\n  command: vllm serve Qwen/Qwen3-8B "
                        "--tensor-parallel-size 2\n  engine_version: 0.13.0\n")
        specs = load_targets(str(path))
        looked = look(specs, [srv.endpoint, "10.0.0.9:8000"], timeout_s=1)
    result: LiveResult = looked[srv.endpoint]
    assert result.facts.get("launch.engine") == "vllm" and result.facts.get("launch.tp") == 2
    assert "history and hints only" in result.note


@pytest.mark.parametrize("args", [["inspect", "example:seed-gqa-27b"], ["--help"]])
def test_report_costs_nothing_elsewhere(args: list[str]) -> None:
    """prometheus-api-client (and requests under it) load only when a report runs."""
    import subprocess
    import sys

    from conftest import ROOT

    result = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", *args], capture_output=True,
                            text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    assert not {m for m in imported if m.split(".")[0] in ("prometheus_api_client", "requests", "urllib3")}
    assert not {m for m in imported if m.startswith("doctor.report")}


def test_rules_and_report_listed_in_help() -> None:
    result = run_cli("--help")
    assert "report" in result.stdout and "rules" in result.stdout
