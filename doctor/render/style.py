"""Terminal emphasis for the text renderers, without importing click on the path of every `check`.

The escape sequences are the ones ``click.style`` writes for the same arguments (its colour table and its
reset-all), so a rendering is byte-for-byte what it was when the renderers called click; where the text is
not shown on a terminal the writer (doctor/cli/output.py) strips them, as ``click.echo`` does.
"""

from __future__ import annotations

#: ANSI foreground colours, as click names them (click.termui._ansi_colors); the renderers use a few.
COLOURS = {"black": 30, "red": 31, "green": 32, "yellow": 33, "blue": 34, "magenta": 35, "cyan": 36, "white": 37}
RESET = "\033[0m"


def style(text: str, *, fg: str | None = None, bold: bool | None = None) -> str:
    """``text`` in colour ``fg`` and/or bold, reset after (``style(text, fg=fg, bold=bold)``)."""
    bits = []
    if fg is not None:
        bits.append(f"\033[{COLOURS[fg]}m")
    if bold is not None:
        bits.append(f"\033[{1 if bold else 22}m")
    return "".join(bits) + text + RESET
