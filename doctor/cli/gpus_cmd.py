"""`llmdoctor gpus`: the GPUs llmdoctor knows, with the names that resolve to each (the catalog, doctor/hardware)."""

from __future__ import annotations

import json

import click

EPILOG = """\b
Examples:
  llmdoctor gpus                    every known GPU and its spellings
  llmdoctor gpus a100               how a name resolves (and what an ambiguous one assumes)
  llmdoctor gpus --format json      the catalog with its sources

\b
A GPU that is not listed still works with lint/check (its GPU checks are skipped) and with plan when
--gpu-mem SIZE gives its memory. Exit codes: 0 listed or resolved; 2 a NAME that matches no GPU.
"""


@click.command("gpus", epilog=EPILOG)
@click.argument("name", required=False)
@click.option("--format", "fmt", type=click.Choice(("text", "json", "markdown")), default="text", show_default=True)
def gpus(name: str | None, fmt: str) -> int:
    """List the GPUs llmdoctor knows (NVIDIA from Volta on, AMD Instinct), or resolve NAME as --gpu would."""
    from doctor.hardware.table import markdown_table, row, text_table

    if name:
        from doctor.hardware.spec import gpu_facts, parse_gpu_spec

        spec = parse_gpu_spec(name)
        facts = gpu_facts(spec, f"--gpu {name}")
        if fmt == "json":
            click.echo(json.dumps({"schema": "llmdoctor.gpus/1", "input": name, "count": spec.count,
                                   "assumed": spec.assumed, "gpu": row(spec.gpu)}, indent=2))
        else:
            click.echo(f"{name!r} → {spec.count}× {spec.gpu.name} ({spec.gpu.full_name}), "
                       f"{row(spec.gpu)['target']}, {spec.gpu.memory_gb:g} GB ({facts.get('gpu.memory_bytes')} "
                       f"bytes: {spec.gpu.memory_basis})")
            if spec.assumed:
                click.echo(f"note: {spec.assumed}")
        return 0
    if fmt == "json":
        from doctor.hardware.catalog import all_gpus

        click.echo(json.dumps({"schema": "llmdoctor.gpus/1", "gpus": [row(g) for g in all_gpus()]}, indent=2))
    elif fmt == "markdown":
        click.echo(markdown_table())
    else:
        click.echo(text_table())
    return 0
