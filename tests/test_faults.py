"""Servers that misbehave, at the CLI level, and a fleet of 500 local endpoints.

Each fault is served by a real local HTTP server on one endpoint while the others answer as SGLang does
(fixtures/scenarios); `llmdoctor check --endpoint` runs as a real subprocess. Each must be bounded in time,
end as a clear one-line error on the probe it hit (and a fact saying why), and leave the other probe's facts
whole. The probe-level versions live in tests/test_probe_runner.py and tests/test_probe_http.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, SHARED_FIXTURES
from support.httpserver import HTML, JSON, PROM, LocalServer, Response
from support.multiport import MultiPortServer

from doctor.commands.fleet import TargetSpec, run_fleet

SCENARIOS = ROOT / "fixtures" / "scenarios"
MB = 1 << 20
TIMEOUT = "1"


def _sglang(**overrides: Response) -> dict[str, Response]:
    routes = {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
              "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
              "/model_info": Response(file=SCENARIOS / "sglang_model_info.json", content_type=JSON),
              "/metrics": Response(file=SCENARIOS / "sglang_dp2_tp4_metrics.prom", content_type=PROM)}
    routes.update(overrides)
    return routes


def _bomb() -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(packer.compress(bytes(MB)) for _ in range(64)) + packer.flush()


#: fault -> (the route it replaces, the faulty response, the probe it hits, what that probe's error says)
FAULTS = {
    "reset mid-body": ("/metrics", Response(body="sglang:num_running_reqs 3\n", length=100_000), "metrics",
                       "connection closed before the body was complete"),
    "dropped before answering": ("/metrics", Response(drop=True), "metrics", "closed by the server"),
    "slow drip below the socket timeout": ("/metrics", Response(body="x" * 100_000, drip=0.05, drip_bytes=10),
                                           "metrics", "timed out after 1s"),
    "never-ending body": ("/metrics", Response(body=b"#" * (64 * 1024), repeat=10**6, send_length=False),
                          "metrics", f"body larger than {16 * MB} bytes"),
    "gzip bomb": ("/metrics", Response(body=_bomb(), headers={"Content-Encoding": "gzip"}), "metrics",
                  "decompressed body larger than"),
    "301 to another host": ("/metrics", Response(301, headers={"Location": "http://127.0.0.2:9/metrics"}),
                            "metrics", "redirected to another host (http://127.0.0.2:9); not followed"),
    "401": ("/metrics", Response(401), "metrics", "needs an API key: pass --api-key-env NAME"),
    "403": ("/metrics", Response(403), "metrics", "needs an API key: pass --api-key-env NAME"),
    "429": ("/metrics", Response(429, headers={"Retry-After": "30"}), "metrics", "HTTP 429 Too Many Requests"),
    "500": ("/metrics", Response(500), "metrics", "HTTP 500 Internal Server Error"),
    "503": ("/metrics", Response(503), "metrics", "HTTP 503 Service Unavailable"),
    "HTML instead of metrics": ("/metrics", Response(body="<html>login</html>", content_type=HTML), "metrics",
                                "not an LLM server (got text/html)"),
    "HTML instead of server_info": ("/server_info", Response(body="<html>login</html>", content_type=HTML),
                                    "server", "not an LLM server (got text/html)"),
    "server_info 500": ("/server_info", Response(500), "server", "HTTP 500"),
    "server_info slow": ("/server_info", Response(body="{}", content_type=JSON, delay=10), "server",
                         "timed out after 1s"),
}


def _check(endpoint: str) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "doctor", "check", "--endpoint", endpoint, "--timeout", TIMEOUT,
                             "--format", "json"], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "NO_COLOR": "1"}, timeout=60)
    return result, time.monotonic() - start


def _one(fault: str) -> list[str]:
    path, response, probe, says = FAULTS[fault]
    with LocalServer(_sglang(**{path: response})) as srv:
        result, elapsed = _check(srv.endpoint)
    problems = []
    if elapsed > 8:  # one 1 s timeout per request, two requests per probe at most, plus start-up
        problems.append(f"took {elapsed:.1f}s")
    if result.returncode not in (0, 1) or "Traceback" in result.stderr:
        return [*problems, f"exit {result.returncode}: {result.stderr.strip()[:300]}"]
    doc = json.loads(result.stdout)
    probes = {p["name"]: p for p in doc["probes"]}
    facts = doc["facts"]
    if probe == "metrics":
        error = probes["metrics"]["error"] or ""
        if probes["metrics"]["ok"] or says not in error or "\n" in error:
            problems.append(f"metrics probe: {probes['metrics']}")
        if says not in (doc["errors"].get("metrics") or ""):  # why every metrics.* fact is unknown
            problems.append(f"errors.metrics: {doc['errors'].get('metrics')!r}")
        if not probes["server"]["ok"] or facts.get("launch.tp", {}).get("value") != 8:
            problems.append("the server probe was affected")
    else:
        if not probes["metrics"]["ok"] or "metrics.running" not in facts:
            problems.append("the metrics probe was affected")
        if facts.get("server.engine", {}).get("value") != "sglang":  # /v1/models still says SGLang
            problems.append("the engine was not identified from the other endpoints")
    return problems


def test_each_fault_at_the_cli_is_bounded_clear_and_contained() -> None:
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = dict(zip(FAULTS, pool.map(_one, FAULTS), strict=True))
    assert not {fault: problems for fault, problems in results.items() if problems}


def test_connection_refused_everywhere_is_exit_3_in_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result, elapsed = _check(f"127.0.0.1:{port}")
    assert result.returncode == 3 and elapsed < 8
    assert result.stderr.count("\n") == 1 and "connection refused" in result.stderr
    doc = json.loads(result.stdout)  # partial results are still printed
    assert doc["probes"][0]["error"].endswith("connection refused")


# ------------------------------------------------------------------------------------------ 500 endpoints
def _rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_fleet_of_500_healthy_slow_and_dead_endpoints_is_bounded() -> None:
    metrics = SHARED_FIXTURES / "metrics" / "vllm_1.prom"
    if not metrics.is_file():
        metrics = SCENARIOS / "sglang_dp2_tp4_metrics.prom"
    routes = {"/version": ("application/json", (SCENARIOS / "vllm_version.json").read_bytes()),
              "/v1/models": ("application/json", (SCENARIOS / "vllm_v1_models.json").read_bytes()),
              "/metrics": ("text/plain; version=0.0.4", metrics.read_bytes())}
    timeout = 1.0
    with MultiPortServer(routes, healthy=300, slow=100, dead=100, slow_delay=0.3) as srv:
        specs = [TargetSpec(endpoint=ep, name=f"t{i}") for i, ep in
                 enumerate(srv.healthy_endpoints + srv.slow_endpoints + srv.dead_endpoints)]
        fds_before = len(os.listdir("/proc/self/fd"))
        threads_before = threading.active_count()
        baseline, peak, done = _rss_kb(), [0], threading.Event()

        def sample() -> None:
            while not done.wait(0.05):
                peak[0] = max(peak[0], _rss_kb())

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        start = time.monotonic()
        fleet = run_fleet(specs, timeout_s=timeout)
        elapsed = time.monotonic() - start
        done.set()
        sampler.join()
        time.sleep(timeout * 2)  # probe threads cut by the run's bound end at their own request deadline
        fds_after = len(os.listdir("/proc/self/fd"))
    reachable = [r for r in fleet.results if r.reachable]
    assert len(fleet.results) == 500 and len(reachable) == 400
    assert {r.spec.endpoint for r in fleet.results if not r.reachable} == set(srv.dead_endpoints)
    assert all(r.run.unreachable and "timed out" in r.run.unreachable for r in fleet.results if not r.reachable)
    assert elapsed < 45, elapsed  # ~2 waves of hung targets (64 at a time, 1 s each) plus 400 diagnoses
    assert fds_after <= fds_before + 2, (fds_before, fds_after)
    assert threading.active_count() <= threads_before + 2
    assert max(peak[0], _rss_kb()) - baseline < 300 * 1024, (baseline, peak[0])  # results keep facts, not bodies
    text = json.dumps(fleet.to_dict(), default=str)
    assert len(text) < 50 * MB


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_fleet_renderers_over_mixed_results(fmt: str, tmp_path: Path) -> None:
    from doctor.commands.fleet import load_targets
    from doctor.render.fleet import fleet_markdown, fleet_text

    with MultiPortServer({}, healthy=0, slow=1, dead=1, slow_delay=0.1) as srv:
        path = tmp_path / "fleet.yaml"
        path.write_text("\n".join(f"- {ep}" for ep in srv.slow_endpoints + srv.dead_endpoints) + "\n- {endpoint: '127.0.0.1:9', command: 'vllm serve m \"unbalanced'}\n")
        fleet = run_fleet(load_targets(str(path)), timeout_s=0.5)
    out = fleet_text(fleet) if fmt == "text" else fleet_markdown(fleet)
    assert out.count("unreachable") >= 2
    # the target whose command cannot be read is still checked, and its row says the command was not read
    assert "unbalanced" in out and "the command was not read" in out
