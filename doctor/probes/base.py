"""The probe contract: what a live probe is given (Target, ProbeOptions) and what it returns (ProbeResult).

Every probe module splits its work in two so a snapshot can be replayed offline:

* ``fetch(target, opts) -> dict``: the network/OS I/O, returning *raw* material (JSON-able, already
  redacted: a snapshot is attached to bug reports, so no secret may reach it);
* ``interpret(raw) -> Facts``: pure, no I/O, so the same raw gives the same facts live or replayed.

:func:`run_probe` wraps the two and never raises: a probe that breaks becomes ``ok=False``, a one-line
error and ``facts.error(<probe name>, why)``, so the playbooks can say what could not be checked and carry
on with what is known (DESIGN.md "Facts").
"""

from __future__ import annotations

import base64
import functools
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

from doctor.errors import DoctorError, InputError
from doctor.facts import Facts
from doctor.redact import MASK, redact_text

#: 16 MiB: a 64-rank /metrics exposition is a few MB (10 MB is the largest we plan for); past this it is not one.
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    class ProbeModule(Protocol):
        """What :func:`run_probe` needs from a probe module (``doctor.probes.server`` etc.)."""

        NAME: str  # also the facts namespace its errors are recorded under

        def fetch(self, target: Target, opts: ProbeOptions) -> dict[str, Any]: ...

        def interpret(self, raw: dict[str, Any]) -> Facts: ...


class ProbeError(Exception):
    """An expected probe failure (refused, timed out, HTTP 503, …) whose message is already the one line to show."""


#: Where the OpenAI-compatible routes start, below a server's root (or a proxy's base path).
OPENAI_PREFIX = "/v1"


@dataclass(frozen=True)
class Target:
    """The server under examination, parsed from ``--endpoint URL|HOST:PORT``.

    Credentials written into the URL (``http://user:pw@host``) are kept out of every output
    (``repr=False``, :meth:`display` masks them) and sent only as HTTP Basic auth to this host.
    """

    scheme: str
    host: str
    port: int
    base_path: str = ""
    userinfo: str | None = field(default=None, repr=False, compare=False)

    @classmethod
    def parse(cls, text: str, *, flag: str = "--endpoint") -> Target:
        """Parse ``HOST:PORT``, ``[::1]:8000``, a bare ``PORT`` (this host) or a URL; anything unusable is an
        InputError naming the flag.

        A URL's path is a reverse proxy's base path and is kept: ``http://gw/llm`` probes ``/llm/v1/models`` and
        ``/llm/metrics``. A path ending in ``/v1`` is the OpenAI *base URL* clients are configured with, so
        ``http://host:8000/v1`` probes ``/v1/models`` (not ``/v1/v1/models``); the engine's own routes
        (``/metrics``, ``/server_info``, ``/version``) live beside ``/v1``, at the server's root.
        """
        value = (text or "").strip()
        if not value:
            raise InputError(f"{flag}: empty endpoint (give HOST:PORT or a URL such as http://127.0.0.1:8000)")
        if value.isdigit():  # `--endpoint 30000`: a port on this host, as `curl localhost:30000` would mean
            value = f"localhost:{value}"
        explicit_scheme = "://" in value
        shown = redact_text(value)
        try:
            parts = urlsplit(value if explicit_scheme else f"http://{value}")
            port = parts.port
        except ValueError as exc:
            raise InputError(f"{flag}: {shown!r}: {exc} (IPv6 addresses go in brackets: [::1]:8000)") from None
        scheme = parts.scheme.lower()
        if scheme not in ("http", "https"):
            raise InputError(f"{flag}: {shown!r}: scheme {scheme!r} is not http or https")
        host = parts.hostname or ""
        if not host:
            raise InputError(f"{flag}: {shown!r}: no host")
        if parts.query or parts.fragment:
            raise InputError(f"{flag}: {shown!r}: give the server's base URL, without ?query or #fragment")
        if port is None:
            if not explicit_scheme:
                raise InputError(f"{flag}: {shown!r}: no port (vLLM listens on 8000, SGLang on 30000 by default)")
            port = 443 if scheme == "https" else 80
        if port == 0:
            raise InputError(f"{flag}: {shown!r}: port 0 is not a listening port")
        userinfo = None
        if "@" in parts.netloc:
            userinfo = unquote(parts.netloc.rpartition("@")[0])
        base = parts.path.rstrip("/")
        if base.endswith(OPENAI_PREFIX):
            base = base[: -len(OPENAI_PREFIX)]
        return cls(scheme, host.lower(), port, base, userinfo)

    @property
    def netloc(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def url(self, path: str) -> str:
        """The URL requests go to: never carries the userinfo (that travels as a header)."""
        return f"{self.scheme}://{self.netloc}{self.base_path}{path}"

    def display(self) -> str:
        """The endpoint as shown to people and saved in snapshots: userinfo masked."""
        auth = f"{MASK}@" if self.userinfo else ""
        return f"{self.scheme}://{auth}{self.netloc}{self.base_path}"

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.display(), "scheme": self.scheme, "host": self.host, "port": self.port,
                "base_path": self.base_path}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Target:
        return cls(str(data["scheme"]), str(data["host"]), int(data["port"]), str(data.get("base_path") or ""))


@dataclass(frozen=True)
class ProbeOptions:
    """How probes run. ``api_key`` comes from ``--api-key-env NAME`` (:func:`api_key_from_env`), never a CLI value."""

    timeout_s: float = 2.0  # per request
    api_key: str | None = field(default=None, repr=False)
    sample_s: float = 0.0  # 0: one /metrics scrape; > 0: two scrapes this far apart, for rates
    pid: int | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    run_timeout_s: float | None = None  # bound on a whole run_probes(); None: derived (budget_s)

    def __post_init__(self) -> None:
        if not self.timeout_s > 0:
            raise InputError(f"--timeout: {self.timeout_s}: must be more than 0 seconds")
        if not self.sample_s >= 0:
            raise InputError(f"--sample: {self.sample_s}: must be 0 or more seconds")
        if self.max_body_bytes <= 0:
            raise InputError(f"max_body_bytes: {self.max_body_bytes}: must be positive")
        if self.pid is not None and self.pid <= 0:
            raise InputError(f"--pid: {self.pid}: not a process id")
        if self.run_timeout_s is not None and not self.run_timeout_s > 0:
            raise InputError(f"run_timeout_s: {self.run_timeout_s}: must be more than 0 seconds")

    def budget_s(self) -> float:
        """The bound on a whole run: two sequential requests per probe plus the sampling pause, plus slack.

        The server probe stops at its first transport failure and the metrics probe makes at most two
        scrapes, so a healthy run ends far inside this; a hung one is cut here.
        """
        if self.run_timeout_s is not None:
            return self.run_timeout_s
        return 2 * self.timeout_s + self.sample_s + 1.0


@functools.cache
def load_data(name: str) -> Any:
    """A YAML data file that ships beside the probes (name mappings are data, not code); read once."""
    from doctor.yamlsafe import load_packaged

    return load_packaged(Path(__file__).parent / name)


def lookup_name(host: str) -> str | bytes:
    """``host`` as ``socket.getaddrinfo`` should be given it: an ASCII name (every IP literal, most host names) as
    bytes, which getaddrinfo takes as they are — given a str it encodes it with the IDNA codec first, and importing
    that codec (encodings.idna, stringprep, unicodedata) costs a `check` more than its own HTTP requests. The
    codec turns an ASCII name into the same bytes; a non-ASCII name still goes through it."""
    return host.encode("ascii") if host.isascii() else host


def not_this_host(host: str) -> str | None:
    """Why ``host`` is not this machine (None when it is: loopback or one of our interface addresses).

    The process and GPU probes read *this* host; pointed at a remote endpoint they would describe the wrong
    machine, so they report this reason instead.
    """
    import socket

    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(lookup_name(host), None)}
    except socket.gaierror:
        return f"cannot resolve host {host!r}"
    if any(a.startswith("127.") or a in ("::1", "0.0.0.0", "::") for a in addresses):  # 0.0.0.0 reaches this host
        return None
    import psutil  # only for a non-loopback address: is it one of ours?

    mine = {a.address.split("%")[0] for nic in psutil.net_if_addrs().values() for a in nic}
    if addresses & mine:
        return None
    return f"endpoint host {host} is not this machine"


def api_key_from_env(name: str, flag: str = "--api-key-env") -> str:
    """The secret held in environment variable ``name`` (``--api-key-env NAME``, serve's ``--token-env`` and
    ``--notify-url-env``): secrets never go on a command line."""
    # The likeliest mistake here is the secret itself where its variable's name belongs: never echo a value that
    # could be one (a key has dashes or dots; a conventional variable name is upper case).
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name or ""):
        raise InputError(f"{flag}: expects the NAME of an environment variable that holds the secret "
                         "(e.g. VLLM_API_KEY), not the secret itself")
    value = os.environ.get(name, "")
    if not value.strip():
        shown = name if name == name.upper() else f"named by {flag}"
        raise InputError(f"{flag}: environment variable {shown} is not set or empty")
    return value.strip()


def auth_headers(target: Target, opts: ProbeOptions) -> dict[str, str]:
    """Credentials for requests to ``target`` only (the HTTP client never follows a redirect to another host)."""
    if opts.api_key:
        return {"Authorization": f"Bearer {opts.api_key}"}
    if target.userinfo:
        token = base64.b64encode(target.userinfo.encode("utf-8")).decode("ascii")
        return {"Authorization": f"Basic {token}"}
    return {}


@dataclass
class ProbeResult:
    """What one probe brought back: the redacted raw answer (what snapshots keep) and the facts read from it."""

    name: str
    ok: bool
    error: str | None  # one line, redacted
    elapsed_ms: float
    raw: dict[str, Any]  # JSON-able, already redacted
    facts: Facts

    def to_snapshot(self) -> dict[str, Any]:
        """What a snapshot keeps: everything but the facts, which replay recomputes from ``raw``."""
        return {"ok": self.ok, "error": self.error, "elapsed_ms": round(self.elapsed_ms, 3), "raw": self.raw}


def error_line(exc: BaseException) -> str:
    """One line for any exception. Ours are written redacted already; unexpected ones are redacted here
    and keep their type so a bug report is useful."""
    text = " ".join(str(exc).split())
    if isinstance(exc, (DoctorError, ProbeError)):
        return text
    return redact_text(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


def interpret_raw(module: ProbeModule, raw: dict[str, Any]) -> tuple[Facts, str | None]:
    """Facts from raw material, live or replayed, and the probe's error line (None: the probe worked).

    A raw with an ``error`` key is a probe whose fetch broke: the error is the whole story. Otherwise the
    probe failed exactly when its ``interpret`` recorded an error on its own namespace.
    """
    if raw.get("error"):
        facts = Facts()
        facts.error(module.NAME, str(raw["error"]))
    else:
        try:
            facts = module.interpret(raw)
        except Exception as exc:  # noqa: BLE001 - a probe never raises (module docstring)
            facts = Facts()
            facts.error(module.NAME, f"cannot interpret the {module.NAME} probe's data: {error_line(exc)}")
    return facts, facts.errors.get(module.NAME)


def run_probe(module: ProbeModule, target: Target, opts: ProbeOptions) -> ProbeResult:
    """Fetch then interpret; never raises, always measures."""
    start = time.perf_counter()
    try:
        raw = module.fetch(target, opts)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a result, not a traceback
        raw = {"error": error_line(exc)}
    facts, error = interpret_raw(module, raw)
    elapsed_ms = (time.perf_counter() - start) * 1000
    return ProbeResult(module.NAME, error is None, error, elapsed_ms, raw, facts)
