"""The range of every number a user hands over, in one table, and the one check every input path runs.

A number past these is a typo or an attack, never a deployment: 1e300 requests/s overflows the arithmetic
(exit 4, a traceback's worth of "internal error"), 1e30 GB per GPU prints "817124146124115389972480 PiB",
NaN prints "server ok nan ms", a window of 10^20 days or an --until of 1e300 overflows the clock. The same check
runs on command-line flags, snapshots, targets files, manifests, the calibration file and MCP arguments
(which reach the flags), so a value refused in one is refused in all, with one line naming
where it came from (exit 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from doctor.errors import InputError


@dataclass(frozen=True)
class Bound:
    """``low <= value <= high`` (``low`` excluded where ``open_low``); ``what`` is the unit in the message."""

    low: float
    high: float
    what: str
    open_low: bool = False
    integer: bool = False


#: The largest plausible value of each kind, with room above any real deployment (a GPU with 16 TiB, a million
#: concurrent requests, a context of 2^30 tokens); the smallest is what the arithmetic needs.
BOUNDS: dict[str, Bound] = {
    "users": Bound(1, 10_000_000, "concurrent requests", integer=True),
    "context": Bound(1, 1 << 30, "tokens", integer=True),
    "gpu_mem": Bound(1 << 28, 1 << 44, "bytes per GPU (256 MiB to 16 TiB)", integer=True),
    "rps": Bound(0, 10_000_000, "requests per second", open_low=True),
    "request_seconds": Bound(0, 1_000_000, "seconds per request", open_low=True),
    "temperature": Bound(0, 100, "(a sampling temperature)"),
    "port": Bound(1, 65535, "(a TCP port)", integer=True),
    "elapsed_ms": Bound(0, 86_400_000, "milliseconds"),
    "gpu_count": Bound(1, 100_000, "GPUs", integer=True),
    "kv_tokens": Bound(1, 1 << 40, "KV tokens", integer=True),
    "timeout": Bound(0, 86_400, "seconds", open_low=True),
    "duration": Bound(0, 315_360_000, "seconds (ten years)", open_low=True),
    "unix_time": Bound(0, 253_402_300_799, "unix seconds (the year 9999)"),
}


def problem(kind: str, value: object) -> str | None:
    """Why ``value`` is not a plausible ``kind`` (None when it is): not a number, not finite, out of range."""
    bound = BOUNDS[kind]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"expected a number, got {value!r}"
    if isinstance(value, float) and not math.isfinite(value):
        return f"expected a finite number, got {value!r}"
    if bound.integer and isinstance(value, float) and not value.is_integer():
        return f"expected a whole number, got {value!r}"
    low_ok = value > bound.low if bound.open_low else value >= bound.low
    if not low_ok or value > bound.high:
        side = "more than" if bound.open_low else "at least"
        return (f"{_shown(value)} is out of range (expected {side} {_shown(bound.low)} and at most "
                f"{_shown(bound.high)} {bound.what})").replace("  ", " ")
    return None


def check(kind: str, value: object, label: str) -> None:
    """Raise one InputError line starting with ``label`` (a flag, a file's key) when ``value`` is implausible."""
    why = problem(kind, value)
    if why is not None:
        raise InputError(f"{label}: {why}")


def _shown(value: float) -> str:
    """A number as the message shows it: whole numbers without ".0"; huge ones in e-notation, never 300 digits."""
    if isinstance(value, int) and abs(value) >= 10**12:
        return f"{float(value):.3g}" if value < 10**308 else f"a {len(str(abs(value)))}-digit number"
    return f"{value:g}" if isinstance(value, float) else str(value)
