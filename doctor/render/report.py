"""The fleet report (``llmdoctor.report/1``) in the format asked for, piece by piece: what `llmdoctor report`
writes to a file or streams to stdout."""

from __future__ import annotations

from collections.abc import Iterator

#: Up to this many instances a JSON report is indented by default (read by eye); above it, compact.
INDENT_UP_TO = 100


def report_chunks(doc: dict, fmt: str, written: str | None = None, indent: int | None = None) -> Iterator[str]:
    """The report in ``fmt``, piece by piece (JSON and HTML: an instance at a time)."""
    if fmt == "json":
        from doctor.outio import json_chunks

        if indent is None and doc["summary"]["instances"] <= INDENT_UP_TO:
            indent = 1
        yield from json_chunks(doc, indent or None)
    elif fmt == "html":
        from doctor.render.report_html import html_chunks

        yield from html_chunks(doc)
    else:
        from doctor.render.report_text import markdown_report, text_summary

        yield markdown_report(doc) if fmt == "markdown" else text_summary(doc, written=written)
