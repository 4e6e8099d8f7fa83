"""`llmdoctor gpus`: the GPUs llmdoctor knows, with the names that resolve to each (the catalog, doctor/hardware)."""

from __future__ import annotations

from dataclasses import dataclass

import click

from doctor.cli.common import format_option
from doctor.cli.output import emit_document

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

EPILOG = """\b
Examples:
  llmdoctor gpus                    every known GPU and its spellings
  llmdoctor gpus a100               how a name resolves (and what an ambiguous one assumes)
  llmdoctor gpus "8 H100"           counts are read as --gpu reads them
  llmdoctor gpus --format json      the catalog with its sources

\b
A GPU that is not listed still works with lint/check (its GPU checks are skipped) and with plan when
--gpu-mem SIZE gives its memory. Exit codes: 0 listed or resolved; 2 a NAME that matches no GPU.
"""
SCHEMA = "llmdoctor.gpus/1"


@dataclass
class Listing:
    """What `gpus` prints: the whole catalog, or one name resolved (``spec``)."""

    spec: Any = None

    def to_dict(self) -> dict[str, Any]:
        from doctor.hardware.catalog import all_gpus
        from doctor.render.gpus import row

        if self.spec is None:
            return {"schema": SCHEMA, "gpus": [row(g) for g in all_gpus()]}
        return {"schema": SCHEMA, "input": self.spec.text, "count": self.spec.count, "assumed": self.spec.assumed,
                "gpu": row(self.spec.gpu)}


@click.command("gpus", epilog=EPILOG)
@click.argument("name", required=False)
@format_option("text", "json", "markdown")
def gpus(name: str | None, fmt: str) -> int:
    """List the GPUs llmdoctor knows (NVIDIA from Volta on, AMD Instinct and Radeon PRO), or resolve NAME as --gpu
    would."""
    from doctor.render.gpus import markdown_table, resolved_text, text_table

    listing = Listing()
    if name:
        from doctor.hardware.spec import parse_gpu_spec

        listing = Listing(parse_gpu_spec(name, field="gpus NAME"))
    if listing.spec is None:
        emit_document(fmt, listing, text=text_table, markdown=markdown_table)
    else:
        emit_document(fmt, listing, text=lambda: resolved_text(listing.spec), markdown=lambda: resolved_text(listing.spec))
    return 0
