"""The receiver's HTTP side: ``POST /alertmanager`` answered at once (202), ``GET /healthz``, nothing else.

Alertmanager waits for the webhook's answer and retries on failure or timeout, so the answer must not wait for
any check: the body is read (capped, under a socket timeout), parsed, handed to the dispatcher's queue, and
answered with what was accepted. The standard library's threading server is enough: each request is a small
read and a JSON answer; the slow work happens in the dispatcher's pool.
"""

from __future__ import annotations

import hmac
import io
import json
import socket
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from doctor.errors import InputError
from doctor.serve.dispatch import Dispatcher
from doctor.sources.alerts import parse_notification

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: A webhook body of 10,000 alerts with labels and annotations is a few MB; more is not Alertmanager.
MAX_BODY_BYTES = 16 * 1024 * 1024
#: Seconds a client may take to send its whole request, headers and body (a stalled or 1-byte-a-second
#: sender must not hold a handler thread): a deadline for the request, not an idle limit between bytes.
REQUEST_TIMEOUT_S = 10.0
#: An over-limit body is answered 413 at once, then up to this much of it is read and dropped (within the
#: request's deadline) so the sender reads the answer instead of a reset connection.
DRAIN_BYTES = 64 * 1024 * 1024
PATHS = ("/alertmanager", "/healthz")


class ReceiverServer(ThreadingHTTPServer):
    daemon_threads = True
    # a burst of alerts from several Alertmanagers: the kernel queues connections until a thread takes them
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], dispatcher: Dispatcher, token: str | None = None,
                 log: Any = None) -> None:
        self.dispatcher = dispatcher
        self.token = token
        self.log = log or (lambda line: None)
        if ":" in address[0]:  # --listen [::1]:9095
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line, never the standard library's traceback on stderr (a client that vanished mid-answer)."""
        import sys

        exc = sys.exc_info()[1]
        self.log(f"request from {client_address[0]} failed: {type(exc).__name__}: {exc}")


class _DeadlineReader(io.RawIOBase):
    """The socket's reads, each given only the time left before the request's deadline."""

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"request not received within {REQUEST_TIMEOUT_S:g}s")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class _Handler(BaseHTTPRequestHandler):
    server: ReceiverServer
    timeout = REQUEST_TIMEOUT_S
    server_version = "llmdoctor-serve"
    sys_version = ""

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the stdlib's reader, replaced (an open one would keep the socket from closing)
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, time.monotonic() + REQUEST_TIMEOUT_S))

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Quiet: each alert is logged by the dispatcher; request lines would repeat them."""

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's errors (a garbage request line, an unsupported method, a header too long)
        as JSON like every other answer, never its HTML page."""
        self.close_connection = True
        if getattr(self, "request_version", "HTTP/0.9") in ("HTTP/0.9", ""):  # answer with a status line
            self.request_version = "HTTP/1.0"
        with_body = getattr(self, "command", None) != "HEAD" and code >= 200 and code not in (204, 304)
        short = message or self.responses.get(code, ("error",))[0]
        try:
            if with_body:
                self._answer(code, {"error": f"{short}; paths: POST /alertmanager, GET /healthz"})
            else:
                self.send_response(code, short)
                self.send_header("Connection", "close")
                self.end_headers()
        except OSError:  # the client is gone: nothing to tell it
            pass

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/healthz", "/-/healthy", "/-/ready"):
            self._answer(200, self.server.dispatcher.health())
        else:
            self._answer(404, {"error": f"not found; paths: {', '.join(PATHS)}"})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path != "/alertmanager":
            self._answer(404, {"error": "POST /alertmanager (Alertmanager webhook payload version 4)"})
            return
        if not self._authorized():
            self._answer(401, {"error": "missing or wrong bearer token"})
            return
        try:
            body = self._body()
            if body is None:
                return
            notification = parse_notification(body)
        except InputError as exc:
            self.server.log(f"rejected a POST from {self.client_address[0]}: {exc}")
            self._answer(400, {"error": str(exc)})
            return
        answer = self.server.dispatcher.submit(notification)
        self.server.log(f"{notification.receiver or 'webhook'}: {len(notification.alerts)} alerts, "
                        f"{len(answer['accepted'])} checks queued"
                        + (f"; Alertmanager left out {notification.truncated} more (its webhook max_alerts)"
                           if notification.truncated else ""))
        self._answer(202, answer)

    def _authorized(self) -> bool:
        if not self.server.token:
            return True
        given = self.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode(), f"Bearer {self.server.token}".encode())

    def _body(self) -> bytes | None:
        """The request body; None when it was refused as too large (413 answered already)."""
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise InputError("Content-Length: missing or not a number")
        if int(length) > MAX_BODY_BYTES:
            self.server.log(f"rejected a POST from {self.client_address[0]}: body of {int(length)} bytes")
            self._answer(413, {"error": f"body: {int(length)} bytes is more than {MAX_BODY_BYTES}"})
            self.close_connection = True
            self._drain(min(int(length), DRAIN_BYTES))
            return None
        try:
            data = self.rfile.read(int(length))
        except OSError as exc:  # a sender that stalls past REQUEST_TIMEOUT_S, or resets
            raise InputError(f"body: not received ({exc.__class__.__name__})") from None
        if len(data) != int(length):
            raise InputError(f"body: {len(data)} of {length} bytes before the client stopped")
        return data

    def _drain(self, count: int) -> None:
        """Read and drop what the sender still sends (within the deadline), so it reads the answer."""
        try:
            while count > 0:
                chunk = self.rfile.read1(min(count, 1 << 16))
                if not chunk:
                    return
                count -= len(chunk)
        except OSError:
            pass

    def _answer(self, status: int, doc: dict[str, Any]) -> None:
        self.connection.settimeout(REQUEST_TIMEOUT_S)  # writing the answer: not bound by the read deadline
        payload = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
