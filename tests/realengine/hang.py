"""What the hung tests do to a real engine: find one of its processes by the title the engine gave it, stop it
(SIGSTOP) for the length of a ``with`` block, and time what /health, /metrics, a chat request and
``llmdoctor check`` do meanwhile. Shared by test_vllm_hung.py and test_sglang_hung.py."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from realengine.conftest import Server
from realengine.vllm_engine import check_json


def descendants(pid: int) -> list[tuple[int, str, str]]:
    """(pid, title, state) of every process below ``pid``, read from /proc the way an operator's ps would."""
    out, queue = [], [pid]
    while queue:
        current = queue.pop(0)
        for task in Path(f"/proc/{current}/task").glob("*"):
            for child in (task / "children").read_text().split():
                kid = int(child)
                title = Path(f"/proc/{kid}/cmdline").read_bytes().split(b"\0", 1)[0].decode()
                state = Path(f"/proc/{kid}/stat").read_text().rpartition(")")[2].split()[0]
                out.append((kid, title, state))
                queue.append(kid)
    return out


def find(server: Server, prefix: str) -> int:
    """The pid of the server's process whose title starts with ``prefix`` (VLLM::EngineCore, sglang::scheduler)."""
    found = [pid for pid, title, _ in descendants(server.pid) if title.startswith(prefix)]
    assert found, f"no {prefix} process under {server.pid}: {descendants(server.pid)}"
    return found[0]


@contextmanager
def stopped(pid: int) -> Iterator[None]:
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def get(server: Server, path: str, timeout: float = 30) -> dict[str, Any]:
    """Status (None: no answer) and seconds of one GET."""
    return _timed(urllib.request.Request(server.url + path), timeout)


def chat(server: Server, model: str, timeout: float = 20, stream: bool = False) -> dict[str, Any]:
    """Status and seconds of one small chat request, its whole answer read."""
    body = json.dumps({"model": model, "max_tokens": 8, "stream": stream,
                       "messages": [{"role": "user", "content": "What time is it?"}]}).encode()
    return _timed(urllib.request.Request(server.url + "/v1/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"}), timeout)


def _timed(request: urllib.request.Request, timeout: float) -> dict[str, Any]:
    """One request: its status (None when nothing answered in ``timeout``) and the seconds it took."""
    start = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            resp.read()
            status: int | None = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError:
        status = None
    return {"status": status, "s": round(time.monotonic() - start, 2)}


def in_background(server: Server, model: str, count: int, timeout: float) -> tuple[list[threading.Thread], list[dict]]:
    """``count`` chat requests sent now and left waiting (their answers land in the list)."""
    answers: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: answers.append(chat(server, model, timeout)), daemon=True)
               for _ in range(count)]
    for thread in threads:
        thread.start()
    return threads, answers


def timed_check(*args: str) -> tuple[float, dict[str, Any]]:
    start = time.monotonic()
    _, doc = check_json(*args, timeout=60)
    return time.monotonic() - start, doc
