"""A REAL SGLang 0.5.23 on the CPU told to serve past the model's length: ``--context-length 16384`` over the tiny
model's 8192 with SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1. SGLang starts and only warns
(sglang/srt/configs/model_config.py:1300-1307), so llmdoctor says it runs degraded (warning) — from the running
server, from its log and from the command — never that it will not start. One server start."""

from __future__ import annotations

import json
from typing import Any

import pytest

from realengine.conftest import EngineHarness, Server
from realengine.sglang_server import SGLANG, exec_command
from realengine.vllm_engine import check_json, findings, llmdoctor

pytestmark = pytest.mark.realengine

FLAGS = ["--context-length", "16384"]
ENV = {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
ALLOWED = "context-length-over-model-limit-allowed"


@pytest.fixture(scope="module")
def server(engines: EngineHarness) -> Server:
    return engines.serve(SGLANG, FLAGS, ENV)


def _only_warning(doc: dict[str, Any]) -> None:
    found = findings(doc)
    assert found.get(ALLOWED, {}).get("severity") == "warning", sorted(found)
    assert "context-length-over-model-limit" not in found
    assert not [f["id"] for f in doc["findings"] if f["severity"] == "critical"], doc["findings"]


def test_the_running_server_is_degraded_not_refused(server: Server) -> None:
    result, doc = check_json("--endpoint", server.endpoint, "--symptom", "launch-failure")
    assert doc["facts"]["server.max_model_len"]["value"] == 16384
    assert doc["facts"]["model.sglang_context_len"]["value"] == 8192
    _only_warning(doc)
    assert result.returncode == 1


def test_its_log_shows_the_warning(server: Server) -> None:
    assert "Warning: User-specified context_length (16384) is greater than the derived context_length" in server.log
    _, doc = check_json("--log", str(server.log_path))
    _only_warning(doc)
    assert findings(doc)[ALLOWED]["confidence"] == "high"


def test_lint_of_the_command_with_the_variable(server: Server) -> None:
    argv = exec_command(server.log)
    result = llmdoctor("lint", "--format", "json", "--", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", *argv)
    _only_warning(json.loads(result.stdout))
