"""The receiver's HTTP side: ``POST /alertmanager`` answered at once (202), ``GET /healthz``, nothing else.

Alertmanager waits for the webhook's answer and retries on failure or timeout, so the answer must not wait for
any check: the body is read (capped, under a socket timeout), parsed, handed to the dispatcher's queue, and
answered with what was accepted. The standard library's threading server is enough: each request is a small
read and a JSON answer; the slow work happens in the dispatcher's pool.
"""

from __future__ import annotations

import hmac
import json
import socket
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from doctor.errors import InputError
from doctor.serve.dispatch import Dispatcher
from doctor.sources.alerts import parse_notification

#: A webhook body of 10,000 alerts with labels and annotations is a few MB; more is not Alertmanager.
MAX_BODY_BYTES = 16 * 1024 * 1024
#: Seconds a client may take to send its request (a stalled sender must not hold a handler thread).
REQUEST_TIMEOUT_S = 10.0
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


class _Handler(BaseHTTPRequestHandler):
    server: ReceiverServer
    timeout = REQUEST_TIMEOUT_S
    server_version = "llmdoctor-serve"
    sys_version = ""

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
        """Quiet: each alert is logged by the dispatcher; request lines would repeat them."""

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

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            raise InputError("Content-Length: missing or not a number")
        if int(length) > MAX_BODY_BYTES:
            raise InputError(f"body: {int(length)} bytes is more than {MAX_BODY_BYTES}")
        try:
            data = self.rfile.read(int(length))
        except OSError as exc:  # a sender that stalls past REQUEST_TIMEOUT_S, or resets
            raise InputError(f"body: not received ({exc.__class__.__name__})") from None
        if len(data) != int(length):
            raise InputError(f"body: {len(data)} of {length} bytes before the client stopped")
        return data

    def _answer(self, status: int, doc: dict[str, Any]) -> None:
        payload = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
