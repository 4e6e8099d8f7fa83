"""How nvidia-smi writes a value, whichever form it prints (XML, CSV, ``-q`` text): ``143771 MiB``, ``16x``,
``Not Active``, ``[N/A]``. Shared by the readers so that each field means the same thing in every form."""

from __future__ import annotations

import re

NA = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "[insufficient permissions]",
      "[requested functionality has been deprecated]", "requested functionality has been deprecated", "-"}
UNITS = {"b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30}


def na(value: str | None) -> bool:
    return value is None or value.strip().lower() in NA


def bytes_of(value: str | None, unit: str = "mib") -> int | None:
    """``143771 MiB`` or ``143771`` (unit from the CSV header) to bytes."""
    if na(value):
        return None
    m = re.fullmatch(r"\s*([\d.]+)\s*([KMG]iB|B)?\s*", value or "", re.IGNORECASE)
    if not m:
        return None
    return int(float(m.group(1)) * UNITS[(m.group(2) or unit).lower()])


def number(value: str | None) -> float | None:
    """The leading number of ``52 C``, ``627.32 W``, ``-2 C``; None for N/A or text."""
    if na(value):
        return None
    m = re.match(r"\s*(-?[\d.]+)", value or "")
    try:
        return float(m.group(1)) if m else None
    except ValueError:  # "1.2.3"
        return None


def whole(value: str | None) -> int | None:
    found = number(value)
    return int(found) if found is not None else None


def flag(value: str | None) -> bool | None:
    """Yes/Enabled/Active -> True; No/Disabled/Not Active -> False; N/A -> None."""
    if na(value):
        return None
    return (value or "").strip().lower() in ("yes", "enabled", "on", "active", "true")
