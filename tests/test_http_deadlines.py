"""The probes' HTTP deadlines share one watchdog thread (doctor/probes/http.py): many requests start no thread
each, a slow drip is still cut at its own deadline while others run beside it, and a forked child (check
--targets' worker processes) gets a watchdog of its own."""

from __future__ import annotations

import multiprocessing
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from support.httpserver import LocalServer, Response

from doctor.probes.http import HttpError, get

MB = 1 << 20


def test_many_requests_start_at_most_one_thread(monkeypatch):
    started: list[str] = []
    real_start, caller = threading.Thread.start, threading.current_thread()

    def counting_start(self: threading.Thread) -> None:
        if threading.current_thread() is caller:  # not the server's threads, one per connection
            started.append(self.name)
        real_start(self)

    with LocalServer({"/metrics": Response(body="x 1\n")}) as srv:
        get(srv.url("/metrics"), timeout_s=5, max_bytes=MB)  # the watchdog may start here, once
        monkeypatch.setattr(threading.Thread, "start", counting_start)
        for _ in range(50):
            assert get(srv.url("/metrics"), timeout_s=5, max_bytes=MB).body == b"x 1\n"
    assert started == []


def test_each_drip_is_cut_at_its_own_deadline_while_fast_requests_go_on():
    routes = {"/slow": Response(body="y" * 1000, drip=0.1), "/fast": Response(body="ok")}
    with LocalServer(routes) as srv, ThreadPoolExecutor(max_workers=4) as pool:
        def slow(timeout: float) -> float:
            started = time.monotonic()
            with pytest.raises(HttpError) as caught:
                get(srv.url("/slow"), timeout_s=timeout, max_bytes=MB)
            assert caught.value.kind == "timeout"
            assert f"timed out after {timeout:g}s" in str(caught.value)
            return time.monotonic() - started

        long_one, short_one = pool.submit(slow, 1.2), pool.submit(slow, 0.4)
        fast = [get(srv.url("/fast"), timeout_s=5, max_bytes=MB).body for _ in range(20)]
        assert fast == [b"ok"] * 20
        assert 0.35 <= short_one.result() < 1.1  # its own deadline, not the longer one's
        assert 1.1 <= long_one.result() < 3.0


def _child(url: str, queue: multiprocessing.Queue) -> None:
    try:
        get(url, timeout_s=0.4, max_bytes=MB)
        queue.put("answered")
    except HttpError as exc:
        queue.put(exc.kind)


def test_a_forked_child_has_its_own_watchdog():
    with LocalServer({"/slow": Response(body="y" * 1000, drip=0.1), "/fast": Response(body="ok")}) as srv:
        get(srv.url("/fast"), timeout_s=5, max_bytes=MB)  # the parent's watchdog runs before the fork
        context = multiprocessing.get_context("fork")
        queue = context.Queue()
        child = context.Process(target=_child, args=(srv.url("/slow"), queue))
        started = time.monotonic()
        child.start()
        kind = queue.get(timeout=10)
        child.join(5)
        assert kind == "timeout"
        assert time.monotonic() - started < 3
