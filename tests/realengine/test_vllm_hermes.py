"""`check` against a real, healthy vLLM 0.32.0 (CPU) with the right tool parser (hermes) and an option newer than
the catalogs llmdoctor had (`--enable-scale-out`, from 0.32): identity, metrics, process, launch lint, the
active probes at max-model-len 8192, and snapshot → replay with the model directory gone. One server start.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from realengine.vllm_engine import VLLM, check_json, findings, llmdoctor, model_dir

pytestmark = pytest.mark.realengine

FLAGS = ["--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--enable-scale-out"]


@pytest.fixture(scope="module")
def server(engines):
    return engines.serve(VLLM, FLAGS)


@pytest.fixture(scope="module")
def passive(server):
    return check_json("--endpoint", server.endpoint)


@pytest.fixture(scope="module")
def active(server):
    return check_json("--endpoint", server.endpoint, "--active")


def _value(doc, key):
    return (doc["facts"].get(key) or {}).get("value")


def test_identity_metrics_and_process(server, passive):
    result, doc = passive
    assert doc["engine"] == "vllm" and doc["engine_version"] == "0.32.0"
    assert _value(doc, "server.version") == "0.32.0"
    assert _value(doc, "server.model_path") == str(model_dir()) or _value(doc, "server.model") == str(model_dir())
    assert _value(doc, "server.max_model_len") == 8192
    probes = {p["name"]: p for p in doc["probes"]}
    assert probes["server"]["ok"] and probes["metrics"]["ok"] and probes["process"]["ok"]
    assert _value(doc, "metrics.available") is True
    assert _value(doc, "metrics.kv_usage") is not None  # vllm:kv_cache_usage_perc, a 0.32 name
    assert _value(doc, "process.pid") == server.pid
    assert _value(doc, "launch.tool_call_parser") == "hermes" and _value(doc, "launch.auto_tool_choice") is True
    assert _value(doc, "launch.max_model_len") == 8192
    assert result.returncode in (0, 1), result.stderr


def test_a_running_server_is_no_launch_failure(passive):
    """--enable-scale-out is newer than the 0.29 catalog: the server runs, so no CRITICAL, no engine-too-old."""
    _, doc = passive
    found = findings(doc)
    assert "engine-too-old" not in found
    assert not [f["id"] for f in doc["findings"] if f["severity"] == "critical"], doc["findings"]
    if "catalog-behind-server" in found:  # with a catalog older than 0.32 the data gap is said, at info
        assert found["catalog-behind-server"]["severity"] == "info"


def test_a_cpu_server_is_not_asked_about_gpus(passive):
    _, doc = passive
    assert _value(doc, "launch.device") == "cpu"
    assert "launch.mem_fraction" not in doc["facts"]  # no GPU memory fraction on CPU
    hints = " ".join(u.get("hint", "") for u in doc["unchecked"])
    assert "--gpu" not in hints and "--config" not in hints, doc["unchecked"]
    assert "HF_HUB_OFFLINE" in (_value(doc, "process.env") or {})
    assert _value(doc, "process.env")["HF_HUB_OFFLINE"] == "1"  # configuration, not a secret


def test_the_launch_command_lints_clean(server, passive):
    _, doc = passive
    argv = _value(doc, "process.argv")
    result = llmdoctor("lint", "--format", "json", "--", *argv)
    lint = json.loads(result.stdout)
    assert not [f["id"] for f in lint["findings"] if f["severity"] == "critical"], lint["findings"]


def test_active_tool_determinism_and_latency(active):
    result, doc = active
    found = findings(doc)
    assert "tools-work-observed" in found and found["tools-work-observed"]["confidence"] == "high"
    assert _value(doc, "active.tool.called") is True
    # determinism at max-model-len 8192: the prompt fits (no HTTP 400) and the runs are compared
    assert _value(doc, "active.determinism.identical") is not None, doc["errors"].get("active.determinism")
    probes = {p["name"]: p for p in doc["probes"]}
    assert all(r["status"] == 200 for r in probes["active.determinism"]["requests"])
    assert _value(doc, "active.latency.ttft_s") > 0 and _value(doc, "active.latency.total_s") > 0
    hints = " ".join(u.get("hint", "") for u in doc["unchecked"])
    assert "--active" not in hints  # it was given
    assert not [f["id"] for f in doc["findings"] if f["severity"] == "critical"]
    text = llmdoctor("check", "--endpoint", doc["target"].removeprefix("http://"), "--active").stdout
    sent = sum(len(p.get("requests", [])) for p in doc["probes"] if p["name"].startswith("active."))
    assert f" {sent} requests, at most" in text, text  # what was sent, not what would have been


def test_snapshot_replays_the_same_findings_without_the_model(server, tmp_path):
    snap = tmp_path / "snap.json"
    made = llmdoctor("snapshot", "--endpoint", server.endpoint, "-o", str(snap))
    assert made.returncode == 0, made.stderr
    recorded = json.loads(snap.read_text())["extra"]["inputs"]
    assert recorded["config_served"] is True and recorded["config_json"]["max_position_embeddings"] == 8192
    assert recorded["generation_config_json"]["temperature"] == 0.7
    _, live = check_json("--snapshot", str(snap))

    model = model_dir()
    away = model.with_name("model.moved-away")
    os.rename(model, away)
    try:
        _, gone = check_json("--snapshot", str(snap))
        # A different model at the same path is not read in place of the one the run saw.
        Path(model).mkdir()
        other = json.loads((away / "config.json").read_text()) | {"max_position_embeddings": 2048,
                                                                   "num_hidden_layers": 7}
        (Path(model) / "config.json").write_text(json.dumps(other))
        _, impostor = check_json("--snapshot", str(snap))
    finally:
        shutil.rmtree(model, ignore_errors=True)
        os.rename(away, model)

    def summary(doc):
        return sorted((f["id"], f["severity"]) for f in doc["findings"])

    assert summary(gone) == summary(live) == summary(impostor)
    for doc in (live, gone, impostor):
        assert _value(doc, "model.default_temperature") == 0.7
        assert _value(doc, "model.max_len_derived") == 8192  # the recorded config, not the impostor's 2048
        assert _value(doc, "model.layers.total") == 2
