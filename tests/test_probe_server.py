"""The server probe over real HTTP, with scenario bodies shaped after the engines' source (fixtures/scenarios)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, requires_shared
from support.httpserver import HTML, JSON, LocalServer, Response

from doctor.probes import server
from doctor.probes.base import ProbeOptions, Target, run_probe

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
LIVE_VLLM = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu"
SECRETS = ("sk-scenario-0123456789abcdef", "scenario-admin-secret-value")


def _scenario(name: str) -> Response:
    return Response(file=SCENARIOS / name, content_type=JSON)


def _sglang_routes(info_path: str = "/server_info") -> dict:
    return {"/v1/models": _scenario("sglang_v1_models.json"), info_path: _scenario("sglang_server_info.json"),
            "/model_info": _scenario("sglang_model_info.json")}


def _vllm_routes(dev: bool = False) -> dict:
    routes = {"/v1/models": _scenario("vllm_v1_models.json"), "/version": _scenario("vllm_version.json")}
    if dev:
        routes["/server_info?config_format=json"] = _scenario("vllm_server_info_dev.json")
    return routes


def _probe(srv: LocalServer, **opts):
    return run_probe(server, Target.parse(srv.endpoint), ProbeOptions(**opts))


def test_scenarios_say_they_are_scenarios():
    for path in SCENARIOS.glob("*.json"):
        assert json.loads(path.read_text())["_scenario"].startswith("Scenario, not a real capture"), path


def test_sglang_engine_version_and_resolved_args():
    with LocalServer(_sglang_routes()) as srv:
        result = _probe(srv)
    facts = result.facts
    assert result.ok and result.error is None
    assert facts.get("server.engine") == "sglang" and facts.get("launch.engine") == "sglang"
    assert facts.get("server.version") == "0.5.23" and facts.fact("server.version").source == "server_info version"
    assert facts.get("server.model") == "deepseek-ai/DeepSeek-V3"
    assert facts.get("server.model_path") == "deepseek-ai/DeepSeek-V3"
    assert facts.get("server.max_model_len") == 163840
    assert facts.get("server.max_total_tokens") == 602112
    assert (facts.get("launch.tp"), facts.get("launch.dp"), facts.get("launch.ep"), facts.get("launch.pp")) == (8, 8, 8, 1)
    assert facts.fact("launch.tp").source == "server_info tp_size"
    assert facts.get("launch.expert_parallel") is True and facts.get("launch.dp_attention") is True
    assert facts.get("launch.kv_cache_dtype") == "fp8_e4m3"
    assert facts.get("launch.dtype") is None  # "auto": left to the engine
    assert facts.get("launch.tool_call_parser") == "deepseekv3"
    assert facts.get("launch.reasoning_parser") == "deepseek-r1"
    assert facts.get("launch.mem_fraction") == 0.85 and facts.get("launch.chunked_prefill_size") == 8192
    assert facts.get("launch.prefix_caching") is True and facts.get("launch.speculative") is False
    assert facts.get("launch.enable_metrics") is True and facts.get("launch.max_num_seqs") == 1024
    assert facts.get("server.architectures") == ["DeepseekV3ForCausalLM"]
    ranks = facts.get("server.rank_memory")
    assert len(ranks) == 8 and ranks[0]["kv_cache_bytes"] == round(37.952 * (1 << 30))
    assert ranks[0]["max_running_requests"] == 128
    # the resolved args stay in raw for the launch-command normalizer
    assert result.raw["requests"]["/server_info"]["json"]["moe_a2a_backend"] == "deepep"


def test_sglang_secrets_never_leave_the_probe():
    with LocalServer(_sglang_routes()) as srv:
        result = _probe(srv)
    dumped = json.dumps(result.raw) + json.dumps(result.facts.to_dict())
    for secret in SECRETS:
        assert secret not in dumped
    assert result.raw["requests"]["/server_info"]["json"]["api_key"] == "***"
    assert "--api-key ***" in result.facts.get("server.launch_command")


def test_sglang_per_rank_token_capacity_survives_redaction():
    with LocalServer(_sglang_routes()) as srv:
        ranks = _probe(srv).facts.get("server.rank_memory")
    assert ranks[0]["token_capacity"] == 602112


def test_older_sglang_falls_back_to_get_server_info():
    with LocalServer(_sglang_routes("/get_server_info")) as srv:
        result = _probe(srv)
        paths = [r.path for r in srv.requests]
    assert paths[:3] == ["/v1/models", "/server_info", "/get_server_info"]
    assert result.ok and result.facts.get("server.version") == "0.5.23"


def test_vllm_version_model_and_path():
    with LocalServer(_vllm_routes()) as srv:
        result = _probe(srv)
        paths = [r.path for r in srv.requests]
    facts = result.facts
    assert result.ok
    assert paths == ["/v1/models", "/version", "/server_info?config_format=json"]
    assert facts.get("server.engine") == "vllm" and facts.fact("server.engine").source == "/v1/models owned_by"
    assert facts.get("server.version") == "0.33.0" and facts.get("launch.version") == "0.33.0"
    assert facts.get("server.model") == "qwen3-32b" and facts.get("server.model_path") == "/models/Qwen3-32B"
    assert facts.get("server.max_model_len") == 32768
    assert "launch.tp" not in facts  # vLLM says nothing about parallelism outside dev mode


def test_vllm_dev_mode_server_info_gives_the_configuration():
    with LocalServer(_vllm_routes(dev=True)) as srv:
        facts = _probe(srv).facts
    assert facts.get("launch.tp") == 2 and facts.fact("launch.tp").source == (
        "server_info parallel_config.tensor_parallel_size")
    assert facts.get("launch.expert_parallel") is False and facts.get("launch.prefix_caching") is True
    assert facts.get("launch.kv_cache_dtype") is None and facts.get("launch.mem_fraction") == 0.92
    assert facts.get("launch.max_num_seqs") == 256 and facts.get("launch.speculative") is False
    # The scenario lists vLLM's variables with their defaults but not which are set (no system_env.env_vars):
    # none is taken as set by the operator.
    assert not facts.under("launch.env") and "not which are set" in facts.unknown_reason("launch.env")


@requires_shared
def test_vllm_dev_mode_real_server_info_env_is_only_what_the_operator_set():
    """The real 0.32.0 dev-mode /server_info (CPU build): vllm_env has 265 variables with defaults; only the
    ones in the process environment (system_env.env_vars) are launch.env facts, and the dtype is the flag's."""
    body = (LIVE_VLLM / "devmode" / "server_info_json.txt").read_text()
    assert len(json.loads(body)["vllm_env"]) > 200
    routes = {"/v1/models": Response(file=LIVE_VLLM / "devmode" / "v1_models.txt", content_type=JSON),
              "/version": Response(file=LIVE_VLLM / "devmode" / "version.txt", content_type=JSON),
              "/server_info?config_format=json": Response(body=body, content_type=JSON)}
    with LocalServer(routes) as srv:
        facts = _probe(srv).facts
    env = {k.removeprefix("launch.env."): f.value for k, f in facts.under("launch.env").items()}
    assert env == {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_TARGET_DEVICE": "cpu", "VLLM_SERVER_DEV_MODE": "1",
                   "VLLM_NO_USAGE_STATS": "1", "VLLM_WORKER_MULTIPROC_METHOD": "spawn",
                   "VLLM_DISABLE_SHARED_EXPERTS_STREAM": "1",
                   "VLLM_OBJECT_STORAGE_SHM_BUFFER_NAME": "vllm_mm_6U5nDii7Tf22EgpzfmB84A"}
    assert "launch.env.VLLM_TEST_FORCE_LOAD_FORMAT" not in facts
    assert facts.get("launch.dtype") == "bfloat16"


def test_vllm_with_api_key_protecting_v1_still_detected_from_version():
    routes = {"/v1/models": Response(401, body='{"error":"Unauthorized"}', content_type=JSON),
              "/version": _scenario("vllm_version.json")}
    with LocalServer(routes) as srv:
        result = _probe(srv)
    assert result.ok and result.facts.get("server.engine") == "vllm"
    assert "needs an API key: pass --api-key-env" in result.facts.unknown_reason("server.model")


def test_api_key_is_sent_as_bearer_to_the_target():
    with LocalServer(_vllm_routes()) as srv:
        _probe(srv, api_key="k-123")
        assert {r.headers.get("authorization") for r in srv.requests} == {"Bearer k-123"}


def test_endpoint_down_is_one_request_and_a_clear_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run_probe(server, Target.parse(f"127.0.0.1:{port}"), ProbeOptions())
    assert not result.ok
    assert result.error == f"GET http://127.0.0.1:{port}/v1/models: connection refused"
    assert list(result.raw["requests"]) == ["/v1/models"]
    assert result.facts.unknown_reason("server.engine") == result.error


def test_all_endpoints_401_says_how_to_pass_a_key():
    unauthorized = Response(401, body='{"detail":"Unauthorized"}', content_type=JSON)
    with LocalServer({p: unauthorized for p in ("/v1/models", "/server_info", "/version")}) as srv:
        result = _probe(srv)
    assert not result.ok and "HTTP 401" in result.error and "pass --api-key-env NAME" in result.error


def test_html_server_is_not_an_llm_server():
    page = Response(body="<html><body>It works!</body></html>", content_type=HTML)
    with LocalServer({"/v1/models": page, "/server_info": page, "/get_server_info": page, "/version": page}) as srv:
        result = _probe(srv)
    assert not result.ok and "not an LLM server (got text/html)" in result.error


def test_invalid_json_in_server_info_keeps_what_else_is_known():
    routes = {"/v1/models": _scenario("sglang_v1_models.json"),
              "/server_info": Response(body='{"tp_size": 8, "version": ', content_type=JSON)}
    with LocalServer(routes) as srv:
        result = _probe(srv)
    assert result.ok and result.facts.get("server.engine") == "sglang"
    assert result.facts.get("server.max_model_len") == 163840
    record = result.raw["requests"]["/server_info"]
    assert record["kind"] == "not_json" and "invalid JSON" in record["error"]


def test_plain_404_everywhere_lists_what_was_tried():
    with LocalServer({}) as srv:
        result = _probe(srv)
    assert not result.ok
    assert result.error == (f"no vLLM or SGLang API answered at http://{srv.endpoint} (/v1/models: HTTP 404; "
                            "/server_info: HTTP 404; /get_server_info: HTTP 404; /version: HTTP 404)")


def test_interpret_is_pure_and_replays_identically():
    with LocalServer(_sglang_routes()) as srv:
        live = _probe(srv)
    replayed = server.interpret(json.loads(json.dumps(live.raw)))
    assert replayed.to_dict() == live.facts.to_dict()


@pytest.mark.parametrize("text,expected", [
    ("vllm-0.33.0-tp8-dp2-ep-1a2b3c4d", {"engine": "vllm", "version": "0.33.0", "tp": 8, "dp": 2,
                                         "expert_parallel": True}),
    ("vllm-0.33.0-1a2b3c4d", {"engine": "vllm", "version": "0.33.0"}),
    ("vllm-0.11.1rc2.dev5+g1234abc-pp2-nohash", {"engine": "vllm", "version": "0.11.1rc2.dev5+g1234abc", "pp": 2}),
    ("fp_44709d6fcb", None),  # OpenAI's shape, not vLLM's
    ("my-custom-build", None),
])
def test_system_fingerprint(text, expected):
    assert server.parse_system_fingerprint(text) == expected


def test_fingerprint_facts_only_what_it_proves():
    facts = server.fingerprint_facts("vllm-0.33.0-tp4-0badc0de")
    assert facts.get("launch.tp") == 4 and "launch.dp" not in facts
    assert facts.fact("launch.version").source == "system_fingerprint"


def test_fields_of_the_wrong_type_are_no_fact_with_the_reason():
    """A proxy or a patched server can answer anything: a tp_size of "8", a list for the memory fraction or an
    Infinity in internal_states must not reach the arithmetic (they crashed `check` before: exit 4)."""
    info = json.loads((SCENARIOS / "sglang_server_info.json").read_text())
    info.update(tp_size="8", mem_fraction_static=[0.8], enable_dp_attention="yes", context_length=None)
    info["internal_states"][0]["memory_usage"]["weight"] = float("inf")
    facts = server.interpret(server.raw_from_body(json.dumps(info), "scenario.json"))
    assert "launch.tp" not in facts
    assert facts.unknown_reason("launch.tp") == 'server_info tp_size: expected a whole number, got "8"'
    assert "a number in (0, 1]" in facts.unknown_reason("launch.mem_fraction")
    assert "true or false" in facts.unknown_reason("launch.dp_attention")
    assert facts.get("launch.max_model_len") is None and "launch.max_model_len" in facts  # null is "unset"
    assert facts.get("server.rank_memory")[0]["weight_bytes"] is None
    assert facts.get("launch.ep") == 8  # the rest is read as usual


def test_a_body_nested_past_the_recursion_limit_is_an_error_record():
    record = server.raw_from_body("[" * 100_000, "deep.json")["requests"]["/server_info"]
    assert record["error"] == "deep.json: JSON nested too deeply to be a server's answer"
    facts = server.interpret(server.raw_from_body("{" + '"a": {' * 900 + "}" * 901, "deep.json"))
    assert "server" in facts.errors  # 900 levels parse, and redaction masks below its depth limit instead
