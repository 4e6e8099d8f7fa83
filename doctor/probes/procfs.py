"""The process probe's Linux fast path: /proc read directly, for the three things the probe needs.

psutil answers the same questions on every platform, but on the `check` hot path its import (~45 ms) and its
scan of every process's connections (~20 ms on a quiet host, far more on a busy one) cost more than the whole
HTTP exchange with the server. On Linux the answers are three small files away: the listening socket's inode
in /proc/net/tcp{,6}, the process holding that inode among /proc/*/fd, and its cmdline, comm and environ.
Other platforms (and a /proc we cannot read at all) use psutil, as before (doctor/probes/process.py).
"""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path

PROC = Path("/proc")
_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def available() -> bool:
    return (PROC / "net" / "tcp").is_file()


def listening_pids(port: int, *, ipv6_first: bool = False) -> tuple[set[int], bool]:
    """(pids holding a TCP socket listening on ``port``, whether such a socket exists at all — a listener whose
    process we may not read, or that lives in another PID namespace, shows in /proc/net/tcp all the same).

    The table of the address family the probes connect with is read first, and the other only when it has no
    listener on the port: the listener there is the one that answered (Linux refuses a second wildcard bind of
    the same port across families, bar SO_REUSEPORT), and each table costs a few ms to generate on some
    kernels (5 ms under gVisor, measured), a third of the probe.

    The kernel is asked for its listening sockets alone (:func:`listening_inodes`) where it answers; the tables
    list every socket, and a busy server's thousands of connections (or a host's TIME_WAIT churn) made reading
    them most of a `check`'s kernel time.
    """
    families = (AF_INET6, AF_INET) if ipv6_first else (AF_INET, AF_INET6)
    found = listening_inodes(port, families)
    inodes = {f"socket:[{inode}]" for inode in found} if found is not None else _table_inodes(port, families)
    pids: set[int] = set()
    if not inodes:
        return pids, False
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        fd_dir = f"/proc/{entry.name}/fd/"
        try:
            for fd in os.listdir(fd_dir):  # names, not DirEntry objects: ~600 fds on a quiet host
                try:
                    if os.readlink(fd_dir + fd) in inodes:
                        pids.add(int(entry.name))
                        break
                except OSError:
                    continue
        except OSError:  # not ours to read, or exited meanwhile
            continue
    return pids, True


AF_INET, AF_INET6 = socket.AF_INET, socket.AF_INET6
_TABLES = {AF_INET: "tcp", AF_INET6: "tcp6"}


def _table_inodes(port: int, families: tuple[int, ...]) -> set[str]:
    """The listening sockets on ``port`` from /proc/net/tcp{,6}, the first family's table that has one."""
    inodes: set[str] = set()
    for family in families:
        try:
            lines = (PROC / "net" / _TABLES[family]).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == _LISTEN and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{fields[9]}]")
        if inodes:
            break
    return inodes


#: Linux's sock_diag netlink interface (linux/netlink.h, linux/sock_diag.h, linux/inet_diag.h): what `ss -l` reads.
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, _NLM_F_DUMP = 4, 20, 0x1, 0x300
_NLMSG_ERROR, _NLMSG_DONE, _IPPROTO_TCP, _TCP_LISTEN = 2, 3, 6, 10


def listening_inodes(port: int, families: tuple[int, ...]) -> set[int] | None:
    """Inodes of the TCP sockets listening on ``port``, of the first of ``families`` that has one, as the kernel's
    sock_diag interface lists them (the listening sockets only, however many connections the host holds; the
    same sockets, in the same network namespace, as /proc/net/tcp{,6} shows in state 0A). None when the kernel
    does not answer (no netlink here, a sandbox that refuses it): the caller reads the tables instead."""
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as sock:
            sock.settimeout(1.0)
            for seq, family in enumerate(families, start=1):
                # struct inet_diag_req_v2: family, protocol, ext, pad, states; then the socket id (unused in a
                # dump: 48 bytes of zeros, the cookie "none")
                request = struct.pack("=BBBxI", family, _IPPROTO_TCP, 0, 1 << _TCP_LISTEN) + bytes(40) + \
                    struct.pack("=II", 0xFFFFFFFF, 0xFFFFFFFF)
                sock.send(struct.pack("=IHHII", 16 + len(request), _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST | _NLM_F_DUMP,
                                      seq, 0) + request)
                inodes = _listening_answer(sock, seq, port)
                if inodes is None:
                    return None
                if inodes:
                    return inodes
            return set()
    except (OSError, AttributeError, ValueError, struct.error):  # AttributeError: a platform without AF_NETLINK
        return None


def _listening_answer(sock: socket.socket, seq: int, port: int) -> set[int] | None:
    """Read one dump's messages (struct inet_diag_msg each) until NLMSG_DONE: the inodes of those on ``port``."""
    inodes: set[int] = set()
    while True:
        data = sock.recv(65536)
        offset = 0
        while offset + 16 <= len(data):
            length, kind, _flags, got_seq, _pid = struct.unpack_from("=IHHII", data, offset)
            if length < 16 or got_seq != seq or kind == _NLMSG_ERROR:
                return None
            if kind == _NLMSG_DONE:
                return inodes
            # inet_diag_msg: family, state, timer, retrans, then the id (source port first, big-endian) ... and
            # after expires, rqueue, wqueue and uid, the inode (bytes 68-72)
            if length >= 16 + 72:
                (sport,) = struct.unpack_from(">H", data, offset + 16 + 4)
                (inode,) = struct.unpack_from("=I", data, offset + 16 + 68)
                if sport == port:
                    inodes.add(inode)
            offset += (length + 3) & ~3
        if not data:
            return None


def read(pid: int) -> tuple[list[str], str, dict[str, str] | None]:
    """(argv, name, environment or None when it may not be read); FileNotFoundError when the pid is gone,
    PermissionError when its command line may not be read."""
    base = PROC / str(pid)
    raw = (base / "cmdline").read_bytes()
    argv = [part.decode("utf-8", "surrogateescape") for part in raw.split(b"\0")[:-1 if raw.endswith(b"\0") else None]]
    name = (base / "comm").read_text(errors="replace").strip()
    try:
        env_raw = (base / "environ").read_bytes()
    except PermissionError:
        return argv, name, None
    env = {}
    for item in env_raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
    return argv, name, env


def pids_launched_with_port(port: int) -> list[int]:
    """Pids whose command line says ``--port N`` (or ``--port=N``): a server that is still loading has not
    opened its port yet, but its process is already there (vLLM and SGLang listen only after the model loads)."""
    wanted = str(port)
    found = []
    me = os.getpid()
    for entry in os.scandir(PROC):
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            words = (PROC / entry.name / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        argv = [w.decode("utf-8", "surrogateescape") for w in words]
        if any((w == "--port" and i + 1 < len(argv) and argv[i + 1] == wanted) or w == f"--port={wanted}"
               for i, w in enumerate(argv)):
            found.append(int(entry.name))
    return sorted(found)


#: Process states (the third field of /proc/PID/stat) a serving engine's process should never sit in.
STOPPED, TRACED, UNINTERRUPTIBLE, ZOMBIE = "T", "t", "D", "Z"


def stat(pid: int) -> tuple[str, int, str]:
    """(state letter, parent pid, comm) from /proc/PID/stat; FileNotFoundError when the pid is gone.

    comm sits in parentheses and may itself hold spaces or ')' (a process may name itself anything), so the
    fields after it are read from the last ')'.
    """
    text = (PROC / str(pid) / "stat").read_text(errors="replace")
    head, _, tail = text.rpartition(")")
    fields = tail.split()
    return fields[0], int(fields[1]), head.partition("(")[2]


def title(pid: int) -> str:
    """The process title: argv[0] as the process left it. Engines rename their processes with setproctitle
    (``VLLM::EngineCore``, ``sglang::scheduler_TP0``), which overwrites the argv area; comm keeps only 15
    characters of it."""
    raw = (PROC / str(pid) / "cmdline").read_bytes()[:256]
    return raw.split(b"\0", 1)[0].decode("utf-8", "replace").strip()


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` from /proc/PID/task/*/children (one small file per thread); without that
    file (a kernel built without CONFIG_PROC_CHILDREN) every /proc/*/stat is read for its parent."""
    kids: list[int] = []
    try:
        with os.scandir(PROC / str(pid) / "task") as tasks:
            for task in tasks:
                kids += [int(k) for k in (Path(task.path) / "children").read_text().split()]
        return sorted(set(kids))
    except FileNotFoundError:
        pass
    except OSError:
        return []
    for entry in os.scandir(PROC):
        if entry.name.isdigit():
            try:
                if stat(int(entry.name))[1] == pid:
                    kids.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                continue
    return sorted(kids)


def tree(pid: int, limit: int = 256) -> list[dict[str, object]]:
    """``pid`` and its descendants, parents before children: pid, ppid, state, comm and title of each (at most
    ``limit`` processes; the ones that exit while being read are left out)."""
    out: list[dict[str, object]] = []
    queue = [pid]
    while queue and len(out) < limit:
        current = queue.pop(0)
        try:
            state, ppid, comm = stat(current)
            name = title(current) or comm
        except (OSError, ValueError, IndexError):
            continue
        out.append({"pid": current, "ppid": ppid, "state": state, "comm": comm, "title": name})
        queue += children(current)
    return out
