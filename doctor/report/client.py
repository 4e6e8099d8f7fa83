"""Talking to Prometheus: instant and range queries, each under a timeout, counted, failures as one line.

``prometheus-api-client`` (imported here, only when a report runs: never on the inspect/lint/check paths)
does the HTTP. This wrapper adds what a nightly job needs: every query bounded by a timeout on both ends
(the HTTP read and Prometheus's own ``timeout`` parameter), a count of the queries issued (the report shows
it), one-line errors that say what Prometheus answered, and a verdict on whether to carry on: a refused
connection ends the run at once (every other query would fail the same way), a query Prometheus rejects or
that times out costs only its own fact.
"""

from __future__ import annotations

import ast
import json
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from doctor.errors import TargetError
from doctor.probes.base import Target
from doctor.redact import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: When the first this many queries all time out, Prometheus is taken as too slow for the rest of the run (once
#: one query has answered, a slow one costs only its own fact).
MAX_FIRST_TIMEOUTS = 3
#: The largest answer one query may return: a 24 h report of 100 instances is a few MB (charts are thinned to
#: chart_points); an answer that streams on past this is not Prometheus's, and is not held in memory.
MAX_ANSWER_BYTES = 64 * 1024 * 1024
#: Seconds a query may wait before stderr says what the run is waiting for (without --progress, a hung
#: Prometheus would otherwise leave a nightly job silent for minutes).
WAIT_NOTICE_S = 5.0


class QueryError(Exception):
    """One query failed; ``str()`` is the line to show; ``timed_out`` when it ran out of --timeout (a chart
    query is then asked again with fewer points: doctor/report/collect.py)."""

    def __init__(self, message: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.timed_out = timed_out


@dataclass(frozen=True)
class Sample:
    """One series of an answer: its labels and value (instant) or points (range)."""

    labels: dict[str, str]
    value: float = math.nan
    points: tuple[tuple[float, float], ...] = ()


@dataclass
class QueryLog:
    """What was asked, for the report's "queries" section and the bench."""

    label: str
    query: str
    kind: str  # instant | range | labels
    seconds: float
    series: int
    error: str | None = None
    #: a question the report can do without (which recordings the store holds): its failure is no problem
    optional: bool = False

    @property
    def problem(self) -> str | None:
        """The error, where it cost the report something."""
        return None if self.optional else self.error


@dataclass
class PromClient:
    """A Prometheus HTTP API endpoint, queried at a fixed evaluation time ``end`` (unix seconds)."""

    target: Target
    timeout_s: float
    end: float
    progress: Callable[[str], None] | None = None
    #: told once, when a query has waited WAIT_NOTICE_S, what the run is waiting for
    waiting: Callable[[str], None] | None = None
    log: list[QueryLog] = field(default_factory=list)
    _told_waiting: bool = False
    _timeouts: int = 0
    _answered: bool = False
    _local: threading.local = field(default_factory=threading.local)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _sessions: list[Any] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.target.url("")

    @property
    def display(self) -> str:
        return self.target.display()

    @property
    def count(self) -> int:
        return len(self.log)

    @property
    def failed(self) -> int:
        return sum(1 for entry in self.log if entry.problem)

    def _connect(self) -> Any:
        """One HTTP session per thread (queries run side by side; a requests Session is not for sharing)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            from prometheus_api_client import PrometheusConnect
            from urllib3.util.retry import Retry

            auth = None
            if self.target.userinfo:
                user, _, password = self.target.userinfo.partition(":")
                auth = (user, password)
            # One quick retry of a failed connect; never of a read (that would double a slow query's cost)
            # or of a status (Prometheus's 4xx/5xx are answers, shown as they are).
            retry = Retry(total=1, connect=1, read=0, status=0, other=0, backoff_factor=0.1)
            import requests

            session = requests.Session()
            session.hooks["response"].append(self._read_capped)
            conn = PrometheusConnect(url=self.url, auth=auth, retry=retry, timeout=self.timeout_s, session=session)
            self._local.conn = conn
            with self._lock:
                self._sessions.append(conn)
        return conn

    def instant(self, label: str, query: str) -> list[Sample]:
        """The vector ``query`` at ``end``."""
        data = self._run(label, query, "instant", lambda conn: conn.custom_query(
            query, params={"time": f"{self.end:.3f}", "timeout": self._server_timeout()}))
        return [Sample(dict(item.get("metric") or {}), _float(item.get("value", [0, "NaN"])[1])) for item in data]

    def range(self, label: str, query: str, start: float, step: float) -> list[Sample]:
        """The matrix of ``query`` from ``start`` to ``end`` every ``step`` seconds."""
        start_dt = datetime.fromtimestamp(start, timezone.utc)
        end_dt = datetime.fromtimestamp(self.end, timezone.utc)
        data = self._run(label, query, "range", lambda conn: conn.custom_query_range(
            query, start_time=start_dt, end_time=end_dt, step=f"{step:g}s",
            params={"timeout": self._server_timeout()}))
        return [Sample(dict(item.get("metric") or {}),
                       points=tuple((float(t), v) for t, raw in item.get("values") or () if math.isfinite(
                           v := _float(raw)))) for item in data]

    def label_values(self, label: str, name: str, params: dict[str, str]) -> list[str]:
        """The values of label ``name`` on the series ``params["match[]"]`` selects (the label-values API: the
        store's index only, no samples read)."""
        data = self._run(label, f"label values {name} of {params.get('match[]', '')}", "labels",
                         lambda conn: conn.get_label_values(name, params=params), optional=True)
        return [str(value) for value in data]

    def _server_timeout(self) -> str:
        """Prometheus's own bound on the query (it takes no fractional seconds: 0.5 s is "500ms")."""
        return f"{max(1, round(self.timeout_s * 1000))}ms"

    def _run(self, label: str, query: str, kind: str, call: Callable[[Any], Any], optional: bool = False
             ) -> list[dict[str, Any]]:
        import requests

        entry = QueryLog(label, query, kind, 0.0, 0, optional=optional)
        with self._lock:
            if not self._answered and self._timeouts >= MAX_FIRST_TIMEOUTS:
                raise QueryError(f"{label}: skipped: the first {self._timeouts} queries all timed out")
            self.log.append(entry)
        if self.progress is not None:
            self.progress(label)
        started = time.perf_counter()
        self._local.deadline = time.monotonic() + self.timeout_s
        notice = None
        if self.waiting is not None and not self._told_waiting and self.timeout_s > WAIT_NOTICE_S:
            notice = threading.Timer(WAIT_NOTICE_S, self._tell_waiting, (label,))
            notice.daemon = True
            notice.start()
        try:
            data = call(self._connect())
            if not isinstance(data, list):
                raise QueryError(f"{label}: not a vector or matrix in Prometheus's answer")
            self._answered = True
            entry.series = len(data)
            return data
        except requests.exceptions.ConnectionError as exc:
            if isinstance(exc.__context__, requests.exceptions.ReadTimeout) or "Read timed out" in str(exc):
                entry.error = self._timed_out(label)
                raise QueryError(entry.error, timed_out=True) from None
            entry.error = f"cannot reach Prometheus at {self.display}: {_reason(exc)}"
            raise TargetError(entry.error) from None
        except requests.exceptions.Timeout:
            entry.error = self._timed_out(label)
            raise QueryError(entry.error, timed_out=True) from None
        except _AnswerTooLarge:
            entry.error = f"{label}: the answer from {self.display} is larger than {MAX_ANSWER_BYTES >> 20} MiB; " \
                "not read (is it a Prometheus?)"
            raise QueryError(entry.error) from None
        except requests.exceptions.InvalidJSONError:
            entry.error = f"{label}: the answer is not Prometheus's HTTP API JSON (is {self.display} a Prometheus?)"
            raise QueryError(entry.error) from None
        except requests.exceptions.RequestException as exc:
            entry.error = f"{label}: request to {self.display} failed: {_reason(exc)}"
            raise QueryError(entry.error) from None
        except QueryError as exc:
            entry.error = str(exc)
            raise
        except Exception as exc:  # noqa: BLE001 - PrometheusApiClientException, bad JSON: the server's answer
            entry.error = f"{label}: {_answer_error(exc)}"
            # Prometheus's own --timeout bound ran out first (HTTP 503, errorType timeout)
            raise QueryError(entry.error, timed_out="HTTP 503: timeout" in entry.error) from None
        finally:
            if notice is not None:
                notice.cancel()
            entry.seconds = time.perf_counter() - started

    def _read_capped(self, response: Any, *args: Any, **kwargs: Any) -> Any:
        """requests' response hook, run before it reads the body: read it here, capped at MAX_ANSWER_BYTES and
        within the query's --timeout from its start (requests' own timeout is an idle limit between reads,
        which an answer that never stops streaming never trips)."""
        import requests

        deadline = getattr(self._local, "deadline", None) or time.monotonic() + self.timeout_s
        raw = response.raw
        read = getattr(raw, "read1", None) or raw.read
        chunks, size = [], 0
        try:
            while chunk := read(1 << 16, decode_content=True):
                size += len(chunk)
                if size > MAX_ANSWER_BYTES:
                    raise _AnswerTooLarge
                if time.monotonic() > deadline:
                    raise requests.exceptions.ReadTimeout("Read timed out (the answer did not end in time)")
                chunks.append(chunk)
        except BaseException:
            chunks.clear()  # the exception's frames outlive this call (a future holds them): not the bytes
            response.close()
            raise
        response._content = b"".join(chunks)
        response._content_consumed = True
        return response

    def _tell_waiting(self, label: str) -> None:
        with self._lock:
            if self._told_waiting or self.waiting is None:
                return
            self._told_waiting = True
        self.waiting(f"waiting for Prometheus at {self.display} (query: {label}; each query may take up to "
                     f"{self.timeout_s:g}s, --timeout)")

    def _timed_out(self, label: str) -> str:
        with self._lock:
            self._timeouts += 1
        return f"{label}: Prometheus did not answer within {self.timeout_s:g}s (--timeout)"

    def close(self) -> None:
        for conn in self._sessions:
            conn.close()
        self._sessions.clear()


class _AnswerTooLarge(Exception):
    """An answer past MAX_ANSWER_BYTES (raised from the response hook, mapped to a QueryError)."""


def _float(raw: Any) -> float:
    try:
        return float(raw)
    except (TypeError, ValueError):
        return math.nan


def _reason(exc: BaseException) -> str:
    """The innermost useful words of a requests/urllib3 error ("Connection refused"), redacted."""
    text = str(exc)
    m = re.search(r"\[Errno -?\d+\] ([^')\]]+)", text) or re.search(r"(Connection refused|Name or service not known|"
                                                                    r"No route to host|timed out)", text)
    return redact_text(m.group(1) if m else " ".join(text.split())[:200])


_STATUS = re.compile(r"HTTP Status Code (\d+) \((b?'.*'|b?\".*\")\)$", re.S)


def _answer_error(exc: BaseException) -> str:
    """Prometheus's own words for a rejected query (``HTTP 400: bad_data: parse error …``)."""
    text = str(exc)
    m = _STATUS.search(text)
    if m is None:
        if isinstance(exc, (ValueError, KeyError, TypeError)):
            return "the answer is not Prometheus's HTTP API JSON (is the URL a Prometheus?)"
        return redact_text(" ".join(text.split())[:300])
    status, body = m.group(1), m.group(2)
    try:
        raw = ast.literal_eval(body)
        raw = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    except (ValueError, SyntaxError):
        raw = body
    try:
        answer = json.loads(raw)
        detail = f"{answer.get('errorType', 'error')}: {answer.get('error', '')}".strip(": ")
    except (ValueError, AttributeError):
        detail = " ".join(str(raw).split())[:200] or "no body"
    return redact_text(f"HTTP {status}: {detail}")


def connect(url: str, *, timeout_s: float, end: float | None = None,
            progress: Callable[[str], None] | None = None,
            waiting: Callable[[str], None] | None = None) -> PromClient:
    """Check ``--prometheus URL`` (one clear line when unusable) and make a client for it."""
    target = Target.parse(url, flag="--prometheus")
    return PromClient(target, timeout_s, time.time() if end is None else end, progress, waiting)
