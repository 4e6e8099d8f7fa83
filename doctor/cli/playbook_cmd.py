"""`llmdoctor playbook`: read, check and document the decision trees."""

from __future__ import annotations

import json

import click

from doctor.cli.options import playbooks_option
from doctor.cli.output import echo, emit, emit_document
from doctor.errors import EXIT_OK, EXIT_USAGE, InputError


@click.group("playbook", epilog="""\b
Examples:
  llmdoctor playbook list
  llmdoctor playbook show tools-ignored
  llmdoctor playbook show moe-without-ep
  llmdoctor playbook validate ./my-playbooks
  llmdoctor playbook docs -o docs/causes.md

Exit codes: 0 ok, 2 unknown id or invalid playbooks.
""")
def playbook() -> None:
    """Read, validate and document the playbooks (YAML decision trees, one per symptom)."""


@playbook.command("list", epilog="""\b
Examples:
  llmdoctor playbook list
  llmdoctor playbook list --playbooks ./my-playbooks --format json

\b
Exit codes: 0 listed; 2 a --playbooks directory is not valid.
""")
@playbooks_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def list_cmd(playbook_dirs: tuple[str, ...], fmt: str) -> int:
    """List the symptoms (playbooks) and the causes each can reach."""
    from doctor.playbook.document import symptoms_by_cause
    from doctor.playbook.loader import load_playbooks

    pbset = load_playbooks(playbook_dirs)
    reached = symptoms_by_cause(pbset)
    rows = []
    for symptom in sorted(pbset.playbooks):
        pb = pbset.playbooks[symptom]
        causes = sorted(c for c, s in reached.items() if symptom in s)
        rows.append({"symptom": symptom, "title": pb.title, "aliases": list(pb.aliases), "causes": causes,
                     "source": pb.source})
    if fmt == "json":
        emit(json.dumps({"schema": "llmdoctor.playbooks/1", "playbooks": rows}, indent=2))
        return EXIT_OK
    from doctor.render.playbooks import listing_text

    emit(listing_text(rows, len(pbset.causes)))
    return EXIT_OK


@playbook.command("show", epilog="""\b
Examples:
  llmdoctor playbook show tools-ignored
  llmdoctor playbook show moe-without-ep
  llmdoctor playbook show traps

\b
Exit codes: 0 shown; 2 no such playbook, alias or cause (or a --playbooks directory is not valid).
""")
@click.argument("ident")
@playbooks_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: the tree, cause or traps as data (schema llmdoctor.playbook/1).")
def show_cmd(ident: str, playbook_dirs: tuple[str, ...], fmt: str) -> int:
    """Show one playbook's tree (by symptom id or alias), one cause, or `traps`."""
    from doctor.playbook.loader import load_playbooks

    pbset = load_playbooks(playbook_dirs)
    if fmt == "json":
        from doctor.playbook.document import ShownDocument

        emit_document("json", ShownDocument(pbset, ident), text=str)
        return EXIT_OK
    from doctor.render.playbooks import cause_text, playbook_text, traps_text

    if ident == "traps":
        emit(traps_text(pbset.traps))
        return EXIT_OK
    playbook = pbset.find(ident)
    if playbook is not None:
        emit(playbook_text(playbook))
        return EXIT_OK
    cause = pbset.causes.get(ident)
    if cause is None:
        raise InputError(f"{ident}: no such playbook, alias or cause (see `llmdoctor playbook list`)")
    emit(cause_text(cause))
    return EXIT_OK


@playbook.command("validate", epilog="""\b
Examples:
  llmdoctor playbook validate
  llmdoctor playbook validate ./my-playbooks ./team-playbooks
  llmdoctor playbook validate --data ./semantics.yaml

\b
Exit codes: 0 valid; 2 problems, one per line on stderr (FILE:LINE: KEY: message), then their count.
""")
@click.argument("dirs", nargs=-1, type=click.Path(file_okay=False))
@click.option("--data", "data_files", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Also check this data file against its schema, chosen by the file's name (any data file "
                   "the package reads: semantics.yaml, families.yaml, server_fields.yaml, gpus.yaml, rules.yaml, "
                   "kernels.yaml, engine_memory.yaml, ...; doctor/playbook/schemas/ has them all). Repeatable.")
def validate_cmd(dirs: tuple[str, ...], data_files: tuple[str, ...]) -> int:
    """Check playbook directories (and the built-ins) against the schema, the fact registry and each other, then
    run the cases of the directories' cause files; and every built-in data file the code reads (flag semantics,
    model families, release rules, the GPU catalog, the planner's rules, ...) against its schema.

    Every problem is printed as FILE:LINE: KEY: message; exit 2 when there is any.
    """
    from pathlib import Path

    from doctor.playbook.datafiles import validate_builtin, validate_file
    from doctor.playbook.loader import builtin_dir, load_playbooks, validate_dirs

    errors = validate_dirs(dirs)
    if not errors and dirs:  # the user's cause files run their cases, as the test suite runs the built-ins'
        from doctor.playbook.cases import cases_problems

        pbset = load_playbooks(dirs)
        builtin = str(builtin_dir())
        errors = cases_problems(pbset, [c for c in pbset.causes.values() if not c.source.startswith(builtin)])
    errors += validate_builtin()
    errors += [e for name in data_files for e in validate_file(Path(name))]
    for error in errors:
        echo(error, err=True)
    if errors:
        echo(f"{len(errors)} problem(s)", err=True)
        return EXIT_USAGE
    given = [*dirs, *data_files]
    emit(f"ok: built-in playbooks and data files{' and ' + ', '.join(given) if given else ''} are valid")
    return EXIT_OK


@playbook.command("docs", epilog="""\b
Examples:
  llmdoctor playbook docs -o docs/causes.md
  llmdoctor playbook docs --facts -o docs/facts.md
  llmdoctor playbook docs --playbooks ./my-playbooks > causes.md

\b
Exit codes: 0 written; 2 a --playbooks directory is not valid, or FILE cannot be written (an existing FILE is
left as it was).
""")
@playbooks_option
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE (atomically) instead of stdout.")
@click.option("--facts", "facts", is_flag=True,
              help="The facts vocabulary (docs/facts.md, from the registry playbooks/facts/) instead of the causes.")
def docs_cmd(playbook_dirs: tuple[str, ...], output: str | None, facts: bool) -> int:
    """Generate the causes reference (docs/causes.md), or with --facts the facts vocabulary (docs/facts.md)."""
    from doctor.outio import write_atomic
    from doctor.playbook.loader import load_playbooks

    pbset = load_playbooks(playbook_dirs)
    if facts:
        from doctor.render.docs import facts_markdown

        text = facts_markdown(pbset)
    else:
        from doctor.render.docs import causes_markdown

        text = causes_markdown(pbset)
    if output:
        write_atomic(output, text)
    else:
        echo(text, nl=False)
    return EXIT_OK
