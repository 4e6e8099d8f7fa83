"""Entry point and the command group.

Subcommands are imported only when invoked (``LazyGroup``), so ``llmdoctor inspect`` never pays for
the imports of ``report`` or ``check``: an on-call tool must start instantly.
"""

from __future__ import annotations

import errno
import gc
import importlib
import os
import sys

import click

from doctor import __version__

#: name -> "module:attribute"; the order here is the order `--help` lists them.
COMMANDS: dict[str, str] = {
    "inspect": "doctor.cli.inspect_cmd:inspect",
    "plan": "doctor.cli.plan_cmd:plan",
    "lint": "doctor.cli.lint_cmd:lint",
    "check": "doctor.cli.check_cmd:check",
    "snapshot": "doctor.cli.check_cmd:snapshot",
    "calibrate": "doctor.cli.calibrate_cmd:calibrate",
    "playbook": "doctor.cli.playbook_cmd:playbook",
    "report": "doctor.cli.report_cmd:report",
    "rules": "doctor.cli.rules_cmd:rules",
    "gpus": "doctor.cli.gpus_cmd:gpus",
    "serve": "doctor.cli.serve_cmd:serve",
    "mcp": "doctor.cli.mcp_cmd:mcp",
}

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


def main() -> None:
    """Run the CLI and exit with its code."""
    rc = run()
    # The process ends now, and CPython's finalization would traverse every object the run allocated in full
    # collections (~35 ms of a `check`, measured): moved to the permanent generation, they are not traversed.
    gc.freeze()
    sys.exit(rc)


def run() -> int:
    """The exit code of one CLI run; our errors become one line on stderr, never a traceback."""
    from doctor.errors import DoctorError

    try:
        # Commands return their exit code; --help and --version return 0.
        rc = cli.main(prog_name="llmdoctor", standalone_mode=False)
        sys.stdout.flush()  # a full disk (> /dev/full) is found here, not in the interpreter's last flush
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        click.echo("llmdoctor: aborted", err=True)
        return 130
    except click.ClickException as exc:
        # One line like every other error (runbooks grep stderr); the help pointer replaces click's usage block.
        # Redacted: click quotes the offending value, which may be a pasted secret.
        from doctor.redact import redact_text

        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        click.echo(f"llmdoctor: {redact_text(' '.join(exc.format_message().split()))}{hint}", err=True)
        return 2
    except DoctorError as exc:
        from doctor.redact import redact_text

        click.echo(f"llmdoctor: {redact_text(str(exc))}", err=True)
        return exc.exit_code
    except BrokenPipeError:
        # `llmdoctor ... | head`: the reader left; nothing to report.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        click.echo("llmdoctor: interrupted", err=True)
        return 130
    except OSError as exc:
        if exc.errno not in _OUTPUT_FULL:
            return _internal(exc)
        # Where the output goes is full: the user's to fix, one line (and nothing more to flush at exit).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        click.echo(f"llmdoctor: cannot write the output: {exc.strerror or exc}", err=True)
        return 2
    except Exception as exc:  # noqa: BLE001 - the last line of defence against a traceback
        return _internal(exc)
    return rc if isinstance(rc, int) else 0


#: errno of a write that failed because the disk, quota or file size limit is full (``> /dev/full``).
_OUTPUT_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _internal(exc: Exception) -> int:
    if os.environ.get("LLMDOCTOR_DEBUG"):
        raise exc
    from doctor.redact import redact_text

    detail = redact_text(" ".join(str(exc).split()))
    click.echo(
        f"llmdoctor: internal error: {type(exc).__name__}: {detail} "
        "(set LLMDOCTOR_DEBUG=1 for the traceback; please report it)",
        err=True,
    )
    return 4
