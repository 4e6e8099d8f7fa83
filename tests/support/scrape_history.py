"""History for a private Prometheus built from one REAL /metrics scrape (fixtures/metrics).

A scrape is one instant; alerts need minutes. The history here is a SCENARIO derived from the real values:
gauges hold the scraped value throughout; counters (``_total``, ``_count``, ``_sum``, ``_bucket``) climb
linearly from 0 to the scraped value, the way a server started at the beginning of the window would have
reached it. Every series gets the ``instance`` and ``job`` labels a scrape target would. ``_created``
samples are dropped (Prometheus 2.x ingests them as series of their own).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)(?:\s+\S+)?$")
_COUNTER_SUFFIXES = ("_total", "_count", "_sum", "_bucket")


def samples(path: Path) -> Iterator[tuple[str, str, float]]:
    """(name, label text without braces, value) of every sample line of a scrape."""
    for line in path.read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line.strip())
        if match is None:
            continue
        name, labels, value = match.group(1), (match.group(2) or "{}")[1:-1], match.group(3)
        if name.endswith("_created"):
            continue
        try:
            number = float(value)
        except ValueError:
            continue
        if number != number or number in (float("inf"), float("-inf")):
            continue  # a NaN gauge or an +Inf: nothing to alert on, and promtool's series notation cannot say it
        yield name, labels, number


def _labels(labels: str, instance: str, job: str) -> str:
    extra = f'instance="{instance}",job="{job}"'
    return "{" + (labels.rstrip(",") + "," if labels else "") + extra + "}"


def promtool_series(path: Path, instance: str, job: str, minutes: int) -> list[dict[str, str]]:
    """``input_series`` for ``promtool test rules`` (1 m interval), plus ``up`` = 1."""
    out = [{"series": f'up{{instance="{instance}",job="{job}"}}', "values": f"1x{minutes}"}]
    for name, labels, value in samples(path):
        if name.endswith(_COUNTER_SUFFIXES):
            values = f"0+{value / minutes:.10g}x{minutes}"
        else:
            values = f"{value:.10g}x{minutes}"
        out.append({"series": name + _labels(labels, instance, job), "values": values})
    return out


def openmetrics(paths: dict[str, Path], job: str, start: int, end: int, step: int) -> str:
    """OpenMetrics text with timestamps (for ``promtool tsdb create-blocks-from openmetrics``): ``paths`` maps an
    instance label to the real scrape it replays, from ``start`` to ``end`` (unix seconds) every ``step``."""
    lines: list[str] = []
    steps = max(1, (end - start) // step)
    series: dict[str, list[tuple[str, float, bool]]] = {}
    for instance, path in paths.items():
        series.setdefault("up", []).append((_labels("", instance, job), 1.0, False))
        for name, labels, value in samples(path):
            series.setdefault(name, []).append(
                (_labels(labels, instance, job), value, name.endswith(_COUNTER_SUFFIXES)))
    for name, rows in series.items():
        lines.append(f"# TYPE {name} unknown")
        for label_text, value, counter in rows:
            for i in range(steps + 1):
                v = value * i / steps if counter else value
                lines.append(f"{name}{label_text} {v:.10g} {start + i * step}")
    lines.append("# EOF")
    return "\n".join(lines) + "\n"
