"""`llmdoctor check --endpoint` against real HTTP on 127.0.0.1: a local server replays the real /metrics
scrapes in fixtures/metrics and scenario /server_info, /version, /v1/models
bodies (fixtures/scenarios, shaped after the engines' source). The CLI runs as a real subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import pytest
from conftest import ROOT, SHARED_FIXTURES, requires_shared, run_cli
from support.fake_launch import launch_argv, launch_env
from support.httpserver import HTML, JSON, PROM, LocalServer, Response

SCENARIOS = ROOT / "fixtures" / "scenarios"
METRICS = SHARED_FIXTURES / "metrics"


def _vllm(metrics: Path | None) -> dict[str, Response]:
    routes = {"/version": Response(file=SCENARIOS / "vllm_version.json", content_type=JSON),
              "/v1/models": Response(file=SCENARIOS / "vllm_v1_models.json", content_type=JSON)}
    if metrics is not None:
        routes["/metrics"] = Response(file=metrics, content_type=PROM)
    return routes


def _sglang(metrics: Path | None) -> dict[str, Response]:
    routes = {"/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
              "/model_info": Response(file=SCENARIOS / "sglang_model_info.json", content_type=JSON),
              "/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON)}
    if metrics is not None:
        routes["/metrics"] = Response(file=metrics, content_type=PROM)
    return routes


def _check(endpoint: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict]:
    result = run_cli("check", "--endpoint", endpoint, "--format", "json", *args)
    return result, json.loads(result.stdout) if result.stdout.strip() else {}


@requires_shared
def test_vllm_kv_exhausted_is_observed_with_high_confidence() -> None:
    with LocalServer(_vllm(METRICS / "vllm_1.prom")) as srv:
        result, doc = _check(srv.endpoint, "--symptom", "memory-filling-fast")
    assert result.returncode == 1, result.stderr
    assert doc["schema"] == "llmdoctor.check/1" and doc["engine"] == "vllm" and doc["engine_version"] == "0.33.0"
    assert {p["name"] for p in doc["probes"]} >= {"server", "metrics", "process", "gpu"}
    [finding] = [f for f in doc["findings"] if f["id"] == "kv-cache-exhausted"]
    assert finding["severity"] == "critical" and finding["confidence"] == "high"
    evidence = {e["fact"]: e for e in finding["evidence"]}
    assert evidence["metrics.kv_usage"]["observed"] and evidence["metrics.kv_usage"]["value"] > 0.99
    assert evidence["metrics.preemptions_total"]["value"] == 53366
    assert "vllm:num_preemptions_total" in evidence["metrics.preemptions_total"]["source"]


@requires_shared
def test_sglang_server_info_gives_the_launch_and_no_secret_leaks() -> None:
    with LocalServer(_sglang(METRICS / "sglang_1.prom")) as srv:
        result, doc = _check(srv.endpoint)
        text = run_cli("check", "--endpoint", srv.endpoint, "-v").stdout
    assert doc["engine"] == "sglang"
    facts = doc["facts"]
    assert facts["launch.tp"]["value"] == 8 and facts["launch.dp_attention"]["value"] is True
    assert facts["metrics.queued"]["value"] == 2826
    for output in (result.stdout, result.stderr, text):
        assert "sk-scenario-0123456789abcdef" not in output
    # the api key on the recorded launch command is a finding of its own
    assert "secret-in-command" in {f["id"] for f in doc["findings"]}


def test_sglang_without_metrics_is_a_fact_not_a_crash() -> None:
    with LocalServer(_sglang(None)) as srv:
        result, doc = _check(srv.endpoint, "--symptom", "config-hygiene")
    assert result.returncode == 1
    assert doc["facts"]["metrics.available"]["value"] is False
    assert "metrics-disabled" in {f["id"] for f in doc["findings"]}


def test_unreachable_endpoint_is_one_line_exit_3_and_bounded() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    result = run_cli("check", "--endpoint", f"127.0.0.1:{port}", "--timeout", "0.5")
    assert time.monotonic() - start < 10
    assert result.returncode == 3
    assert result.stderr.count("\n") == 1 and "could not be examined" in result.stderr
    assert "Traceback" not in result.stderr


def test_html_is_not_an_llm_server() -> None:
    page = Response(body="<html><body>nginx</body></html>", content_type=HTML)
    with LocalServer({"/": page, "/version": page, "/v1/models": page, "/metrics": page,
                      "/server_info": page, "/get_server_info": page}) as srv:
        result = run_cli("check", "--endpoint", srv.endpoint, "--timeout", "0.5")
    assert result.returncode == 3 and "Traceback" not in result.stderr


def test_slow_server_is_bounded_by_the_timeout() -> None:
    slow = Response(body="{}", content_type=JSON, delay=5)
    with LocalServer({"/version": slow, "/v1/models": slow, "/metrics": slow, "/server_info": slow,
                      "/get_server_info": slow}) as srv:
        start = time.monotonic()
        result = run_cli("check", "--endpoint", srv.endpoint, "--timeout", "0.5")
        elapsed = time.monotonic() - start
    assert result.returncode == 3 and elapsed < 4.5, elapsed


@requires_shared
def test_snapshot_replays_to_the_same_findings(tmp_path: Path) -> None:
    snap = tmp_path / "incident.json"
    with LocalServer(_sglang(METRICS / "sglang_1.prom")) as srv:
        written = run_cli("snapshot", "--endpoint", srv.endpoint, "--gpu", "H200:8", "-o", str(snap))
        assert written.returncode == 0, written.stderr
        _live, live_doc = _check(srv.endpoint, "--gpu", "H200:8")
    replay_doc = json.loads(run_cli("check", "--snapshot", str(snap), "--format", "json").stdout)
    assert sorted(f["id"] for f in replay_doc["findings"]) == sorted(f["id"] for f in live_doc["findings"])
    assert "sk-scenario" not in snap.read_text()
    assert json.loads(snap.read_text())["schema"] == "llmdoctor.snapshot/1"


def test_snapshot_of_an_unreachable_endpoint_writes_nothing(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    out = tmp_path / "s.json"
    result = run_cli("snapshot", "--endpoint", f"127.0.0.1:{port}", "--timeout", "0.5", "-o", str(out))
    assert result.returncode == 3 and not out.exists()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_process_probe_reads_the_real_launch_command_and_hides_the_key() -> None:
    """A real child process whose command line is an SGLang launch command listens on the port: check
    finds it by the port, lints its argv (MoE without EP cannot be judged without a config, but the secret
    can), and never prints the key."""
    port = _free_port()
    argv = launch_argv("--model-path", "Qwen/Qwen3-30B-A3B", "--tp-size", "2",
                       "--api-key", "SECRET-4711-do-not-print", "--port", str(port))
    env = launch_env(dict(os.environ))
    child = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        result = run_cli("check", "--endpoint", f"127.0.0.1:{port}", "--format", "json", "--timeout", "1")
        text = run_cli("check", "--endpoint", f"127.0.0.1:{port}", "-v", "--timeout", "1")
    finally:
        child.terminate()
        child.wait(timeout=10)
    for output in (result.stdout, result.stderr, text.stdout, text.stderr):
        assert "SECRET-4711" not in output
    doc = json.loads(result.stdout)
    assert doc["facts"]["process.found"]["value"] is True
    assert doc["facts"]["launch.tp"]["value"] == 2
    assert "secret-in-command" in {f["id"] for f in doc["findings"]}


@pytest.mark.parametrize("bad", ["http://", "localhost:notaport", "ftp://x:1"])
def test_bad_endpoint_is_input_error(bad: str) -> None:
    result = run_cli("check", "--endpoint", bad)
    assert result.returncode == 2 and result.stderr.count("\n") == 1
