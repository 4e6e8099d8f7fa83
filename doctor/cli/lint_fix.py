"""`lint --fix`: plan the findings' fixes, apply them to the text as given, lint the result again, show both."""

from __future__ import annotations

from dataclasses import replace

from doctor.cli.output import echo, emit, exit_code

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.commands.lint import LintResult
    from doctor.sources.offline import OfflineInputs


def run_fix(result: LintResult, source: str | list[str], inputs: OfflineInputs, symptoms: tuple[str, ...],
            playbook_dirs: tuple[str, ...], fmt: str, fail_on: str, verbose: bool, output: str | None, *,
            is_manifest: bool, target_version: str | None = None) -> int:
    """Print (or write) the fixed text; the exit code is that of the findings left after the fix."""
    from doctor.commands.lint import lint
    from doctor.errors import InputError
    from doctor.fix.apply import fix_text
    from doctor.fix.plan import plan
    from doctor.playbook.loader import load_playbooks

    cmd = result.gathered.command
    if cmd is None:
        raise InputError("lint --fix: no launch command to fix")
    planned = plan(result.diagnosis.findings, load_playbooks(playbook_dirs).causes, result.facts, cmd.engine)
    fixed = fix_text(source, planned, cmd.catalog)
    again_command: str = fixed.fixed
    if is_manifest:
        from doctor.sources.manifest import parse_manifest

        again_command = parse_manifest(fixed.fixed, "the patched manifest").command
    # fixed for --target-version V, the command is V's: the new lint reads it as V
    after = lint(replace(inputs, command=again_command, engine_version=target_version or inputs.engine_version),
                 symptoms=symptoms, playbook_dirs=playbook_dirs)
    if output:
        from doctor.outio import write_atomic

        write_atomic(output, fixed.masked(fixed.fixed))
    if fmt == "json":
        import json

        document = {**result.to_dict(), "fix": fixed.to_dict(),
                    "after_fix": {"findings": [f.to_dict() for f in after.diagnosis.findings]}}
        emit(json.dumps(document, indent=2, default=str))
    elif is_manifest and not output:
        # the patched manifest is the output (for a pipe); the report goes to stderr
        echo(fixed.masked(fixed.fixed).rstrip("\n"))
        from doctor.render.lint import fix_summary

        echo(fix_summary(fixed, after.diagnosis.findings), err=True)
    else:
        from doctor.render.lint import fix_text as render_fix
        from doctor.render.lint import lint_text

        emit(lint_text(result, verbose=verbose) + "\n\n" + render_fix(fixed, after.diagnosis.findings, output))
    return exit_code(after.diagnosis.findings, fail_on)
