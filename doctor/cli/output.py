"""Writing a command's answer and its one-line errors — what every command shares once its options are parsed.

Kept free of click so that `check --endpoint`, which runs without it (doctor/cli/fastcheck.py), prints through
the same code as every other command. :func:`echo` behaves as ``click.echo`` does where llmdoctor relies on it:
escape sequences are stripped unless colour is wanted (``color``; by default: the stream is a terminal), the
stream is flushed after each write, and a stream misconfigured as ASCII (``LC_ALL=C`` without UTF-8 coercion)
gets UTF-8 with replacement rather than an encoding error.
"""

from __future__ import annotations

import codecs
import os
import re
import sys
from collections.abc import Callable

from doctor.errors import EXIT_FINDINGS, EXIT_OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.findings import Finding

#: Kept here (not imported from doctor.findings) so that defining options costs no import at start-up.
SEVERITIES = ("info", "warning", "critical")

#: An ANSI escape sequence (the pattern click.utils.strip_ansi removes).
_ANSI = re.compile(r"\033\[[0-?]*[ -/]*[@-~]")


class OutputFlags:
    """--format, --fail-on, -v/--verbose: how the answer is shown and which findings make the exit code 1."""

    __slots__ = ("fmt", "fail_on", "verbose")

    def __init__(self, fmt: str, fail_on: str, verbose: bool) -> None:
        self.fmt, self.fail_on, self.verbose = fmt, fail_on, verbose


def exit_code(findings: list[Finding], fail_on: str) -> int:
    from doctor.findings import severity_rank

    if fail_on == "never":
        return EXIT_OK
    threshold = severity_rank(fail_on)
    return EXIT_FINDINGS if any(severity_rank(f.severity) >= threshold for f in findings) else EXIT_OK


def use_color() -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return "NO_COLOR" not in os.environ and sys.stdout.isatty()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _is_ascii(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name == "ascii"
    except LookupError:
        return False


def echo(text: str, *, err: bool = False, color: bool | None = None, nl: bool = True) -> None:
    """``text`` and (``nl``) a newline to standard output (``err``: standard error), flushed."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:  # pythonw, or a daemon that closed it
        return
    if not (color if color is not None else _isatty(stream)):
        text = _ANSI.sub("", text)
    if nl:
        text += "\n"
    if not text:
        stream.flush()
        return
    encoding = getattr(stream, "encoding", None) or "ascii"
    binary = getattr(stream, "buffer", None)
    if binary is not None and _is_ascii(encoding):
        stream.flush()
        binary.write(text.encode("utf-8", "replace"))
        binary.flush()
        return
    stream.write(text)
    stream.flush()


def emit(text: str) -> None:
    """Print a result; the last line of defence masks any URL password or shaped token it still carries."""
    from doctor.redact import redact_shapes

    echo(redact_shapes(text.rstrip("\n")), color=use_color())


def emit_document(fmt: str, document: Any, *, text: Callable[[], str], markdown: Callable[[], str] | None = None) -> None:
    """One result in the format asked for: the versioned JSON document, Markdown, or text for people."""
    if fmt == "json":
        emit_json(document)
    elif fmt == "markdown" and markdown is not None:
        emit(markdown())
    else:
        emit(text())


def emit_json(document: Any) -> None:
    """The versioned JSON document (``document.to_dict()``), indented for a reader."""
    import json

    emit(json.dumps(document.to_dict(), indent=2, default=str))
