"""Options and output plumbing shared by every command (format, --fail-on, colour, exit code)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from doctor.cli.options import option_group
from doctor.errors import EXIT_FINDINGS, EXIT_OK

if TYPE_CHECKING:
    from doctor.findings import Finding

#: Kept here (not imported from doctor.findings) so that defining options costs no import at start-up.
SEVERITIES = ("info", "warning", "critical")

F = TypeVar("F", bound=Callable[..., Any])


_FORMAT_HELP = {"text": "text for people", "json": "json for scripts (versioned schema)",
                "markdown": "markdown for tickets", "html": "html for reports",
                "sarif": "sarif for code scanning (SARIF 2.1.0)", "junit": "junit for CI test reports"}


def format_option(*choices: str, default: str = "text") -> Callable[[F], F]:
    return click.option(
        "--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
        help="Output format: " + ", ".join(_FORMAT_HELP[c] for c in choices) + ".",
    )


def fail_on_option(f: F) -> F:
    return click.option(
        "--fail-on", type=click.Choice(SEVERITIES + ("never",)), default="warning", show_default=True,
        help="Exit 1 when a finding is at or above this severity ('never': always exit 0 after a run).",
    )(f)


class OutputFlags:
    """--format, --fail-on, -v/--verbose: how the answer is shown and which findings make the exit code 1."""

    __slots__ = ("fmt", "fail_on", "verbose")

    def __init__(self, fmt: str, fail_on: str, verbose: bool) -> None:
        self.fmt, self.fail_on, self.verbose = fmt, fail_on, verbose


def output_options(formats: tuple[str, ...], verbose_help: str) -> Callable[[F], F]:
    """--format (one of ``formats``), --fail-on and -v/--verbose (``verbose_help``), as one ``OutputFlags``."""
    return option_group("output", OutputFlags, [
        format_option(*formats), fail_on_option,
        click.option("-v", "--verbose", is_flag=True, help=verbose_help),
    ])


def exit_code(findings: list[Finding], fail_on: str) -> int:
    from doctor.findings import severity_rank

    if fail_on == "never":
        return EXIT_OK
    threshold = severity_rank(fail_on)
    return EXIT_FINDINGS if any(severity_rank(f.severity) >= threshold for f in findings) else EXIT_OK


def use_color() -> bool:
    """Colour only on a terminal, and never when NO_COLOR is set (https://no-color.org)."""
    return "NO_COLOR" not in os.environ and sys.stdout.isatty()


def emit(text: str) -> None:
    """Print a result; the last line of defence masks any URL password or shaped token it still carries."""
    from doctor.redact import redact_shapes

    click.echo(redact_shapes(text.rstrip("\n")), color=use_color())


def emit_document(fmt: str, document: Any, *, text: Callable[[], str], markdown: Callable[[], str] | None = None) -> None:
    """One result in the format asked for: the versioned JSON document, Markdown, or text for people."""
    if fmt == "json":
        import json

        emit(json.dumps(document.to_dict(), indent=2, default=str))
    elif fmt == "markdown" and markdown is not None:
        emit(markdown())
    else:
        emit(text())
