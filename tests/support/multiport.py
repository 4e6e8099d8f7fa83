"""Hundreds of local HTTP endpoints in one thread, some of which never answer: for fleet checks.

Each healthy port answers GETs from a route table of canned bodies (then closes the connection); each slow port
answers the same, ``slow_delay`` seconds after the request arrived (a loaded server, inside the client's
timeout); each dead port listens but is never accepted, so a client connects and then waits for a response
that never comes, exactly like a hung server. One selector thread serves every port, so a test can stand up
500 endpoints without 500 threads.
"""

from __future__ import annotations

import contextlib
import heapq
import selectors
import socket
import threading
import time
from dataclasses import dataclass, field


@dataclass
class MultiPortServer:
    routes: dict[str, tuple[str, bytes]]  # path -> (content type, body); anything else is a 404
    healthy: int
    dead: int = 0
    slow: int = 0
    slow_delay: float = 0.3
    healthy_endpoints: list[str] = field(default_factory=list)
    dead_endpoints: list[str] = field(default_factory=list)
    slow_endpoints: list[str] = field(default_factory=list)

    def __enter__(self) -> MultiPortServer:
        self._selector = selectors.DefaultSelector()
        self._sockets: list[socket.socket] = []
        self._slow_ports: set[int] = set()
        self._due: list[tuple[float, int, socket.socket, bytes]] = []  # (when, tie-break, connection, request)
        kinds = ["healthy"] * self.healthy + ["slow"] * self.slow + ["dead"] * self.dead
        for kind in kinds:
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(512)
            self._sockets.append(sock)
            port = sock.getsockname()[1]
            getattr(self, f"{kind}_endpoints").append(f"127.0.0.1:{port}")
            if kind == "dead":
                continue
            if kind == "slow":
                self._slow_ports.add(port)
            sock.setblocking(False)
            self._selector.register(sock, selectors.EVENT_READ, None)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        for key in list(self._selector.get_map().values()):
            self._selector.unregister(key.fileobj)
            if key.data is not None:
                key.fileobj.close()
        self._selector.close()
        for _when, _n, conn, _request in self._due:
            conn.close()
        for sock in self._sockets:
            sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            for key, _mask in self._selector.select(timeout=0.01 if self._due else 0.05):
                if key.data is None:  # a listening socket
                    try:
                        conn, _addr = key.fileobj.accept()
                    except BlockingIOError:
                        continue
                    conn.setblocking(False)
                    self._selector.register(conn, selectors.EVENT_READ, bytearray())
                else:
                    self._read(key.fileobj, key.data)
            now = time.monotonic()
            while self._due and self._due[0][0] <= now:
                _when, _n, conn, request = heapq.heappop(self._due)
                self._answer(conn, request)

    def _read(self, conn: socket.socket, buffer: bytearray) -> None:
        try:
            chunk = conn.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        buffer.extend(chunk)
        if chunk and b"\r\n\r\n" not in buffer:
            return
        self._selector.unregister(conn)
        if chunk and conn.getsockname()[1] in self._slow_ports:
            heapq.heappush(self._due, (time.monotonic() + self.slow_delay, id(conn), conn, bytes(buffer)))
            return
        self._answer(conn, bytes(buffer) if chunk else b"")

    def _answer(self, conn: socket.socket, buffer: bytes) -> None:
        if buffer:
            path = buffer.split(b" ", 2)[1].decode("latin-1") if buffer.count(b" ") >= 2 else "/"
            content_type, body = self.routes.get(path.split("?")[0], ("application/json", b'{"detail":"Not Found"}'))
            status = "200 OK" if path.split("?")[0] in self.routes else "404 Not Found"
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                    "Connection: close\r\n\r\n").encode()
            conn.setblocking(True)
            with contextlib.suppress(OSError):
                conn.sendall(head + body)
        conn.close()
