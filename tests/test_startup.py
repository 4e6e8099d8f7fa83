"""The fast paths stay fast: nothing heavy is imported by `inspect`, `lint`, `check` (offline or live), and the
newcomer's details work: --version, shell completion, NO_COLOR, no ANSI escapes off a terminal, and a --help
for every command and subcommand with a description, an example and the exit codes.

Imports are read from `python -X importtime` of a real subprocess (the test process itself has imported
everything by now). bench/bench_startup.py prints the timings these paths are kept for.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor import __version__
from doctor.cli.group import command_paths
from doctor.cli.main import COMMANDS

SCENARIOS = ROOT / "fixtures" / "scenarios"
#: Each costs 50-500 ms to import and none is needed on these paths (jsonschema: only `playbook validate` and
#: user playbook directories; prometheus_client: replaced by doctor.probes.exposition; huggingface_hub and its
#: HTTP client: only when a model must be resolved from the Hub — these runs are offline, see conftest.py).
HEAVY = {"pandas", "numpy", "matplotlib", "prometheus_api_client", "requests", "jsonschema", "prometheus_client",
         "urllib3", "scipy", "huggingface_hub", "httpx", "httpx2"}
#: Only the live probes need these (the process and GPU probes).
LIVE_ONLY = {"psutil", "pynvml"}
LINT = "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --enable-prefix-caching"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _imported(*args: str) -> set[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", *args], capture_output=True,
                         text=True, cwd=ROOT, env=env, timeout=60).stderr
    names = {m.group(1).split(".")[0] for m in re.finditer(r"^import time:.*\|\s*(\S+)\s*$", err, re.M)}
    assert "doctor" in names, err[-2000:]
    return names


@pytest.mark.parametrize("args", [
    ("inspect", "example:seed-gqa-27b"),
    ("lint", LINT),
    ("lint", LINT, "--config", "example:seed-gqa-27b", "--gpu", "H200:8", "--format", "json"),
    ("check", "--metrics", str(SCENARIOS / "sglang_dp2_tp4_metrics.prom")),
    ("check", "--server-info", str(SCENARIOS / "sglang_server_info.json"), "--command", LINT, "--format", "markdown"),
], ids=["inspect", "lint", "lint-config-gpu", "check-metrics", "check-offline"])
def test_offline_paths_import_nothing_heavy(args: tuple[str, ...]) -> None:
    assert not _imported(*args) & (HEAVY | LIVE_ONLY)


def test_live_check_imports_nothing_heavy() -> None:
    routes = {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
              "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
              "/metrics": Response(file=SCENARIOS / "sglang_dp2_tp4_metrics.prom", content_type=PROM)}
    with LocalServer(routes) as srv:
        imported = _imported("check", "--endpoint", srv.endpoint, "--timeout", "2")
    assert not imported & HEAVY
    # The probes' own HTTP client exists so that a plain-http check pays for neither (~30 ms of imports).
    assert not imported & {"email", "ssl"}


def _modules(*args: str, env: dict[str, str] | None = None) -> set[str]:
    """Every module (full dotted name) `python -X importtime -m doctor ARGS` imports."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", *args], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "NO_COLOR": "1", **(env or {})}, timeout=60).stderr
    return {m.group(1) for m in re.finditer(r"^import time:.*\|\s*(\S+)\s*$", err, re.M)}


@pytest.mark.parametrize("args", [("--version",), ("--help",), ("-h",), ("check", "--help"), ("lint", "-h"),
                                  ("playbook", "validate", "--help")], ids=" ".join)
def test_version_and_help_import_neither_click_nor_knowledge(args: tuple[str, ...]) -> None:
    """Answered from doctor/cli/main.py and the stored help alone: no click, no YAML, no knowledge, no command."""
    names = _modules(*args)
    assert "doctor.cli.main" in names
    assert not {n for n in names if n.split(".")[0] in {"click", "yaml", "json"}}
    assert {n for n in names if n.startswith("doctor")} <= {"doctor", "doctor.cli", "doctor.cli.main",
                                                             "doctor.cli.helptext"}


def test_help_on_a_narrow_terminal_is_rendered_by_click() -> None:
    """The stored help is click's at 78 columns; a narrower terminal gets click's own, narrower rendering."""
    assert "click" in {n.split(".")[0] for n in _modules("check", "--help", env={"COLUMNS": "60"})}
    narrow = run_cli("check", "--help", env={"COLUMNS": "60"}).stdout
    assert narrow.startswith("Usage: llmdoctor check [OPTIONS] [ENDPOINT]")
    assert narrow != run_cli("check", "--help", env={"COLUMNS": "80"}).stdout


def test_stored_help_is_what_click_renders() -> None:
    """doctor/cli/helptext.py is click's output for every command path (regenerate: python tools/gen_help.py)."""
    done = subprocess.run([sys.executable, "tools/gen_help.py", "--check"], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    from doctor.cli.helptext import HELP

    assert set(HELP) == {" ".join(path) for path in command_paths()}


# ------------------------------------------------------------------------------------------ the newcomer's details
def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"llmdoctor, version {__version__}"


def test_bash_completion_script() -> None:
    script = Path(sys.executable).parent / "llmdoctor"
    if not script.exists():
        pytest.skip("the llmdoctor console script is not installed in this environment")
    result = subprocess.run([str(script)], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "_LLMDOCTOR_COMPLETE": "bash_source"})
    assert result.returncode == 0 and "_llmdoctor_completion()" in result.stdout
    assert "complete -o nosort -F _llmdoctor_completion llmdoctor" in result.stdout
    # and the completion itself answers: the commands after `llmdoctor `
    words = subprocess.run([str(script)], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "_LLMDOCTOR_COMPLETE": "bash_complete", "COMP_WORDS": "llmdoctor ",
                                "COMP_CWORD": "1"}).stdout
    assert {line.split(",", 1)[1] for line in words.splitlines() if "," in line} >= set(COMMANDS) - {"report", "rules"}


def _in_a_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run the CLI with its stdout on a pseudo-terminal (as a user's shell has it) and return what it wrote."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "doctor", *args], stdout=follower, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, cwd=ROOT, env=env)
    os.close(follower)
    chunks, deadline = [], time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    proc.wait(10)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def test_colour_on_a_terminal_unless_no_color() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    args = ["lint", LINT]
    assert ANSI.search(_in_a_terminal(args, env)), "a terminal gets colour"
    assert not ANSI.search(_in_a_terminal(args, {**env, "NO_COLOR": "1"})), "NO_COLOR is respected"


@pytest.mark.parametrize("args", [("lint", LINT), ("playbook", "list"), ("inspect", "example:seed-gqa-27b"),
                                  ("check", "--metrics", str(SCENARIOS / "sglang_dp2_tp4_metrics.prom"))])
def test_no_ansi_escapes_when_stdout_is_not_a_terminal(args: tuple[str, ...]) -> None:
    result = subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, cwd=ROOT,
                            env={k: v for k, v in os.environ.items() if k != "NO_COLOR"}, timeout=60)
    assert result.returncode in (0, 1) and result.stdout
    assert not ANSI.search(result.stdout + result.stderr)


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "llmdoctor")
def test_every_command_has_a_help_with_a_description_an_example_and_exit_codes(path: tuple[str, ...]) -> None:
    result = run_cli(*path, "--help")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    description = text.split("\n\n", 2)[1].strip() if text.count("\n\n") >= 2 else ""
    assert len(description) > 20, f"{' '.join(path)}: no description\n{text}"
    assert "Example" in text, f"{' '.join(path)}: no example\n{text}"
    assert "Exit codes" in text, f"{' '.join(path)}: no exit codes\n{text}"
