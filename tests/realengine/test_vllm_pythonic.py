"""A real vLLM 0.32.0 started with the wrong tool parser for the model (`pythonic` for a Hermes-style model)
and a small context (--max-model-len 512): the tool probe sees the markup left in `content`, and the
determinism probe's prompt fits the 512-token context (it overflowed it before). One server start."""

from __future__ import annotations

import pytest

from realengine.vllm_engine import VLLM, check_json, findings

pytestmark = pytest.mark.realengine

FLAGS = ["--enable-auto-tool-choice", "--tool-call-parser", "pythonic", "--max-model-len", "512"]


@pytest.fixture(scope="module")
def active(engines):
    server = engines.serve(VLLM, FLAGS)
    return check_json("--endpoint", server.endpoint, "--active")


def _value(doc, key):
    return (doc["facts"].get(key) or {}).get("value")


def test_wrong_parser_observed(active):
    _, doc = active
    assert _value(doc, "server.max_model_len") == 512
    assert _value(doc, "active.tool.called") is False and _value(doc, "active.tool.markup_in_content") is True
    wrong = findings(doc)["tool-parser-wrong"]  # the family (Qwen2) expects hermes; the markup proves it
    assert wrong["confidence"] == "high" and "pythonic" in wrong["what"]
    assert not [f["id"] for f in doc["findings"] if f["severity"] == "critical"], doc["findings"]


def test_determinism_prompt_fits_512_tokens(active):
    _, doc = active
    probe = {p["name"]: p for p in doc["probes"]}["active.determinism"]
    assert probe["requests"] and all(r["status"] == 200 for r in probe["requests"]), probe["requests"]
    assert _value(doc, "active.determinism.identical") is not None
    hints = " ".join(u.get("hint", "") for u in doc["unchecked"])
    assert "--active" not in hints
