"""The process probe against real child processes listening on real ports (tests/support/fake_launch.py).

Every test runs three times: with Linux's /proc read directly (doctor/probes/procfs.py, the fast path: the
listening socket from the kernel's sock_diag), the same with the socket found in /proc/net/tcp{,6} instead (where
netlink is refused), and with psutil (what other platforms use), so every way of answering stays interchangeable."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from support.fake_launch import launch_argv, launch_env

from doctor.probes import process, procfs
from doctor.probes.base import ProbeOptions, Target, run_probe

ROOT = Path(__file__).resolve().parents[1]
SECRET = "SECRET-k3y-do-not-leak"
HF_SECRET = "hf_abcdefghijklmnopqrstuvwx"


@contextmanager
def launched(*flags: str, executable: str = sys.executable, env: dict[str, str] | None = None
             ) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Start fake_launch with an engine-shaped command line; yield the process and the port it listens on."""
    argv = [executable, *launch_argv(*flags, "--port", "0")[1:]]
    child = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, text=True,
                             env=launch_env({"PATH": os.environ.get("PATH", ""), **(env or {})}))
    try:
        line = child.stdout.readline() if child.stdout else ""
        assert line.startswith("LISTENING "), f"fake_launch did not start: {line!r}"
        yield child, int(line.split()[1])
    finally:
        child.terminate()
        child.wait(timeout=10)


@pytest.fixture(autouse=True, params=["procfs", "procfs-tables", "psutil"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "psutil":
        monkeypatch.setattr(procfs, "available", lambda: False)
    elif not procfs.available():
        pytest.skip("no /proc on this platform")
    elif request.param == "procfs-tables":
        monkeypatch.setattr(procfs, "listening_inodes", lambda port, families: None)
    return request.param


ENGINE_FLAGS = ("--model-path", "Qwen/Qwen3-8B", "--tp-size", "2", "--api-key", SECRET,
                "--tool-call-parser", "qwen3_coder")
ENGINE_ENV = {"CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_ENABLE_TORCH_COMPILE": "1", "VLLM_API_KEY": SECRET,
              "HF_TOKEN": HF_SECRET, "HF_HOME": "/cache/hf", "LMCACHE_CHUNK_SIZE": "256",
              "MY_SERVICE_TOKEN": SECRET, "UNRELATED": "x"}


def test_finds_the_server_by_port_and_reads_argv_and_env_without_secrets():
    with launched(*ENGINE_FLAGS, env=ENGINE_ENV) as (child, port):
        result = run_probe(process, Target.parse(f"127.0.0.1:{port}"), ProbeOptions())
    assert result.ok, result.error
    facts = result.facts
    assert facts.get("process.found") is True and facts.get("process.pid") == child.pid
    argv = facts.get("process.argv")
    assert argv[1:] == ["-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--tp-size", "2",
                        "--api-key", "***", "--tool-call-parser", "qwen3_coder", "--port", "0"]
    env = facts.get("process.env")
    assert env == {"CUDA_VISIBLE_DEVICES": "0,1", "HF_HOME": "/cache/hf", "HF_TOKEN": "***", "LMCACHE_CHUNK_SIZE": "256",
                   "SGLANG_ENABLE_TORCH_COMPILE": "1", "VLLM_API_KEY": "***"}
    assert facts.get("launch.env.CUDA_VISIBLE_DEVICES") == "0,1"
    everything = json.dumps([result.raw, result.facts.to_dict(), result.error])
    assert SECRET not in everything and HF_SECRET not in everything


@pytest.mark.parametrize(("listen", "connect"), [("::1", "[::1]"), ("::", "127.0.0.1"), ("::", "localhost")])
def test_finds_an_ipv6_or_dual_stack_listener(listen, connect):
    """A server on IPv6 (or on ``::``, dual stack, which takes IPv4 connections too) is in /proc/net/tcp6 only:
    the table of the other family is read when the first has no listener on the port."""
    try:
        socket.socket(socket.AF_INET6).close()
    except OSError:
        pytest.skip("no IPv6 on this host")
    with launched("--host", listen, *ENGINE_FLAGS) as (child, port):
        result = run_probe(process, Target.parse(f"{connect}:{port}"), ProbeOptions())
    assert result.ok, result.error
    assert result.facts.get("process.pid") == child.pid


def test_pid_option_reads_that_process():
    with launched(*ENGINE_FLAGS) as (child, _port):
        result = run_probe(process, Target.parse("127.0.0.1:1"), ProbeOptions(pid=child.pid))
    assert result.ok and result.facts.get("process.pid") == child.pid
    assert "--pid" in result.facts.fact("process.pid").source


def test_port_forwarder_is_reported_as_a_container(tmp_path):
    """argv[0] trick: the same child started through a link named docker-proxy, as Docker's port forwarder."""
    link = tmp_path / "docker-proxy"
    link.symlink_to(sys.executable)
    with launched("--container-port", "8000", executable=str(link)) as (_child, port):
        result = run_probe(process, Target.parse(f"localhost:{port}"), ProbeOptions())
    assert not result.ok and result.facts.get("process.found") is False
    assert "forwarded by docker-proxy" in result.error and "inside the container" in result.error


def test_nothing_listening_is_a_fact():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = run_probe(process, Target.parse(f"127.0.0.1:{port}"), ProbeOptions())
    assert not result.ok and result.facts.get("process.found") is False
    assert f"no process on this host listens on port {port}" in result.error
    assert result.facts.unknown_reason("process.argv") == result.error


def test_remote_endpoint_is_not_looked_for_here():
    result = run_probe(process, Target.parse("192.0.2.10:8000"), ProbeOptions())  # TEST-NET-1, never local
    assert result.facts.get("process.found") is False
    assert "192.0.2.10 is not this machine" in result.error


def test_vanished_pid_is_a_fact():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    result = run_probe(process, Target.parse("127.0.0.1:1"), ProbeOptions(pid=child.pid))
    assert result.facts.get("process.found") is False and f"no process {child.pid}" in result.error


@pytest.mark.parametrize("env,kept", [
    ({"HF_HUB_OFFLINE": "1", "PATH": "/bin"}, {"HF_HUB_OFFLINE": "1"}),
    ({"HF_TOKEN": "x", "HF_HUB_TOKEN": "y", "HF_ENDPOINT": "https://u:pw@mirror.example"},
     {"HF_TOKEN": "***", "HF_HUB_TOKEN": "***", "HF_ENDPOINT": "https://***@mirror.example"}),
    ({"NCCL_DEBUG": "INFO", "VLLM_ATTENTION_BACKEND": "FLASHINFER"},
     {"NCCL_DEBUG": "INFO", "VLLM_ATTENTION_BACKEND": "FLASHINFER"}),
])
def test_select_env(env, kept):
    assert process.select_env(env) == kept
