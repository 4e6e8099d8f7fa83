"""run_probes: all probes side by side against a real local server, a fault in one leaving the others alone,
and the whole run bounded."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from support.httpserver import HTML, JSON, PROM, LocalServer, Response

from doctor.errors import InputError
from doctor.probes.base import ProbeOptions, Target
from doctor.probes.runner import DEFAULT, run_probes

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
MB = 1024 * 1024


def _sglang(metrics: Response | None = None, **overrides: Response) -> dict:
    routes = {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
              "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
              "/model_info": Response(file=SCENARIOS / "sglang_model_info.json", content_type=JSON),
              "/metrics": metrics or Response(file=SCENARIOS / "sglang_dp2_tp4_metrics.prom", content_type=PROM)}
    routes.update(overrides)
    return routes


def test_all_probes_in_order():
    with LocalServer(_sglang()) as srv:
        results = run_probes(Target.parse(srv.endpoint), ProbeOptions())
    assert [r.name for r in results] == list(DEFAULT)  # liveness generates a token: only the hung tree asks
    by_name = {r.name: r for r in results}
    assert by_name["server"].ok and by_name["server"].facts.get("server.engine") == "sglang"
    assert by_name["metrics"].ok and by_name["metrics"].facts.get("metrics.running") == 61
    # the test server lives in this very process: the process probe finds it by its port
    assert by_name["process"].ok and by_name["process"].facts.get("process.found") is True


def test_slow_metrics_does_not_hold_the_others():
    with LocalServer(_sglang(Response(body="x", delay=10))) as srv:
        start = time.monotonic()
        results = {r.name: r for r in run_probes(Target.parse(srv.endpoint), ProbeOptions(timeout_s=0.5),
                                                  ["server", "metrics"])}
        elapsed = time.monotonic() - start
    assert elapsed < 2.0
    assert results["server"].ok
    assert not results["metrics"].ok and "timed out after 0.5s" in results["metrics"].error


def test_the_run_is_bounded_even_when_a_probe_is_not():
    # Each request may take 5 s, but the run may take 0.5 s: the server probe is cut and says so.
    with LocalServer(_sglang(**{"/v1/models": Response(body="{}", content_type=JSON, delay=5)})) as srv:
        start = time.monotonic()
        results = run_probes(Target.parse(srv.endpoint), ProbeOptions(timeout_s=5, run_timeout_s=0.5),
                             ["server", "metrics"])
        elapsed = time.monotonic() - start
    assert elapsed < 1.5
    server_result, metrics_result = results
    assert not server_result.ok and server_result.error.startswith("timed out: still running when the run's 0.5s")
    assert server_result.facts.unknown_reason("server.engine") == server_result.error
    assert metrics_result.ok


def test_endpoint_down_fails_fast_everywhere_with_clear_errors():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    start = time.monotonic()
    results = {r.name: r for r in run_probes(Target.parse(f"127.0.0.1:{port}"), ProbeOptions())}
    assert time.monotonic() - start < 2.0
    assert results["server"].error == f"GET http://127.0.0.1:{port}/v1/models: connection refused"
    assert results["metrics"].error == f"GET http://127.0.0.1:{port}/metrics: connection refused"
    assert "no process on this host listens" in results["process"].error


def test_unknown_probe_is_an_input_error():
    with pytest.raises(InputError, match="unknown probe 'nvml'"):
        run_probes(Target.parse("h:1"), ProbeOptions(), ["server", "nvml"])


def _bomb() -> bytes:
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    return b"".join(packer.compress(bytes(MB)) for _ in range(20)) + packer.flush()


# fault: (route, response, the probe it hits, what its error or raw record says)
FAULTS = {
    "slow": ("/metrics", Response(body="x", delay=10), "metrics", "timed out after 0.5s"),
    "slow drip": ("/metrics", Response(body="x" * 10_000, drip=0.05), "metrics", "timed out after 0.5s"),
    "html": ("/metrics", Response(body="<html>sign in</html>", content_type=HTML), "metrics",
             "not an LLM server (got text/html)"),
    "401": ("/metrics", Response(401), "metrics", "needs an API key: pass --api-key-env NAME"),
    "403": ("/metrics", Response(403), "metrics", "needs an API key: pass --api-key-env NAME"),
    "500": ("/metrics", Response(500), "metrics", "HTTP 500 Internal Server Error"),
    "503": ("/metrics", Response(503), "metrics", "HTTP 503 Service Unavailable"),
    "50 MB body": ("/metrics", Response(body=b"#" * MB, repeat=50), "metrics", f"body larger than {16 * MB} bytes"),
    "truncated": ("/metrics", Response(body="sglang:num_running_reqs 3\n", length=4000), "metrics",
                  "closed before the body was complete"),
    "gzip bomb": ("/metrics", Response(body=_bomb(), headers={"Content-Encoding": "gzip"}), "metrics",
                  "decompressed body larger than"),
    "invalid JSON": ("/server_info", Response(body='{"tp_size": 8, "version"', content_type=JSON), "server",
                     "invalid JSON"),
    "301 elsewhere": ("/v1/models", Response(301, headers={"Location": "http://evil.example:8000/v1/models"}),
                      "server", "redirected to another host (http://evil.example:8000); not followed"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
def test_each_fault_is_bounded_clear_and_contained(fault):
    path, response, probe, says = FAULTS[fault]
    with LocalServer(_sglang(**{path: response})) as srv:
        start = time.monotonic()
        # The HTTP probes and the process probe: NVML (the gpu probe) is absent on test machines.
        results = {r.name: r for r in run_probes(Target.parse(srv.endpoint), ProbeOptions(timeout_s=0.5),
                                                 names=["server", "metrics", "process"])}
        elapsed = time.monotonic() - start
    assert elapsed < 3.0
    hit = results[probe]
    if probe == "metrics":
        assert not hit.ok and says in hit.error and "\n" not in hit.error
        assert says in hit.facts.unknown_reason("metrics.kv_usage")
    else:  # the server probe still identifies SGLang from its other endpoints; the record says what broke
        assert hit.ok and hit.facts.get("server.engine") == "sglang"
        assert says in hit.raw["requests"][path]["error"]
    others = [r for name, r in results.items() if name != probe]
    assert all(r.ok for r in others), [(r.name, r.error) for r in others]


@pytest.mark.parametrize("slow", ["/v1/models", "/metrics"])
def test_inline_last_probe_runs_beside_the_others_in_the_callers_thread(slow):
    # check --targets' pool thread runs the last probe itself: a hung server still costs one timeout, not two
    from doctor.probes.runner import PendingProbes

    routes = _sglang(**{slow: Response(body="x", delay=10)})
    with LocalServer(routes) as srv:
        start = time.monotonic()
        pending = PendingProbes(Target.parse(srv.endpoint), ProbeOptions(timeout_s=0.6), ["server", "metrics"],
                                inline_last=True)
        assert [t.name for t in pending._threads] == ["probe-server"]
        results = pending.results()
        elapsed = time.monotonic() - start
    assert elapsed < 1.5
    assert [r.name for r in results] == ["server", "metrics"]
    slow_one, other = (results[0], results[1]) if slow == "/v1/models" else (results[1], results[0])
    assert not slow_one.ok and "timed out after 0.6s" in slow_one.error
    assert other.ok
