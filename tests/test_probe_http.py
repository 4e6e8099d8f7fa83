"""The stdlib HTTP client against a real local server: deadlines, caps, redirects, auth, one-line errors."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from support.httpserver import HTML, JSON, LocalServer, Response

from doctor.probes.http import HttpError, get, post_json

MB = 1024 * 1024


def _free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _error(url: str, **kw) -> HttpError:
    kw.setdefault("timeout_s", 2.0)
    kw.setdefault("max_bytes", 16 * MB)
    with pytest.raises(HttpError) as info:
        get(url, **kw)
    assert "\n" not in str(info.value)
    return info.value


def test_get_returns_body_status_headers_and_sends_no_auth_unless_asked():
    with LocalServer({"/v1/models": Response(body='{"data": []}', content_type=JSON)}) as srv:
        resp = get(srv.url("/v1/models"), timeout_s=2, max_bytes=MB)
        assert resp.status == 200 and resp.json() == {"data": []}
        assert resp.content_type == "application/json"
        assert "authorization" not in srv.requests[-1].headers
        assert srv.requests[-1].headers["accept-encoding"] == "gzip"


def test_connection_refused_is_one_line():
    url = f"http://127.0.0.1:{_free_port()}/metrics"
    err = _error(url)
    assert err.kind == "refused"
    assert str(err) == f"GET {url}: connection refused"


def test_dns_failure_names_the_host():
    err = _error("http://no-such-host.invalid:8000/metrics")
    assert err.kind == "dns" and "no-such-host.invalid" in str(err)


def test_slow_server_ends_at_the_deadline():
    with LocalServer({"/metrics": Response(body="x", delay=10)}) as srv:
        start = time.monotonic()
        err = _error(srv.url("/metrics"), timeout_s=0.5)
        assert time.monotonic() - start < 2.0
        assert err.kind == "timeout" and "timed out after 0.5s" in str(err)


def test_slow_drip_below_the_socket_timeout_still_ends_at_the_total_deadline():
    # One byte every 0.1 s: every single read succeeds well inside the socket timeout.
    with LocalServer({"/metrics": Response(body="y" * 1000, drip=0.1)}) as srv:
        start = time.monotonic()
        err = _error(srv.url("/metrics"), timeout_s=0.8)
        elapsed = time.monotonic() - start
        assert 0.7 < elapsed < 2.0
        assert err.kind == "timeout"


@pytest.mark.parametrize("send_length", [True, False])
def test_fifty_megabyte_body_is_refused_at_the_cap_and_the_connection_closed(send_length):
    # With a Content-Length the refusal is immediate; without one the cap must hold while streaming.
    with LocalServer({"/metrics": Response(body=b"z" * MB, repeat=50, send_length=send_length)}) as srv:
        start = time.monotonic()
        err = _error(srv.url("/metrics"))
        assert err.kind == "too_large" and f"body larger than {16 * MB} bytes" in str(err)
        assert time.monotonic() - start < 2.0


def test_a_declared_length_bounds_what_is_read():
    # Declared small, sent large: the client stops at the declared length.
    with LocalServer({"/m": Response(body=b"a" * 4096, length=100)}) as srv:
        resp = get(srv.url("/m"), timeout_s=2, max_bytes=1000)
        assert len(resp.body) == 100


def test_truncated_body_is_a_clear_error():
    with LocalServer({"/metrics": Response(body="vllm:num_requests_running 3\n", length=5000)}) as srv:
        err = _error(srv.url("/metrics"))
        assert err.kind == "reset" and "closed before the body was complete" in str(err)


def test_dropped_connection_is_a_clear_error():
    with LocalServer({"/metrics": Response(drop=True)}) as srv:
        err = _error(srv.url("/metrics"))
        assert err.kind == "reset" and "closed by the server" in str(err)


def test_gzip_is_decoded():
    with LocalServer({"/metrics": Response(body="vllm:num_requests_running 3\n", gzip=True)}) as srv:
        resp = get(srv.url("/metrics"), timeout_s=2, max_bytes=MB)
        assert resp.text() == "vllm:num_requests_running 3\n"


def _gzip_bomb(size: int) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = bytes(MB)
    return b"".join(packer.compress(zeros) for _ in range(size // MB)) + packer.flush()


def test_gzip_bomb_stops_at_the_decompression_cap():
    bomb = _gzip_bomb(64 * MB)
    assert len(bomb) < MB  # small on the wire, 64 MiB inflated
    with LocalServer({"/metrics": Response(body=bomb, headers={"Content-Encoding": "gzip"})}) as srv:
        err = _error(srv.url("/metrics"))
        assert err.kind == "too_large" and "decompressed body larger than" in str(err)


def test_redirect_to_another_host_is_not_followed_and_the_key_does_not_travel():
    with LocalServer({"/metrics": Response(301, headers={"Location": "http://evil.example:80/steal"})}) as srv:
        err = _error(srv.url("/metrics"), headers={"Authorization": "Bearer KEY123"})
        assert err.kind == "redirect"
        assert "redirected to another host (http://evil.example:80)" in str(err)
        assert len(srv.requests) == 1


def test_redirect_to_another_port_on_the_same_host_is_another_origin():
    with LocalServer({"/x": Response(302, headers={"Location": "http://127.0.0.1:1/x"})}) as srv:
        assert _error(srv.url("/x")).kind == "redirect"


def test_same_origin_redirect_is_followed_with_the_headers():
    with LocalServer({"/old": Response(302, headers={"Location": "/new"}),
                      "/new": Response(body="{}", content_type=JSON)}) as srv:
        resp = get(srv.url("/old"), timeout_s=2, max_bytes=MB, headers={"Authorization": "Bearer K"})
        assert resp.status == 200 and resp.url.endswith("/new")
        assert srv.requests[-1].headers["authorization"] == "Bearer K"


@pytest.mark.parametrize("status", [401, 403])
def test_auth_statuses_say_how_to_pass_a_key(status):
    with LocalServer({"/server_info": Response(status, body='{"error":"Unauthorized"}', content_type=JSON)}) as srv:
        resp = get(srv.url("/server_info"), timeout_s=2, max_bytes=MB)
        err = resp.status_error()
        assert err is not None and err.status == status
        assert "needs an API key: pass --api-key-env NAME" in str(err)
        sent = get(srv.url("/server_info"), timeout_s=2, max_bytes=MB, headers={"Authorization": "Bearer bad"})
        assert "the API key was refused" in str(sent.status_error())


@pytest.mark.parametrize("status,reason", [(500, "Internal Server Error"), (503, "Service Unavailable")])
def test_server_errors_are_one_line(status, reason):
    with LocalServer({"/metrics": Response(status)}) as srv:
        err = get(srv.url("/metrics"), timeout_s=2, max_bytes=MB).status_error()
        assert str(err) == f"GET {srv.url('/metrics')}: HTTP {status} {reason}"


def test_html_where_json_was_expected():
    page = Response(body="<html><body>Welcome to nginx!</body></html>", content_type=HTML)
    with LocalServer({"/v1/models": page}) as srv, pytest.raises(HttpError, match=r"not an LLM server \(got text/html\)"):
        get(srv.url("/v1/models"), timeout_s=2, max_bytes=MB).json()


def test_invalid_json_names_the_position():
    broken = Response(body='{"tp_size": 2,', content_type=JSON)
    with LocalServer({"/server_info": broken}) as srv, pytest.raises(HttpError, match=r"invalid JSON \(Expecting .* at line 1 column"):
        get(srv.url("/server_info"), timeout_s=2, max_bytes=MB).json()


def test_post_json_sends_the_document():
    with LocalServer({"/v1/chat/completions": Response(body='{"id": "x"}', content_type=JSON)}) as srv:
        resp = post_json(srv.url("/v1/chat/completions"), {"model": "m"}, timeout_s=2, max_bytes=MB)
        assert resp.json() == {"id": "x"}
        assert srv.requests[-1].method == "POST" and srv.requests[-1].body == b'{"model": "m"}'
        assert srv.requests[-1].headers["content-type"] == "application/json"


def test_post_is_not_re_sent_by_a_302():
    redirect = Response(302, headers={"Location": "/b"})
    with LocalServer({"/a": redirect}) as srv, pytest.raises(HttpError, match="would drop the request body"):
        post_json(srv.url("/a"), {}, timeout_s=2, max_bytes=MB)


def test_server_shuts_down_with_a_dripping_client_attached():
    start = time.monotonic()
    with LocalServer({"/slow": Response(body="x" * 10_000, drip=0.2)}) as srv, pytest.raises(HttpError):
        get(srv.url("/slow"), timeout_s=0.3, max_bytes=MB)
    assert time.monotonic() - start < 3.0


def test_json_nested_past_the_recursion_limit_is_one_line():
    deep = Response(body="[" * 100_000 + "]" * 100_000, content_type=JSON)
    with LocalServer({"/server_info": deep}) as srv, pytest.raises(HttpError, match="JSON nested too deeply"):
        get(srv.url("/server_info"), timeout_s=2, max_bytes=MB).json()


@contextmanager
def raw_server(answer: bytes) -> Iterator[int]:
    """A listener that reads a request and writes ``answer`` byte for byte, then closes: for what a
    well-behaved test server will not send (chunked bodies, garbage instead of HTTP)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                conn.sendall(answer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        thread.join(timeout=5)


def test_chunked_body_is_reassembled():
    answer = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
              b"7;ext=1\r\n{\"a\": 1\r\n2\r\n}\n\r\n0\r\nX-Trailer: y\r\n\r\n")
    with raw_server(answer) as port:
        resp = get(f"http://127.0.0.1:{port}/v1/models", timeout_s=2.0, max_bytes=MB)
    assert resp.status == 200 and resp.json() == {"a": 1}


def test_chunked_body_past_the_cap_is_refused():
    answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"400\r\n" + b"x" * 1024 + b"\r\n0\r\n\r\n"
    with raw_server(answer) as port:
        err = _error(f"http://127.0.0.1:{port}/metrics", max_bytes=1000)
    assert err.kind == "too_large"


def test_interim_100_continue_is_skipped():
    answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    with raw_server(answer) as port:
        assert get(f"http://127.0.0.1:{port}/x", timeout_s=2.0, max_bytes=MB).json() == {}


@pytest.mark.parametrize("answer", [b"SSH-2.0-OpenSSH_9.6\r\n", b"HTTP/1.1 2000 OK\r\n\r\n",
                                    b"HTTP/1.1 200 OK\r\n" + b"X: y\r\n" * 101 + b"\r\n"])
def test_a_server_that_does_not_speak_http_is_one_line(answer):
    with raw_server(answer) as port:
        err = _error(f"http://127.0.0.1:{port}/v1/models")
    assert err.kind == "protocol" and "not an HTTP response" in str(err)


def test_a_line_break_in_a_header_is_never_sent():
    with LocalServer() as srv:
        err = _error(srv.url("/v1/models"), headers={"Authorization": "Bearer k\r\nX-Injected: 1"})
        assert err.kind == "protocol" and "line break" in str(err)
        assert not srv.requests


def test_a_url_that_would_split_the_request_line_is_never_sent():
    with LocalServer() as srv:
        err = _error(srv.url("/v1/models x\r\nX-Injected: 1"))
        assert err.kind == "protocol" and "space or a control character" in str(err)
        assert not srv.requests


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a certificate")
def test_tls_server_with_an_untrusted_certificate_is_a_tls_error(tmp_path):
    """https:// targets go through ssl with verification on: a self-signed certificate is refused."""
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            try:
                with context.wrap_socket(conn, server_side=True):
                    pass
            except (ssl.SSLError, OSError):
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    err = _error(f"https://127.0.0.1:{listener.getsockname()[1]}/v1/models")
    thread.join(timeout=5)
    assert err.kind == "tls" and "TLS error: self-signed certificate" in str(err)
