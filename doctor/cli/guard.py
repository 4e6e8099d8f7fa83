"""Running a command so that its errors are one line on stderr with a distinct exit code, never a traceback —
whether click read the command line (:func:`click_run`) or a fast path did (doctor/cli/main.py ``fast_check``)."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def guarded(call: Callable[[], Any]) -> int:
    """The exit code of ``call`` (a command run, by click or by a fast path): our errors become one line on
    stderr, never a traceback."""
    from doctor import dataclasscache, regexcache

    # before click and the commands' modules compile their patterns and define their dataclasses
    regexcache.install()
    dataclasscache.install()
    from doctor.cli.output import echo
    from doctor.errors import DoctorError

    try:
        rc = call()
        sys.stdout.flush()  # a full disk (> /dev/full) is found here, not in the interpreter's last flush
    except DoctorError as exc:
        from doctor.redact import redact_text

        echo(f"llmdoctor: {redact_text(str(exc))}", err=True)
        return exc.exit_code
    except BrokenPipeError:
        # `llmdoctor ... | head`: the reader left; nothing to report.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        echo("llmdoctor: interrupted", err=True)
        return 130
    except OSError as exc:
        return output_failed(exc)
    except Exception as exc:  # noqa: BLE001 - the last line of defence against a traceback
        return _internal(exc)
    return rc if isinstance(rc, int) else 0


def click_run() -> int:
    """Parse the command line with click and run the command; click's own errors are one line, exit 2."""
    import click

    from doctor.cli.group import cli
    from doctor.cli.output import echo

    try:
        # Commands return their exit code; --help and --version return 0.
        return cli.main(prog_name="llmdoctor", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.Abort:
        echo("llmdoctor: aborted", err=True)
        return 130
    except click.ClickException as exc:
        # One line like every other error (runbooks grep stderr); the help pointer replaces click's usage block.
        # Redacted: click quotes the offending value, which may be a pasted secret.
        from doctor.redact import redact_text

        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        echo(f"llmdoctor: {redact_text(' '.join(exc.format_message().split()))}{hint}", err=True)
        return 2


#: errno of a write that failed because the disk, quota or file size limit is full (``> /dev/full``).
_OUTPUT_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def output_failed(exc: OSError) -> int:
    if exc.errno not in _OUTPUT_FULL:
        return _internal(exc)
    # Where the output goes is full: the user's to fix, one line (and nothing more to flush at exit).
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.stderr.write(f"llmdoctor: cannot write the output: {exc.strerror or exc}\n")
    return 2


def _internal(exc: Exception) -> int:
    if os.environ.get("LLMDOCTOR_DEBUG"):
        raise exc
    from doctor.cli.output import echo
    from doctor.redact import redact_text

    detail = redact_text(" ".join(str(exc).split()))
    echo(
        f"llmdoctor: internal error: {type(exc).__name__}: {detail} "
        "(set LLMDOCTOR_DEBUG=1 for the traceback; please report it)",
        err=True,
    )
    return 4
