"""Sizes as people type and read them: ``80G``, ``141GB``, ``80GiB``, ``32k`` tokens.

Byte suffixes follow the Kubernetes convention so there is one rule to remember: ``K/M/G/T`` and
``KB/MB/GB/TB`` are decimal (10^3 steps), ``Ki/Mi/Gi/Ti`` and ``KiB/MiB/GiB/TiB`` are binary (2^10
steps). Token counts (``--context 32k``) are binary because context lengths are powers of two
(32k = 32768). Output is always binary (GiB), the unit GPU tools report.
"""

from __future__ import annotations

import math
import re

from doctor.errors import InputError

_BYTES = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([kmgtp]?)(i?)(b?)\s*$", re.IGNORECASE)
_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}


def parse_bytes(text: str, *, flag: str = "--gpu-mem") -> int:
    """``80G`` -> 80e9, ``80GiB`` -> 80·2^30, ``141GB`` -> 141e9, ``85899345920`` -> itself."""
    match = _BYTES.match(str(text))
    if match is None:
        raise InputError(f"{flag}: cannot read {text!r} as a size (try 80G, 141GB or 80GiB)")
    number, prefix, binary, _ = match.groups()
    base = 1024 if binary else 1000
    value = float(number) * base ** _POWERS[prefix.lower()]
    if value <= 0:
        raise InputError(f"{flag}: size must be positive, got {text!r}")
    from doctor.bounds import BOUNDS, problem

    if not math.isfinite(value) or problem("gpu_mem", int(value)):
        bound = BOUNDS["gpu_mem"]
        raise InputError(f"{flag}: {text!r} is not a GPU's memory (from {format_bytes(bound.low)} to "
                         f"{format_bytes(bound.high)} per GPU)")
    return int(value)


def parse_tokens(text: str, *, flag: str = "--context") -> int:
    """``32768``, ``32k`` (= 32768) or ``1M`` (= 1048576) tokens."""
    match = re.match(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([km]?)\s*$", str(text), re.IGNORECASE)
    if match is None:
        raise InputError(f"{flag}: cannot read {text!r} as a token count (try 32768, 32k or 1M)")
    number = float(match.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[match.group(2).lower()]
    if not math.isfinite(number):  # 400 digits: past any float
        raise InputError(f"{flag}: {text[:20]!r}… is not a token count")
    if not match.group(2) and not number.is_integer():  # "1.5k" is 1536 tokens; "1.5" tokens is no count
        raise InputError(f"{flag}: {text!r} is not a whole number of tokens")
    value = int(number)
    if value <= 0:
        raise InputError(f"{flag}: must be positive, got {text!r}")
    from doctor.bounds import check

    check("context", value, flag)
    return value


def format_bytes(n: float) -> str:
    """1536 -> '1.5 KiB'; exact below 1 KiB."""
    if n < 1024:
        return f"{int(n)} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        n /= 1024
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}" if n < 100 else f"{n:.0f} {unit}"
    raise AssertionError("unreachable")


def format_count(n: int) -> str:
    """Parameter counts: 671030000000 -> '671.0B', 7615616512 -> '7.62B'."""
    if n >= 10**12:
        return f"{n / 10**12:.2f}T"
    if n >= 10**11:
        return f"{n / 10**9:.1f}B"
    if n >= 10**9:
        return f"{n / 10**9:.2f}B"
    return f"{n / 10**6:.0f}M"


def format_tokens(n: int) -> str:
    """32768 -> '32k', 1048576 -> '1M', 5000 -> '5000'."""
    if n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)}M"
    if n % 1024 == 0:
        return f"{n // 1024}k"
    return str(n)
