"""`llmdoctor lint`: explain and check a vLLM or SGLang launch command."""

from __future__ import annotations

import sys

import click

from doctor.cli.common import output_options
from doctor.cli.manifest_opt import manifest_inputs_text, manifest_option
from doctor.cli.options import (
    PlaybookFlags,
    beside,
    offline_option,
    option_group,
    playbook_options,
    workload_options,
)
from doctor.cli.output import OutputFlags, echo, emit, emit_document, exit_code
from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.sources.offline import OfflineInputs, Workload

EPILOG = """\b
Examples:
  llmdoctor lint "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --dtype fp8"
  llmdoctor lint --config ~/models/GLM-5.2 --gpu 8xB300 -- python3 -m sglang.launch_server --model-path ...
  kubectl get deploy llm -o yaml | yq '.spec.template.spec.containers[0].args' | llmdoctor lint --engine-version 0.13.0
  llmdoctor lint --file launch.sh --format json
  kubectl get deploy llm -o yaml | llmdoctor lint --manifest -
  llmdoctor lint --fix "vllm serve Qwen/Qwen3-8B --enable-reasoning --reasoning-parser deepseek_r1"
  llmdoctor lint --fix --manifest deploy.yaml -o deploy.fixed.yaml
  llmdoctor lint --files deploy/*.yaml scripts/serve.sh --format sarif > llmdoctor.sarif
  llmdoctor lint --engine-version 0.9.2 --target-version 0.11.0 --fix --manifest deploy.yaml

\b
Fixes (--fix), classed as ruff classes its fixes: safe ones are applied; a fix that needs a value the
inputs do not give is applied with a marked placeholder <fact?> (or left out, said which); print-only
fixes are explained, never applied. The corrected command keeps the shape it was given (vllm serve,
python -m, docker run, a Kubernetes args: list); with --manifest only the engine's arguments change.

\b
Exit codes: 0 no finding at or above --fail-on; 1 findings (with --fix: findings left after the fix);
2 bad input (unparsable command, unreadable config; with --files: any file that could not be read, after
every file was tried). An unknown --gpu is not an error: the GPU checks are skipped and the output says
what to pass.
"""


class LintFlags:
    """--file, --engine-version, --config, --gpu, --gpu-mem, --offline: what `lint` reads besides the command
    (:meth:`inputs` makes the pipeline's ``OfflineInputs`` of them, with the command read and the workload)."""

    __slots__ = ("command_file", "engine_version", "config", "gpu", "gpu_mem", "offline")

    def __init__(self, command_file: str | None, engine_version: str | None, config: str | None, gpu: str | None,
                 gpu_mem: str | None, offline: bool) -> None:
        self.command_file, self.engine_version, self.config = command_file, engine_version, config
        self.gpu, self.gpu_mem, self.offline = gpu, gpu_mem, offline

    def inputs(self, command: str | list[str], workload: Workload) -> OfflineInputs:
        from doctor.sources.offline import OfflineInputs

        return OfflineInputs(command=command, engine_version=self.engine_version, config=self.config, gpu=self.gpu,
                             gpu_mem=self.gpu_mem, workload=workload, offline=self.offline)


#: --file … --offline: a ``LintFlags``; --target-version and --manifest sit among them in --help but reach the
#: command as their own arguments (the upgrade question, and where the command and --gpu come from)
lint_options = option_group("given", LintFlags, [
    click.option("--file", "command_file", type=click.Path(dir_okay=False, allow_dash=True),
                 help="Read the command from FILE ('-' for stdin): a shell line, a script, a docker run, or a "
                      "Kubernetes args:/command: list."),
    click.option("--engine-version", metavar="V", help="Engine version the command runs on (default: the image tag; "
                                                      "else unknown: flags spelled as the newest release, findings "
                                                      "that depend on the version say which releases they hold for)."),
    beside(click.option("--target-version", metavar="V",
                        help="Will it still start, and behave the same, on release V? Flags and values V refuses, "
                             "parsers V lacks or deprecates, defaults the command relies on that V changes (from "
                             "the release catalogs; the findings of the upgrade tree).")),
    click.option("--config", metavar="PATH|REPO", help="The model's config.json, model directory, HF-cache repo id or "
                                                       "example:NAME (default: the command's model: a local path, the HF "
                                                       "cache, then the Hub)."),
    click.option("--gpu", metavar="NAME[:COUNT]", help="GPUs it runs on, e.g. H200:8, '8x B300', 'RTX 4090'."),
    click.option("--gpu-mem", metavar="SIZE", help="Memory of each GPU (48G, 80GB): overrides the catalog's (a 48 GB "
                                                   "RTX 4090) and sizes a GPU the catalog lacks."),
    beside(manifest_option),
    offline_option,
])


@click.command("lint", epilog=EPILOG)
@click.argument("command", nargs=-1)
@click.option("--files", "as_files", is_flag=True,
              help="The arguments are files to lint, each a launch script or a Kubernetes manifest (CI and "
                   "pre-commit): files with no vLLM/SGLang launch are skipped; findings are placed at the "
                   "file's launch line.")
@click.option("--fix", "fix", is_flag=True,
              help="Print the corrected command (or, with --manifest, the patched manifest) and the diff.")
@click.option("-o", "--output", "output_file", metavar="FILE", type=click.Path(dir_okay=False, writable=True),
              help="With --fix: write the corrected command or patched manifest to FILE (written whole, or "
                   "not at all) and report on stdout. Secrets are masked there too: a literal secret in a "
                   "command is a finding of its own (move it to the environment or a Secret).")
@lint_options
@workload_options
@playbook_options
@output_options(("text", "json", "markdown", "sarif", "junit"), "Everything behind the one-screen default: each flag explained, every finding in full (why, the evidence chain with sources), every undecided cause with its reason, every fact used.")
def lint(command: tuple[str, ...], as_files: bool, fix: bool, output_file: str | None, given: LintFlags,
         target_version: str | None, manifest: str | None, workload: Workload, playbooks: PlaybookFlags,
         output: OutputFlags) -> int:
    """Explain every flag of a launch command and catch what is missing, wrong, harmful or overriding
    the engine — for the engine version it runs on and, with --config/--gpu, for this model and GPU.

    The command can be one quoted argument, the words after `--`, a --file, or standard input, in any
    shape people paste: `vllm serve`, `python -m sglang.launch_server`, `docker run …`, a Kubernetes
    args list, with backslash continuations and env assignments in front. Secrets are redacted.
    """
    symptoms, playbook_dirs = playbooks.symptoms, playbooks.playbook_dirs
    fmt, fail_on, verbose = output.fmt, output.fail_on, output.verbose
    if as_files:
        if fix or output_file or manifest or given.command_file:
            raise InputError("--files lints the files named: not with --fix, -o, --manifest or --file")
        return _lint_files(command, given, target_version, workload, symptoms, playbook_dirs, fmt, fail_on)
    if output_file and not fix:
        raise InputError("-o/--output writes the fixed command or manifest: give it with --fix")
    from doctor.commands.lint import lint as run_lint

    manifest_text = None
    if manifest:
        text, given.gpu, manifest_text = manifest_inputs_text(manifest, bool(command or given.command_file),
                                                              given.gpu)
    else:
        text = _command_text(command, given.command_file)
    inputs = given.inputs(text, workload)
    result = run_lint(inputs, symptoms=symptoms, playbook_dirs=playbook_dirs, target_version=target_version)
    if fix:
        from doctor.cli.lint_fix import run_fix

        return run_fix(result, manifest_text if manifest_text is not None else text, inputs, symptoms,
                       playbook_dirs, fmt, fail_on, verbose, output_file, is_manifest=manifest_text is not None,
                       target_version=target_version)
    if fmt in ("sarif", "junit"):
        from doctor.commands.lint_files import FileLint, FilesResult, launch_line

        where = manifest or given.command_file
        source_text = manifest_text if manifest_text is not None else (text if isinstance(text, str) else None)
        item = FileLint(where or "command", launch_line(source_text) if where and source_text else None, result)
        _emit_ci(fmt, FilesResult([item]), fail_on, located=bool(where))
        return exit_code(result.diagnosis.findings, fail_on)
    from doctor.render.lint import lint_markdown, lint_text

    emit_document(fmt, result, text=lambda: lint_text(result, verbose=verbose), markdown=lambda: lint_markdown(result))
    return exit_code(result.diagnosis.findings, fail_on)


def _lint_files(paths: tuple[str, ...], given: LintFlags, target_version: str | None, workload: Workload,
                symptoms: tuple[str, ...], playbook_dirs: tuple[str, ...], fmt: str, fail_on: str) -> int:
    from doctor.commands.lint_files import lint_files
    from doctor.errors import EXIT_USAGE

    # no files is an empty report, not an error: a change that touches no manifest has nothing to lint
    result = lint_files(paths, engine_version=given.engine_version, target_version=target_version,
                        config=given.config, gpu=given.gpu, gpu_mem=given.gpu_mem, offline=given.offline,
                        workload=workload, symptoms=symptoms, playbook_dirs=playbook_dirs)
    if fmt in ("sarif", "junit"):
        _emit_ci(fmt, result, fail_on, located=True)
    else:
        from doctor.render.lint import files_markdown, files_text

        emit_document(fmt, result, text=lambda: files_text(result), markdown=lambda: files_markdown(result))
    for item in result.files:
        if item.error:
            echo(f"llmdoctor: {item.path}: {item.error}", err=True)
    if any(item.error for item in result.files):
        return EXIT_USAGE
    return exit_code(result.findings(), fail_on)


def _emit_ci(fmt: str, result: object, fail_on: str, *, located: bool) -> None:
    from doctor import __version__
    from doctor.commands.lint_files import relative
    from doctor.playbook.loader import load_playbooks
    from doctor.render.ci import Target, junit, sarif

    targets = [Target(item.path, tuple(item.result.diagnosis.findings) if item.result else (),
                      relative(item.path) if located else None, item.line, item.error)
               for item in result.files if not item.skipped]  # type: ignore[attr-defined]
    if fmt == "sarif":
        emit(sarif(targets, load_playbooks().causes, __version__))
    else:
        emit(junit(targets, fail_on))


def _command_text(words: tuple[str, ...], command_file: str | None) -> str | list[str]:
    from doctor.engines.shapes import MAX_COMMAND_CHARS

    if command_file and words:
        raise InputError("give the command either as arguments or with --file, not both")
    if command_file:
        from doctor.sources.offline import read_command_file

        return read_command_file(command_file, "--file")
    if len(words) == 1:
        return words[0]
    if words:
        return list(words)
    if not sys.stdin.isatty():
        text = _stdin(MAX_COMMAND_CHARS)
        if text.strip():
            return text
    raise InputError("no command to lint: pass it as an argument, after --, with --file, or on stdin "
                     "(see llmdoctor lint --help)")


def _stdin(limit: int) -> str:
    """Standard input, capped before it is read (``cat weights.bin | llmdoctor lint`` fails at once)."""
    from doctor.inio import decode_text, read_stdin_capped

    return decode_text(read_stdin_capped(limit=limit), "standard input")
