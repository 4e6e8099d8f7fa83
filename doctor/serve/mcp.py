"""``llmdoctor mcp``: the CLI's JSON commands as Model Context Protocol tools over stdio (official ``mcp`` SDK).

Assistants used in incident response call ``inspect``, ``lint``, ``plan``, ``check`` and ``playbook_show`` and
get exactly what ``llmdoctor COMMAND --format json`` prints (the versioned ``llmdoctor.<cmd>/1`` documents):
each call runs the CLI as a child process. That is the point, not a shortcut: the same limits (timeouts,
capped reads), the same redaction, the same exit-code meaning, and a tool call that hits a bug cannot take the
server (or its stdout, which *is* the protocol stream) down with it. A launch command travels on the child's
stdin, never in its argv, where other users of the host could read it.

Only this module imports ``mcp`` (an optional dependency: ``pip install 'llm-serving-doctor[mcp]'``).
"""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from typing import Annotated, Any, Literal  # noqa: TID253 - the tools' signatures are read at run time

from pydantic import Field

from doctor import __version__

try:  # mcp >= 2 renamed FastMCP to MCPServer; the decorator, ToolError and run("stdio") are the same
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # pragma: no cover - mcp 1.x
    from mcp.server.fastmcp import FastMCP as MCPServer  # type: ignore[no-redef]
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore[no-redef]

#: Seconds a tool call may take beyond the check's own bound (start-up, config parsing, rendering).
_OVERHEAD_S = 30.0

#: mcp >= 2 takes the version clients see in serverInfo; 1.x reports its own package's (set below).
_VERSION = {"version": __version__} if "version" in inspect.signature(MCPServer.__init__).parameters else {}
server = MCPServer("llmdoctor", log_level="WARNING", **_VERSION, instructions=(
    "Diagnose vLLM and SGLang deployments: inspect a model config, lint a launch command, plan how to serve a "
    "model on given GPUs, check a live endpoint / snapshot / offline inputs, and read the playbooks. Every "
    "tool returns llmdoctor's versioned JSON (schema llmdoctor.<command>/1); findings carry evidence and fixes."))
if not _VERSION:  # pragma: no cover - mcp 1.x: serverInfo.version is the low-level server's
    server._mcp_server.version = __version__


class ToolFailed(ToolError):
    """The CLI refused the input (exit 2) or failed (4): its one-line message, redacted."""


def _cli(args: list[str], *, stdin: str | None = None, timeout_s: float = _OVERHEAD_S,
         partial_ok: bool = False) -> dict[str, Any]:
    """``llmdoctor ARGS --format json`` in a child process; its document, or ToolFailed with its message."""
    from doctor.redact import redact_text

    env = {**os.environ, "NO_COLOR": "1"}
    try:
        done = subprocess.run([sys.executable, "-m", "doctor", *args, "--format", "json"], input=stdin,
                              capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        raise ToolFailed(f"llmdoctor {args[0]} took longer than {timeout_s:g} s") from None
    ok = done.returncode in (0, 1, 5) or (partial_ok and done.returncode == 3)
    if ok and done.stdout.strip():
        try:
            return json.loads(done.stdout)
        except ValueError:
            pass
    message = " ".join(done.stderr.split()) or f"exit {done.returncode}"
    raise ToolFailed(redact_text(message.removeprefix("llmdoctor: ")))


def _opt(flag: str, value: Any) -> list[str]:
    return [] if value is None or value is False else [flag] if value is True else [flag, str(value)]


@server.tool(name="inspect", description="Describe a model from its config.json: attention kind, MoE, params, "
             "KV bytes per token, state per sequence. Same JSON as `llmdoctor inspect CONFIG --format json`.")
def inspect_tool(
    config: Annotated[str, Field(description="config.json path, model directory, HF-cache repo id, or "
                                             "example:NAME (e.g. example:seed-gqa-27b)")],
    kv_dtype: Annotated[Literal["auto", "bf16", "fp16", "fp8", "fp4"] | None, Field(
        description="KV-cache element type to size with")] = None,
    engine: Annotated[Literal["vllm", "sglang"] | None, Field(description="Size with this engine's layout")] = None,
    context: Annotated[str | None, Field(description="Tokens per request, e.g. 32k")] = None,
) -> dict[str, Any]:
    return _cli(["inspect", config, *_opt("--kv-dtype", kv_dtype), *_opt("--engine", engine),
                 *_opt("--context", context)])


@server.tool(name="lint", description="Explain every flag of a vLLM/SGLang launch command and find what is "
             "missing, wrong or harmful. Same JSON as `llmdoctor lint --format json`.")
def lint_tool(
    command: Annotated[str, Field(description="The launch command in any shape: vllm serve …, python -m "
                                              "sglang.launch_server …, docker run …, a Kubernetes manifest or "
                                              "args list")],
    config: Annotated[str | None, Field(description="The model's config.json / directory / repo id / "
                                                    "example:NAME")] = None,
    gpu: Annotated[str | None, Field(description="GPUs it runs on, e.g. H200:8")] = None,
    engine_version: Annotated[str | None, Field(description="Engine version, e.g. 0.11.0")] = None,
    context: Annotated[int | None, Field(description="Tokens per request", ge=1)] = None,
    users: Annotated[int | None, Field(description="Concurrent requests", ge=1)] = None,
) -> dict[str, Any]:
    return _cli(["lint", "--file", "-", *_opt("--config", config), *_opt("--gpu", gpu),
                 *_opt("--engine-version", engine_version), *_opt("--context", context), *_opt("--users", users)],
                stdin=command)


@server.tool(name="plan", description="Plan how to serve a model on given GPUs: fit, users, TP/EP/DP-attention, "
             "flags, ready commands, verdict. Same JSON as `llmdoctor plan --format json`.")
def plan_tool(
    config: Annotated[str, Field(description="config.json path, model directory, repo id or example:NAME")],
    gpu: Annotated[str, Field(description="GPUs to serve on, e.g. H200:8 or '8x B300'")],
    context: Annotated[str | None, Field(description="Tokens per request, e.g. 32k")] = None,
    users: Annotated[int | None, Field(description="Concurrent requests to serve", ge=1)] = None,
    engine: Annotated[Literal["vllm", "sglang", "both"] | None, Field(description="Engine(s) to plan for")] = None,
    engine_version: Annotated[str | None, Field(description="Engine version (with engine)")] = None,
    latency: Annotated[Literal["strict", "balanced", "relaxed"] | None, Field(description="Latency goal")] = None,
) -> dict[str, Any]:
    return _cli(["plan", config, "--gpu", gpu, *_opt("--context", context), *_opt("--users", users),
                 *_opt("--engine", engine), *_opt("--engine-version", engine_version), *_opt("--latency", latency)])


@server.tool(name="check", description="Diagnose a deployment: a live endpoint (read-only probes, bounded by "
             "timeout_s), a snapshot file, or offline inputs (command, config, gpu, saved /metrics). Findings with "
             "root cause, evidence and fix. Same JSON as `llmdoctor check --format json`.")
def check_tool(
    endpoint: Annotated[str | None, Field(description="Live server: host:port or http(s)://host:port")] = None,
    snapshot: Annotated[str | None, Field(description="A snapshot file written by llmdoctor snapshot, or "
                                                      "example:NAME")] = None,
    command: Annotated[str | None, Field(description="The launch command")] = None,
    config: Annotated[str | None, Field(description="The model's config.json / directory / repo id")] = None,
    gpu: Annotated[str | None, Field(description="GPUs, e.g. H200:8")] = None,
    engine_version: Annotated[str | None, Field(description="Engine version")] = None,
    metrics: Annotated[str | None, Field(description="Path of a saved /metrics scrape")] = None,
    server_info: Annotated[str | None, Field(description="Path of a saved /server_info JSON body")] = None,
    manifest: Annotated[str | None, Field(description="Path of a Kubernetes manifest (Deployment, Pod, "
                                                      "LeaderWorkerSet, …): the launch command and GPUs")] = None,
    nvidia_smi: Annotated[str | None, Field(description="Path of saved `nvidia-smi -q` (text or -x XML) or "
                                                        "--query-gpu CSV output")] = None,
    log: Annotated[str | None, Field(description="Path of the server's log file")] = None,
    symptom: Annotated[str | None, Field(description="Only this symptom's playbook, e.g. memory-filling-fast")] = None,
    api_key_env: Annotated[str | None, Field(description="Name of the environment variable (of this MCP "
                                                         "server) holding the endpoint's API key")] = None,
    timeout_s: Annotated[float, Field(description="Seconds per probe request; bounds the check", ge=0.05,
                                      le=120)] = 2.0,
    sample_s: Annotated[float, Field(description="Scrape /metrics twice this far apart for rates", ge=0,
                                     le=600)] = 0.0,
) -> dict[str, Any]:
    args = ["check", *_opt("--endpoint", endpoint), *_opt("--snapshot", snapshot), *_opt("--config", config),
            *_opt("--gpu", gpu), *_opt("--engine-version", engine_version), *_opt("--metrics", metrics),
            *_opt("--server-info", server_info), *_opt("--manifest", manifest), *_opt("--nvidia-smi", nvidia_smi),
            *_opt("--log", log), *_opt("--symptom", symptom), *_opt("--api-key-env", api_key_env),
            "--timeout", str(timeout_s), *_opt("--sample", sample_s or None), "--fail-on", "never"]
    if command is not None:
        args += ["--command-file", "-"]
    return _cli(args, stdin=command, timeout_s=_OVERHEAD_S + 4 * timeout_s + sample_s, partial_ok=True)


@server.tool(name="playbook_show", description="One playbook (by symptom id or alias) with its decision tree, "
             "one cause (what, why, fix, evidence, seed reference), or 'traps'. Same JSON as "
             "`llmdoctor playbook show IDENT --format json`.")
def playbook_show_tool(
    ident: Annotated[str, Field(description="A symptom id or alias (memory-filling-fast), a cause id "
                                            "(kv-cache-exhausted), or traps")],
) -> dict[str, Any]:
    return _cli(["playbook", "show", ident])


def main() -> None:
    server.run("stdio")
