"""Errors the CLI turns into one line and a distinct exit code (never a traceback).

Exit codes are a public promise (DESIGN.md "Output and exit codes"):
0 nothing at or above --fail-on, 1 findings, 2 usage or bad input, 3 target unreachable, 4 internal error,
5 (check) a symptom was reported and no cause was found for it (doctor/playbook/unexplained.py).
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_UNREACHABLE = 3
#: check: a symptom was reported (--symptom, an alert, a log of a failed start) and no known cause matches; the
#: output quotes the log lines no rule placed and the causes still possible. Only where the run would exit 0:
#: findings (1) and an unreachable target (3) keep their codes, and --fail-on never still exits 0.
EXIT_UNEXPLAINED = 5


class DoctorError(Exception):
    """Base class: `str(err)` is the one line shown to the user; `exit_code` is what the process returns."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str) -> None:
        # One line, always: a multi-line message would read like a traceback in a runbook log.
        super().__init__(" ".join(str(message).split()))


class InputError(DoctorError):
    """Bad user input: a file, field, flag or value we cannot use. Exit 2."""

    exit_code = EXIT_USAGE


class TargetError(DoctorError):
    """The target could not be examined at all (unreachable, not an LLM server). Exit 3."""

    exit_code = EXIT_UNREACHABLE
