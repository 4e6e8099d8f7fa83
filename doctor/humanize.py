"""Values written for people, in every output: ``mla``, not ``'mla'``; ``0.46%``, not ``0%``.

Shared by the playbook templates (a cause's text), the evidence sentences and every renderer, so a value
reads the same in a finding's text, its evidence and the facts list. Python reprs (quotes, brackets,
``{'flag': ...}``) are for debugging, not for an on-call engineer.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def readable(value: Any, limit: int = 120) -> str:
    """A fact's value as a person writes it: no quotes, no brackets, booleans and null in words."""
    return shorten(_plain(value), limit)


def shorten(text: str, limit: int, strip: str = " ,;") -> str:
    """At most ``limit`` characters, cut at a space with an ellipsis (never inside a word unless it is one word);
    ``strip`` is what a cut may leave dangling before the ellipsis."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit - 1)
    return (text[:cut] if cut > 0 else text[: limit - 1]).rstrip(strip) + "…"


def _plain(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return number(value)
    if isinstance(value, dict):
        return " · ".join(f"{k} {_plain(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        items = [_plain(v) for v in value]
        sep = "; " if any(isinstance(v, (dict, list, tuple)) for v in value) else ", "
        return sep.join(items) if items else "none"
    return str(value)


def number(value: float) -> str:
    """Four significant digits, no float noise: 0.004618937644341847 → 0.004619, 2.0 → 2."""
    if value.is_integer():
        return str(int(value))
    return f"{value:.4g}"


def percent(ratio: float) -> str:
    """A 0..1 ratio as a percentage that keeps its meaning: 0.46%, 7.5%, 40%, 99.5% (never 100% unless full)."""
    pct = ratio * 100
    size = abs(pct)
    if pct == 0 or size >= 100:
        return f"{pct:.0f}%"
    if size < 0.01:
        return "<0.01%" if pct > 0 else ">-0.01%"
    decimals = 2 if size < 1 or size >= 99.95 else 1 if size < 10 or size >= 99 else 0
    return _trim(f"{pct:.{decimals}f}") + "%"


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text
