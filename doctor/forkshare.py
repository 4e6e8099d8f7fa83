"""Work dealt out to forked worker processes, the results gathered back in the items' order.

A large fleet's work (the playbooks over 10,000 report instances, 10,000 `check --targets` endpoints) is more than
one interpreter does on one core. Fork rather than spawn: each worker inherits what the parent already loaded (the
playbooks, the imports, what Prometheus answered) instead of paying for it again, and only results travel back,
pickled. Worker ``w`` of ``P`` takes items ``w, w+P, w+2P, …`` so that slow items (hung targets) spread over the
workers. A worker's exception is re-raised in the parent (a bug is the parent's traceback, not a hang), and a worker
that dies without saying so is an error naming its exit code.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Sequence
from multiprocessing.connection import wait

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")
    R = TypeVar("R")

    #: ``send(batch)``: hand results back, as ``(offset in the worker's share, result)`` pairs
    Send = Callable[[list[tuple[int, Any]]], None]


def deal_out(items: Sequence[T], processes: int, work: Callable[[list[T], Send], None], name: str) -> list[R]:
    """``work(share, send)`` runs in each of ``processes`` forked workers on its share of ``items`` and calls
    ``send`` with its results, at once or in batches as they complete; the list returned holds every item's result
    at the item's index. ``name`` names the workers (``llmdoctor-<name>-<w>``) and the error of one that died."""
    context = multiprocessing.get_context("fork")
    results: list[Any] = [None] * len(items)
    pending: dict[Any, tuple[int, Any]] = {}
    for worker in range(processes):
        receive, send = context.Pipe(duplex=False)
        process = context.Process(target=_run, name=f"llmdoctor-{name}-{worker}", daemon=True,
                                  args=(work, list(items[worker::processes]), send))
        process.start()
        send.close()
        pending[receive] = (worker, process)
    try:
        while pending:
            for conn in wait(list(pending)):
                worker, process = pending[conn]
                try:
                    kind, body = conn.recv()
                except EOFError:
                    process.join(5)
                    raise RuntimeError(f"{name} worker {worker} ended without its results (exit code "
                                       f"{process.exitcode})") from None
                if kind == "error":
                    raise body
                if kind == "done":
                    del pending[conn]
                    conn.close()
                    process.join()
                    continue
                for offset, result in body:
                    results[worker + offset * processes] = result
    finally:
        for conn, (_, process) in pending.items():
            conn.close()
            process.terminate()
            process.join(5)
    return results


def _run(work: Callable[[list[Any], Send], None], share: list[Any], conn: Any) -> None:
    """One worker: its share through ``work``, each batch sent as it comes, then "done" (or the exception)."""
    try:
        work(share, lambda batch: conn.send(("results", batch)))
        conn.send(("done", None))
    except BaseException as exc:  # noqa: BLE001 - a bug in a worker is the parent's traceback, not a hang
        conn.send(("error", exc))
    finally:
        conn.close()
