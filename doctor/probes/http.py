"""One small stdlib HTTP client for the probes: bounded in time and size, safe with credentials.

Why not requests/httpx: an on-call tool must start instantly and its live checks must never hang or
balloon, so the guarantees are spelt out here rather than left to a library's defaults:

* a **total deadline** per request (connect, headers and body together): a server that drips one byte
  at a time below the socket timeout is still cut at the deadline (a watchdog shuts the socket);
* a **body cap**: a body over ``max_bytes`` is an error and the connection is closed at once;
* **gzip** is accepted only with a decompression cap (a gzip bomb stops at ``max_bytes``);
* **redirects** are followed only to the same scheme+host+port, so credentials never leave the target;
* every failure is one line naming the method and URL: refused, reset, DNS, TLS, timeout, HTTP status.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from doctor import __version__
from doctor.probes.base import ProbeError
from doctor.redact import redact_text

_REDIRECTS = (301, 302, 303, 307, 308)
_MAX_REDIRECTS = 5
_READ_CHUNK = 64 * 1024


class HttpError(ProbeError):
    """A failed request. ``kind`` lets callers branch without parsing the message:
    ``refused`` ``dns`` ``tls`` ``timeout`` ``reset`` ``protocol`` ``too_large`` ``redirect`` ``status``
    ``not_llm`` ``not_json``. ``status`` is the HTTP status when one was received."""

    #: Kinds after which no other request to the same server can succeed either.
    UNREACHABLE = frozenset({"refused", "dns", "tls", "timeout"})

    def __init__(self, method: str, url: str, message: str, kind: str, status: int | None = None) -> None:
        # Only the URL can carry a secret (?api_key=…); the message is ours or the OS's.
        super().__init__(f"{method} {redact_text(url)}: {message}")
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
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise HttpError(method, url, f"timed out after {timeout_s:g}s", "timeout")
    if scheme == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=remaining, context=ssl.create_default_context())
    else:
        conn = http.client.HTTPConnection(host, port, timeout=remaining)
    expired = threading.Event()
    # Our own reference: http.client drops conn.sock once a "Connection: close" response begins.
    held: list[socket.socket] = []

    def _expire() -> None:
        # The socket timeout bounds each read, not their sum: shutting the socket ends a slow drip.
        expired.set()
        for sock in held:
            with contextlib.suppress(OSError):
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    watchdog = threading.Timer(remaining, _expire)
    watchdog.daemon = True
    watchdog.start()
    try:
        conn.connect()
        held.append(conn.sock)
        if expired.is_set():  # the deadline passed while connecting
            raise TimeoutError
        conn.putrequest(method, path, skip_accept_encoding=True)
        sent = {"User-Agent": f"llmdoctor/{__version__}", "Accept-Encoding": "gzip", "Connection": "close",
                **headers}
        if body is not None:
            sent["Content-Length"] = str(len(body))
        for name, value in sent.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        raw = conn.getresponse()
        response_headers = {k.lower(): v for k, v in raw.getheaders()}
        payload = _read_body(raw, method, url, max_bytes)
        if expired.is_set():  # the watchdog cut the body short
            raise TimeoutError
        payload = _decode(payload, response_headers.get("content-encoding", ""), method, url, max_bytes)
        sent_auth = any(k.lower() == "authorization" for k in headers)
        return HttpResponse(raw.status, raw.reason or "", response_headers, payload, 0.0, url, method, sent_auth)
    except HttpError:
        raise
    except Exception as exc:  # noqa: BLE001 - classified into one line below
        if expired.is_set():
            raise HttpError(method, url, f"timed out after {timeout_s:g}s", "timeout") from None
        raise _classify(exc, method, url, host, timeout_s) from None
    finally:
        watchdog.cancel()
        conn.close()


def _read_body(raw: http.client.HTTPResponse, method: str, url: str, max_bytes: int) -> bytes:
    declared = raw.getheader("content-length")
    if declared and declared.isdigit() and int(declared) > max_bytes:
        raise HttpError(method, url, f"body larger than {max_bytes} bytes", "too_large", raw.status)
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = raw.read(_READ_CHUNK)
        if not chunk:
            if raw.length:  # read(amt) returns b"" at an early EOF instead of raising
                raise http.client.IncompleteRead(b"".join(chunks), raw.length)
            return b"".join(chunks)
        total += len(chunk)
        if total > max_bytes:
            raise HttpError(method, url, f"body larger than {max_bytes} bytes", "too_large", raw.status)
        chunks.append(chunk)


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
    if isinstance(exc, ssl.SSLCertVerificationError):
        return HttpError(method, url, f"TLS error: {exc.verify_message or exc.reason}", "tls")
    if isinstance(exc, ssl.SSLError):
        return HttpError(method, url, f"TLS error: {exc.reason or exc}", "tls")
    if isinstance(exc, http.client.IncompleteRead):
        return HttpError(method, url, f"connection closed before the body was complete "
                         f"(got {len(exc.partial)} bytes, {exc.expected} missing)", "reset")
    if isinstance(exc, (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected)):
        return HttpError(method, url, "connection closed by the server before it answered", "reset")
    if isinstance(exc, http.client.HTTPException):
        return HttpError(method, url, f"not an HTTP response ({type(exc).__name__})", "protocol")
    if isinstance(exc, OSError):
        return HttpError(method, url, exc.strerror or str(exc) or type(exc).__name__, "reset")
    return HttpError(method, url, f"{type(exc).__name__}: {exc}", "protocol")
