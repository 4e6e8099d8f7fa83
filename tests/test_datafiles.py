"""The data files beside the playbooks are checked as the playbooks are (doctor/playbook/datafiles.py): the
built-in ones are valid, and a copy broken in one place fails `llmdoctor playbook validate --data` with the
file, the line and the key, exit 2. Each broken copy is the real file with one edit."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from doctor.playbook.datafiles import BUILTIN, validate_builtin, validate_file

PACKAGE = ROOT / "doctor"


def test_the_built_in_data_files_are_valid() -> None:
    assert validate_builtin() == []


def _broken(tmp_path: Path, kind: str, old: str, new: str) -> Path:
    text = (PACKAGE / kind).read_text()
    assert old in text, f"{kind} no longer has {old!r}: pick another edit"
    path = tmp_path / Path(kind).name
    path.write_text(text.replace(old, new, 1))
    return path


def _line(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("kind, old, new, expected", [
    # a typo in a flag rule's condition: before, the rule silently never applied
    ("engines/semantics.yaml", "{fact: launch.flags.ep_size, op: gt, value: 1}",
     "{fact: launch.flags_ep_size, op: gt, value: 1}", "fact 'launch.flags_ep_size' is not in the fact registry"),
    # an op of another language: semantics.yaml's old `is` is not an op of the one condition language
    ("engines/semantics.yaml", "{fact: launch.expert_parallel, op: eq, value: true}, product",
     "{fact: launch.expert_parallel, op: is, value: true}, product", "'is' is not one of"),
    ("engines/semantics.yaml", "{from: tensor_parallel_size}", "{form: tensor_parallel_size}",
     "Additional properties are not allowed ('form' was unexpected)"),
    ("hardware/kernels.yaml", 'since: "0.13.0"', 'since: "0.10.5"', "since 0.10.5 does not follow 0.11.0"),
    ("hardware/kernels.yaml", 'since: "0.11.0"', 'since: "latest"', "'latest' does not match"),
    ("model/engine_memory.yaml", 'layout: latent\n      evidence:', 'layout: latent\n      evidense:',
     "'evidence' is a required property"),
    ("engines/dsa_kv.yaml", "  below: bf16\n  source", "  source", "'below' is a required property"),
])
def test_a_broken_data_file_names_its_file_line_and_key(tmp_path: Path, kind: str, old: str, new: str,
                                                       expected: str) -> None:
    path = _broken(tmp_path, kind, old, new)
    errors = validate_file(path)
    assert len(errors) == 1 and expected in errors[0], errors
    assert errors[0].startswith(f"{path}:"), errors
    result = run_cli("playbook", "validate", "--data", str(path))
    assert result.returncode == 2 and expected in result.stderr and "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1] == "1 problem(s)"


def test_the_line_is_the_broken_one(tmp_path: Path) -> None:
    path = _broken(tmp_path, "engines/semantics.yaml", "{fact: launch.flags.ep_size, op: gt, value: 1}",
                   "{fact: launch.flags_ep_size, op: gt, value: 1}")
    assert validate_file(path)[0].startswith(f"{path}:{_line(path, 'launch.flags_ep_size')}: ")


def test_a_file_no_schema_is_for_is_one_clear_problem(tmp_path: Path) -> None:
    path = tmp_path / "whatever.yaml"
    path.write_text("a: 1\n")
    result = run_cli("playbook", "validate", "--data", str(path))
    assert result.returncode == 2 and "no schema for a file of this name" in result.stderr
    assert all(Path(k).name in result.stderr for k in BUILTIN)


def test_valid_data_given_is_ok() -> None:
    result = run_cli("playbook", "validate", "--data", str(PACKAGE / "engines" / "semantics.yaml"))
    assert result.returncode == 0 and "data files" in result.stdout
