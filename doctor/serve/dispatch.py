"""What ``serve`` does with an alert: decide whether to check, check in a bounded pool, deliver the Markdown.

Alertmanager re-sends a firing group every ``group_interval``/``repeat_interval`` and a flapping alert can come
back every minute; one check per alert fingerprint within ``dedup_s`` keeps an on-call channel readable and a
sick server from being probed in a loop. The queue is bounded (a flood is refused, counted, never buffered
without end) and the pool is bounded (each check opens a few sockets and threads). Every check runs under
its timeout and every delivery under its own, so one hung instance or a slow chat webhook costs one worker
for a bounded time. Nothing a worker does can raise past it: failures are counted and logged on stderr.
"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from doctor.sources.alerts import Alert, Notification

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.commands.fleet import TargetResult, TargetSpec

SCHEMA = "llmdoctor.serve/1"
#: a Slack incoming webhook takes up to 40,000 characters of text; beyond that the message is cut
MAX_NOTIFY_CHARS = 39_000


@dataclass
class ServeOptions:
    """How ``serve`` checks and delivers; defaults are the CLI's."""

    targets: list[TargetSpec] = field(default_factory=list)
    out_dir: Path | None = None
    notify_url: str | None = None
    timeout_s: float = 5.0
    notify_timeout_s: float = 10.0
    concurrency: int = 8
    max_queue: int = 1000
    dedup_s: float = 600.0
    #: with a targets file, also check instances it does not list (default: only listed ones)
    check_unlisted: bool = False
    playbook_dirs: tuple[str, ...] = ()


class Dispatcher:
    """Accepts notifications (fast, under a lock) and runs their checks in a pool (slow, outside it)."""

    def __init__(self, options: ServeOptions, log: Any = None) -> None:
        from doctor.playbook.loader import load_playbooks

        self.options = options
        self._playbooks = load_playbooks(options.playbook_dirs)  # a bad --playbooks fails at start
        self._targets = _index(options.targets)
        self._pool = ThreadPoolExecutor(max_workers=options.concurrency, thread_name_prefix="llmdoctor-check")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._last: dict[str, float] = {}  # fingerprint → when its last check was accepted (monotonic)
        self._pending = 0
        self._log = log or log_line
        self.counts = {k: 0 for k in ("notifications", "alerts", "accepted", "deduplicated", "skipped", "dropped",
                                      "checked", "delivered", "delivery_failed", "check_failed")}

    # -- accepting ------------------------------------------------------------------------------------------
    def submit(self, notification: Notification) -> dict[str, Any]:
        """Queue a check per firing alert; return at once with what was accepted and why others were not."""
        accepted: list[str] = []
        skipped: list[dict[str, str]] = []
        now = time.monotonic()
        with self._lock:
            self.counts["notifications"] += 1
            self.counts["alerts"] += len(notification.alerts)
            self._prune(now)
            for alert in notification.alerts:
                reason, spec = self._decide(alert, now)
                if reason is not None:
                    skipped.append({"fingerprint": alert.fingerprint, "alert": alert.name, "reason": reason})
                    continue
                assert spec is not None
                self._last[alert.fingerprint] = now
                self._pending += 1
                self.counts["accepted"] += 1
                accepted.append(alert.fingerprint)
                self._pool.submit(self._work, alert, spec)
        return {"schema": SCHEMA, "accepted": accepted, "skipped": skipped}

    def _decide(self, alert: Alert, now: float) -> tuple[str | None, TargetSpec | None]:
        if alert.status != "firing":
            self.counts["skipped"] += 1
            return "resolved", None
        if alert.instance is None:
            self.counts["skipped"] += 1
            return "no instance label", None
        spec = self._spec(alert.instance)
        if spec is None:
            self.counts["skipped"] += 1
            return "instance not in --targets (--check-unlisted checks it anyway)", None
        last = self._last.get(alert.fingerprint)
        if last is not None and now - last < self.options.dedup_s:
            self.counts["deduplicated"] += 1
            return f"checked {now - last:.0f} s ago (--dedup-window {self.options.dedup_s:g} s)", None
        if self._pending >= self.options.max_queue:
            self.counts["dropped"] += 1
            self._log(f"queue full ({self.options.max_queue} checks pending): {alert.name} {alert.fingerprint} "
                      "not checked")
            return f"queue full ({self.options.max_queue} pending)", None
        return None, spec

    def _spec(self, instance: str) -> TargetSpec | None:
        """The targets-file entry of an instance (its name, or its endpoint's host:port), else a bare one."""
        from doctor.commands.fleet import TargetSpec

        spec = self._targets.get(instance)
        if spec is not None:
            return spec
        if self.options.targets and not self.options.check_unlisted:
            return None
        return TargetSpec(endpoint=instance, name=instance)

    def _prune(self, now: float) -> None:
        if len(self._last) > 10_000:
            self._last = {k: t for k, t in self._last.items() if now - t < self.options.dedup_s}

    # -- working --------------------------------------------------------------------------------------------
    def _work(self, alert: Alert, spec: TargetSpec) -> None:
        from doctor.render.alert import render_markdown

        try:
            result = self._check(alert, spec)
            text = render_markdown(alert, spec, result)
            self._deliver(alert, text)
        except Exception as exc:  # noqa: BLE001 - a worker must survive anything one alert brings
            with self._lock:
                self.counts["check_failed"] += 1
            self._log(f"{alert.name} {alert.fingerprint}: internal error: {type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._pending -= 1
                self._idle.notify_all()

    def _check(self, alert: Alert, spec: TargetSpec) -> TargetResult:
        from doctor.commands.fleet import check_target

        symptom = alert.labels.get("symptom")
        found = self._playbooks.find(symptom) if symptom else None  # an id or an alias, as `check --symptom`
        symptoms = (found.symptom,) if found is not None else ()
        result = check_target(spec, self.options.timeout_s, symptoms, self.options.playbook_dirs)
        with self._lock:
            self.counts["checked"] += 1
        ids = ", ".join(f.id for f in result.run.diagnosis.findings) if result.run is not None else ""
        state = result.error or (result.run.unreachable if result.run is not None else None) or "ok"
        self._log(f"{alert.name} {alert.fingerprint} {spec.shown}: {state}; findings: {ids or 'none'}")
        return result

    def _deliver(self, alert: Alert, text: str) -> None:
        from doctor.redact import redact_text

        text = redact_text(text)
        ok = True
        if self.options.out_dir is not None:
            from doctor.outio import write_atomic

            try:
                write_atomic(self.options.out_dir / f"{alert.fingerprint}.md", text)
            except OSError as exc:
                ok = False
                self._log(f"{alert.fingerprint}: cannot write to {self.options.out_dir}: {exc}")
        if self.options.notify_url:
            ok = self._notify(alert, text) and ok
        with self._lock:
            self.counts["delivered" if ok else "delivery_failed"] += 1

    def _notify(self, alert: Alert, text: str) -> bool:
        from doctor.probes.http import HttpError, post_json

        if len(text) > MAX_NOTIFY_CHARS:
            text = text[:MAX_NOTIFY_CHARS] + "\n… (cut; the whole diagnosis is in --out-dir)"
        try:
            response = post_json(str(self.options.notify_url), {"text": text},
                                 timeout_s=self.options.notify_timeout_s, max_bytes=64 * 1024)
        except HttpError as exc:
            self._log(f"{alert.fingerprint}: notify to {_origin(self.options.notify_url)} failed: {exc.reason}")
            return False
        if not 200 <= response.status < 300:
            self._log(f"{alert.fingerprint}: notify to {_origin(self.options.notify_url)}: HTTP {response.status}")
            return False
        return True

    # -- state ----------------------------------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        with self._lock:
            return {"schema": SCHEMA, "status": "ok", "pending": self._pending, **self.counts}

    def drain(self, timeout_s: float) -> bool:
        """Wait until no check is pending (True), or ``timeout_s`` passed (False)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _index(targets: list[TargetSpec]) -> dict[str, TargetSpec]:
    """instance label → targets entry, as ``report --targets`` matches them (doctor/report/targets.py): an
    entry's name first, then its endpoint's host:port."""
    from contextlib import suppress

    from doctor.errors import InputError
    from doctor.probes.base import Target

    index: dict[str, TargetSpec] = {}
    for spec in targets:
        with suppress(InputError):  # a bad endpoint is reported by check_target when its alert comes
            index.setdefault(Target.parse(spec.endpoint).netloc, spec)
    index.update({spec.name: spec for spec in targets})
    return index


def _origin(url: str | None) -> str:
    """scheme://host:port of a URL: a chat webhook's path is its secret, so logs never show it."""
    from urllib.parse import urlsplit

    parts = urlsplit(url or "")
    return f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")


def log_line(line: str) -> None:
    """One redacted line on stderr: the receiver's log."""
    from doctor.redact import redact_text

    print(f"llmdoctor serve: {redact_text(line)}", file=sys.stderr, flush=True)
