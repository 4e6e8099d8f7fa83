"""Reading a server log that may be gigabytes: the head (start-up) and the tail (the latest state, the
final error) within a fixed cap, never the whole file.

Start-up facts (engine, version, arguments, KV size, CUDA graphs) are printed in the first seconds of a
server's life and the final error or traceback in its last; the middle of a long-running server's log is
request lines. A regular file is read with two seeks; a pipe (``--log -``) is streamed in chunks, keeping
the head and a rolling tail, so memory stays bounded by the cap whatever the size.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections import deque
from dataclasses import dataclass

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import BinaryIO

#: Bytes kept from the start and from the end of a log. vLLM's start-up (banner, arguments, engine config,
#: memory profile, CUDA graphs, routes) is 40-60 kB for one worker; a dead engine's tracebacks from eight
#: workers some 100 kB. Larger caps only cost time in the line scan.
HEAD_BYTES = 1024 * 1024
TAIL_BYTES = 1024 * 1024
_CHUNK = 1 << 20
#: A NUL byte this early means a binary file (a core dump, an archive), never a log.
_SNIFF = 4096
#: How long a stream is read at most: a pipe that never ends (`tail -f … | llmdoctor check --log -`, a
#: generator) is cut here and diagnosed from what arrived — its head and the latest tail. A 1 GiB log streams
#: in about 2 s (bench/bench_log.py), so only an endless one is cut.
STREAM_SECONDS = 10.0


@dataclass(frozen=True)
class LogText:
    """The part of a log that was read: its lines in order, and how much of the log was skipped."""

    label: str
    lines: tuple[str, ...]
    total_bytes: int
    skipped_bytes: int = 0


def read_log(spec: str, option: str = "--log") -> LogText:
    """A log file (or ``-``, standard input) as head + tail lines; one InputError line when it cannot be read.
    ``option`` names the input in labels and errors (``--client-output``: what a client got back, read alike)."""
    if spec == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise InputError(f"{option} -: standard input is not readable as bytes")
        return _from_stream(stream, f"{option} - (standard input)")
    label = f"{option} {spec}"
    from doctor.inio import opened

    with opened(spec, label, "log file" if option == "--log" else "file") as fh:
        size = os.fstat(fh.fileno())
        if stat.S_ISREG(size.st_mode):
            return _from_file(fh, size.st_size, label)
        return _from_stream(fh, label)  # a FIFO, a process substitution


def _from_file(fh: BinaryIO, size: int, label: str) -> LogText:
    if size <= HEAD_BYTES + TAIL_BYTES:
        return _text(fh.read(), b"", size, label)
    head = fh.read(HEAD_BYTES)
    fh.seek(size - TAIL_BYTES)
    return _text(head, fh.read(TAIL_BYTES), size, label)


def _from_stream(fh: BinaryIO, label: str) -> LogText:
    head = bytearray()
    tail: deque[bytes] = deque()
    tail_len = total = 0
    deadline = time.monotonic() + STREAM_SECONDS
    while chunk := fh.read(_CHUNK):
        if time.monotonic() > deadline:
            label = f"{label}; cut after {STREAM_SECONDS:.0f} s of reading, the stream went on"
            break
        total += len(chunk)
        if len(head) < HEAD_BYTES:
            take = HEAD_BYTES - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            tail.append(chunk)
            tail_len += len(chunk)
            while tail_len - len(tail[0]) >= TAIL_BYTES:  # drop whole chunks the tail no longer needs
                tail_len -= len(tail.popleft())
    rest = b"".join(tail)
    return _text(bytes(head), rest[-TAIL_BYTES:], total, label)


def _text(head: bytes, tail: bytes, total: int, label: str) -> LogText:
    if head.startswith(b"\x1f\x8b"):  # a rotated log, gzip-compressed
        raise InputError(f"{label}: gzip-compressed; decompress it into the pipe: zcat FILE | llmdoctor check --log -")
    if b"\x00" in head[:_SNIFF]:
        raise InputError(f"{label}: binary data, not a text log")
    skipped = total - len(head) - len(tail)
    if skipped <= 0:
        return LogText(label, tuple(_decode(head + tail).splitlines()), total, 0)
    # Cut at line boundaries: half a line at either side of the gap would read as a different message.
    head_lines = _decode(head[:head.rfind(b"\n") + 1]).splitlines()
    newline = tail.find(b"\n")
    tail_lines = _decode(tail[newline + 1:]).splitlines()
    skipped += len(head) - (head.rfind(b"\n") + 1) + newline + 1
    return LogText(label, (*head_lines, *tail_lines), total, skipped)


def _decode(data: bytes) -> str:
    # Logs interleave processes and progress bars; a broken byte must not make the whole log unreadable.
    return data.decode("utf-8", errors="replace")


def joined(first: LogText, second: LogText) -> LogText:
    """Two texts read as one excerpt (the server's log, then what a client got back), labelled with both."""
    return LogText(f"{first.label} + {second.label.removeprefix('--log ')}", first.lines + second.lines,
                   first.total_bytes + second.total_bytes, first.skipped_bytes + second.skipped_bytes)
