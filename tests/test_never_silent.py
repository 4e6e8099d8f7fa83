"""Never silent (issue 21 point 5), through the CLI on real logs: a reported symptom that no cause explains gets the
log lines no rule placed, quoted, a differential of the causes still possible (each with the input that decides
it) and exit 5 — never "No findings" and exit 0.

Logs: a real vLLM 0.32.0 refusal (``--chat-template`` naming a missing file, captured with the installed CPU
engine: fixtures/live/vllm-0.32.0-cpu/README.md) and a real healthy SGLang 0.5.23 start-up log
(fixtures/live/sglang-0.5.23-cpu/server.log).
"""

from __future__ import annotations

import json

import pytest
from conftest import SHARED_FIXTURES, requires_shared, run_cli

REFUSAL = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu" / "missing-chat-template-launchfail" / "server.log"
HEALTHY_SGLANG = SHARED_FIXTURES / "live" / "sglang-0.5.23-cpu" / "server.log"
#: the engine's own last line of the refusal, as it printed it
REFUSAL_LINE = "VLLMValidationError: The supplied chat template string (/var/tmp/missing-template.jinja) appears path-like"


def _json(*args: str) -> tuple[int, dict]:
    result = run_cli("check", "--format", "json", *args)
    assert result.returncode in (0, 1, 5), result.stderr
    return result.returncode, json.loads(result.stdout)


@requires_shared
def test_a_refusal_no_cause_knows_quotes_it_lists_what_is_possible_and_exits_5() -> None:
    rc, doc = _json("--log", str(REFUSAL))
    if doc["findings"]:  # a cause (or the error catalog's own template) placed the line: it must be the refusal
        assert rc == 1 and any(REFUSAL_LINE.split(": ", 1)[1][:40] in json.dumps(f) for f in doc["findings"])
        return
    assert rc == 5
    unexplained = doc["unexplained"]
    assert [s["symptom"] for s in unexplained["symptoms"]] == ["launch-failure"]
    assert "the log" in unexplained["symptoms"][0]["reported_by"]
    quoted = [u["line"] for u in unexplained["unplaced_lines"]]
    assert any(REFUSAL_LINE in line for line in quoted), quoted
    # the differential is the tree's undecided nodes: possible, each with its deciding input, none ruled out
    possible = unexplained["possible"]
    assert possible and all(p["label"] == "possible" and p["decided_by"] for p in possible)
    undecided = {(u["symptom"], u["cause"]) for u in doc["unchecked"]}
    assert {(p["symptom"], p["cause"]) for p in possible} <= undecided
    # the launch command decides the flag causes: the one input this log lacks
    assert any("--command" in p["decided_by"] and p["cause"] == "unknown-flag" for p in possible)


@requires_shared
def test_text_and_markdown_say_cause_not_found_never_no_findings() -> None:
    text = run_cli("check", "--log", str(REFUSAL), env={"COLUMNS": "200"})
    if "CAUSE NOT FOUND" not in text.stdout:  # a cause placed the line (see the JSON test)
        assert text.returncode == 1
        return
    assert text.returncode == 5
    head = text.stdout.splitlines()[:3]
    assert any("CAUSE NOT FOUND" in line for line in head), head  # the verdict is on the first screen
    assert REFUSAL_LINE in " ".join(text.stdout.split())  # quoted whole (wrapped at spaces on a terminal)
    assert "No findings" not in text.stdout
    markdown = run_cli("check", "--log", str(REFUSAL), "--format", "markdown")
    assert markdown.returncode == 5
    assert "### Cause not found" in markdown.stdout and "*possible*" in markdown.stdout
    assert "No findings" not in markdown.stdout


@requires_shared
def test_a_reported_symptom_on_a_healthy_log_quotes_its_warnings_and_names_the_deciding_input() -> None:
    rc, doc = _json("--log", str(HEALTHY_SGLANG), "--symptom", "slow-decode")
    assert not doc["findings"]
    assert rc == 5
    unexplained = doc["unexplained"]
    assert unexplained["symptoms"] == [{"symptom": "slow-decode", "reported_by": "--symptom"}]
    lines = unexplained["unplaced_lines"]
    assert lines and {u["level"] for u in lines} == {"warning"}  # the log has no error, only warnings
    assert any("sglang serve" in u["line"] for u in lines)  # "... 'sglang serve' is the recommended entrypoint."
    assert all(p["symptom"] == "slow-decode" for p in unexplained["possible"])
    assert any("--endpoint" in p["decided_by"] or "--metrics" in p["decided_by"] for p in unexplained["possible"])


@requires_shared
def test_exit_5_is_only_instead_of_healthy() -> None:
    """--fail-on never keeps its promise (always 0 after a run); a run without a reported symptom is unchanged."""
    assert run_cli("check", "--log", str(HEALTHY_SGLANG), "--symptom", "slow-decode",
                   "--fail-on", "never").returncode == 0
    rc, doc = _json("--log", str(HEALTHY_SGLANG))
    assert doc["unexplained"] is None and rc in (0, 1)


def test_exit_code_5_is_documented() -> None:
    assert "5 a symptom was reported" in run_cli("check", "--help", env={"COLUMNS": "200"}).stdout
    from conftest import ROOT

    assert "**5** a symptom was reported" in (ROOT / "README.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("symptom", ["tools-ignored", "reasoning-leak", "hung", "launch-failure", "idle-ep-gpus"])
def test_a_symptom_alone_gets_its_differential_and_exit_5(symptom: str) -> None:
    """`check --symptom X` with no other input: nothing rules any cause out, so the answer is X's differential,
    every cause with the input that decides it — never "nothing to check" (exit 2) and never "healthy"."""
    rc, doc = _json("--symptom", symptom)
    assert rc == 5 and not doc["findings"]
    unexplained = doc["unexplained"]
    assert unexplained["symptoms"] == [{"symptom": symptom, "reported_by": "--symptom"}]
    assert unexplained["unplaced_lines"] == []  # no log was given: nothing is quoted
    possible = unexplained["possible"]
    assert len(possible) >= 2 and all(p["symptom"] == symptom and p["label"] == "possible" for p in possible)
    # each names an input to pass (a flag of check, or where to run it), not just the facts it lacks
    assert all(p["decided_by"].startswith(("pass ", "run ", "re-run ", "describe ")) for p in possible), possible
    assert {(p["symptom"], p["cause"]) for p in possible} <= {(u["symptom"], u["cause"]) for u in doc["unchecked"]}


def test_a_symptom_alone_in_text_and_markdown() -> None:
    text = run_cli("check", "--symptom", "tools-ignored", env={"COLUMNS": "200"})
    assert text.returncode == 5, text.stderr
    assert "CAUSE NOT FOUND" in text.stdout.splitlines()[1] and "No findings" not in text.stdout
    assert "--config" in text.stdout and "tool-parser-missing" in text.stdout  # the input that decides, and what
    markdown = run_cli("check", "--symptom", "tools-ignored", "--format", "markdown")
    assert markdown.returncode == 5
    assert "### Cause not found" in markdown.stdout and "*possible*" in markdown.stdout
    assert run_cli("check", "--symptom", "tools-ignored", "--fail-on", "never").returncode == 0


def test_no_symptom_and_no_input_is_still_a_usage_error() -> None:
    result = run_cli("check")
    assert result.returncode == 2 and "nothing to check" in result.stderr and "--symptom" in result.stderr
