"""Writing files the user asked for without ever leaving half of one behind.

Reports and snapshots are written to a temporary file beside the target and renamed over it, so a
crash, a full disk or Ctrl-C leaves either the old file or the new one, never a truncated mix (and no
temporary file). The new file gets the permissions a plain write would give (the old file's, else the
umask's), not the 0600 of a temporary file; a symlink is followed (the link stays, its file is replaced).
A target that is not a regular file — ``-o /dev/stdout``, a FIFO — is a stream: renaming over it would
replace the device node itself, so it is written to directly.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    write_chunks(path, (text,))


def write_chunks(path: str | os.PathLike[str], chunks: Iterable[str]) -> None:
    """``write_atomic`` of a document produced piece by piece (a fleet report): each piece is written as it
    comes, so the whole text is never held in memory, and the file still appears only when complete."""
    from doctor.redact import redact_shapes

    # every file llmdoctor writes: no URL password or shaped token survives (per piece: a piece is whole
    # JSON values or whole HTML elements, so a secret never straddles two)
    chunks = (redact_shapes(chunk) for chunk in chunks)
    shown = Path(path)
    target = shown.resolve() if shown.is_symlink() else shown
    try:
        existing = target.stat()
    except OSError:
        existing = None
    if existing is not None and stat.S_ISDIR(existing.st_mode):
        raise InputError(f"{shown}: is a directory")
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        _write_stream(shown, target, chunks)
        return
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{shown}: directory {directory} does not exist")
    tmp = directory / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:  # created 0666 less the umask, as a plain write would (mkstemp's 0600 would stick to the result)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise InputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(chunks)
            fh.flush()
            os.fsync(fh.fileno())
            if existing is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(existing.st_mode))
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _write_stream(shown: Path, target: Path, chunks: Iterable[str]) -> None:
    try:
        with target.open("w", encoding="utf-8", newline="\n") as fh:
            fh.writelines(chunks)
    except OSError as exc:
        raise InputError(f"{shown}: cannot write: {exc.strerror or exc}") from None



def json_chunks(document: dict[str, Any], indent: int | None = None) -> Iterator[str]:
    """``document`` as JSON, one top-level value (and one element of each top-level list) at a time.

    Without ``indent`` the text is compact (no indentation: a 10,000-instance report is ~40% smaller and
    serialises ~6× faster); with it, one ``json.dumps`` of the whole (the reader asked to read it by eye)."""
    if indent is not None:
        yield json.dumps(document, indent=indent) + "\n"
        return
    compact = {"separators": (",", ":")}
    yield "{"
    for n, (key, value) in enumerate(document.items()):
        yield ("," if n else "") + json.dumps(key) + ":"
        if isinstance(value, list) and value:
            yield "["
            for m, item in enumerate(value):
                yield ("," if m else "") + json.dumps(item, **compact)
            yield "]"
        else:
            yield json.dumps(value, **compact)
    yield "}\n"
