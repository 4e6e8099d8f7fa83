"""`llmdoctor serve` as a real subprocess over real loopback HTTP: the webhook contract, dedup, bounds, redaction.

Engines are local servers replaying the REAL scrapes in fixtures/metrics with
scenario /version and /v1/models bodies; the webhook payloads are SCENARIOS in Alertmanager's documented
format (version 4). test_serve_e2e.py drives the same receiver from real Prometheus and Alertmanager.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, requires_shared, run_cli
from support.httpserver import LocalServer, Response
from support.multiport import MultiPortServer
from support.serve import Receiver, payload, post, vllm_routes

METRICS = SHARED_FIXTURES / "metrics"


def _alert(instance: str, fingerprint: str, **labels: str) -> dict:
    return {"labels": {"alertname": "LLMDoctorKvCacheExhausted", "instance": instance,
                       "symptom": "memory-filling-fast", **labels}, "fingerprint": fingerprint}


@requires_shared
def test_firing_alert_is_checked_and_delivered_to_file_and_chat(tmp_path: Path) -> None:
    sink = LocalServer({"/hook": Response(body="ok")})
    out = tmp_path / "out"
    with LocalServer(vllm_routes(METRICS / "vllm_1.prom")) as engine, sink, \
            Receiver(tmp_path, "--out-dir", str(out), "--notify-url", sink.url("/hook"), "--timeout", "3") as rx:
        started = time.monotonic()
        status, answer = post(f"{rx.url}/alertmanager", payload([
            _alert(engine.endpoint, "a1b2c3d4e5f60718",
                   **{"severity": "critical"}) | {"annotations": {"runbook_url": "https://docs/causes.md#x"}},
            {"labels": {"alertname": "NoInstance"}, "fingerprint": "00000000000000aa"},
            {**_alert(engine.endpoint, "00000000000000bb"), "status": "resolved"}]))
        assert status == 202 and time.monotonic() - started < 2
        assert answer["accepted"] == ["a1b2c3d4e5f60718"]
        assert {s["reason"] for s in answer["skipped"]} == {"no instance label", "resolved"}
        health = rx.wait(lambda h: h["delivered"] >= 1)
        assert health["delivered"] == 1 and health["checked"] == 1 and health["pending"] == 0
    text = (out / "a1b2c3d4e5f60718.md").read_text()
    assert text.startswith(f"# LLMDoctorKvCacheExhausted on {engine.endpoint}: llmdoctor check")
    assert "kv-cache-exhausted" in text and "vllm:kv_cache_usage_perc" in text
    assert "runbook_url: https://docs/causes.md#x" in text
    assert "- source: http://prometheus/graph" in text  # the alert's generatorURL: one click to the graph
    posted = [r for r in sink.requests if r.method == "POST"]
    assert len(posted) == 1 and posted[0].headers["content-type"] == "application/json"
    assert json.loads(posted[0].body) == {"text": text}


@requires_shared
def test_one_check_per_fingerprint_within_the_window(tmp_path: Path) -> None:
    with LocalServer(vllm_routes(METRICS / "vllm_2.prom")) as engine, \
            Receiver(tmp_path, "--out-dir", str(tmp_path / "out"), "--dedup-window", "1h") as rx:
        body = payload([_alert(engine.endpoint, "00000000000000c1")])
        assert post(f"{rx.url}/alertmanager", body)[1]["accepted"] == ["00000000000000c1"]
        status, again = post(f"{rx.url}/alertmanager", body)
        assert status == 202 and again["accepted"] == [] and "dedup-window" in again["skipped"][0]["reason"]
        health = rx.wait(lambda h: h["delivered"] >= 1)
        assert health["checked"] == 1 and health["deduplicated"] == 1
        assert "max-num-seqs-limit" in (tmp_path / "out" / "00000000000000c1.md").read_text()


@requires_shared
def test_hundred_alerts_in_one_webhook_none_dropped_hung_ones_bounded(tmp_path: Path) -> None:
    """100 alerts, 10 of them for hung servers: all answered at once, all checked, all delivered."""
    routes = {path: (r.content_type, r.payload()) for path, r in vllm_routes(METRICS / "vllm_1.prom").items()}
    out = tmp_path / "out"
    with MultiPortServer(routes, healthy=90, dead=10) as fleet, \
            Receiver(tmp_path, "--out-dir", str(out), "--timeout", "2", "--concurrency", "16") as rx:
        endpoints = fleet.healthy_endpoints + fleet.dead_endpoints
        started = time.monotonic()
        status, answer = post(f"{rx.url}/alertmanager",
                              payload([_alert(e, f"{i:016x}") for i, e in enumerate(endpoints)]))
        assert status == 202 and len(answer["accepted"]) == 100 and time.monotonic() - started < 3
        health = rx.wait(lambda h: h["delivered"] + h["delivery_failed"] + h["check_failed"] >= 100, timeout=90)
    assert health["delivered"] == 100 and health["dropped"] == 0 and health["check_failed"] == 0
    files = sorted(out.glob("*.md"))
    assert len(files) == 100
    hung = [f for f in files if "**Target unreachable:**" in f.read_text()]
    assert len(hung) == 10


def test_queue_bound_refuses_and_counts(tmp_path: Path) -> None:
    with MultiPortServer({}, healthy=0, dead=3) as fleet, \
            Receiver(tmp_path, "--out-dir", str(tmp_path / "out"), "--timeout", "2", "--concurrency", "1",
                     "--max-queue", "2") as rx:
        _, answer = post(f"{rx.url}/alertmanager",
                         payload([_alert(e, f"{i:016x}") for i, e in enumerate(fleet.dead_endpoints)]))
        assert len(answer["accepted"]) == 2 and answer["skipped"][0]["reason"].startswith("queue full")
        assert rx.health()["dropped"] == 1


def test_bad_posts_are_400_with_one_line_and_the_receiver_survives(tmp_path: Path) -> None:
    with Receiver(tmp_path, "--out-dir", str(tmp_path / "out")) as rx:
        for body, says in ((b"not json", "body: not JSON"), (b"[]", "expected a JSON object"),
                           (b'{"version": "3", "alerts": []}', "version: '3'"),
                           (b'{"version": "4", "alerts": [{"status": "firing", "labels": {"a": 1}}]}',
                            "alerts[0].labels"),
                           (b'{"version": "4", "alerts": [{"status": "odd", "labels": {}}]}', "alerts[0].status")):
            status, answer = post(f"{rx.url}/alertmanager", body)
            assert status == 400 and says in answer["error"] and "\n" not in answer["error"]
        assert post(f"{rx.url}/elsewhere", b"{}")[0] == 404
        assert rx.health()["status"] == "ok"
        assert rx.stop() == 0  # SIGTERM: stops accepting, drains, exits 0
    assert (tmp_path / "serve.log").read_text().rstrip().endswith("llmdoctor serve: stopped")


def test_bearer_token_and_targets_only(tmp_path: Path) -> None:
    targets = tmp_path / "fleet.yaml"
    targets.write_text("- {name: gpu-node-1:8000, endpoint: 'http://127.0.0.1:9', gpu: 'H200:8'}\n")
    with Receiver(tmp_path, "--out-dir", str(tmp_path / "out"), "--targets", str(targets), "--token-env", "TOK",
                  env={"TOK": "s3cr3t-token"}) as rx:
        body = payload([_alert("gpu-node-1:8000", "00000000000000d1"), _alert("other:8000", "00000000000000d2")])
        assert post(f"{rx.url}/alertmanager", body)[0] == 401
        assert post(f"{rx.url}/alertmanager", body, {"Authorization": "Bearer nope"})[0] == 401
        status, answer = post(f"{rx.url}/alertmanager", body, {"Authorization": "Bearer s3cr3t-token"})
        assert status == 202 and answer["accepted"] == ["00000000000000d1"]
        assert "not in --targets" in answer["skipped"][0]["reason"]
        rx.wait(lambda h: h["delivered"] >= 1)
    # the target's endpoint (from the file, not the label) was checked, with its GPU hint
    text = (tmp_path / "out" / "00000000000000d1.md").read_text()
    assert "http://127.0.0.1:9" in text


@requires_shared
def test_secrets_never_reach_the_outputs(tmp_path: Path) -> None:
    sink = LocalServer({"/services/T000/B000/XXXXSECRETPATH": Response(body="ok")})
    with LocalServer(vllm_routes(METRICS / "vllm_1.prom")) as engine, sink:
        hook = sink.url("/services/T000/B000/XXXXSECRETPATH")
        with Receiver(tmp_path, "--out-dir", str(tmp_path / "out"), "--notify-url-env", "HOOK",
                      env={"HOOK": hook}) as rx:
            alert = _alert(f"http://admin:hunter2pass@{engine.endpoint}", "00000000000000e1")
            alert["annotations"] = {"description": "restart with --api-key sk-live-0123456789abcdef"}
            post(f"{rx.url}/alertmanager", payload([alert]))
            rx.wait(lambda h: h["delivered"] >= 1)
        sink_requests = [r.body.decode() for r in sink.requests]
    everything = (tmp_path / "out" / "00000000000000e1.md").read_text() + "".join(sink_requests) + \
        (tmp_path / "serve.log").read_text()
    for secret in ("hunter2pass", "sk-live-0123456789abcdef"):
        assert secret not in everything
    assert "XXXXSECRETPATH" not in (tmp_path / "serve.log").read_text()
    assert "kv-cache-exhausted" in everything


@pytest.mark.parametrize("args, env, says", [
    ([], {}, "nowhere to deliver"),
    (["--out-dir", "/tmp", "--listen", "nohost"], {}, "--listen 'nohost'"),
    (["--notify-url-env", "NOPE_NOT_SET"], {}, "NOPE_NOT_SET"),
    (["--out-dir", "/tmp", "--token-env", "s3cr3t-pasted.value"], {}, "--token-env: expects the NAME"),
    (["--notify-url", "ftp://x"], {}, "http(s) URL"),
    (["--out-dir", "/tmp", "--targets", "/nonexistent.yaml"], {}, "/nonexistent.yaml"),
    (["--out-dir", "/tmp", "--dedup-window", "soon"], {}, "--dedup-window"),
])
def test_bad_input_exit_2(args: list[str], env: dict, says: str) -> None:
    result = run_cli("serve", *args, env=env)
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr
    assert "s3cr3t" not in result.stderr  # a secret pasted where its variable's name belongs is never echoed


def test_a_stalled_sender_gets_400_and_no_traceback(tmp_path: Path) -> None:
    import socket

    with Receiver(tmp_path, "--out-dir", str(tmp_path / "out")) as rx:
        with socket.create_connection(("127.0.0.1", rx.port), timeout=30) as sock:
            sock.sendall(b"POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"version\"")
            answer = b""
            while chunk := sock.recv(4096):   # the headers and the body may come in separate segments
                answer += chunk
        answer = answer.decode()
        assert answer.startswith("HTTP/1.0 400") and "body: not received" in answer
        assert rx.health()["status"] == "ok"
    assert "Traceback" not in (tmp_path / "serve.log").read_text()
