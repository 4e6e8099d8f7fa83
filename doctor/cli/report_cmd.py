"""``llmdoctor report --prometheus URL``: the nightly fleet health report from Prometheus history.

Everything heavy (prometheus-api-client, requests, the playbooks) is imported inside the command, so the
other commands never pay for it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import click

from doctor.cli.common import fail_on_option, format_option
from doctor.cli.options import beside, option_group
from doctor.cli.output import echo, emit, exit_code
from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.report.pipeline import ReportOptions

_SUFFIXES = {".html": "html", ".htm": "html", ".md": "markdown", ".markdown": "markdown", ".json": "json",
             ".txt": "text"}


EPILOG = """\b
Examples:
  llmdoctor report --prometheus http://prometheus:9090 -o report.html
  llmdoctor report --prometheus http://prometheus:9090 --since 7d --step 5m --selector '{job="llm"}'
  llmdoctor report --prometheus http://prometheus:9090 --targets fleet.yaml --format json

\b
Exit codes: 0 nothing at or above --fail-on, 1 findings, 2 bad input, 3 nothing could be read from
Prometheus.
"""


def _report_options(**values: object) -> ReportOptions:
    from doctor.report.pipeline import ReportOptions  # lazy: --help and the fast path never build one

    return ReportOptions(**values)  # type: ignore[arg-type] - click typed each value


#: --prometheus … --recorded: what to ask Prometheus, over which window (a ``ReportOptions``); -o, --format,
#: --fail-on, --indent and --progress sit among them in --help but say how to show the answer
report_options = option_group("options", _report_options, [
    click.option("--prometheus", required=True, metavar="URL", help="Prometheus base URL (http://host:9090)."),
    click.option("--since", default="24h", show_default=True, help="Window the report covers (30m, 24h, 7d)."),
    click.option("--until", default=None, metavar="TIME",
                 help="End of the window: unix seconds or ISO 8601 (default: now)."),
    click.option("--step", default="60s", show_default=True,
                 help="Resolution of the KV slope's subquery; charts use it or about 360 points, whichever is "
                      "coarser."),
    click.option("--trend", default="15m", show_default=True,
                 help="Window of the KV slope behind time-to-full (at most the window)."),
    click.option("--selector", default="", metavar="'{job=\"llm\"}'",
                 help="Label matchers for the engines' series (and their `up`)."),
    click.option("--targets", type=click.Path(dir_okay=False), default=None,
                 help="The `check --targets` file: instances to check live, with command/config/gpu hints."),
    click.option("--playbooks", "playbook_dirs", multiple=True, type=click.Path(file_okay=False),
                 help="Also run the playbooks in DIR (repeatable)."),
    beside(click.option("-o", "--output", type=click.Path(dir_okay=False), default=None,
                        help="Write the report here (format from the suffix: .html, .md, .json, .txt).")),
    beside(format_option("text", "json", "markdown", "html", default=None)),
    beside(fail_on_option),
    click.option("--timeout", "timeout_s", type=float, default=30.0, show_default=True,
                 help="Seconds each Prometheus query may take."),
    beside(click.option("--indent", type=click.IntRange(0, 8), default=None, metavar="N",
                        help="Indent JSON by N spaces, 0 for none (default: 1 up to 100 instances, none above: a "
                             "large report is written compact, as it is produced).")),
    beside(click.option("--progress/--no-progress", default=None,
                        help="Show each query on stderr (default: only when stderr is a terminal).")),
    click.option("--recorded/--no-recorded", default=True, show_default=True,
                 help="Read the fleet-wide facts the store records (llmdoctor rules --report) where it holds them "
                      "for this very window and selector; --no-recorded asks every query itself."),
])


@click.command("report", epilog=EPILOG)
@report_options
def report(options: ReportOptions, output: str | None, fmt: str | None, fail_on: str, indent: int | None,
           progress: bool | None) -> int:
    """Diagnose every vLLM/SGLang instance Prometheus has seen over the window.

    PromQL does the heavy lifting on the server (quantile_over_time, rate, deriv, histogram_quantile), one
    query per fact for the whole fleet; the playbooks then run per instance on those facts, and the findings
    are ranked across the fleet. HTML is self-contained (inline SVG charts, opens offline).
    """
    from doctor.render.report import report_chunks
    from doctor.report.pipeline import run

    fmt = _format(fmt, output)
    show = progress if progress is not None else sys.stderr.isatty()
    doc, findings = run(options, progress=_progress if show else None, waiting=None if show else _waiting)
    if show and sys.stderr.isatty():
        echo("", err=True)
    if output:
        from doctor.outio import write_chunks

        write_chunks(output, report_chunks(doc, fmt, indent=indent))
        emit("".join(report_chunks(doc, "text", written=output)))
    elif fmt in ("json", "html"):
        _stream(report_chunks(doc, fmt, indent=indent))
    else:
        emit("".join(report_chunks(doc, fmt)))
    return exit_code(findings, fail_on)


def _format(fmt: str | None, output: str | None) -> str:
    if fmt is not None:
        return fmt
    if output is None:
        return "text"
    suffix = "." + output.rsplit(".", 1)[-1].lower() if "." in output else ""
    if suffix not in _SUFFIXES:
        raise InputError(f"-o {output}: cannot tell the format from the suffix (use .html, .md, .json or .txt, "
                         "or --format)")
    return _SUFFIXES[suffix]


def _stream(chunks: Iterator[str]) -> None:
    """To stdout as produced; each piece through the same last line of defence as ``emit``."""
    from doctor.redact import redact_shapes

    out = click.get_text_stream("stdout")
    last = ""
    for chunk in chunks:
        if chunk:
            out.write(redact_shapes(chunk))
            last = chunk
    if not last.endswith("\n"):
        out.write("\n")
    out.flush()


def _waiting(line: str) -> None:
    """Without --progress, one line when a query keeps the run waiting: a nightly job's log says why it hangs."""
    echo(f"llmdoctor report: {line}", err=True)


def _progress(label: str) -> None:
    """On a terminal one line rewritten in place; in a log (--progress without a TTY) one line per step."""
    if sys.stderr.isatty():
        echo(f"\r\033[Kquerying Prometheus: {label}", err=True, nl=False)
    else:
        echo(f"querying Prometheus: {label}", err=True)
