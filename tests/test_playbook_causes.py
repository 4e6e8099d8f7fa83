"""Every cause file (playbooks/causes/<id>.yaml) runs its own cases: scenario facts that must produce the cause
(with its evidence chain) and a near-identical set that must not (``negative``)."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import ROOT

from doctor.derive import derive_all
from doctor.facts import Facts
from doctor.playbook.engine import diagnose
from doctor.playbook.loader import load_playbooks

CASES = [{"cause": cause.id, **case} for cause in load_playbooks().causes.values() for case in cause.cases]
OBSERVED = ("metrics.", "active.", "gpu.util", "capacity.ratio", "log.")


def _facts(values: dict[str, Any]) -> Facts:
    facts = Facts()
    for key, value in values.items():
        facts.set(key, value, "scenario (the cause file's cases)", observed=key.startswith(OBSERVED))
    return derive_all(facts)


def _run(values: dict[str, Any], symptom: str | None):
    return diagnose(load_playbooks(), _facts(values), [symptom] if symptom else None)


def _case_id(case: dict[str, Any]) -> str:
    return case["cause"] + (f" ({case['name']})" if "name" in case else "")


def test_every_cause_has_a_case() -> None:
    assert {c["cause"] for c in CASES} == set(load_playbooks().causes)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_positive(case: dict[str, Any]) -> None:
    diagnosis = _run(case["facts"], case.get("symptom"))
    found = {f.id: f for f in diagnosis.findings}
    assert case["cause"] in found, f"{_case_id(case)} not found; got {sorted(found)}"
    finding = found[case["cause"]]
    cited = {e.fact for e in finding.evidence}
    assert set(case["evidence"]) <= cited, f"evidence {sorted(cited)} lacks {case['evidence']}"
    for evidence in finding.evidence:
        assert evidence.source and evidence.test
    if "severity" in case:
        assert finding.severity == case["severity"]
    if "confidence" in case:
        assert finding.confidence == case["confidence"]
    assert finding.fix and "?>" not in finding.fix, f"fix has an unfilled placeholder: {finding.fix}"


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_negative(case: dict[str, Any]) -> None:
    values = dict(case["facts"])
    symptom = case.get("symptom")
    if case.get("negative_symptom") == "none":
        symptom = None
    for key, value in (case.get("negative") or {}).items():
        if value is None and key not in ("launch.kv_cache_dtype", "launch.attention_backend", "launch.block_size",
                                          "launch.quantization", "launch.tool_call_parser",
                                          "launch.reasoning_parser"):
            values.pop(key, None)
        else:
            values[key] = value
    assert values != case["facts"] or symptom != case.get("symptom"), "a negative case must change something"
    found = {f.id for f in _run(values, symptom).findings}
    assert case["cause"] not in found


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
    diagnosis = diagnose(load_playbooks(), facts, ["memory-filling-fast"])
    unchecked = {u.cause: u for u in diagnosis.unchecked}
    assert unchecked["kv-cache-exhausted"].reason.endswith("connection refused")
    assert "--metrics FILE" in unchecked["kv-cache-exhausted"].hint


def test_case_lists_are_labelled_scenarios() -> None:
    """Cases are scenario facts written for the tests, never presented as captures of a real deployment."""
    for path in sorted((ROOT / "playbooks" / "causes").glob("*.yaml")):
        assert "cases:  # scenario facts written for the tests" in path.read_text(), path.name
