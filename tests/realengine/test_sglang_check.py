"""`llmdoctor check` against a REAL SGLang 0.5.23 server on the CPU (tools/realengine/sglang_serve.sh), started once
for this module with ``--tool-call-parser qwen25``: identity from /server_info and /model_info, the 0.5.23 metric
names, kinds and labels, the process, what a CPU deployment must not be told, the active probes (tool, determinism,
latency) and a snapshot replayed with the model directory moved away.

The server is real (its HTTP API, scheduler, tokenizer manager, metrics and parsers); only sgl-kernel's CPU build is
a stub (tools/realengine/sglang_shim, never called on this path). Without the installed engine these tests skip,
naming the install command; under CI=true or LLMDOCTOR_REALENGINE=1 they fail instead.
"""

from __future__ import annotations

import json
import os
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from realengine.conftest import ROOT, EngineHarness, Server
from realengine.sglang_server import SGLANG, VERSION
from realengine.vllm_engine import check_json, findings, llmdoctor

pytestmark = pytest.mark.realengine

FLAGS = ["--tool-call-parser", "qwen25"]
METRIC_NAMES = yaml.safe_load((ROOT / "doctor" / "probes" / "metric_names.yaml").read_text())


@pytest.fixture(scope="module")
def server(engines: EngineHarness) -> Server:
    srv = engines.serve(SGLANG, FLAGS)
    # The same chat twice, so the families SGLang creates on first use exist: prompt/generated tokens, cached
    # tokens (the second request hits the radix cache) and inter-token latency (observed from a request's second
    # output batch on: tokenizer_manager.py:3235-3252, hence streamed).
    for stream in (False, True):
        body = json.dumps({"model": "default", "max_tokens": 8, "stream": stream,
                           "messages": [{"role": "user", "content": "What time is it?"}]}).encode()
        req = urllib.request.Request(srv.url + "/v1/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            assert resp.status == 200
            resp.read()
    return srv


@pytest.fixture(scope="module")
def checked(server: Server) -> dict[str, Any]:
    result, doc = check_json("--endpoint", server.endpoint)
    doc["_returncode"] = result.returncode
    return doc


def _scrape(server: Server) -> str:
    with urllib.request.urlopen(server.url + "/metrics", timeout=10) as resp:
        return resp.read().decode()


def _labels(text: str, family: str) -> set[str]:
    sample = re.search(rf"^{re.escape(family)}\{{([^}}]*)\}}", text, re.M)
    assert sample is not None, family
    return set(re.findall(r'(\w+)="', sample.group(1)))


def test_identity_comes_from_server_info_and_model_info(server: Server, checked: dict[str, Any]) -> None:
    facts = checked["facts"]
    assert checked["engine"] == "sglang" and checked["engine_version"] == VERSION
    assert facts["server.version"] == {"value": VERSION, "source": "server_info version", "observed": True}
    assert facts["server.architectures"]["value"] == ["Qwen2ForCausalLM"]
    assert facts["server.architectures"]["source"] == "/model_info architectures"
    assert facts["server.model_type"]["value"] == "qwen2"
    model = str(SGLANG.home / "work" / "model")
    assert facts["server.model_path"]["value"] == model and checked["model"] == model
    # the resolved values: SGLang 0.5.23 renames the deprecated qwen25 parser to qwen (serving_hook.py:273)
    assert facts["launch.flags.tool_call_parser"]["value"] == "qwen25"
    assert facts["launch.tool_call_parser"] == {"value": "qwen", "source": "server_info tool_call_parser",
                                                "observed": False}
    assert facts["server.max_total_tokens"]["value"] == 32768 == facts["launch.max_total_tokens"]["value"]


def test_the_process_is_the_engine_listening_on_the_port(server: Server, checked: dict[str, Any]) -> None:
    facts = checked["facts"]
    assert facts["process.found"]["value"] is True
    assert facts["process.pid"]["value"] == server.pid  # sglang_serve.sh execs the engine
    argv = facts["process.argv"]["value"]
    assert argv[1:3] == ["-m", "sglang.launch_server"]
    assert argv[argv.index("--tool-call-parser") + 1] == "qwen25"
    assert facts["process.env"]["value"].get("SGLANG_USE_CPU_ENGINE") == "1"


def test_metric_names_kinds_and_labels_of_0_5_23(server: Server, checked: dict[str, Any]) -> None:
    """Every SGLang family metric_names.yaml reads is exposed by the real 0.5.23 with the kind it says, except the
    ones the engine shows only in some set-ups (named here, with why)."""
    text = _scrape(server)
    kinds = dict(re.findall(r"^# TYPE (sglang:\S+) (\w+)$", text, re.M))
    only_sometimes = {
        "sglang:num_retracted_requests": "labelled counter, no sample before the first retraction",
        "sglang:eplb_balancedness": "only with expert balancedness export on",
        "sglang:time_per_output_token_seconds": "the name before inter_token_latency (~0.4)",
    }
    wrong = []
    for canonical, spec in METRIC_NAMES.items():
        for name in spec.get("sglang", []):
            exposed = name + "_total" if spec["kind"] == "counter" else name
            expected = None if name in only_sometimes else spec["kind"]
            if kinds.get(exposed) != expected:
                wrong.append((canonical, exposed, kinds.get(exposed), expected))
    assert not wrong, wrong
    # the gauge the issue saw: a gauge in 0.5.23, and not cumulative
    assert kinds["sglang:num_retracted_reqs"] == "gauge"
    # labels: the rank labels llmdoctor groups by; gauges in prometheus_client's default multiprocess mode ("all")
    # also carry the writing process's pid
    ranks = {"engine_type", "model_name", "moe_ep_rank", "pp_rank", "tp_rank"}
    assert _labels(text, "sglang:token_usage") == ranks
    assert _labels(text, "sglang:num_retracted_reqs") == ranks | {"pid"}
    facts = checked["facts"]
    assert facts["metrics.rank_kv_usage"]["value"] == {"tp_rank=0": facts["metrics.kv_usage"]["value"]}
    assert facts["metrics.kv_capacity_tokens"]["value"] == 32768


def test_retractions_read_zero_when_the_lazy_counter_is_absent(server: Server, checked: dict[str, Any]) -> None:
    facts = checked["facts"]
    assert "sglang:num_retracted_requests_total" not in _scrape(server)
    assert facts["metrics.preemptions_total"]["value"] == 0
    assert "shows only once it counts" in facts["metrics.preemptions_total"]["source"]
    assert facts["metrics.retracted_recent"] == {"value": 0, "source": "/metrics sglang:num_retracted_reqs",
                                                 "observed": True}
    _, sampled = check_json("--endpoint", server.endpoint, "--sample", "1")
    assert sampled["facts"]["metrics.preemptions_per_s"]["value"] == 0.0
    assert sampled["facts"]["metrics.prompt_tokens_per_s"]["value"] >= 0


def test_a_cpu_server_is_not_a_gpu_failure(server: Server, checked: dict[str, Any]) -> None:
    facts, errors = checked["facts"], checked["errors"]
    assert facts["launch.device"]["value"] == "cpu"
    [gpu] = [p for p in checked["probes"] if p["name"] == "gpu"]
    assert "runs on CPU" in gpu["not_applicable"]
    # mem_fraction_static (0.716 here) is a share of host memory on the CPU: neither a finding nor a GPU fact
    assert "mem-fraction-low" not in findings(checked)
    assert "launch.mem_fraction" not in facts and "runs on CPU" in errors["launch.mem_fraction"]
    assert not set(facts) & set(errors), "a key is both known and unknown"
    assert not [u for u in checked["unchecked"] if "--gpu" in u["hint"] and "gpu" in " ".join(u["missing"])]
    text = llmdoctor("check", "--endpoint", server.endpoint).stdout
    assert "gpu n/a (the server runs on CPU" in " ".join(text.split()), text
    assert "failed" not in text
    verbose = llmdoctor("check", "--endpoint", server.endpoint, "-v").stdout
    assert re.search(r"^  gpu +n/a ", verbose, re.M), verbose


def test_a_healthy_server_has_no_warning_or_critical(checked: dict[str, Any]) -> None:
    assert checked["_returncode"] == 0, [(f["id"], f["severity"]) for f in checked["findings"]]
    assert all(f["severity"] == "info" for f in checked["findings"])


def test_active_tool_determinism_and_latency(server: Server) -> None:
    result, doc = check_json("--endpoint", server.endpoint, "--active")
    found = findings(doc)
    assert "tools-work-observed" in found and found["tools-work-observed"]["confidence"] == "high"
    assert not {"tool-parser-missing", "tool-parser-wrong"} & set(found)
    assert doc["facts"]["active.tool.called"]["value"] is True
    probes = {p["name"]: p for p in doc["probes"]}
    assert probes["active.tool"]["ok"] and probes["active.latency"]["ok"]
    # determinism: the prompt fits SGLang's 8192 context (no HTTP 400) and the runs are compared
    assert doc["facts"]["active.determinism.identical"]["value"] is not None, doc["errors"]
    assert all(r["status"] == 200 for r in probes["active.determinism"]["requests"])
    assert doc["facts"]["active.latency.ttft_s"]["value"] > 0
    assert result.returncode in (0, 1) and not [f for f in doc["findings"] if f["severity"] == "critical"]


def test_snapshot_replays_the_same_findings_without_the_model(server: Server, tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    made = llmdoctor("snapshot", "--endpoint", server.endpoint, "-o", str(snap))
    assert made.returncode == 0, made.stderr
    _, live = check_json("--snapshot", str(snap))
    model = SGLANG.home / "work" / "model"
    away = model.with_name("model.moved-away")
    os.rename(model, away)  # the running server has its weights in memory already
    try:
        _, gone = check_json("--snapshot", str(snap))
    finally:
        os.rename(away, model)

    def summary(doc: dict[str, Any]) -> list[tuple[str, str]]:
        return sorted((f["id"], f["severity"]) for f in doc["findings"])

    assert summary(gone) == summary(live)
    assert gone["facts"]["launch.device"]["value"] == "cpu" == live["facts"]["launch.device"]["value"]
    assert gone["facts"]["metrics.preemptions_total"]["value"] == 0
