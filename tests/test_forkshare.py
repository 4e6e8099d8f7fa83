"""doctor.forkshare with real forked processes: every item's result at its index whatever the worker and the
batches, a worker's exception raised in the parent, a worker that dies without a word named with its exit code."""

from __future__ import annotations

import os

import pytest

from doctor.forkshare import deal_out


def _squares_in_batches(share: list[int], send) -> None:
    for offset, item in enumerate(share):  # one batch per item: the parent places each as it comes
        send([(offset, (os.getpid(), item * item))])


def test_results_come_back_in_the_items_order_from_several_processes() -> None:
    items = list(range(23))
    results = deal_out(items, 3, _squares_in_batches, "test")
    assert [square for _, square in results] == [i * i for i in items]
    assert len({pid for pid, _ in results}) == 3 and os.getpid() not in {pid for pid, _ in results}


def test_a_worker_exception_is_raised_in_the_parent() -> None:
    def work(share: list[int], send) -> None:
        if 4 in share:
            raise ValueError("item 4 is bad")
        send(list(enumerate(share)))

    with pytest.raises(ValueError, match="item 4 is bad"):
        deal_out(list(range(8)), 2, work, "test")


def test_a_worker_that_dies_is_named_with_its_exit_code() -> None:
    def work(share: list[int], send) -> None:
        if 1 in share:
            os._exit(7)
        send(list(enumerate(share)))

    with pytest.raises(RuntimeError, match=r"test worker 1 ended without its results \(exit code 7\)"):
        deal_out(list(range(4)), 2, work, "test")
