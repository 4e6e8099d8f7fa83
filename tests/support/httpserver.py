"""A real HTTP server on 127.0.0.1 for tests: routes, faults, and clean shutdown.

Probes are tested over real sockets, not mocks: this server listens on an ephemeral port in a thread and
answers each path from a route table. A route is a :class:`Response` (or a list of them, served in turn,
the last one repeating; or a callable taking the :class:`Request`). Faults are response options: a delay
before the status line, a slow drip of the body, a declared length longer than the body, a dropped
connection, a streamed body of any size, gzip.

    with LocalServer({"/metrics": Response(body=text, content_type=PROM)}) as srv:
        get(srv.url("/metrics"), ...)
        srv.requests[-1].headers["authorization"]

Unknown paths get FastAPI's 404 (``{"detail":"Not Found"}``, application/json), as both engines answer.
"""

from __future__ import annotations

import contextlib
import gzip as gzip_module
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

JSON = "application/json"
PROM = "text/plain; version=0.0.4; charset=utf-8"
HTML = "text/html; charset=utf-8"


@dataclass
class Response:
    status: int = 200
    body: bytes | str = b""
    file: Path | None = None  # body read from this file (real fixtures are read in place)
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before the status line
    drip: float = 0.0  # seconds between body pieces of drip_bytes
    drip_bytes: int = 1
    repeat: int = 1  # body sent this many times (large bodies without building them)
    gzip: bool = False  # compress the body and say Content-Encoding: gzip
    length: int | None = None  # declared Content-Length (more than the body: a truncated response)
    send_length: bool = True  # False: no Content-Length, the body ends when the connection closes
    drop: bool = False  # close the connection without answering

    def payload(self) -> bytes:
        data = self.file.read_bytes() if self.file is not None else self.body
        data = data.encode("utf-8") if isinstance(data, str) else data
        return gzip_module.compress(data) if self.gzip else data


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes


Route = Response | list | Callable[[Request], Response]


class LocalServer:
    """``with LocalServer(routes) as srv``: listening on ``srv.port`` until the block ends."""

    def __init__(self, routes: dict[str, Route] | None = None) -> None:
        self.routes: dict[str, Route] = dict(routes or {})
        self.requests: list[Request] = []
        self._served: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> LocalServer:
        handler = _make_handler(self)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="LocalServer", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # ends delays and drips in handler threads
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    @property
    def port(self) -> int:
        assert self._httpd is not None, "use LocalServer as a context manager"
        return self._httpd.server_address[1]

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    # -- serving -----------------------------------------------------------------------------
    def _pick(self, request: Request) -> Response | None:
        route = self.routes.get(request.path)
        if route is None:
            route = self.routes.get(request.path.split("?")[0])
        if route is None:
            return None
        if callable(route):
            return route(request)
        if isinstance(route, list):
            with self._lock:
                index = self._served.get(request.path, 0)
                self._served[request.path] = index + 1
            return route[min(index, len(route) - 1)]
        return route


def _make_handler(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib signature
            pass  # quiet test output

        def handle(self) -> None:
            # The client may give up (body cap, deadline): expected in fault tests.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
                super().handle()

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = Request(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            with server._lock:
                server.requests.append(request)
            response = server._pick(request)
            if response is None:
                response = Response(404, b'{"detail":"Not Found"}', content_type=JSON)
            if response.delay and server._stopping.wait(response.delay):
                return
            if response.drop:
                self.close_connection = True
                return
            payload = response.payload()
            total = len(payload) * response.repeat
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            if response.send_length:
                self.send_header("Content-Length", str(response.length if response.length is not None else total))
            self.send_header("Connection", "close")
            if response.gzip:
                self.send_header("Content-Encoding", "gzip")
            for name, value in response.headers.items():
                self.send_header(name, value)
            self.end_headers()
            for piece in _pieces(payload, response):
                if server._stopping.is_set():
                    break
                self.wfile.write(piece)
                if response.drip and server._stopping.wait(response.drip):
                    break
            self.wfile.flush()
            self.close_connection = True

    return Handler


def _pieces(payload: bytes, response: Response) -> Iterator[bytes]:
    for _ in range(response.repeat):
        if not response.drip:
            yield payload
            continue
        for start in range(0, len(payload), response.drip_bytes):
            yield payload[start:start + response.drip_bytes]
