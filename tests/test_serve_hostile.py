"""`serve` against hostile clients and a refusing webhook, over real loopback sockets (issue 23).

The receiver runs in this process (doctor.serve.http.ReceiverServer in a thread) so the request deadline can
be shortened for the slow-loris case; the webhook delivery runs the real `llmdoctor serve` subprocess.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.prometheus import free_port
from support.serve import Receiver, payload, post

from doctor.serve import http as serve_http
from doctor.serve.dispatch import Dispatcher, ServeOptions


@contextmanager
def receiver() -> Iterator[tuple[str, int]]:
    server = serve_http.ReceiverServer(("127.0.0.1", 0), Dispatcher(ServeOptions()))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[:2]
    finally:
        server.shutdown()
        server.server_close()


def _exchange(address: tuple[str, int], data: bytes, timeout: float = 10) -> bytes:
    with socket.create_connection(address, timeout=timeout) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _json_answer(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"application/json" in head, raw[:300]
    return status, json.loads(body)


def test_deeply_nested_json_is_a_400_answer() -> None:
    body = b"[" * 100_000 + b"]" * 100_000
    with receiver() as address:
        raw = _exchange(address, b"POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                  b"Content-Length: %d\r\n\r\n" % len(body) + body)
    status, doc = _json_answer(raw)
    assert status == 400 and "nested too deeply" in doc["error"]


@pytest.mark.parametrize("request_line", [b"DELETE /alertmanager HTTP/1.1", b"GARBAGE", b"GET / HTTP/9.9",
                                          b"PUT /healthz HTTP/1.0"])
def test_unsupported_requests_get_json_errors(request_line: bytes) -> None:
    with receiver() as address:
        raw = _exchange(address, request_line + b"\r\nHost: x\r\n\r\n")
    status, doc = _json_answer(raw)
    assert status >= 400 and doc["error"]
    assert b"<html" not in raw.lower() and b"<!doctype" not in raw.lower()


def test_slow_loris_is_closed_at_the_request_deadline(monkeypatch) -> None:
    """One byte every 0.2 s never idles past any per-read timeout; the whole request still has a deadline."""
    monkeypatch.setattr(serve_http, "REQUEST_TIMEOUT_S", 1.5)
    request = b"POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"x" * 100_000
    with receiver() as address, socket.create_connection(address, timeout=5) as sock:
        started = time.monotonic()
        closed = False
        for byte in request:
            try:
                sock.send(bytes([byte]))
            except OSError:
                closed = True
                break
            sock.settimeout(0.2)
            try:
                if sock.recv(4096) == b"":
                    closed = True
                    break
            except TimeoutError:
                pass
            if time.monotonic() - started > 8:
                break
        assert closed, "the connection was still open after 8 s"
        assert time.monotonic() - started < 4


def test_over_limit_body_is_413_before_it_is_read(monkeypatch) -> None:
    monkeypatch.setattr(serve_http, "MAX_BODY_BYTES", 1024)
    body = b"{" + b" " * (4 * 1024 * 1024) + b"}"
    with receiver() as address:
        raw = _exchange(address, b"POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body)
                        + body)
    status, doc = _json_answer(raw)
    assert status == 413 and "more than 1024" in doc["error"]


def test_webhook_failure_shows_only_scheme_and_host(tmp_path: Path) -> None:
    """A Slack-style webhook whose delivery is refused (nothing listens there): stderr names the origin only."""
    dead = free_port()
    hook = f"http://127.0.0.1:{dead}/services/T01ABCDEF/B02GHIJKL/abcdSECRETxyz123"
    with Receiver(tmp_path, "--notify-url-env", "HOOK", "--timeout", "1",
                  env={"HOOK": hook}) as rx:
        alert = {"labels": {"alertname": "LLMDoctorKvCacheExhausted", "instance": f"127.0.0.1:{free_port()}",
                            "symptom": "memory-filling-fast"}, "fingerprint": "00000000000000f1"}
        post(f"{rx.url}/alertmanager", payload([alert]))
        rx.wait(lambda h: h["delivery_failed"] >= 1)
    log = (tmp_path / "serve.log").read_text()
    assert f"notify to http://127.0.0.1:{dead} failed" in log, log
    for secret in ("T01ABCDEF", "B02GHIJKL", "abcdSECRET", "/services"):
        assert secret not in log
