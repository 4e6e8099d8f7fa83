"""`llmdoctor mcp` driven by the official MCP SDK's own client over stdio (a real subprocess).

Each tool's result must be the very document `llmdoctor COMMAND --format json` prints; the live `check` runs
against a local server replaying the REAL scrape vllm_1.prom (fixtures/metrics).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import IN_CI, ROOT, SHARED_FIXTURES, requires_shared, run_cli
from seed_commands import SEED_GQA
from support.httpserver import LocalServer
from support.serve import vllm_routes

if not IN_CI:  # under CI the [test] extra installs it: a missing SDK fails the collection there
    pytest.importorskip("mcp", reason="the mcp SDK is the [mcp] extra (in [test]; .ci/run installs it)")

SECRET = "sk-mcp-test-0123456789abcdef"


def _session(calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[Any], list[Any]]:
    """Start `python -m doctor mcp`, list its tools, make ``calls``; (tools, results)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> tuple[list[Any], list[Any]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "doctor", "mcp"], cwd=str(ROOT))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = (await session.list_tools()).tools
            results = [await session.call_tool(name, args) for name, args in calls]
            return tools, results

    return asyncio.run(asyncio.wait_for(run(), timeout=120))


def _doc(result: Any) -> dict[str, Any]:
    assert not _is_error(result), result
    text = result.content[0].text
    doc = json.loads(text)
    structured = getattr(result, "structured_content", None) or getattr(result, "structuredContent", None)
    if structured is not None:
        assert structured == doc
    return doc


def _is_error(result: Any) -> bool:
    return bool(getattr(result, "is_error", None) or getattr(result, "isError", None))


def _stable(doc: dict[str, Any]) -> str:
    """The document without run times (two runs differ only there)."""
    text = json.dumps(doc, sort_keys=True)
    import re

    return re.sub(r'"(elapsed_ms|ms|seconds)": [0-9.e+-]+', "", text)


def test_tools_schemas_and_same_json_as_the_cli(tmp_path: Path) -> None:
    import yaml
    from test_manifest import deployment

    manifest = tmp_path / "deploy.yaml"  # SCENARIO manifest (tests/test_manifest.py)
    manifest.write_text(yaml.safe_dump(deployment()))
    command = SEED_GQA + f" --api-key {SECRET}"
    tools, results = _session([
        ("check", {"manifest": str(manifest)}),
        ("lint", {"command": command, "gpu": "H200:2", "config": "example:seed-gqa-27b"}),
        ("inspect", {"config": "example:seed-mla-moe", "kv_dtype": "fp8"}),
        ("plan", {"config": "example:seed-mla-moe", "gpu": "H200:8", "context": "32k", "users": 100}),
        ("check", {"snapshot": "example:vllm-kv-full"}),
        ("playbook_show", {"ident": "low-cache-hit"}),
        ("lint", {"command": "not a launch command at all"}),
        ("plan", {"config": "example:seed-mla-moe", "gpu": "NoSuchGPU:8"}),
    ])
    by_name = {t.name: t for t in tools}
    assert set(by_name) == {"inspect", "lint", "plan", "check", "playbook_show"}
    schema = getattr(by_name["lint"], "input_schema", None) or by_name["lint"].inputSchema
    assert schema["required"] == ["command"]
    assert {"command", "config", "gpu", "engine_version"} <= set(schema["properties"])
    from_manifest, lint, inspect, plan, check, show, bad_lint, bad_plan = results
    assert "secret-in-command" in {f["id"] for f in _doc(from_manifest)["findings"]}

    cli = {
        "lint": run_cli("lint", "--gpu", "H200:2", "--config", "example:seed-gqa-27b", "--format", "json",
                        "--file", "-", input=command),
        "inspect": run_cli("inspect", "example:seed-mla-moe", "--kv-dtype", "fp8", "--format", "json"),
        "plan": run_cli("plan", "example:seed-mla-moe", "--gpu", "H200:8", "--context", "32k", "--users", "100",
                        "--format", "json"),
        "check": run_cli("check", "--snapshot", "example:vllm-kv-full", "--format", "json"),
        "show": run_cli("playbook", "show", "low-cache-hit", "--format", "json"),
    }
    for name, result in (("lint", lint), ("inspect", inspect), ("plan", plan), ("check", check), ("show", show)):
        doc = _doc(result)
        assert _stable(doc) == _stable(json.loads(cli[name].stdout)), name
    assert _doc(lint)["schema"] == "llmdoctor.lint/1" and SECRET not in json.dumps(_doc(lint))
    assert "kv-cache-exhausted" in {f["id"] for f in _doc(check)["findings"]}
    assert {"hybrid-chunk-misaligned", "image-cache-miss", "prefix-caching-disabled"} <= set(_doc(show)["causes"])
    for bad, says in ((bad_lint, "launch command"), (bad_plan, "NoSuchGPU")):
        assert _is_error(bad) and says in bad.content[0].text and "Traceback" not in bad.content[0].text


@requires_shared
def test_check_a_live_endpoint_with_the_cli_limits() -> None:
    log = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu" / "headdim16-crash-before" / "server.log"  # a real log
    with LocalServer(vllm_routes(SHARED_FIXTURES / "metrics" / "vllm_1.prom")) as engine:
        _, (live, dead, from_log) = _session([("check", {"endpoint": engine.endpoint, "timeout_s": 3}),
                                              ("check", {"endpoint": "127.0.0.1:9", "timeout_s": 0.5}),
                                              ("check", {"log": str(log)})])
    cli = run_cli("check", "--log", str(log), "--format", "json", "--fail-on", "never")
    assert _stable(_doc(from_log)) == _stable(json.loads(cli.stdout))
    doc = _doc(live)
    assert doc["schema"] == "llmdoctor.check/1" and "kv-cache-exhausted" in {f["id"] for f in doc["findings"]}
    # unreachable is a result (exit 3 with the partial document), not a tool error
    assert not any(probe["ok"] for probe in _doc(dead)["probes"])


@requires_shared
def test_check_of_a_symptom_no_cause_explains_is_a_result_not_a_tool_error() -> None:
    """Exit 5 (never silent: the unplaced lines and the differential) is a document, like 0 and 1."""
    log = SHARED_FIXTURES / "live" / "sglang-0.5.23-cpu" / "server.log"  # a real healthy start-up log
    _, (result,) = _session([("check", {"log": str(log), "symptom": "slow-decode"})])
    cli = run_cli("check", "--log", str(log), "--symptom", "slow-decode", "--format", "json")
    assert cli.returncode == 5
    doc = _doc(result)
    assert _stable(doc) == _stable(json.loads(cli.stdout))
    assert doc["unexplained"]["symptoms"][0]["symptom"] == "slow-decode" and doc["unexplained"]["possible"]


def test_check_of_a_symptom_alone_is_its_differential() -> None:
    """MCP's check with only `symptom` answers as `check --symptom X` does (exit 5's document), not an error."""
    _, (result,) = _session([("check", {"symptom": "tools-ignored"})])
    doc = _doc(result)
    cli = run_cli("check", "--symptom", "tools-ignored", "--format", "json")
    assert cli.returncode == 5
    assert _stable(doc) == _stable(json.loads(cli.stdout))
    assert not doc["findings"] and doc["unexplained"]["symptoms"][0]["symptom"] == "tools-ignored"
    assert any("--config" in p["decided_by"] for p in doc["unexplained"]["possible"])


def test_mcp_is_imported_only_by_this_command() -> None:
    probe = ("import sys, doctor.cli.main as m; sys.argv=['llmdoctor','lint','vllm serve x']; "
             "import contextlib, io\nwith contextlib.redirect_stdout(io.StringIO()): m.run()\n"
             "print(sorted(k for k in sys.modules if k == 'mcp' or k.startswith(('mcp.', 'pydantic'))))")
    import subprocess

    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stderr
