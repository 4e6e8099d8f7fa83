"""`llmdoctor report` against a real, private Prometheus: backfilled scenario history, a scraped-live replay of
the real /metrics captures, and Prometheus down, slow, failing or empty. No mock of Prometheus anywhere.

The history is SCENARIO data (fixtures/prometheus/scenarios.py: names and label shapes from the real scrapes,
values made up); the scraped-live path serves the real captures of fixtures/metrics in place.
"""

from __future__ import annotations

import contextlib
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, requires_shared, run_cli
from support.httpserver import JSON, PROM, LocalServer, Request, Response
from support.prometheus import PrivatePrometheus, backfill, requires_prometheus, scenarios

pytestmark = requires_prometheus


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """One Prometheus for the session, holding 24 h of the five scenarios up to ``end``."""
    workdir = tmp_path_factory.mktemp("prometheus-fleet")
    end = int(time.time()) // 60 * 60 - 60
    data = backfill(scenarios().history(end), workdir)
    with PrivatePrometheus(workdir, data=data) as prom:
        yield prom.url, end


def _report(url: str, end: int, *args: str, timeout: float = 60) -> tuple[int, dict, str]:
    result = run_cli("report", "--prometheus", url, "--until", str(end), "--format", "json", *args, timeout=timeout)
    doc = json.loads(result.stdout) if result.stdout.strip().startswith("{") else {}
    return result.returncode, doc, result.stderr


@pytest.fixture(scope="session")
def fleet_doc(fleet: tuple[str, int]) -> dict:
    url, end = fleet
    rc, doc, stderr = _report(url, end, "--selector", '{job="llm"}')
    assert rc == 1, stderr  # findings at warning and above
    return doc


def _facts(doc: dict, instance: str) -> dict:
    return next(i for i in doc["instances"] if i["instance"] == instance)["facts"]["facts"]


def test_every_scenario_named_with_its_cause(fleet_doc: dict) -> None:
    mod = scenarios()
    by_instance = {i["instance"]: i for i in fleet_doc["instances"]}
    assert set(by_instance) == {mod.instance_of(s) for s in mod.SCENARIOS}
    for scenario in mod.SCENARIOS:
        found = by_instance[mod.instance_of(scenario)]["findings"]
        assert found == list(scenario.expect), (scenario.name, found)
    # ranked fleet-wide: the critical one first
    assert fleet_doc["findings"][0]["id"] == "kv-cache-exhausted"
    assert fleet_doc["summary"]["healthy"] == [mod.instance_of(mod.SCENARIOS[0])]
    assert fleet_doc["summary"]["findings"] == {"critical": 1, "warning": 3, "info": 0}


def test_facts_cite_the_names_each_instance_uses(fleet_doc: dict) -> None:
    mod = scenarios()
    inst = {s.name: mod.instance_of(s) for s in mod.SCENARIOS}
    old = _facts(fleet_doc, inst["kv-exhausted"])
    assert "vllm:gpu_cache_usage_perc" in old["metrics.kv_usage"]["source"]  # the V0-era name
    assert "vllm:time_per_output_token_seconds_bucket" in old["metrics.itl_p99"]["source"]
    assert old["metrics.kv_usage"]["value"] >= 0.95 and old["metrics.preemptions_total"]["value"] > 0
    assert old["metrics.kv_usage"]["source"] == ("promql: max by (instance) (quantile_over_time(0.95, "
                                                 'vllm:gpu_cache_usage_perc{job="llm"}[1d]))')
    assert old["metrics.kv_usage"]["observed"] is True
    underscore = _facts(fleet_doc, inst["underscore"])
    assert "sglang_token_usage{" in underscore["metrics.kv_usage"]["source"]
    assert underscore["metrics.engine"]["value"] == "sglang"
    assert 0 < underscore["metrics.time_to_full_s"]["value"] < 900
    assert "deriv(" in underscore["metrics.kv_fill_rate"]["source"]
    ep = _facts(fleet_doc, inst["ep-skew"])
    assert ep["launch.expert_parallel"]["value"] is True and ep["launch.ep"]["value"] == 8
    assert ep["launch.ep"]["source"].startswith("promql (from SGLang's moe_ep_rank labels, a lower bound on the EP")
    assert ep["launch.dp"]["value"] == 8 and ep["launch.ep"]["observed"] is False
    assert len(ep["gpu.util"]["value"]) == 8 and ep["gpu.util"]["value"][3] > 0.9
    assert "DCGM_FI_DEV_GPU_UTIL" in ep["gpu.util"]["source"] and ep["gpu.util_skew"]["value"] >= 1.5
    healthy = _facts(fleet_doc, inst["healthy"])
    assert "nvidia_smi_utilization_gpu_ratio" in healthy["gpu.util"]["source"]
    assert healthy["gpu.util_skew"]["value"] == pytest.approx(1.0)
    assert healthy["metrics.kv_capacity_tokens"]["value"] == 220000  # cache_config_info label
    assert healthy["launch.prefix_caching"]["value"] is True and healthy["launch.prefix_caching"]["observed"] is False
    assert 0.98 < healthy["metrics.scrape_up_ratio"]["value"] < 1  # the 10-minute gap
    queueing = _facts(fleet_doc, inst["queueing"])
    assert queueing["metrics.queued"]["value"] > 0 and queueing["metrics.kv_usage"]["value"] < 0.5
    assert queueing["metrics.prefix_hit_rate"]["value"] == pytest.approx(0.5, abs=0.01)  # cached / prompt tokens


def test_query_count_is_per_fact_not_per_instance(fleet_doc: dict) -> None:
    queries = fleet_doc["queries"]
    # one query per fact of promql.yaml with a report reducer (47 facts), whatever the number of instances
    assert queries["failed"] == 0 and queries["count"] == len(queries["list"]) <= 47
    assert all("instance=" not in q["query"] for q in queries["list"])  # never one query per instance


def test_unchecked_is_folded_per_cause(fleet_doc: dict) -> None:
    unchecked = {(u["symptom"], u["cause"]): u for u in fleet_doc["unchecked"]}
    moe = unchecked[("memory-filling-fast", "moe-without-ep")]
    # the EP instance is not among them: EP on (from its moe_ep_rank labels) decides the node without the model
    ep = scenarios().instance_of(scenarios().SCENARIOS[3])
    assert "model.moe" in moe["missing"] and len(moe["instances"]) == 4 and ep not in moe["instances"]


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.charts: dict[str, list[str]] = {}
        self.urls: list[str] = []
        self.tags: list[str] = []
        self.styles: list[str] = []
        self._instance: str | None = None
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "article" and a.get("data-instance"):
            self._instance = a["data-instance"]
        if tag == "figure" and a.get("data-chart") and self._instance:
            self.charts.setdefault(a["data-chart"], []).append(self._instance)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "action", "data", "xmlns") and value and "://" in value:
                self.urls.append(value)
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self._instance = None
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def test_html_is_self_contained_with_one_kv_chart_per_instance(fleet: tuple[str, int], tmp_path: Path) -> None:
    url, end = fleet
    out = tmp_path / "report.html"
    result = run_cli("report", "--prometheus", url, "--until", str(end), "-o", str(out))
    assert result.returncode == 1 and result.stderr == ""  # no progress when stderr is not a terminal
    assert f"report written to {out}" in result.stdout and "kv-cache-exhausted" in result.stdout
    assert [p.name for p in tmp_path.iterdir()] == ["report.html"]  # atomic: no temporary file left
    page = _Page()
    page.feed(out.read_text())
    assert {"summary", "findings", "instances", "unchecked", "queries", "problems"} <= page.ids
    instances = {scenarios().instance_of(s) for s in scenarios().SCENARIOS}
    assert sorted(page.charts["kv_usage"]) == sorted(instances)
    assert page.charts["gpu_util"] and set(page.charts["gpu_util"]) < instances
    assert page.urls == [] and "script" not in page.tags and "link" not in page.tags
    assert "url(" not in "".join(page.styles) and "@import" not in "".join(page.styles)
    assert page.tags.count("svg") >= len(instances) and page.tags.count("polyline") > len(instances)


def test_markdown_and_text(fleet: tuple[str, int], tmp_path: Path) -> None:
    url, end = fleet
    out = tmp_path / "report.md"
    assert run_cli("report", "--prometheus", url, "--until", str(end), "-o", str(out)).returncode == 1
    text = out.read_text()
    assert text.startswith("# Fleet report") and "| 1 | critical | `kv-cache-exhausted` |" in text
    assert "### WARNING · `expert-load-imbalance`" in text and "**Evidence:**" in text
    summary = run_cli("report", "--prometheus", url, "--until", str(end), "--progress", "--fail-on", "never")
    assert summary.returncode == 0 and "querying Prometheus: metrics.kv_usage" in summary.stderr
    lines = summary.stdout.splitlines()
    assert len(lines) <= 24 and lines[3].startswith("CRITICAL kv-cache-exhausted")


def test_exit_codes_follow_fail_on_and_selector(fleet: tuple[str, int]) -> None:
    url, end = fleet
    healthy = scenarios().instance_of(scenarios().SCENARIOS[0])
    rc, doc, _ = _report(url, end, "--selector", f'{{instance="{healthy}"}}')
    assert rc == 0 and doc["summary"]["instances"] == 1 and doc["findings"] == []
    assert _report(url, end, "--fail-on", "critical")[0] == 1
    rc, _, stderr = _report(url, end, "--selector", '{job="nothing-here"}')
    assert rc == 3 and "nothing could be read: no vLLM or SGLang series matched {job=\"nothing-here\"}" in stderr
    assert stderr.count("\n") == 1


def test_prometheus_down_is_exit_3_at_once() -> None:
    from support.prometheus import free_port

    start = time.monotonic()
    result = run_cli("report", "--prometheus", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 3 and time.monotonic() - start < 15
    assert "cannot reach Prometheus at http://127.0.0.1:" in result.stderr and "Connection refused" in result.stderr
    assert result.stderr.count("\n") == 1


def _proxy(upstream: str, fault: Callable[[str], Response | None]) -> LocalServer:
    """A front for the real Prometheus: ``fault(query)`` returns a Response to send instead, or None."""

    def forward(request: Request) -> Response:
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(request.path).query).get("query", [""])[0]
        bad = fault(query)
        if bad is not None:
            return bad
        try:
            with urllib.request.urlopen(upstream + request.path, timeout=30) as answer:
                return Response(answer.status, answer.read(), content_type=JSON)
        except urllib.error.HTTPError as exc:  # Prometheus's own 4xx/5xx pass through as they are
            return Response(exc.code, exc.read(), content_type=JSON)

    server = LocalServer()
    server.routes = {"/api/v1/query": forward, "/api/v1/query_range": forward}
    return server


def test_slow_queries_cost_only_their_facts(fleet: tuple[str, int]) -> None:
    url, end = fleet
    slow = Response(200, b"{}", content_type=JSON, delay=5)
    with _proxy(url, lambda q: slow if "histogram_quantile" in q else None) as proxy:
        start = time.monotonic()
        rc, doc, _ = _report(proxy.url(), end, "--timeout", "0.5")
    assert time.monotonic() - start < 30 and rc == 1
    assert len(doc["problems"]) == 4 and "did not answer within 0.5s (--timeout)" in doc["problems"][0]
    facts = next(i for i in doc["instances"] if i["findings"] == ["kv-cache-exhausted"])["facts"]
    assert "metrics.ttft_p99" not in facts["facts"] and "did not answer" in facts["errors"]["metrics.ttft_p99"]
    assert "metrics.kv_usage" in facts["facts"]


def test_prometheus_that_never_answers_in_time_is_exit_3(fleet: tuple[str, int]) -> None:
    url, end = fleet
    with _proxy(url, lambda q: Response(200, b"{}", content_type=JSON, delay=5)) as proxy:
        start = time.monotonic()
        result = run_cli("report", "--prometheus", proxy.url(), "--until", str(end), "--timeout", "0.3")
    assert result.returncode == 3 and time.monotonic() - start < 20
    assert "did not answer within 0.3s" in result.stderr and result.stderr.count("\n") == 1


def test_prometheus_errors_are_shown_in_its_words(fleet: tuple[str, int]) -> None:
    url, end = fleet
    body = json.dumps({"status": "error", "errorType": "execution", "error": "query processing would load too "
                       "many samples into memory in query execution"}).encode()
    rejected = Response(422, body, content_type=JSON)
    with _proxy(url, lambda q: rejected if "quantile_over_time" in q else None) as proxy:
        rc, doc, _ = _report(proxy.url(), end)
    assert rc == 1 and doc["queries"]["failed"] == 3  # kv_usage, running, queued (the p95 facts)
    assert doc["problems"][0] == ("metrics.kv_usage: HTTP 422: execution: query processing would load too many "
                                  "samples into memory in query execution")
    with _proxy(url, lambda q: Response(503, b"<html>upstream down</html>")) as proxy:
        result = run_cli("report", "--prometheus", proxy.url(), "--until", str(end))
    assert result.returncode == 3 and "HTTP 503: <html>upstream down</html>" in result.stderr


def test_not_a_prometheus(tmp_path: Path) -> None:
    with LocalServer({"/api/v1/query": Response(200, b"<html>login</html>", content_type="text/html")}) as srv:
        result = run_cli("report", "--prometheus", srv.url())
    assert result.returncode == 3 and "not Prometheus's HTTP API JSON" in result.stderr


@requires_shared
def test_targets_add_live_facts(fleet: tuple[str, int], tmp_path: Path) -> None:
    """A target Prometheus does not know is probed live (a real vLLM 0.28 /metrics capture: KV full, preempting);
    an unreachable one is a note, not a failure."""
    from support.prometheus import free_port

    url, end = fleet
    real = Response(file=SHARED_FIXTURES / "metrics" / "vllm_1.prom", content_type=PROM)
    with LocalServer({"/metrics": real}) as live:
        targets = tmp_path / "fleet.yaml"  # the file `check --targets` reads
        targets.write_text(f"targets:\n  - endpoint: {live.endpoint}\n  - endpoint: 127.0.0.1:{free_port()}\n"
                           f"    name: gone\n")
        rc, doc, stderr = _report(url, end, "--targets", str(targets), timeout=90)
    assert rc == 1, stderr
    by_instance = {i["instance"]: i for i in doc["instances"]}
    # ...and the capture's cache_config_info says why: num_gpu_blocks_override="1024" (issue 15)
    assert by_instance[live.endpoint]["findings"] == ["kv-cache-exhausted", "kv-size-set-by-hand"]
    facts = by_instance[live.endpoint]["facts"]["facts"]
    assert facts["metrics.kv_usage"]["source"] == "/metrics vllm:kv_cache_usage_perc"
    assert any(p.startswith("live check of gone failed (") for p in doc["problems"])
    assert len(doc["instances"]) == 7 and doc["summary"]["no_data"] == ["gone"]


def test_bad_targets_file_is_exit_2_before_any_query(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("targets:\n  - endpoint: a:1\n    confg: x\n")
    result = run_cli("report", "--prometheus", "http://127.0.0.1:9", "--targets", str(path))
    assert result.returncode == 2 and "unknown key(s) confg" in result.stderr and result.stderr.count("\n") == 1


@requires_shared
def test_scraped_live_replay_of_real_captures(tmp_path: Path) -> None:
    """Prometheus scrapes local servers replaying the real /metrics captures; the report reads what it stored."""
    files = ("vllm_1.prom", "vllm_3.prom", "sglang_1.prom")
    with contextlib.ExitStack() as stack:
        servers = {name: stack.enter_context(LocalServer({"/metrics": Response(
            file=SHARED_FIXTURES / "metrics" / name, content_type=PROM)})) for name in files}
        prom = stack.enter_context(PrivatePrometheus(tmp_path, scrape=[s.endpoint for s in servers.values()]))
        _wait_for_scrapes(prom.url, len(files), 3)
        result = run_cli("report", "--prometheus", prom.url, "--since", "30s", "--step", "1s",
                         "--selector", '{job="llm"}', "--format", "json")
    doc = json.loads(result.stdout)
    by_instance = {i["instance"]: i for i in doc["instances"]}
    vllm = by_instance[servers["vllm_1.prom"].endpoint]["facts"]["facts"]
    assert vllm["metrics.kv_usage"]["value"] == pytest.approx(0.999, abs=0.001)  # vllm_1: KV exhausted
    assert vllm["metrics.queued"]["value"] == 16 and vllm["metrics.running"]["value"] == 84
    assert vllm["metrics.kv_capacity_tokens"]["value"] == 16384 and vllm["launch.mem_fraction"]["value"] == 0.8
    # the counters do not move between scrapes of one file: no preemption *in the window*
    assert vllm["metrics.preemptions_total"]["value"] == 0
    # vllm_3 carries the V0-era gpu_cache_usage_perc beside kv_cache_usage_perc: the newest name wins
    mixed = by_instance[servers["vllm_3.prom"].endpoint]["facts"]["facts"]
    assert "vllm:kv_cache_usage_perc{" in mixed["metrics.kv_usage"]["source"]
    sglang = by_instance[servers["sglang_1.prom"].endpoint]
    assert sglang["facts"]["facts"]["metrics.queued"]["value"] == 2826
    assert sglang["findings"] == ["max-num-seqs-limit"]  # 2,826 queued at 28% KV: the real overload capture
    assert result.returncode == 1


def _wait_for_scrapes(url: str, targets: int, samples: int, timeout: float = 30) -> None:
    query = urllib.parse.urlencode({"query": f"count(count_over_time(up[1m]) >= {samples})"})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=5) as answer:
            result = json.load(answer)["data"]["result"]
        if result and int(float(result[0]["value"][1])) >= targets:
            return
        time.sleep(0.5)
    raise AssertionError("Prometheus did not scrape the replay servers in time")
