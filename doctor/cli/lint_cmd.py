"""`llmdoctor lint`: explain and check a vLLM or SGLang launch command."""

from __future__ import annotations

import sys

import click

from doctor.cli.common import emit_document, exit_code, fail_on_option, format_option
from doctor.cli.manifest_opt import manifest_inputs, manifest_option
from doctor.cli.options import offline_option, playbooks_option, symptom_option, workload_options
from doctor.errors import InputError

EPILOG = """\b
Examples:
  llmdoctor lint "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --dtype fp8"
  llmdoctor lint --config ~/models/GLM-5.2 --gpu 8xB300 -- python3 -m sglang.launch_server --model-path ...
  kubectl get deploy llm -o yaml | yq '.spec.template.spec.containers[0].args' | llmdoctor lint --engine-version 0.13.0
  llmdoctor lint --file launch.sh --format json
  kubectl get deploy llm -o yaml | llmdoctor lint --manifest -

\b
Exit codes: 0 no finding at or above --fail-on; 1 findings; 2 bad input (unparsable command, unreadable
config). An unknown --gpu is not an error: the GPU checks are skipped and the output says what to pass.
"""


@click.command("lint", epilog=EPILOG)
@click.argument("command", nargs=-1)
@click.option("--file", "command_file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Read the command from FILE ('-' for stdin): a shell line, a script, a docker run, or a "
                   "Kubernetes args:/command: list.")
@click.option("--engine-version", metavar="V", help="Engine version the command runs on (default: the image tag; "
                                                   "else unknown: flags spelled as the newest release, findings "
                                                   "that depend on the version say which releases they hold for).")
@click.option("--config", metavar="PATH|REPO", help="The model's config.json, model directory, HF-cache repo id or "
                                                    "example:NAME (default: the command's model: a local path, the HF cache, "
                                                    "then the Hub).")
@click.option("--gpu", metavar="NAME[:COUNT]", help="GPUs it runs on, e.g. H200:8, '8x B300', 'RTX 4090'.")
@click.option("--gpu-mem", metavar="SIZE", help="Memory of each GPU (48G, 80GB): overrides the catalog's (a 48 GB "
                                                "RTX 4090) and sizes a GPU the catalog lacks.")
@manifest_option
@offline_option
@workload_options
@symptom_option
@playbooks_option
@format_option("text", "json", "markdown")
@fail_on_option
@click.option("-v", "--verbose", is_flag=True, help="Everything behind the one-screen default: each flag explained, every finding in full (why, the evidence chain with sources), every undecided cause with its reason, every fact used.")
def lint(command: tuple[str, ...], command_file: str | None, engine_version: str | None, config: str | None,
         gpu: str | None, gpu_mem: str | None, manifest: str | None, offline: bool, context: int | None,
         users: int | None,
         text_only: bool, reproducible: bool,
         temperature: float | None, symptoms: tuple[str, ...], playbook_dirs: tuple[str, ...], fmt: str,
         fail_on: str, verbose: bool) -> int:
    """Explain every flag of a launch command and catch what is missing, wrong, harmful or overriding
    the engine — for the engine version it runs on and, with --config/--gpu, for this model and GPU.

    The command can be one quoted argument, the words after `--`, a --file, or standard input, in any
    shape people paste: `vllm serve`, `python -m sglang.launch_server`, `docker run …`, a Kubernetes
    args list, with backslash continuations and env assignments in front. Secrets are redacted.
    """
    from doctor.commands.lint import lint as run_lint
    from doctor.sources.offline import OfflineInputs, Workload

    if manifest:
        text, gpu = manifest_inputs(manifest, bool(command or command_file), gpu)
    else:
        text = _command_text(command, command_file)
    inputs = OfflineInputs(command=text, engine_version=engine_version, config=config, gpu=gpu, gpu_mem=gpu_mem,
                           workload=Workload(context, users, reproducible, text_only, temperature), offline=offline)
    result = run_lint(inputs, symptoms=symptoms, playbook_dirs=playbook_dirs)
    from doctor.render.lint import lint_markdown, lint_text

    emit_document(fmt, result, text=lambda: lint_text(result, verbose=verbose), markdown=lambda: lint_markdown(result))
    return exit_code(result.diagnosis.findings, fail_on)


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
