"""`llmdoctor check --active` as a real subprocess against a scenario OpenAI-compatible server on 127.0.0.1
(tests/support/openai_server.py). Each situation must lead to the right cause with an observed `active.*`
evidence item and high confidence, above what the same deployment gives from configuration alone."""

from __future__ import annotations

import json
import socket
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli
from support.openai_server import HERMES_CALL, XML_CALL, Behaviour, OpenAIServer

CODER = "/models/Qwen3-Coder-30B-A3B-Instruct"
QWEN3 = "/models/Qwen3-8B"
NEXT = "/models/Qwen3-Next-80B-A3B-Instruct"


def _vllm(path: str, *flags: str) -> tuple[str, ...]:
    return ("--command", " ".join(["vllm serve", path, "--served-model-name served-model", *flags]))


SITUATIONS = {
    # name: (server behaviour, offline inputs, symptom, the cause)
    "parser wrong": (Behaviour(root=CODER, tool="markup", tool_markup=XML_CALL),
                     _vllm(CODER, "--enable-auto-tool-choice --tool-call-parser hermes"),
                     "tools-ignored", "tool-parser-wrong"),
    "parser missing (SGLang)": (
        Behaviour(engine="sglang", root="Qwen/Qwen3-8B", version="0.5.23", tool="markup", tool_markup=HERMES_CALL,
                  server_info={"tool_call_parser": None, "reasoning_parser": "qwen3"}),
        (), "tools-ignored", "tool-parser-missing"),
    "parser missing (vLLM refuses auto)": (Behaviour(root=QWEN3, tool="refused"), _vllm(QWEN3),
                                           "tools-ignored", "tool-parser-missing"),
    "auto tool choice off": (Behaviour(root=QWEN3, tool="refused"), _vllm(QWEN3, "--tool-call-parser hermes"),
                             "tools-ignored", "auto-tool-choice-missing"),
    "model not trying": (Behaviour(root=QWEN3, tool="prose"),
                         _vllm(QWEN3, "--enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3"),
                         "tools-ignored", "chat-template-no-tools"),
    "parser working": (Behaviour(root=QWEN3, tool="parsed"),
                       _vllm(QWEN3, "--enable-auto-tool-choice --tool-call-parser hermes --reasoning-parser qwen3"),
                       "tools-ignored", "tools-work-observed"),
    "reasoning leaked": (Behaviour(root=QWEN3, reasoning="leaked"), _vllm(QWEN3), "reasoning-leak",
                         "reasoning-parser-missing"),
    "reasoning separated": (Behaviour(root=QWEN3, reasoning="separated"), _vllm(QWEN3, "--reasoning-parser qwen3"),
                            "reasoning-leak", "reasoning-separated-observed"),
    "divergent after warm-up": (Behaviour(root=NEXT, determinism="warmup", diverge_at=7),
                                (*_vllm(NEXT, "--enable-prefix-caching"), "--config", "example:seed-hybrid-moe"),
                                "nondeterministic-outputs", "hybrid-prefix-cache-nondeterminism"),
    "divergent only under concurrency": (Behaviour(root=QWEN3, determinism="concurrency", diverge_at=7), _vllm(QWEN3),
                                         "nondeterministic-outputs", "batch-invariance-off"),
}


def _check(endpoint: str, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    result = run_cli("check", "--endpoint", endpoint, "--format", "json", "--timeout", "5", *args, env=env)
    assert "Traceback" not in result.stderr
    return result, json.loads(result.stdout) if result.stdout.strip() else {}


@pytest.mark.parametrize("name", SITUATIONS)
def test_situation_is_observed_and_outranks_configuration(name: str) -> None:
    behaviour, inputs, symptom, cause = SITUATIONS[name]
    with OpenAIServer(behaviour) as srv:
        _, observed = _check(srv.endpoint, "--active", "--symptom", symptom, *inputs)
        _, configured = _check(srv.endpoint, "--symptom", symptom, *inputs)
    found = {f["id"]: f for f in observed["findings"]}
    assert cause in found, sorted(found)
    finding = found[cause]
    assert finding["confidence"] == "high"
    assert any(e["observed"] and e["fact"].startswith("active.") for e in finding["evidence"]), finding["evidence"]
    # configuration alone can only suggest: nothing it finds for this symptom is as sure
    assert all(f["confidence"] in ("low", "medium") for f in configured["findings"] if f["symptom"] == symptom)


def test_deterministic_server_gives_no_observed_divergence() -> None:
    behaviour = Behaviour(root=NEXT, determinism="stable")
    with OpenAIServer(behaviour) as srv:
        _, doc = _check(srv.endpoint, "--active", "--symptom", "nondeterministic-outputs",
                        *_vllm(NEXT, "--enable-prefix-caching"), "--config", "example:seed-hybrid-moe")
    assert doc["facts"]["active.determinism.identical"]["value"] is True
    [finding] = [f for f in doc["findings"] if f["id"] == "hybrid-prefix-cache-nondeterminism"]
    assert finding["confidence"] == "medium" and finding["severity"] == "info"  # the configuration's warning only


def test_json_records_each_probe_request_latency_and_observation_never_the_key() -> None:
    key = "sk-scenario-active-0123456789abcdef"
    inputs = _vllm(CODER, "--enable-auto-tool-choice --tool-call-parser hermes")
    with OpenAIServer(Behaviour(root=CODER, tool="markup", tool_markup=XML_CALL)) as srv:
        result, doc = _check(srv.endpoint, "--active", "--api-key-env", "SCENARIO_KEY", *inputs,
                             env={"SCENARIO_KEY": key})
        text = run_cli("check", "--endpoint", srv.endpoint, "--active", "--api-key-env", "SCENARIO_KEY", "-v",
                       *inputs, env={"SCENARIO_KEY": key})
    assert {r.headers.get("authorization") for r in srv.requests if r.method == "POST"} == {f"Bearer {key}"}
    for output in (result.stdout, result.stderr, text.stdout, text.stderr):
        assert key not in output
    entries = {p["name"]: p for p in doc["probes"] if p["name"].startswith("active.")}
    # Qwen3-Coder is not a reasoning model (families.yaml): no reasoning request is sent
    assert list(entries) == ["active.latency", "active.tool", "active.determinism"]
    tool = entries["active.tool"]
    [request] = tool["requests"]
    assert request["request"]["tools"] == ["get_time"] and request["request"]["api_key_sent"] is True
    assert request["status"] == 200 and request["latency_ms"] > 0
    assert tool["observation"]["markup"] == ["<tool_call>", "<function="] and tool["observation"]["called"] is False
    assert tool["budget"] == {"requests": 1, "max_tokens": 256} and "markup left in content" in tool["summary"]
    assert entries["active.latency"]["observation"]["ttft_s"] > 0
    determinism = entries["active.determinism"]["requests"]
    assert [r["label"] for r in determinism] == ["cold", "after warm-up 1", "after warm-up 2", "under concurrency",
                                                 "filler 1", "filler 2", "filler 3"]
    assert all(r["request"]["temperature"] == 0 for r in determinism)
    assert doc["facts"]["active.latency.ttft_s"]["observed"] is True
    # the text report prints each observation and the whole budget (2 + 1 + 4 greedy + 3 concurrent requests)
    assert "markup left in content: <tool_call>, <function=" in text.stdout
    assert f"active   10 requests, at most {17 + 256 + 4 * 32 + 3 * 64} generated tokens" in text.stdout


def test_nothing_is_sent_without_active() -> None:
    with OpenAIServer(Behaviour(root=QWEN3)) as srv:
        result, doc = _check(srv.endpoint, *_vllm(QWEN3))
    assert srv.chats == [] and not [r for r in srv.requests if r.method == "POST"]
    assert not [p for p in doc["probes"] if p["name"].startswith("active.")]
    # branches that only active probes decide are not listed as "could not check" when they were not asked for
    assert not [u for u in doc["unchecked"] if all(k.startswith("active.") for k in u["missing"])]


def test_model_selects_among_served_models() -> None:
    behaviour = Behaviour(root=QWEN3, models=("first", "second"), tool="parsed")
    with OpenAIServer(behaviour) as srv:
        _check(srv.endpoint, "--active", "--symptom", "tools-ignored")
        default = {c["model"] for c in srv.chats}
        srv.chats.clear()
        _check(srv.endpoint, "--active", "--model", "second", "--symptom", "tools-ignored")
        chosen = {c["model"] for c in srv.chats}
        unknown, _ = _check(srv.endpoint, "--active", "--model", "third")
    assert default == {"first"} and chosen == {"second"}
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1
    assert "--model third: not served here (served: first, second)" in unknown.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("--active", "--command", "vllm serve Qwen/Qwen3-8B"), "--active sends requests to a live server"),
    (("--model", "x", "--command", "vllm serve Qwen/Qwen3-8B"), "--model names the model the active probes ask"),
    (("--active", "--symptom", "no-such-symptom", "--endpoint", "127.0.0.1:9"), "--symptom no-such-symptom"),
])
def test_usage_errors(args: tuple[str, ...], message: str) -> None:
    result = run_cli("check", *args)
    assert result.returncode == 2 and message in result.stderr and result.stderr.count("\n") == 1


def test_unreachable_endpoint_sends_no_active_request() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result, doc = _check(f"127.0.0.1:{port}", "--active", "--timeout", "0.5")
    assert result.returncode == 3
    assert not [p for p in doc["probes"] if p["name"].startswith("active.")]


def test_snapshot_records_and_replays_the_active_probes(tmp_path: Path) -> None:
    key = "sk-scenario-active-0123456789abcdef"
    snap = tmp_path / "active.json"
    inputs = _vllm(CODER, "--enable-auto-tool-choice --tool-call-parser hermes")
    with OpenAIServer(Behaviour(root=CODER, tool="markup", tool_markup=XML_CALL, determinism="concurrency")) as srv:
        written = run_cli("snapshot", "--endpoint", srv.endpoint, "--active", "--timeout", "5", "--api-key-env",
                          "SCENARIO_KEY", "-o", str(snap), *inputs, env={"SCENARIO_KEY": key})
        assert written.returncode == 0, written.stderr
        _, live = _check(srv.endpoint, "--active", *inputs)
    stored = json.loads(snap.read_text())
    assert {"active.latency", "active.tool", "active.determinism"} <= set(stored["probes"])
    assert key not in snap.read_text()
    _, replayed = _check_snapshot(snap)
    assert sorted(f["id"] for f in replayed["findings"]) == sorted(f["id"] for f in live["findings"])
    for cause in ("tool-parser-wrong", "batch-invariance-off"):
        [finding] = [f for f in replayed["findings"] if f["id"] == cause]
        assert finding["confidence"] == "high"
    markdown = run_cli("check", "--snapshot", str(snap), "--format", "markdown").stdout
    assert "| active.tool | yes |" in markdown and "markup left in content" in markdown
    # an active probe this llmdoctor does not know (a newer one's) replays as a failed probe, not a crash
    stored["probes"]["active.future"] = {"ok": True, "error": None, "elapsed_ms": 1.0, "raw": {"x": 1}}
    snap.write_text(json.dumps(stored))
    result, doc = _check_snapshot(snap)
    [future] = [p for p in doc["probes"] if p["name"] == "active.future"]
    assert not future["ok"] and "unknown probe" in future["error"] and "Traceback" not in result.stderr


def _check_snapshot(path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    result = run_cli("check", "--snapshot", str(path), "--format", "json")
    return result, json.loads(result.stdout)
