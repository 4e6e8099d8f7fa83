"""`report` against a Prometheus that misbehaves, over real loopback HTTP (issue 23, Resources): an answer that
streams forever costs bounded memory and ends within --timeout plus a margin; a hung one is not a silent run."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from conftest import ROOT
from support.httpserver import JSON, LocalServer, Response

#: Runs the report as a child and prints the child's peak RSS (KiB): the measure is the report's own.
_MEASURE = ("import resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
            "print(done.returncode); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
            "sys.stderr.write(done.stderr)")


def _report(url: str, *args: str, timeout: float = 120) -> tuple[int, int, str, float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _MEASURE, sys.executable, "-m", "doctor", "report", "--prometheus",
                           url, "--format", "json", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "NO_COLOR": "1"})
    rc, rss = (int(line) for line in done.stdout.split())
    return rc, rss, done.stderr, time.monotonic() - started


def test_an_endless_answer_is_capped_and_the_run_ends():
    head = json.dumps({"status": "success", "data": {"resultType": "vector", "result": []}})[:-3].encode()
    endless = Response(200, head + b"0" * 65536, content_type=JSON, repeat=10**9, send_length=False)
    with LocalServer({"/api/v1/query": endless, "/api/v1/query_range": endless}) as prom:
        rc, rss_kib, stderr, seconds = _report(prom.url(), "--timeout", "3")
    assert rc == 3, stderr
    assert seconds < 3 + 12, f"took {seconds:.1f}s"
    assert rss_kib < 600 * 1024, f"peak memory {rss_kib >> 10} MiB"
    assert "larger than" in stderr or "did not answer within 3s" in stderr
    assert stderr.count("\n") == 1


def test_a_hung_prometheus_says_what_it_waits_for():
    hung = Response(200, b"{}", content_type=JSON, delay=9)
    with LocalServer({"/api/v1/query": hung, "/api/v1/query_range": hung}) as prom:
        rc, _rss, stderr, seconds = _report(prom.url(), "--timeout", "7", "--no-progress")
    assert rc == 3
    first = stderr.splitlines()[0]
    assert first.startswith(f"llmdoctor report: waiting for Prometheus at {prom.url()} (query: ")
    assert "up to 7s, --timeout" in first
    assert stderr.count("waiting for Prometheus") == 1
