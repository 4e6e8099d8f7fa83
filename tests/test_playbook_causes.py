"""Every cause file (playbooks/causes/<id>.yaml) runs its own cases: scenario facts that must produce the cause
(with its evidence chain) and a near-identical set that must not (``negative``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import ROOT

from doctor.facts import Facts
from doctor.playbook.cases import case_problems, cases_problems, scenario_facts
from doctor.playbook.engine import diagnose
from doctor.playbook.loader import Cause, load_playbooks

PBSET = load_playbooks()
CASES = [(cause, case) for cause in PBSET.causes.values() for case in cause.cases]


def _facts(values: dict[str, Any]) -> Facts:
    return scenario_facts(values, PBSET)


def _run(values: dict[str, Any], symptom: str | None):
    return diagnose(PBSET, _facts(values), [symptom] if symptom else None)


def _case_id(item: tuple[Cause, dict[str, Any]]) -> str:
    cause, case = item
    return cause.id + (f" ({case['name']})" if "name" in case else "")


def test_every_cause_has_a_case() -> None:
    assert {cause.id for cause, _case in CASES} == set(PBSET.causes)


@pytest.mark.parametrize("item", CASES, ids=_case_id)
def test_case(item: tuple[Cause, dict[str, Any]]) -> None:
    """The facts lead to the cause with its evidence (and its severity and confidence where the case says), and
    the negative overrides do not."""
    cause, case = item
    assert "negative" in case or "negative_symptom" in case, "every case has a near-identical negative"
    assert case_problems(PBSET, cause, case) == []


def test_a_wrong_case_is_reported_with_its_file_and_line() -> None:
    cause = PBSET.causes["prefix-caching-disabled"]
    wrong = replace(cause, cases=({**cause.cases[0], "negative": {"launch.engine": "vllm"}},))
    [problem] = cases_problems(PBSET, [wrong])
    assert problem.startswith(f"{cause.source}: case 1: the negative case still leads to prefix-caching-disabled")


def test_confidence_observed_outranks_configuration() -> None:
    """The same cause from configuration alone is medium; with an observation it is high, and ranks first."""
    config_only = _run({"launch.engine": "sglang", "launch.tool_call_parser": None, "expect.tool_parser": "qwen25",
                        "expect.tool_parser_accepted": ["qwen25"]}, "tools-ignored")
    observed = _run({"launch.engine": "sglang", "launch.tool_call_parser": None, "expect.tool_parser": "qwen25",
                     "expect.tool_parser_accepted": ["qwen25"], "active.tool.markup_in_content": True,
                     "active.tool.called": False, "active.tool.status": 200}, "tools-ignored")
    [low] = [f for f in config_only.findings if f.id == "tool-parser-missing"]
    [high] = [f for f in observed.findings if f.id == "tool-parser-missing"]
    assert (low.confidence, high.confidence) == ("medium", "high")
    assert high.sort_key() < low.sort_key()


def test_unknown_is_not_false() -> None:
    """No metrics: the exhaustion branch is reported as unchecked with the reason, never as 'fine'."""
    facts = _facts({"model.attention": "gqa", "launch.engine": "vllm"})
    facts.error("metrics", "GET http://127.0.0.1:1/metrics: connection refused")
    diagnosis = diagnose(PBSET, facts, ["memory-filling-fast"])
    unchecked = {u.cause: u for u in diagnosis.unchecked}
    assert unchecked["kv-cache-exhausted"].reason.endswith("connection refused")
    assert "--metrics FILE" in unchecked["kv-cache-exhausted"].hint


def test_case_lists_are_labelled_scenarios() -> None:
    """Cases are scenario facts written for the tests, never presented as captures of a real deployment."""
    for path in sorted((ROOT / "playbooks" / "causes").glob("*.yaml")):
        assert "cases:  # scenario facts written for the tests" in path.read_text(), path.name
