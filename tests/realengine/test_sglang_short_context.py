"""A REAL SGLang 0.5.23 on the CPU with no tool-call parser and ``--context-length 512``: the determinism probe's
prompt fits a 512-token context (it once overflowed it), and without a parser the scripted model's tool-call markup
reaches the client as text, which the tool probe observes. One server start."""

from __future__ import annotations

from typing import Any

import pytest

from realengine.conftest import EngineHarness
from realengine.sglang_server import SGLANG
from realengine.vllm_engine import check_json, findings

pytestmark = pytest.mark.realengine

FLAGS = ["--context-length", "512"]


@pytest.fixture(scope="module")
def active(engines: EngineHarness) -> dict[str, Any]:
    server = engines.serve(SGLANG, FLAGS)
    _, doc = check_json("--endpoint", server.endpoint, "--active")
    return doc


def test_determinism_prompt_fits_512_tokens(active: dict[str, Any]) -> None:
    assert active["facts"]["server.max_model_len"]["value"] == 512
    probe = {p["name"]: p for p in active["probes"]}["active.determinism"]
    assert probe["ok"], probe
    assert all(r["status"] == 200 for r in probe["requests"]), probe["requests"]
    assert active["facts"]["active.determinism.identical"]["value"] is not None


def test_no_parser_leaves_the_markup_in_content(active: dict[str, Any]) -> None:
    found = findings(active)
    assert "tool-parser-missing" in found, sorted(found)
    assert found["tool-parser-missing"]["confidence"] == "high"  # observed by the probe, not only configured
    assert active["facts"]["launch.tool_call_parser"]["value"] is None
    assert active["facts"]["active.tool.called"]["value"] is False
    assert "tools-work-observed" not in found
