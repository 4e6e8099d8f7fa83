"""Every command the README shows works as printed, and the output it shows is what the tool prints.

Runnable examples are the `$ llmdoctor …` lines of ```console blocks; the lines after one are its output,
checked line by line against a real run (lines with "…" are elisions; timings and ports vary and are not
compared). The two set-up commands must stay at the top.
"""

from __future__ import annotations

import re
import shlex

import pytest
from conftest import ROOT, SHARED_FIXTURES, requires_shared, run_cli
from support.httpserver import PROM, LocalServer, Response

README = (ROOT / "README.md").read_text()
VOLATILE = re.compile(r"\d+ ms|127\.0\.0\.1:\d+")


def _examples() -> list[tuple[str, list[str]]]:
    examples = []
    for block in re.findall(r"```console\n(.*?)```", README, re.S):
        lines = block.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("$ llmdoctor "):
                end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith("$ ")), len(lines))
                examples.append((line[2:], lines[i + 1:end]))
    return examples


def test_setup_commands_come_first() -> None:
    head = README.split("## ", 1)[0]
    assert "pip install . && llmdoctor inspect example:seed-gqa-27b" in head
    assert "pip install '.[test]' && pytest" in head
    assert "pip install '.[test]' && pytest" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize(("command", "shown"), _examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_readme_example(command: str, shown: list[str], tmp_path) -> None:
    args = shlex.split(command)[1:]
    result = run_cli(*args, env={"COLUMNS": "100"})
    assert result.returncode in (0, 1), result.stderr
    assert "Traceback" not in result.stderr
    printed = {line.rstrip() for line in result.stdout.splitlines()}
    for line in shown:
        if "…" in line or VOLATILE.search(line) or not line.strip():
            continue
        assert line.rstrip() in printed, f"README shows a line the tool does not print: {line!r}"
    missed = _first_line_not_shown(shown, result.stdout.splitlines())
    assert missed is None, f"the tool prints a line the README sample leaves out without an elision (…): {missed!r}"


def _first_line_not_shown(shown: list[str], printed: list[str]) -> str | None:
    """The README sample, read as a pattern over the real output: its lines in order, a line with "…" standing for
    any number of printed lines. None when every non-blank printed line is shown or elided; else the first one that
    is neither."""
    def norm(line: str) -> str:
        return VOLATILE.sub("", line).rstrip()

    at, elided = 0, False
    for line in shown:
        if "…" in line:
            elided = True
            continue
        if not line.strip():
            continue
        while at < len(printed) and norm(printed[at]) != norm(line):
            if printed[at].strip() and not elided:
                return printed[at]
            at += 1
        at, elided = at + 1, False
    rest = [line for line in printed[at:] if line.strip()]
    return rest[0] if rest and not elided else None


@requires_shared
def test_adding_a_playbook_runs_as_printed(tmp_path) -> None:
    """The "Adding a playbook" files, written where their first line says, and its commands, run as printed —
    against a local server replaying the real vllm_2 scrape (its p99 time to first token is 38 s)."""
    section = README[README.index("### Adding a playbook"):]
    section = section[:section.index("\n## ")]
    for block in re.findall(r"```yaml\n(.*?)```", section, re.S):
        name = block.splitlines()[0].lstrip("# ").strip()
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(block)
    commands = [line.split("#")[0].split() for line in re.search(r"```sh\n(.*?)```", section, re.S)[1].splitlines()]
    assert [c[:3] for c in commands] == [["llmdoctor", "playbook", "validate"], ["llmdoctor", "check", "--endpoint"]]
    scrape = Response(file=SHARED_FIXTURES / "metrics" / "vllm_2.prom", content_type=PROM)
    with LocalServer({"/metrics": scrape}) as srv:
        runs = [run_cli(*[srv.endpoint if a == "localhost:8000" else str(tmp_path / a) if a.startswith("my-")
                          else a for a in command[1:]]) for command in commands]
    validate, check = runs
    assert validate.returncode == 0, validate.stderr
    assert check.returncode == 1, check.stderr
    assert "ttft-slo-breach" in check.stdout and "38.4 s" in check.stdout
