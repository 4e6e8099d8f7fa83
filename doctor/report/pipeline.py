"""One report run: check the inputs, read Prometheus, look at the targets, diagnose, build the document.

Kept apart from the CLI so the bench and the tests run exactly what ``llmdoctor report`` runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from doctor.errors import InputError, TargetError
from doctor.findings import Finding
from doctor.report.view import finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


@dataclass(frozen=True)
class ReportOptions:
    prometheus: str
    since: str = "24h"
    step: str = "60s"
    trend: str = "15m"
    selector: str = ""
    until: str | None = None
    targets: str | None = None
    playbook_dirs: tuple[str, ...] = ()
    timeout_s: float = 30.0
    probe_timeout_s: float = 5.0
    #: read the fleet-wide facts the store records (llmdoctor rules --report) where it has them
    recorded: bool = True


def run(options: ReportOptions, progress: Callable[[str], None] | None = None,
        waiting: Callable[[str], None] | None = None) -> tuple[dict[str, Any], list[Finding]]:
    """The ``llmdoctor.report/1`` document and every finding in it; TargetError when Prometheus gave nothing."""
    from doctor.bounds import check
    from doctor.commands.fleet import load_targets
    from doctor.playbook.loader import load_playbooks
    from doctor.report.analysis import analyze, attach_detail, charted, document, iso
    from doctor.report.client import connect
    from doctor.report.collect import Window, collect, collect_detail
    from doctor.report.promql import Params, Selector, load_catalog, parse_duration
    from doctor.report.recorded import discover
    from doctor.report.targets import look

    since = parse_duration(options.since, "--since")
    step = parse_duration(options.step, "--step")
    trend = parse_duration(options.trend, "--trend")
    if step > since:
        raise InputError(f"--step {options.step}: longer than --since {options.since}")
    trend = min(trend, since)  # the slope is fitted inside the window
    if trend < 2 * step:
        raise InputError(f"--trend {options.trend}: the KV slope needs at least two --step ({options.step}) "
                         f"inside it (and inside --since {options.since})")
    check("timeout", options.timeout_s, "--timeout")
    selector = Selector.parse(options.selector)
    end = parse_time(options.until) if options.until else time.time()
    check("unix_time", end, "--until")
    client = connect(options.prometheus, timeout_s=options.timeout_s, end=end, progress=progress,
                     waiting=waiting)
    specs = load_targets(options.targets) if options.targets else []
    pbset = load_playbooks(options.playbook_dirs)
    catalog = load_catalog()

    started = time.perf_counter()
    window = Window(since=since, step=step, trend=trend, end=end)
    params = Params(selector=selector)
    try:
        recorded = discover(client, window.start) if options.recorded else None
        collected = collect(client, catalog, window, params, recorded)
        elapsed = time.perf_counter() - started  # querying only: the live look and the diagnosis are not
        if not collected.any_data():
            errors = [e.problem for e in client.log if e.problem]
            why = errors[0] if errors else (f"no vLLM or SGLang series matched"
                                            f"{' ' + selector.text if selector.text else ''}"
                                            f" between {iso(window.start)} and {iso(end)}")
            raise TargetError(f"--prometheus {client.display}: nothing could be read: {why}")
        if progress is not None and specs:
            progress(f"live look at {len(specs)} targets")
        live = look(specs, collected.instances, timeout_s=options.probe_timeout_s,
                    playbook_dirs=options.playbook_dirs)
        results = analyze(collected, catalog, pbset, live, window)
        # the detail last: which instances get a close look depends on what the diagnosis found
        started = time.perf_counter()
        collect_detail(client, catalog, window, params, collected, charted(results))
        elapsed += time.perf_counter() - started
    finally:
        client.close()
    attach_detail(results, collected, catalog)
    doc = document(client=client, window=window, selector=selector, results=results, collected=collected,
                   catalog=catalog, elapsed_s=elapsed)
    return doc, [finding(f) for f in doc["findings"]]


def parse_time(text: str) -> float:
    """``--until``: unix seconds or an ISO 8601 / RFC 3339 time (``2026-11-29T00:00:00Z``)."""
    from datetime import datetime, timezone

    value = text.strip()
    try:
        return float(value)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"--until {text!r}: not unix seconds or an ISO 8601 time (2026-11-29T00:00:00Z)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()
