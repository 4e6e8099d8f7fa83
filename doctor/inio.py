"""Reading what a user hands over (a file, a pipe, standard input) with the size capped *before* parsing.

A wrong path (a safetensors shard where config.json was meant), ``/dev/zero``, a process substitution or a
pipe that never ends must fail in milliseconds with one line, not fill memory: at most ``limit + 1`` bytes
are ever read, so "too large" is known without trusting a size the file system reports (pipes and /proc
files report none). The mirror of :mod:`doctor.outio`, which writes.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

_CHUNK = 1 << 20
#: A NUL byte this early means a binary file (weights, an archive, UTF-16), never text we can read.
_SNIFF = 4096


def read_capped(path: str | os.PathLike[str], *, limit: int, label: str, hint: str = "") -> bytes:
    """The bytes of ``path`` (a file, FIFO or device), refusing more than ``limit``; errors start with ``label``
    (and end with ``hint``, e.g. "is this a weights file?", where one helps)."""
    with opened(path, label) as fh:
        return _read_at_most(fh, limit, label, hint)


#: What a path that is neither a file nor a directory is, for the line that refuses it.
_SPECIAL = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_a_file(path: str | os.PathLike[str], *, fifo: bool = False) -> str | None:
    """What ``path`` is when it exists but is a device or a socket (``/dev/zero`` never ends, a socket cannot be
    opened) — or, with ``fifo``, a FIFO (where only a file makes sense) — else None; stat never blocks, so this
    is known before anything is opened."""
    try:
        mode = Path(path).expanduser().stat().st_mode
    except (OSError, ValueError):
        return None
    if fifo and stat.S_ISFIFO(mode):
        return "a FIFO"
    return next((what for test, what in _SPECIAL if test(mode)), None)


@contextmanager
def opened(path: str | os.PathLike[str], label: str, kind: str = "file") -> Iterator[BinaryIO]:
    """``path`` opened for binary reading; a missing file, a directory or any read error inside the block
    becomes one InputError line starting with ``label`` (``kind`` names what a directory is not).

    Refused up front: a device or a socket, and a FIFO nothing writes to (opening one would wait forever for
    a writer). A pipe with a writer — a process substitution ``<(kubectl logs …)`` — is read as a stream."""
    special = not_a_file(path)
    if special:
        raise InputError(f"{label}: {special}, not a {kind}; save it to a file (or pipe it in with -)")
    try:
        with _open(Path(path).expanduser(), label) as fh:
            yield fh
    except FileNotFoundError:
        raise InputError(f"{label}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{label}: is a directory, not a {kind}") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None


def _open(path: Path, label: str) -> BinaryIO:
    """Open for reading; a FIFO opens without waiting, and one with no writer is refused at once."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        if stat.S_ISFIFO(mode):
            try:
                first = os.read(fd, _CHUNK)
            except BlockingIOError:  # a writer, nothing written yet
                first = None
            if first == b"":
                raise InputError(f"{label}: a FIFO with no writer (nothing is writing to it); start the writer "
                                 "first, or pipe it in with -")
            os.set_blocking(fd, True)
            return _Prefixed(os.fdopen(fd, "rb"), first or b"")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were read already (to learn whether a FIFO has a writer)."""

    def __init__(self, fh: BinaryIO, prefix: bytes) -> None:
        self.fh = fh
        self.prefix = prefix

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.prefix:
            data, self.prefix = (self.prefix, b"") if size < 0 or size >= len(self.prefix) else \
                (self.prefix[:size], self.prefix[size:])
            return data
        return self.fh.read(size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def fileno(self) -> int:
        return self.fh.fileno()

    def close(self) -> None:
        self.fh.close()
        super().close()


def read_stdin_capped(*, limit: int, label: str = "standard input") -> bytes:
    """Standard input as bytes, refusing more than ``limit`` (``cat huge | llmdoctor lint`` fails fast)."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream with no bytes underneath (an embedding caller's StringIO)
        text = sys.stdin.read(limit + 1)
        data = text.encode("utf-8", errors="surrogateescape")
        if len(data) > limit:
            raise InputError(f"{label}: larger than the {describe_size(limit)} limit")
        return data
    return _read_at_most(stream, limit, label, "")


def decode_text(data: bytes, label: str, hint: str = "") -> str:
    """UTF-8 text (a leading BOM from a Windows editor dropped); binary data and other encodings refused."""
    if b"\x00" in data[:_SNIFF]:
        raise InputError(f"{label}: binary data, not text{_hint(hint)}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{label}: not UTF-8 text (byte {exc.start}){_hint(hint)}") from None


def read_text_capped(path: str | os.PathLike[str], *, limit: int, label: str, hint: str = "") -> str:
    """:func:`read_capped` then :func:`decode_text`: the one way a user's text file is read."""
    return decode_text(read_capped(path, limit=limit, label=label, hint=hint), label, hint)


def describe_size(limit: int) -> str:
    """``16 MiB`` for the messages (limits are whole MiB or KiB)."""
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit} bytes"


def _hint(hint: str) -> str:
    return f" ({hint})" if hint else ""


def _read_at_most(fh: BinaryIO, limit: int, label: str, hint: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = fh.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
    raise InputError(f"{label}: larger than the {describe_size(limit)} limit; refusing to read it{_hint(hint)}")
