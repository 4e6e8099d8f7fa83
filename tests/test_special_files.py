"""Inputs that are not files — /dev/zero, a FIFO nothing writes to, a socket — are refused up front with one
line and exit 2 on every flag that reads a file, and in a targets file (issue 23, Resources). A pipe with a
writer (a process substitution) is still read as a stream."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

#: Every command-line input that names a file to read, with the rest of a command that reads it.
FLAGS = [
    ("check", "--log"), ("check", "--metrics"), ("check", "--server-info"), ("check", "--nvidia-smi"),
    ("check", "--snapshot"), ("lint", "--file"), ("check", "--targets"), ("inspect", None),
]


def _special(kind: str, tmp_path: Path) -> str:
    if kind == "device":
        return "/dev/zero"
    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
        return str(path)
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return str(path)


@pytest.mark.parametrize("kind, says", [("device", "a character device"), ("fifo", "a FIFO with no writer"),
                                        ("socket", "a socket")])
@pytest.mark.parametrize("command, flag", FLAGS)
def test_refused_up_front(tmp_path, command, flag, kind, says):
    path = _special(kind, tmp_path)
    args = [command, flag, path] if flag else [command, path]
    started = time.monotonic()
    done = run_cli(*args, timeout=20, env={"HF_HUB_OFFLINE": "1"})
    assert done.returncode == 2, done.stderr
    assert time.monotonic() - started < 10
    line = done.stderr.strip()
    assert "\n" not in line and path in line
    assert says in line or (kind == "fifo" and "a FIFO" in line)
    assert "no such file" not in line


@pytest.mark.parametrize("key", ["log", "manifest"])
@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_targets_file_entries_refused_before_any_check(tmp_path, key, kind):
    path = _special(kind, tmp_path)
    targets = tmp_path / "fleet.yaml"
    targets.write_text(f"targets:\n  - endpoint: 127.0.0.1:9\n    {key}: {path}\n")
    done = run_cli("check", "--targets", str(targets), "--timeout", "2", timeout=20)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == f"llmdoctor: {targets}: targets[0]: {key}: {path}: " + \
        ("a character device" if kind == "device" else "a FIFO") + ", not a file"


def test_a_pipe_with_a_writer_is_read():
    """``--file <(cat cmd.txt)``: the shell hands over /dev/fd/N, a pipe whose writer is alive."""
    read_end, write_end = os.pipe()
    child = subprocess.Popen([sys.executable, "-m", "doctor", "lint", "--offline", "--file", f"/dev/fd/{read_end}"],
                             pass_fds=(read_end,), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env={**os.environ, "NO_COLOR": "1"})
    os.close(read_end)
    time.sleep(0.5)  # the reader is waiting on a pipe with a writer and nothing in it yet
    os.write(write_end, b"vllm serve /models/m --max-num-seqs 8\n")
    os.close(write_end)
    out, err = child.communicate(timeout=30)
    assert child.returncode in (0, 1), err
    assert "/models/m" in out


def test_an_endless_log_stream_is_cut_and_still_diagnosed() -> None:
    """`producer | llmdoctor check --log -` that never ends: read for STREAM_SECONDS, then diagnosed from the head
    and the latest tail (it used to be read forever, --timeout or not)."""
    import subprocess
    import sys
    import time

    from conftest import ROOT

    from doctor.logs.read import STREAM_SECONDS

    line = b"INFO 12-01 10:00:00 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s\n" * 2000
    proc = subprocess.Popen([sys.executable, "-m", "doctor", "check", "--offline", "--format", "json", "--log", "-"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    started = time.monotonic()
    assert proc.stdin is not None
    try:
        while proc.poll() is None and time.monotonic() - started < STREAM_SECONDS + 20:
            proc.stdin.write(line)
    except BrokenPipeError:
        pass
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < STREAM_SECONDS + 15   # it stopped reading by itself
    assert proc.returncode in (0, 1, 5), err
    assert b'"schema"' in out and b"Traceback" not in err
