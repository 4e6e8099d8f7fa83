"""The output options every command shares (--format, --fail-on, -v); writing the answer is doctor/cli/output.py."""

from __future__ import annotations

from collections.abc import Callable

import click

from doctor.cli.options import option_group
from doctor.cli.output import SEVERITIES, OutputFlags

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

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


def output_options(formats: tuple[str, ...], verbose_help: str) -> Callable[[F], F]:
    """--format (one of ``formats``), --fail-on and -v/--verbose (``verbose_help``), as one ``OutputFlags``."""
    return option_group("output", OutputFlags, [
        format_option(*formats), fail_on_option,
        click.option("-v", "--verbose", is_flag=True, help=verbose_help),
    ])
