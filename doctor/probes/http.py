"""One small stdlib HTTP client for the probes: bounded in time and size, safe with credentials.

Why not requests/httpx: an on-call tool must start instantly and its live checks must never hang or
balloon, so the guarantees are spelt out here rather than left to a library's defaults:

* a **total deadline** per request (connect, headers and body together): a server that drips one byte
  at a time below the socket timeout is still cut at the deadline (a watchdog shuts the socket);
* a **body cap**: a body over ``max_bytes`` is an error and the connection is closed at once;
* **gzip** is accepted only with a decompression cap (a gzip bomb stops at ``max_bytes``);
* **redirects** are followed only to the same scheme+host+port, so credentials never leave the target;
* every failure is one line naming the method and URL: refused, reset, DNS, TLS, timeout, HTTP status.

Why not http.client: every request here sends ``Connection: close`` and reads one response, which is a page
of code on a socket; http.client would bring the email package (its header parser) and ssl, ~30 ms of
imports on every `check` (bench/bench_check.py), more than the HTTP exchanges themselves. ssl is imported
only for an https:// target.
"""

from __future__ import annotations

import contextlib
import heapq
import json
import os
import socket
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

from doctor import __version__
from doctor.probes.base import ProbeError, lookup_name
from doctor.redact import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_REDIRECTS = 5
_READ_CHUNK = 64 * 1024
#: A status or header line longer than this, or more headers than that, is not a server's answer
#: (the limits http.client applies).
_MAX_LINE = 64 * 1024
_MAX_HEADERS = 100


class HttpError(ProbeError):
    """A failed request. ``kind`` lets callers branch without parsing the message:
    ``refused`` ``dns`` ``tls`` ``timeout`` ``reset`` ``protocol`` ``too_large`` ``redirect`` ``status``
    ``not_llm`` ``not_json``. ``status`` is the HTTP status when one was received."""

    #: Kinds after which no other request to the same server can succeed either.
    UNREACHABLE = frozenset({"refused", "dns", "tls", "timeout"})

    def __init__(self, method: str, url: str, message: str, kind: str, status: int | None = None) -> None:
        # Only the URL can carry a secret (?api_key=…); the message is ours or the OS's. A control character in
        # it is shown escaped: the error stays one line.
        shown = "".join(c if " " <= c != "\x7f" else f"\\x{ord(c):02x}" for c in url)
        super().__init__(f"{method} {redact_text(shown)}: {message}")
        #: what went wrong without the URL, for callers whose URL is itself a secret (a chat webhook's path)
        self.reason = message
        self.kind = kind
        self.status = status


@dataclass
class HttpResponse:
    """One answer, already capped and decompressed: what the probes interpret."""

    status: int
    reason: str
    headers: dict[str, str]  # lower-cased names
    body: bytes  # decompressed
    elapsed_ms: float
    url: str  # the final URL, after same-origin redirects
    method: str = "GET"
    sent_auth: bool = False

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    def text(self) -> str:
        charset = "utf-8"
        for part in self.headers.get("content-type", "").split(";")[1:]:
            name, _, value = part.strip().partition("=")
            if name.lower() == "charset" and value:
                charset = value.strip('"')
        try:
            return self.body.decode(charset, errors="replace")
        except LookupError:
            return self.body.decode("utf-8", errors="replace")

    def status_error(self) -> HttpError | None:
        """The one-line error for a non-2xx status (None for 2xx)."""
        if 200 <= self.status < 300:
            return None
        message = f"HTTP {self.status} {self.reason}".rstrip()
        if self.status in (401, 403):
            message += (": the API key was refused" if self.sent_auth
                        else ": needs an API key: pass --api-key-env NAME")
        return HttpError(self.method, self.url, message, "status", self.status)

    def page_error(self) -> HttpError | None:
        """An HTML page (a proxy's login, a web server's welcome) where an API answer was expected."""
        if self.content_type in ("text/html", "application/xhtml+xml"):
            return HttpError(self.method, self.url, f"not an LLM server (got {self.content_type})", "not_llm",
                             self.status)
        return None

    def json(self) -> Any:
        """The body as JSON; an HTML page or a broken document is a one-line error, not a traceback."""
        page = self.page_error()
        if page is not None:
            raise page
        try:
            return json.loads(self.text())
        except json.JSONDecodeError as exc:
            raise HttpError(self.method, self.url, f"invalid JSON ({exc.msg} at line {exc.lineno} column "
                            f"{exc.colno})", "not_json", self.status) from None
        except RecursionError:
            raise HttpError(self.method, self.url, "JSON nested too deeply", "not_json", self.status) from None


def get(url: str, *, timeout_s: float, headers: dict[str, str] | None = None,
        max_bytes: int) -> HttpResponse:
    """GET ``url``; any HTTP status comes back as a response, transport failures raise :class:`HttpError`."""
    return request("GET", url, timeout_s=timeout_s, headers=headers, max_bytes=max_bytes)


def post_json(url: str, payload: Any, *, timeout_s: float, headers: dict[str, str] | None = None,
              max_bytes: int) -> HttpResponse:
    """POST a JSON document with the same guarantees as :func:`get` (for the active probes)."""
    body = json.dumps(payload).encode("utf-8")
    merged = {"Content-Type": "application/json", **(headers or {})}
    return request("POST", url, body=body, timeout_s=timeout_s, headers=merged, max_bytes=max_bytes)


def request(method: str, url: str, *, body: bytes | None = None, timeout_s: float,
            headers: dict[str, str] | None = None, max_bytes: int) -> HttpResponse:
    """One request under one deadline, following same-origin redirects (307/308 only for a body)."""
    deadline = time.monotonic() + timeout_s
    start = time.perf_counter()
    origin = _origin(url)
    current = url
    for _ in range(_MAX_REDIRECTS + 1):
        response = _once(method, current, body, headers or {}, deadline, timeout_s, max_bytes)
        location = response.headers.get("location")
        if response.status not in _REDIRECTS or not location:
            response.elapsed_ms = (time.perf_counter() - start) * 1000
            return response
        target = urljoin(current, location)
        if _origin(target) != origin:
            shown = "{}://{}:{}".format(*_origin(target))
            raise HttpError(method, current, f"redirected to another host ({shown}); not followed",
                            "redirect", response.status)
        if body is not None and response.status not in (307, 308):
            raise HttpError(method, current, f"HTTP {response.status} redirect would drop the request body; "
                            "not followed", "redirect", response.status)
        current = target
    raise HttpError(method, url, f"more than {_MAX_REDIRECTS} redirects", "redirect")


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    return scheme, (parts.hostname or "").lower(), parts.port or (443 if scheme == "https" else 80)


def _once(method: str, url: str, body: bytes | None, headers: dict[str, str], deadline: float,
          timeout_s: float, max_bytes: int) -> HttpResponse:
    scheme, host, port = _origin(url)
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if any(c <= " " or c == "\x7f" for c in path):  # it would split the request line
        raise HttpError(method, url, "the URL contains a space or a control character; not sent", "protocol")
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise HttpError(method, url, f"timed out after {timeout_s:g}s", "timeout")
    expired = threading.Event()
    held: list[socket.socket] = []

    def _expire() -> None:
        # The socket timeout bounds each read, not their sum: shutting the socket ends a slow drip.
        expired.set()
        for sock in held:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    alarm = _WATCHDOG.arm(time.monotonic() + remaining, _expire)
    try:
        held.append(socket.create_connection((lookup_name(host), port), timeout=remaining))
        if scheme == "https":
            import ssl  # only a TLS target pays for it

            held.append(ssl.create_default_context().wrap_socket(held[0], server_hostname=host))
        if expired.is_set():  # the deadline passed while connecting
            raise TimeoutError
        sent = {"Host": _host_header(scheme, host, port), "User-Agent": f"llmdoctor/{__version__}",
                "Accept-Encoding": "gzip", "Connection": "close", **headers}
        if body is not None:
            sent["Content-Length"] = str(len(body))
        if any(c in text for item in sent.items() for text in item for c in "\r\n\0"):
            # A key read from the environment with a line break in it would write headers of its own.
            raise HttpError(method, url, "a header (the API key?) contains a line break; not sent", "protocol")
        head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in sent.items()) + "\r\n"
        held[-1].sendall(head.encode("latin-1") + (body or b""))
        with held[-1].makefile("rb") as stream:
            status, reason, response_headers = _read_head(stream, method, url)
            payload = b"" if status in (204, 304) else _read_body(stream, response_headers, status, method, url,
                                                                  max_bytes)
        if expired.is_set():  # the watchdog cut the body short
            raise TimeoutError
        payload = _decode(payload, response_headers.get("content-encoding", ""), method, url, max_bytes)
        sent_auth = any(k.lower() == "authorization" for k in headers)
        return HttpResponse(status, reason, response_headers, payload, 0.0, url, method, sent_auth)
    except Exception as exc:  # noqa: BLE001 - classified into one line below
        if expired.is_set():
            raise HttpError(method, url, f"timed out after {timeout_s:g}s", "timeout") from None
        if isinstance(exc, HttpError):
            raise
        raise _classify(exc, method, url, host, timeout_s) from None
    finally:
        alarm.cancel()
        for sock in reversed(held):
            sock.close()


class _Alarm:
    """One armed deadline of the watchdog; ``cancel`` once the request is over (it then never fires)."""

    __slots__ = ("action",)

    def __init__(self, action: Callable[[], None]) -> None:
        self.action: Callable[[], None] | None = action

    def cancel(self) -> None:
        self.action = None  # nor does it hold the request's sockets until its time comes


class _Watchdog:
    """One thread for every request's deadline (a heap of alarms), started on first use. A thread per request
    (threading.Timer) cost a thread start and two more context switches per GET: a third of a fleet check's
    CPU per target (bench/bench_fleet.py). A forked child (check --targets' workers) starts its own."""

    def __init__(self) -> None:
        self._reset()
        os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self._ready = threading.Condition(threading.Lock())
        self._alarms: list[tuple[float, int, _Alarm]] = []
        self._count = 0
        self._thread: threading.Thread | None = None

    def arm(self, when: float, action: Callable[[], None]) -> _Alarm:
        """Call ``action`` (in the watchdog's thread) at monotonic time ``when`` unless cancelled first."""
        alarm = _Alarm(action)
        with self._ready:
            self._count += 1
            heapq.heappush(self._alarms, (when, self._count, alarm))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="http-deadlines", daemon=True)
                self._thread.start()
            elif self._alarms[0][2] is alarm:
                self._ready.notify()
        return alarm

    def _run(self) -> None:
        while True:
            with self._ready:
                while self._alarms and self._alarms[0][2].action is None:
                    heapq.heappop(self._alarms)
                if not self._alarms:
                    self._ready.wait()
                    continue
                wait = self._alarms[0][0] - time.monotonic()
                if wait > 0:
                    self._ready.wait(wait)
                    continue
                action = heapq.heappop(self._alarms)[2].action
            if action is not None:
                action()


_WATCHDOG = _Watchdog()


def _host_header(scheme: str, host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port == (443 if scheme == "https" else 80) else f"{shown}:{port}"


def _line(stream: Any, method: str, url: str) -> bytes:
    line = stream.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise HttpError(method, url, f"not an HTTP response (a line over {_MAX_LINE} bytes)", "protocol")
    return line


def _read_head(stream: Any, method: str, url: str) -> tuple[int, str, dict[str, str]]:
    """The status line and headers (names lower-cased), past any 1xx interim response."""
    while True:
        line = _line(stream, method, url)
        if not line:
            raise HttpError(method, url, "connection closed by the server before it answered", "reset")
        version, _, rest = line.decode("latin-1").rstrip("\r\n").partition(" ")
        code, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/") or len(code) != 3 or not code.isdigit():
            raise HttpError(method, url, f"not an HTTP response (it began {line[:40]!r})", "protocol")
        headers: dict[str, str] = {}
        for count in range(_MAX_HEADERS + 1):
            line = _line(stream, method, url)
            if line in (b"\r\n", b"\n", b""):
                break
            if count == _MAX_HEADERS:
                raise HttpError(method, url, f"not an HTTP response (more than {_MAX_HEADERS} headers)", "protocol")
            name, colon, value = line.decode("latin-1").partition(":")
            if colon:
                headers[name.strip().lower()] = value.strip()
        if not 100 <= int(code) < 200:
            return int(code), reason.strip(), headers


def _read_body(stream: Any, headers: dict[str, str], status: int, method: str, url: str, max_bytes: int) -> bytes:
    """The body as sent (chunked, of a declared length, or up to the close), refused past ``max_bytes``."""
    def too_large() -> HttpError:
        return HttpError(method, url, f"body larger than {max_bytes} bytes", "too_large", status)

    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks: list[bytes] = []
        total = 0
        while True:
            size_line = _line(stream, method, url)
            try:
                size = int(size_line.split(b";", 1)[0].strip(), 16)
            except ValueError:
                if not size_line:
                    raise _incomplete(method, url, total, None) from None
                raise HttpError(method, url, "not an HTTP response (a bad chunk size)", "protocol") from None
            if size == 0:
                while _line(stream, method, url) not in (b"\r\n", b"\n", b""):  # trailers
                    pass
                return b"".join(chunks)
            total += size
            if total > max_bytes:
                raise too_large()
            chunk = stream.read(size)
            if len(chunk) < size:
                raise _incomplete(method, url, total - size + len(chunk), size - len(chunk))
            chunks.append(chunk)
            stream.readline(_MAX_LINE)  # the CRLF after the chunk
    declared = headers.get("content-length", "")
    length = int(declared) if declared.isdigit() else None
    if length is not None and length > max_bytes:
        raise too_large()
    chunks = []
    total = 0
    while length is None or total < length:
        chunk = stream.read1(_READ_CHUNK if length is None else min(_READ_CHUNK, length - total))
        if not chunk:
            if length is not None:
                raise _incomplete(method, url, total, length - total)
            break
        total += len(chunk)
        if total > max_bytes:
            raise too_large()
        chunks.append(chunk)
    return b"".join(chunks)


def _incomplete(method: str, url: str, got: int, missing: int | None) -> HttpError:
    told = f"got {got} bytes, {missing} missing" if missing is not None else f"got {got} bytes"
    return HttpError(method, url, f"connection closed before the body was complete ({told})", "reset")


def _decode(payload: bytes, encoding: str, method: str, url: str, max_bytes: int) -> bytes:
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return payload
    if encoding not in ("gzip", "x-gzip"):
        raise HttpError(method, url, f"unsupported Content-Encoding {encoding!r} (only gzip was offered)",
                        "protocol")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(payload, max_bytes + 1)
        if len(out) > max_bytes or inflater.unconsumed_tail:
            raise HttpError(method, url, f"decompressed body larger than {max_bytes} bytes", "too_large")
        out += inflater.flush()
    except zlib.error as exc:
        raise HttpError(method, url, f"invalid gzip body ({exc})", "protocol") from None
    if len(out) > max_bytes:
        raise HttpError(method, url, f"decompressed body larger than {max_bytes} bytes", "too_large")
    return out


def _classify(exc: BaseException, method: str, url: str, host: str, timeout_s: float) -> HttpError:
    if isinstance(exc, (TimeoutError, socket.timeout)):
        return HttpError(method, url, f"timed out after {timeout_s:g}s", "timeout")
    if isinstance(exc, ConnectionRefusedError):
        return HttpError(method, url, "connection refused", "refused")
    if isinstance(exc, socket.gaierror):
        return HttpError(method, url, f"cannot resolve host {host!r}", "dns")
    ssl = sys.modules.get("ssl")  # imported only if the target is https
    if ssl is not None and isinstance(exc, ssl.SSLCertVerificationError):
        return HttpError(method, url, f"TLS error: {exc.verify_message or exc.reason}", "tls")
    if ssl is not None and isinstance(exc, ssl.SSLError):
        return HttpError(method, url, f"TLS error: {exc.reason or exc}", "tls")
    if isinstance(exc, (ConnectionResetError, BrokenPipeError)):
        return HttpError(method, url, "connection closed by the server before it answered", "reset")
    if isinstance(exc, OSError):
        return HttpError(method, url, exc.strerror or str(exc) or type(exc).__name__, "reset")
    return HttpError(method, url, f"{type(exc).__name__}: {exc}", "protocol")
