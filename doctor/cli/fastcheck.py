"""``llmdoctor check`` without click, for the command lines its stored option table reads.

`check --endpoint HOST:PORT` is what an on-call runbook and an alert run, and it should cost little more than
fetching /metrics; importing click and building its command cost about a tenth of it. The table
(doctor/cli/argtable.py) is click's own definition of ``check``, stored by tools/gen_help.py: every option's
flags, what it takes, and the value click passes when it is not given. This module reads a command line with it
only where reading needs no conversion — a flag, a plain string, one of a choice's values, a repeatable string,
the positional ENDPOINT — and returns None for anything else (an option whose value click converts or checks,
such as --timeout or --snapshot, ``--help``, ``--``, an unknown or malformed option, a second positional, a
value not among a choice's), so click reads those lines and says what is wrong with them as it always has.
tests/test_fastcheck.py checks, for generated command lines, that the two readings build the same objects.
"""

from __future__ import annotations

import importlib

from doctor.cli.argtable import CHECK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def parse(args: list[str]) -> dict[str, Any] | None:
    """The value of every parameter of ``check`` for ``args`` (what follows ``check``), or None."""
    options: dict[str, tuple[str, str, tuple[str, ...] | None]] = CHECK["options"]
    values: dict[str, Any] = dict(CHECK["defaults"])
    given: set[str] = set()
    rest = list(args)
    while rest:
        token = rest.pop(0)
        if token in ("-h", "--help", "--"):
            return None
        if not token.startswith("-") or token == "-":
            if CHECK["argument"] in given:
                return None  # a second positional: click's "unexpected extra argument"
            values[CHECK["argument"]] = token
            given.add(CHECK["argument"])
            continue
        flag, eq, inline = token.partition("=")
        spec = options.get(flag)
        if spec is None or eq and not flag.startswith("--"):  # click reads "-o=x" as "-o" and the value "=x"
            return None
        name, kind, choices = spec
        if kind == "flag":
            if eq:
                return None
            values[name] = True
            continue
        if eq:
            value = inline
        elif rest:
            value = rest.pop(0)
            if value in ("-h", "--help"):
                return None
        else:
            return None  # click's "requires an argument"
        if choices is not None and value not in choices:
            return None
        if kind == "multiple":
            values[name] = (*(values[name] if name in given else ()), value)
        else:
            values[name] = value
        given.add(name)
    return values


def build(values: dict[str, Any]) -> dict[str, Any]:
    """The objects the click command receives (``live``, ``given``, ``output``, …) from the parameters' values."""
    groups: dict[str, Any] = {}
    for group, target, names in CHECK["groups"]:
        module, _, attr = target.partition(":")
        groups[group] = getattr(importlib.import_module(module), attr)(**{name: values[name] for name in names})
    return groups


def run(values: dict[str, Any]) -> int:
    """Run ``check`` as its click command would with these values (--timeout is never typed on this path)."""
    from doctor.cli.check_run import run_check_command

    return run_check_command(**build(values), timeout_explicit=False)
