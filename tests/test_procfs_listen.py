"""The listening socket behind a port, as the kernel's sock_diag netlink interface gives it and as
/proc/net/tcp{,6} lists it (doctor/probes/procfs.py): the same inodes for real IPv4 and IPv6 listeners, none
for a port nobody listens on, and the first family that has one, in the order asked."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from doctor.probes import procfs

pytestmark = pytest.mark.skipif(not procfs.available() or procfs.listening_inodes(1, (procfs.AF_INET,)) is None,
                                reason="no /proc/net/tcp or no sock_diag netlink on this host")


@contextmanager
def listener(family: int, host: str) -> Iterator[tuple[int, int]]:
    """A real TCP socket listening on ``host`` (an ephemeral port); yields (port, inode)."""
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, 0))
        sock.listen()
        inode = int(os.readlink(f"/proc/self/fd/{sock.fileno()}").strip("socket:[]"))
        yield sock.getsockname()[1], inode


def both(port: int, families: tuple[int, ...]) -> tuple[set[str], set[str]]:
    found = procfs.listening_inodes(port, families)
    assert found is not None
    return {f"socket:[{inode}]" for inode in found}, procfs._table_inodes(port, families)


def test_an_ipv4_listener_is_found_by_both_ways_alike() -> None:
    with listener(socket.AF_INET, "127.0.0.1") as (port, inode):
        netlink, tables = both(port, (procfs.AF_INET, procfs.AF_INET6))
        assert netlink == tables == {f"socket:[{inode}]"}
        # asked IPv6 first, the IPv4 table is read when the IPv6 one has no listener on the port
        assert both(port, (procfs.AF_INET6, procfs.AF_INET))[0] == {f"socket:[{inode}]"}
        pids, listened = procfs.listening_pids(port)
        assert listened and pids == {os.getpid()}


def test_an_ipv6_listener_is_found_by_both_ways_alike() -> None:
    try:
        socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close()
        socket.getaddrinfo("::1", 0, socket.AF_INET6)
    except OSError:
        pytest.skip("no IPv6 loopback")
    with listener(socket.AF_INET6, "::1") as (port, inode):
        netlink, tables = both(port, (procfs.AF_INET6, procfs.AF_INET))
        assert netlink == tables == {f"socket:[{inode}]"}


def test_a_port_nobody_listens_on_has_no_socket_either_way() -> None:
    with listener(socket.AF_INET, "127.0.0.1") as (port, _inode):
        pass  # closed: the port is free again
    assert both(port, (procfs.AF_INET, procfs.AF_INET6)) == (set(), set())
    assert procfs.listening_pids(port) == (set(), False)
