"""A real SGLang 0.5.23 whose scheduler (the rank's worker, sglang::scheduler: scheduler.py:6294) is stopped with
SIGSTOP, then whose detokenizer is killed: what /health, /health_generate, /metrics and the API do, and that
`llmdoctor check --endpoint` names it within 15 s. docs/hung.md records the numbers."""

from __future__ import annotations

import os
import signal
import time

import pytest

from realengine.conftest import EngineHarness, Server
from realengine.hang import chat, descendants, find, get, in_background, stopped, timed_check
from realengine.sglang_server import SGLANG
from realengine.vllm_engine import findings

pytestmark = pytest.mark.realengine


@pytest.fixture(scope="module")
def server(engines: EngineHarness) -> Server:
    srv = engines.serve(SGLANG, [])
    assert chat(srv, "default")["status"] == 200
    return srv


def test_healthy_health_generates_one_token(server: Server) -> None:
    # SGLang's /health is not a ping: it queues a one-token generation (1 s on this CPU build)
    assert get(server, "/health")["status"] == 200
    _, doc = timed_check("--endpoint", server.endpoint, "--symptom", "hung")
    assert doc["facts"]["server.health_generate"]["value"] == "ok"
    assert doc["facts"]["metrics.stalled"]["value"] is False
    assert not {"engine-process-stopped", "engine-no-progress", "engine-worker-dead"} & set(findings(doc))


def test_stopped_scheduler_is_named_within_15s(server: Server) -> None:
    scheduler = find(server, "sglang::scheduler")
    with stopped(scheduler):
        threads, answers = in_background(server, "default", 2, timeout=30)
        time.sleep(1)
        metrics = get(server, "/metrics", 10)
        elapsed, doc = timed_check("--endpoint", server.endpoint)
        hung_s, hung = timed_check("--endpoint", server.endpoint, "--symptom", "hung")
        health = get(server, "/health", 30)
    for thread in threads:
        thread.join(30)
    # /health waits for its one-token generation and gives up after SGLang's 20 s timeout
    assert health["status"] == 503 and health["s"] >= 15, health
    assert metrics["status"] == 200
    assert elapsed < 15, elapsed
    found = findings(doc)["engine-process-stopped"]
    assert f"pid {scheduler}" in found["what"] and "sglang::scheduler" in found["what"], found["what"]
    assert hung_s < 15, hung_s
    assert "engine-process-stopped" in findings(hung)
    assert hung["facts"]["server.health_generate"]["value"] == "timeout"  # 4 s, not SGLang's 20 s
    assert all(a["status"] is None or a["s"] > 20 for a in answers), answers  # nothing answered while stopped
    assert chat(server, "default")["status"] == 200  # resumed: it serves again


def test_killed_detokenizer_is_named_dead(server: Server) -> None:
    detok = find(server, "sglang::detokenizer")
    os.kill(detok, signal.SIGKILL)
    time.sleep(2)
    states = {pid: state for pid, _, state in descendants(server.pid)}
    elapsed, doc = timed_check("--endpoint", server.endpoint)
    health = get(server, "/health", 30)
    answer = chat(server, "default", timeout=30)
    print(f"\nSGLang after SIGKILL of its detokenizer: tree {states}, /health {health}, chat {answer}, "
          f"server exited: {server.proc.poll()}")
    assert detok not in states or states[detok] == "Z", states  # reaped at once (measured), or a zombie
    assert elapsed < 15
    found = findings(doc)["engine-worker-dead"]
    assert "detokenizer" in found["what"], found["what"]
