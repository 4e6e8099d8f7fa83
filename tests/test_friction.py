"""What a newcomer types first, and must work: an OpenAI base URL, a bare port, the endpoint as a positional
argument, a typo'd command. Real HTTP over loopback, replaying the real vLLM 0.32.0 answers recorded in
fixtures/live; the CLI runs as a real subprocess."""

from __future__ import annotations

import json
import re

import pytest
from conftest import SHARED_FIXTURES, requires_shared, run_cli
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor.errors import InputError
from doctor.probes.base import Target

DEVMODE = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu" / "devmode"


def _vllm_routes(prefix: str = "") -> dict[str, Response]:
    """The real vLLM server's recorded answers, served under a proxy's base path ``prefix``."""
    return {f"{prefix}/v1/models": Response(file=DEVMODE / "v1_models.txt", content_type=JSON),
            f"{prefix}/version": Response(file=DEVMODE / "version.txt", content_type=JSON),
            f"{prefix}/metrics": Response(file=DEVMODE / "metrics.txt", content_type=PROM)}


@pytest.mark.parametrize(("given", "models", "metrics"), [
    ("http://h:8000", "/v1/models", "/metrics"),
    ("http://h:8000/v1", "/v1/models", "/metrics"),  # an OpenAI base URL: not /v1/v1/models
    ("http://h:8000/v1/", "/v1/models", "/metrics"),
    ("https://gw/team-a/llm", "/team-a/llm/v1/models", "/team-a/llm/metrics"),  # a proxy's base path, kept
    ("https://gw/team-a/llm/v1", "/team-a/llm/v1/models", "/team-a/llm/metrics"),
])
def test_a_path_is_a_base_path_and_v1_is_where_the_openai_routes_start(given: str, models: str, metrics: str) -> None:
    target = Target.parse(given)
    assert target.url("/v1/models").endswith(models) and target.url("/metrics").endswith(metrics)
    assert "/v1/v1" not in target.url("/v1/models")


def test_a_bare_port_is_this_host() -> None:
    target = Target.parse("30000")
    assert (target.host, target.port, target.base_path) == ("localhost", 30000, "")
    with pytest.raises(InputError, match="no port"):
        Target.parse("example.invalid")


@requires_shared
@pytest.mark.parametrize("prefix", ["", "/team-a/llm"])
def test_check_through_an_openai_base_url_probes_the_right_paths(prefix: str) -> None:
    with LocalServer(_vllm_routes(prefix)) as srv:
        result = run_cli("check", "--endpoint", f"{srv.endpoint}{prefix}/v1", "--format", "json", "--timeout", "2")
        paths = {r.path for r in srv.requests}
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    assert doc["engine"] == "vllm" and doc["engine_version"] == "0.32.0"
    assert {f"{prefix}/v1/models", f"{prefix}/metrics"} <= paths
    assert not any("/v1/v1" in p for p in paths)


@requires_shared
def test_the_endpoint_as_a_positional_argument_and_as_a_bare_port() -> None:
    with LocalServer(_vllm_routes()) as srv:
        positional = run_cli("check", f"127.0.0.1:{srv.port}", "--format", "json", "--timeout", "2")
        bare = run_cli("check", "--endpoint", str(srv.port), "--format", "json", "--timeout", "2")
        snap = run_cli("snapshot", f"127.0.0.1:{srv.port}", "-o", "/dev/null", "--timeout", "2")
    for result in (positional, bare):
        assert result.returncode in (0, 1), result.stderr
        assert json.loads(result.stdout)["engine"] == "vllm"
    assert snap.returncode == 0, snap.stderr
    both = run_cli("check", "a:1", "--endpoint", "b:2")
    assert both.returncode == 2 and "give the endpoint once" in both.stderr


@pytest.mark.parametrize(("typed", "meant"), [("chek", "check"), ("lnt", "lint"), ("insepct", "inspect"),
                                              ("snapshots", "snapshot")])
def test_a_mistyped_command_suggests_the_nearest(typed: str, meant: str) -> None:
    result = run_cli(typed)
    assert result.returncode == 2
    assert f"Did you mean '{meant}'?" in result.stderr and result.stderr.count("\n") == 1


def test_an_unknown_command_far_from_any_says_so_without_a_guess() -> None:
    result = run_cli("zzzz")
    assert result.returncode == 2 and "No such command 'zzzz'" in result.stderr and "Did you mean" not in result.stderr


def _lint_json(command: str) -> dict:
    result = run_cli("lint", "--format", "json", command)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def test_an_environment_prefix_secret_is_in_the_environment_not_in_argv() -> None:
    token = "hf_scenarioPrefixToken0123456789"
    command = f"HF_TOKEN={token} vllm serve Qwen/Qwen3-8B --enable-auto-tool-choice --tool-call-parser hermes"
    doc = _lint_json(command)
    found = {f["id"]: f for f in doc["findings"]}
    assert "secret-in-command" not in found  # nothing secret in argv: `ps` does not show it
    finding = found["secret-in-env-prefix"]
    assert "not in argv" in finding["what"] and "/proc/PID/environ" in finding["what"]
    assert "shell history" in finding["what"]
    flags_in_fix = set(re.findall(r"--[a-z][a-z0-9-]+", finding["fix"]))
    assert flags_in_fix <= set(re.findall(r"--[a-z][a-z0-9-]+", command))  # no --api-key it does not have
    text = run_cli("lint", "-v", command)
    assert token not in text.stdout + text.stderr


def test_a_secret_flag_fix_names_the_flag_the_command_has() -> None:
    doc = _lint_json("HF_TOKEN=hf_scenarioPrefixToken0123456789 vllm serve Qwen/Qwen3-8B --api-key sk-scenario0123456789ab")
    found = {f["id"]: f for f in doc["findings"]}
    assert found["secret-in-command"]["what"].startswith("--api-key is given on the command line")
    assert "Remove --api-key" in found["secret-in-command"]["fix"]
    assert [e["value"] for e in found["secret-in-env-prefix"]["evidence"]] == [["HF_TOKEN"]]


def test_a_docker_env_secret_stays_a_command_line_secret() -> None:
    doc = _lint_json("docker run --gpus all -e HF_TOKEN=hf_scenarioPrefixToken0123456789 vllm/vllm-openai:v0.10.1 "
                     "--model Qwen/Qwen3-8B")
    found = {f["id"]: f for f in doc["findings"]}
    assert "secret-in-command" in found and "secret-in-env-prefix" not in found  # docker's argv shows -e values
