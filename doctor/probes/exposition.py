"""The Prometheus text exposition format (version 0.0.4), sample lines only: ``name{label="value",…} value [ts]``.

Why not prometheus_client's parser: it reads ~1-3 MB/s (a character loop per label set) and importing it pulls
in the whole client (HTTP server, WSGI, multiprocess support: ~90 ms of every `check`). The mapper needs only
the sample lines of a few families (doctor.probes.metrics), and a 64-rank server repeats the same label sets
thousands of times, so one regular expression per line and a cache of parsed label sets do the job at a
fraction of the cost. Comment lines (``# HELP``, ``# TYPE``) carry nothing the mapper reads and are skipped.

Format: https://prometheus.io/docs/instrumenting/exposition_formats/#text-format-details — label values escape
``\\``, ``"`` and newline as ``\\\\``, ``\\"`` and ``\\n``; values are Go floats (``NaN``, ``+Inf``, ``-Inf``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

Labels = dict[str, str]

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_PAIR = r'[a-zA-Z_][a-zA-Z0-9_]*[ \t]*=[ \t]*"(?:[^"\\]|\\.)*"'
_BLOCK = rf"[ \t]*(?:{_PAIR}[ \t]*(?:,[ \t]*{_PAIR}[ \t]*)*,?[ \t]*)?"
#: a whole sample line; the label block is checked here (pairs, commas) so that extracting it is one findall
_SAMPLE = re.compile(rf"({_NAME})[ \t]*(?:\{{({_BLOCK})\}})?[ \t]+(\S+)(?:[ \t]+-?\d+)?[ \t\r]*")
_PAIRS = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\(.)")
_UNESCAPED = {"\\": "\\", '"': '"', "n": "\n"}
#: Distinct label sets remembered per parse: a many-rank exposition has a few thousand; past this, stop caching.
_CACHE_LIMIT = 100_000


class ExpositionError(ValueError):
    """A line that is not a sample of the text format; the message quotes (the start of) the line."""


class SampleParser:
    """Parse sample lines, remembering label sets already seen (the returned dicts are shared: read only)."""

    def __init__(self) -> None:
        self._labels: dict[str, Labels] = {}

    def parse(self, line: str) -> tuple[str, Labels, float]:
        """``(name, labels, value)`` of one sample line; ExpositionError if it is not one."""
        match = _SAMPLE.fullmatch(line)
        if match is None:
            raise ExpositionError(f"invalid line: {_quote(line)}")
        name, block, text = match.groups()
        try:
            value = float(text)
        except ValueError:
            raise ExpositionError(f"invalid value {_quote(text)} in {_quote(line)}") from None
        return name, self._label_set(block or ""), value

    def _label_set(self, block: str) -> Labels:
        labels = self._labels.get(block)
        if labels is not None:
            return labels
        labels = {key: _ESCAPE.sub(_unescape, raw) if "\\" in raw else raw for key, raw in _PAIRS.findall(block)}
        if len(self._labels) < _CACHE_LIMIT:
            self._labels[block] = labels
        return labels


def _unescape(match: re.Match[str]) -> str:
    return _UNESCAPED.get(match.group(1), match.group(0))


def parse_samples(lines: Iterable[str]) -> list[tuple[str, Labels, float]]:
    """Every sample of ``lines`` (comments and blank lines skipped); the first bad line raises ExpositionError."""
    parser = SampleParser()
    return [parser.parse(line) for line in lines if line.strip() and not line.lstrip().startswith("#")]


def is_sample_or_comment(line: str) -> bool:
    """Whether ``line`` reads as a whole line of the format (used to tell a body cut mid-line)."""
    if not line.strip() or line.lstrip().startswith("#"):
        return True
    try:
        SampleParser().parse(line)
    except ExpositionError:
        return False
    return True


def _quote(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")
