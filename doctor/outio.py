"""Writing files the user asked for without ever leaving half of one behind.

Reports and snapshots are written to a temporary file beside the target and renamed over it, so a
crash, a full disk or Ctrl-C leaves either the old file or the new one, never a truncated mix.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from doctor.errors import InputError


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    target = Path(path)
    directory = target.parent if str(target.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"{target}: directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            # mkstemp makes the file 0600; give it the mode a plain open() would (Prometheus must read rules).
            os.fchmod(fh.fileno(), _mode_for(target))
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(f"{target}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _mode_for(target: Path) -> int:
    """The replaced file's mode, or what the umask gives a new file."""
    try:
        return target.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
