"""Defects seen against a real vLLM 0.32.0 (CPU build), checked on its recorded answers
(fixtures/live/vllm-0.32.0-cpu and replayed over loopback) and on real subprocesses;
tests/realengine checks the same against the live engine when it is installed."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, requires_shared, run_cli
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor.probes import process
from doctor.probes.active import ActiveContext, DeterminismProbe, spec
from doctor.probes.base import ProbeOptions, Target, run_probe

LIVE = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu"


def _devmode_routes() -> dict[str, Response]:
    folder = LIVE / "devmode"
    return {"/v1/models": Response(file=folder / "v1_models.txt", content_type=JSON),
            "/version": Response(file=folder / "version.txt", content_type=JSON),
            "/metrics": Response(file=folder / "metrics.txt", content_type=PROM),
            "/server_info?config_format=json": Response(file=folder / "server_info_json.txt", content_type=JSON)}


@requires_shared
def test_a_cpu_vllm_is_recognised_and_not_asked_about_gpus():
    """The recorded dev-mode server says VLLM_TARGET_DEVICE=cpu in its environment listing: launch.device is cpu,
    the GPU memory fraction is no fact, and no hint asks for --gpu."""
    with LocalServer(_devmode_routes()) as srv:
        result = run_cli("check", "--endpoint", srv.endpoint, "--format", "json")
    doc = json.loads(result.stdout)
    facts = doc["facts"]
    assert facts["launch.device"]["value"] == "cpu"
    assert "VLLM_TARGET_DEVICE=cpu" in facts["launch.device"]["source"]
    assert "launch.mem_fraction" not in facts and "runs on CPU" in doc["errors"]["launch.mem_fraction"]
    assert facts["launch.dtype"]["value"] == "bfloat16"
    assert "--gpu" not in json.dumps(doc["unchecked"])


def test_a_server_still_loading_is_starting_not_absent():
    """A process launched with --port N that does not listen yet (vLLM loads the model first)."""
    with LocalServer({}) as srv:
        port = srv.port
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "vllm", "serve", "m",
                              "--port", str(port)])
    # Popen returns once the child is forked; until it has exec'd, /proc shows the parent's command line.
    cmdline = Path(f"/proc/{child.pid}/cmdline")
    deadline = time.monotonic() + 10
    while b"vllm" not in cmdline.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        result = run_probe(process, Target.parse(f"127.0.0.1:{port}"), ProbeOptions())
        cli = run_cli("check", "--endpoint", f"127.0.0.1:{port}")
    finally:
        child.kill()
        child.wait()
    assert result.facts.get("process.starting") is True
    assert f"the server is starting: process {child.pid}" in result.error
    assert cli.returncode == 3 and "the server is starting" in cli.stderr


@pytest.mark.parametrize("max_model_len", [512, 2048, 8192])
def test_the_determinism_prompt_fits_the_context_whatever_the_tokenizer(max_model_len):
    """One token per byte is the worst case of a byte-level tokenizer: the prompt plus the answer and the template
    allowance must fit (the old 22-tokens-per-line estimate overflowed 512 and 2048 on the real server)."""
    cfg = spec()["determinism"]
    text, lines = DeterminismProbe(ActiveContext(model="m", max_model_len=max_model_len)).prompt("abcd1234")
    assert lines >= 1
    assert len(text.encode()) + cfg["max_tokens"] + cfg["prefix"]["template_tokens"] <= max_model_len


def test_a_snapshot_without_the_served_config_does_not_read_the_path(tmp_path):
    """An old snapshot (no recorded config): the model directory at the launch command's path may be another
    model now, so it is not read; the facts say why."""
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
                                                   "hidden_size": 256, "num_attention_heads": 4,
                                                   "num_key_value_heads": 2, "num_hidden_layers": 2,
                                                   "vocab_size": 1024, "max_position_embeddings": 8192}))
    snap = {"schema": "llmdoctor.snapshot/1", "target": {"scheme": "http", "host": "127.0.0.1", "port": 8000},
            "probes": {"process": {"ok": True, "error": None, "elapsed_ms": 1.0,
                                   "raw": {"found": True, "pid": 7, "how": "scenario", "name": "vllm",
                                           "argv": ["vllm", "serve", str(model), "--port", "8000"], "env": {}}}},
            "extra": {}}
    path = tmp_path / "old.json"
    path.write_text(json.dumps(snap))
    doc = json.loads(run_cli("check", "--snapshot", str(path), "--format", "json").stdout)
    assert "model.name" not in doc["facts"]
    assert "does not carry the served model's config.json" in doc["errors"]["model"]


def test_hints_never_ask_for_what_was_given():
    """--config and --gpu given: no "could not check" line asks for them again (the issue saw it ask)."""
    result = run_cli("check", "--config", "example:seed-gqa-27b", "--gpu", "H200:8", "--command",
                     "vllm serve Qwen/Qwen3-32B --tensor-parallel-size 8", "--format", "json")
    doc = json.loads(result.stdout)
    for item in doc["unchecked"]:
        assert "--config" not in item["hint"] and "--gpu" not in item["hint"], item
