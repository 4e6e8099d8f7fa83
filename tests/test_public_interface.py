"""Issue 20's promise while the knowledge moved (one file per cause, the fact registry, the stages, the option
groups): every public interface of the tree before that work (840a16b) is still there — cause ids, symptom ids
and aliases, the JSON schema ids, every flag of every command, the exit codes. The pinned list in
tests/data/pins/public_interface_840a16b.json was written from that tree; a removal or rename fails here."""

from __future__ import annotations

import json
import re

import click
from conftest import ROOT

from doctor.playbook.loader import load_playbooks

PIN = json.loads((ROOT / "tests" / "data" / "pins" / "public_interface_840a16b.json").read_text())


def test_cause_and_symptom_ids_are_kept() -> None:
    pbset = load_playbooks()
    assert [c for c in PIN["causes"] if c not in pbset.causes] == []
    assert [s for s in PIN["symptoms"] if s not in pbset.playbooks] == []
    assert [a for a in PIN["aliases"] if (p := pbset.find(a)) is None or p.symptom == a] == []


def test_schema_ids_are_kept() -> None:
    written = {m for path in (ROOT / "doctor").rglob("*.py")
               for m in re.findall(r'"(llmdoctor\.[a-z_-]+/\d+)"', path.read_text())}
    assert sorted(set(PIN["schemas"]) - written) == []


def _command(path: str) -> click.Command:
    from doctor.cli.group import cli

    command: click.Command = cli
    ctx = click.Context(cli)
    for name in path.split()[1:] if path == "llmdoctor" else path.split():
        assert isinstance(command, click.Group), path
        found = command.get_command(ctx, name)
        assert found is not None, f"command {path!r} is gone"
        command = found
    return command


def test_every_flag_of_every_command_is_kept() -> None:
    gone = {}
    for path, flags in PIN["flags"].items():
        command = _command(path)
        ctx = click.Context(command)
        spelled = {opt for param in command.get_params(ctx) for opt in (*param.opts, *param.secondary_opts)}
        missing = [f for f in flags if f not in spelled]
        if missing:
            gone[path] = missing
    assert gone == {}


def test_exit_codes_are_kept() -> None:
    import doctor.errors as errors

    assert {name: getattr(errors, name, None) for name in PIN["exit_codes"]} == PIN["exit_codes"]
