"""The click command group: what `llmdoctor` is once a run needs click (every run but the stored fast paths of
doctor/cli/main.py).

Subcommands are imported only when invoked (``LazyGroup``), so ``llmdoctor inspect`` never pays for
the imports of ``report`` or ``check``: an on-call tool must start instantly.
"""

from __future__ import annotations

import importlib

import click

from doctor import __version__
from doctor.cli.main import COMMANDS

EPILOG = """\b
Exit codes (all commands):
  0  nothing at or above --fail-on (default: warning)
  1  findings at or above --fail-on
  2  usage error or bad input (the message names the file, field or flag)
  3  the target could not be examined at all (unreachable, not an LLM server)
  4  internal error (a bug in llmdoctor: please report it with the command you ran)

\b
Examples:
  llmdoctor inspect example:seed-gqa-27b
  llmdoctor lint "vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --dtype fp8"
  llmdoctor plan ~/models/GLM-5 --gpu 8xB300 --context 32k --users 100
  llmdoctor check --endpoint localhost:30000
  llmdoctor check --snapshot example:vllm-kv-full
  llmdoctor report --prometheus http://prometheus:9090 -o report.html
  llmdoctor COMMAND --help     (every command explains itself, with examples)
"""


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                            list[str]]:
        # click suggests the nearest name from the commands it has loaded; a lazy group has loaded none.
        name = args[0] if args else ""
        if name and name not in COMMANDS and not name.startswith("-") and not ctx.resilient_parsing:
            raise click.exceptions.NoSuchCommand(name, possibilities=list(COMMANDS), ctx=ctx)
        return super().resolve_command(ctx, args)


@click.group(cls=LazyGroup, epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="llmdoctor")
def cli() -> None:
    """Diagnose vLLM and SGLang deployments the way a senior serving engineer would.

    llmdoctor reads a model's config.json, a launch command, the GPUs and a server's /metrics, and
    says what is wrong, why, how sure it is, and the exact fix. Every conclusion cites the facts
    (config field, flag, metric, GPU property) that led to it.
    """


def command_paths() -> list[tuple[str, ...]]:
    """Every command path as a user types it: the tool itself, each command, each subcommand of a group."""
    ctx = click.Context(cli, info_name="llmdoctor")
    paths: list[tuple[str, ...]] = [()]
    for name in cli.list_commands(ctx):
        command = cli.get_command(ctx, name)
        paths.append((name,))
        if isinstance(command, click.Group):
            paths.extend((name, sub) for sub in command.list_commands(ctx))
    return paths
