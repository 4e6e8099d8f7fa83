"""Terminal text primitives every text renderer shares: the width, and wrapping that never splits a token.

Why a module of its own: an on-call engineer copies ids, flags and URLs out of the output, so a wrapped
``--tool-⏎call-parser`` is a broken command; and every renderer (check, lint, plan) must wrap the same way.
Values are written for people by :mod:`doctor.humanize`.
"""

from __future__ import annotations

import os
import sys
import textwrap

#: Text output is laid out for this many columns at most (and at least 60), whatever the terminal says.
MAX_WIDTH = 110
MIN_WIDTH = 60


def width() -> int:
    """The terminal's width (``COLUMNS`` honoured), clamped to what stays readable."""
    return max(MIN_WIDTH, min(MAX_WIDTH, columns()))


def columns(fallback: int = 100) -> int:
    """``shutil.get_terminal_size(...).columns`` without importing shutil (and with it bz2, lzma: ~2 ms of a
    check): ``COLUMNS`` when it is a positive number, else standard output's terminal, else ``fallback``."""
    try:
        value = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        value = 0
    if value > 0:
        return value
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or fallback
    except (AttributeError, ValueError, OSError):
        return fallback


def wrap(text: str, width: int, initial: str = "", subsequent: str | None = None) -> list[str]:
    """Wrap at spaces only: ids, flags, URLs and paths stay whole (a token longer than the width keeps its line)."""
    rest = " " * len(initial) if subsequent is None else subsequent
    return textwrap.wrap(text, width=width, initial_indent=initial, subsequent_indent=rest,
                         break_long_words=False, break_on_hyphens=False) or [initial.rstrip()]


def labelled(label: str, text: str, width: int, *, indent: int = 2, column: int = 9) -> list[str]:
    """``  fix      text…`` with every paragraph of ``text`` wrapped under the text column."""
    prefix = " " * indent + f"{label:<{column}}"
    lines: list[str] = []
    for i, paragraph in enumerate(text.splitlines() or [""]):
        lines.extend(wrap(paragraph, width, prefix if i == 0 else " " * len(prefix), " " * len(prefix)))
    return lines


def fit_line(text: str, width: int) -> str:
    """One line of at most ``width`` columns, cut at a space with an ellipsis (never inside a word)."""
    from doctor.humanize import shorten

    return shorten(text, width, " ,;:—-")
