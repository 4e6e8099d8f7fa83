"""A real vLLM 0.32.0 with no tool parser, in dev mode (a real /server_info), with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1
and --max-model-len above the model's 8192: seen while it loads ("the server is starting"), then serving —
the tool probe gets vLLM's HTTP 400, /server_info's environment is only what the operator set, the dtype is
spelled as the flag spells it, and the long context is a warning (it runs), not a launch failure. One start."""

from __future__ import annotations

import json

import pytest

from realengine.vllm_engine import VLLM, check_json, findings, llmdoctor

pytestmark = pytest.mark.realengine

FLAGS = ["--max-model-len", "9000"]
ENV = {"VLLM_SERVER_DEV_MODE": "1", "VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"}


@pytest.fixture(scope="module")
def loading(engines):
    """The server just launched: (check while it loads, the server once healthy)."""
    server = engines.launch(VLLM, FLAGS, ENV)
    early = llmdoctor("check", "--endpoint", server.endpoint)
    server.wait_healthy()
    return early, server


@pytest.fixture(scope="module")
def served(loading):
    _, server = loading
    return check_json("--endpoint", server.endpoint, "--active", "--symptom", "tools-ignored",
                      "--symptom", "launch-failure")


def _value(doc, key):
    return (doc["facts"].get(key) or {}).get("value")


def test_check_says_the_server_is_starting(loading):
    early, server = loading
    assert early.returncode == 3
    assert f"the server is starting: process {server.pid}" in early.stderr, early.stderr
    assert "no process on this host listens" not in early.stdout + early.stderr


def test_no_parser_is_vllms_http_400(served):
    _, doc = served
    assert _value(doc, "active.tool.auto_tool_choice_refused") is True
    missing = findings(doc)["tool-parser-missing"]
    assert "HTTP 400" in missing["what"] and "--enable-auto-tool-choice" in missing["what"]
    assert missing["confidence"] == "high"


def test_dev_mode_server_info_env_and_dtype(served):
    _, doc = served
    env = {k.removeprefix("launch.env."): v["value"] for k, v in doc["facts"].items() if k.startswith("launch.env.")}
    assert env["VLLM_SERVER_DEV_MODE"] == "1" and env["VLLM_TARGET_DEVICE"] == "cpu"
    assert "VLLM_TEST_FORCE_LOAD_FORMAT" not in env  # a default /server_info lists, nobody set
    assert len(env) < 30, sorted(env)
    assert _value(doc, "launch.dtype") == "bfloat16"


def test_long_context_runs_degraded_not_refused(served):
    _, doc = served
    found = findings(doc)
    assert found["max-model-len-over-model-limit-allowed"]["severity"] == "warning"
    assert "max-model-len-over-model-limit" not in found
    assert not [f["id"] for f in doc["findings"] if f["severity"] == "critical"], doc["findings"]


def test_its_log_says_the_same(loading):
    """vLLM's own start-up warning, read by `check --log`: the long context is named at warning, not critical."""
    _, server = loading
    result = llmdoctor("check", "--log", str(server.log_path), "--format", "json")
    named = {f["id"]: f["severity"] for f in json.loads(result.stdout)["findings"]}
    assert named.get("max-model-len-over-model-limit-allowed") == "warning", named
    assert "max-model-len-over-model-limit" not in named
