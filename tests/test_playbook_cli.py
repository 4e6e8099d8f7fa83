"""`llmdoctor playbook …` as a user runs it, and the generated causes reference kept in step with the YAML."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT, run_cli

from doctor.playbook.loader import load_playbooks
from doctor.render.docs import causes_markdown


def test_committed_causes_doc_is_current() -> None:
    committed = (ROOT / "docs" / "causes.md").read_text()
    assert committed == causes_markdown(load_playbooks()), (
        "docs/causes.md is stale: run `llmdoctor playbook docs -o docs/causes.md`")


def test_builtin_playbooks_validate_and_every_cause_is_reachable() -> None:
    result = run_cli("playbook", "validate")
    assert result.returncode == 0, result.stderr
    listing = json.loads(run_cli("playbook", "list", "--format", "json").stdout)
    reachable = {c for row in listing["playbooks"] for c in row["causes"]}
    assert reachable == set(load_playbooks().causes), "a cause no tree can reach is dead knowledge"


def test_show_tree_cause_and_unknown() -> None:
    tree = run_cli("playbook", "show", "no-tool-calls")  # an alias of tools-ignored
    assert tree.returncode == 0 and "tools-ignored" in tree.stdout and "tool-parser-missing" in tree.stdout
    cause = run_cli("playbook", "show", "moe-without-ep")
    assert cause.returncode == 0 and "--enable-expert-parallel" in cause.stdout
    missing = run_cli("playbook", "show", "no-such-thing")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "Traceback" not in missing.stderr


def test_validate_reports_file_line_and_key(tmp_path: Path) -> None:
    (tmp_path / "my-symptom.yaml").write_text(
        "symptom: my-symptom\ntitle: mine\ntree:\n  - when: {fact: launch.tp, op: greater, value: 1}\n"
        "    cause: moe-without-ep\n")
    result = run_cli("playbook", "validate", str(tmp_path))
    assert result.returncode == 2
    assert f"{tmp_path / 'my-symptom.yaml'}:4: tree.0.when" in result.stderr


def test_user_playbook_dir_adds_a_symptom_without_python(tmp_path: Path) -> None:
    """A new symptom is one YAML file (plus its cause, one file in the user's causes/): no Python change."""
    (tmp_path / "causes").mkdir()
    (tmp_path / "causes" / "my-cause.yaml").write_text(
        "id: my-cause\ntitle: mine\nseverity: warning\nwhat: w\nwhy: y\nfix: {any: do it}\nref: ours\n")
    (tmp_path / "my-symptom.yaml").write_text(
        "symptom: my-symptom\ntitle: mine\ntree:\n  - when: {fact: launch.tp, op: gt, value: 1}\n"
        "    cause: my-cause\n")
    result = run_cli("playbook", "list", "--playbooks", str(tmp_path))
    assert result.returncode == 0 and "my-symptom" in result.stdout
