"""Parsed copies of llmdoctor's own data files, so that a run does not re-parse the same YAML every time.

The playbooks, the model-family table, the GPU catalog and the other shipped YAML (~190 KB) cost PyYAML
60-90 ms per run (its constructor is Python even with libyaml), on a tool that should answer at once; the same
data loads from ``marshal`` in under 2 ms. So the parsed result of each is kept in the user's cache directory,
keyed by llmdoctor's version, the Python version and every source file's path, size and mtime (an edit or an
upgrade rebuilds it). Only plain data is stored (marshal: no code runs on load) in a directory that must be the
user's own and not writable by others — with one exception, doctor/dataclasscache.py, which keeps bytecode there
as CPython's ``__pycache__`` does (run only where ``dataclasses`` would compile that very source), trusting the
directory exactly as far as Python trusts the user's own ``__pycache__``. The cache is an optimisation only: a missing, unwritable, foreign or
corrupt one simply means parsing as before. ``LLMDOCTOR_CACHE_DIR`` moves it; set to "" it turns it off.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

try:  # CPython's own SHA-1: hashlib would load OpenSSL first (~12 M instructions, a tenth of a short run)
    from _sha1 import sha1
except ImportError:  # pragma: no cover - an interpreter without it
    from hashlib import sha1

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    T = TypeVar("T")

_SUFFIX = ".marshal"
_BLOB = ".blob"


def cached(name: str, sources: Iterable[str | Path], build: Callable[[], T]) -> T:
    """``build()``, or its result from the last run if no file in ``sources`` changed since.

    When ``build`` shapes the data in code (validation, defaults, dataclass fields), list that code's module file
    among ``sources`` too: an edit to it must rebuild the copy as surely as an edit to the YAML.
    """
    slot = _slot(name, sources)
    if slot is None:
        return build()
    directory, name, key = slot
    file = directory / f"{name}@{key}{_SUFFIX}"
    try:
        return marshal.loads(file.read_bytes())
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a corrupt or foreign cache file is rebuilt, never trusted
        file.unlink(missing_ok=True)
    value = build()
    _store(directory, name, file, value)
    return value


def cached_blob(name: str, sources: Iterable[str | Path], build: Callable[[], tuple[T, bytes]]) -> tuple[T, Any]:
    """Like :func:`cached`, for data whose bulk is read only in small part: ``build()`` gives ``(index, blob)``
    and the blob is kept beside the index as raw bytes, mapped into memory rather than read (a run that looks
    at a few dozen of 20,000 entries pays for those). Returns ``(index, buffer)``, the buffer sliceable like
    bytes (``buffer[a:b]``); with no cache directory it is the built bytes themselves."""
    slot = _slot(name, sources)
    if slot is None:
        return build()
    directory, name, key = slot
    file, blob = directory / f"{name}@{key}{_SUFFIX}", directory / f"{name}@{key}{_BLOB}"
    try:
        value, size = marshal.loads(file.read_bytes())
        return value, _mapped(blob, size)
    except FileNotFoundError:
        pass
    except Exception:  # noqa: BLE001 - a corrupt, foreign or half-replaced pair is rebuilt, never trusted
        file.unlink(missing_ok=True)
    value, data = build()
    # the blob first: an index on disk always has its blob (each replaced atomically; the size ties the pair)
    if _write(directory, blob, data):
        _store(directory, name, file, (value, len(data)))
        for old in directory.glob(f"{name}@*{_BLOB}"):
            if old != blob:
                old.unlink(missing_ok=True)
    return value, data


def _slot(name: str, sources: Iterable[str | Path]) -> tuple[Path, str, str] | None:
    """(cache directory, the data set's slot name, the sources' key), or None when nothing can be kept (no safe
    cache directory, or a source vanished: then build() runs and says so)."""
    directory = cache_dir()
    ordered = sorted(sources, key=os.fspath)
    if directory is None:
        return None
    try:
        key = _key(ordered)
    except OSError:
        return None
    # One slot per data set and checkout: two installs side by side do not evict each other's copies.
    if ordered:
        name = f"{name}.{sha1(str(Path(ordered[0]).parent.resolve()).encode()).hexdigest()[:8]}"
    return directory, name, key


def _mapped(path: Path, size: int) -> Any:
    """The blob read-only in memory, refused (ValueError) when it is not the size its index recorded."""
    import mmap

    if size == 0:
        return b""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size != size:
            raise ValueError(f"{path}: not the blob its index was written with")
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def cache_dir() -> Path | None:
    """Where the parsed copies live; None when caching is off or the directory is not safely ours."""
    configured = os.environ.get("LLMDOCTOR_CACHE_DIR")
    if configured is not None:
        if not configured.strip():
            return None
        directory = Path(configured).expanduser()
    else:
        base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        directory = Path(base).expanduser() / "llmdoctor"
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = directory.stat()
    except (OSError, RuntimeError):
        return None
    # Loading is only as safe as the directory: someone else able to write there could swap the data.
    if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return None
    return directory


def _key(sources: list[str | Path]) -> str:
    from doctor import __version__

    digest = sha1(f"{__version__}|{sys.version}".encode())
    for path in sources:  # one stat per file and no resolve(): a directory of ~200 small files stays cheap
        name = os.fspath(path)
        info = os.stat(name)
        digest.update(f"|{name if os.path.isabs(name) else os.path.abspath(name)}|{info.st_size}|"
                      f"{info.st_mtime_ns}".encode())
    return digest.hexdigest()[:20]


def _store(directory: Path, name: str, file: Path, value: Any) -> None:
    try:
        data = marshal.dumps(value)
    except ValueError:  # not plain data: nothing to cache (a bug in the caller, but never the user's problem)
        return
    if _write(directory, file, data):
        for old in directory.glob(f"{name}@*{_SUFFIX}"):  # earlier versions of the same data
            if old != file:
                old.unlink(missing_ok=True)
        _trim(directory)


#: The cache directory's size at most. Each checkout, install and user playbook directory keeps its own slots, and
#: nothing else removes a slot whose checkout is gone: past this, the least recently written files go first.
MAX_DIR_BYTES = 512 * 1024 * 1024


def _trim(directory: Path) -> None:
    """Remove the oldest cache files until the directory is back under three quarters of MAX_DIR_BYTES (run
    after a write, which happens only when a run built something afresh)."""
    try:
        stats = [(e.path, e.stat(follow_symlinks=False)) for e in os.scandir(directory)
                 if e.is_file(follow_symlinks=False) and not e.name.startswith(".")]
    except OSError:
        return
    files = [(st.st_mtime, st.st_size, path) for path, st in stats]
    total = sum(size for _, size, _ in files)
    if total <= MAX_DIR_BYTES:
        return
    for _, size, path in sorted(files):
        if total <= MAX_DIR_BYTES * 3 // 4:
            break
        try:
            os.unlink(path)
            total -= size
        except OSError:
            pass


def _write(directory: Path, file: Path, data: bytes) -> bool:
    """``data`` to ``file`` atomically (a private temporary file, then a rename); False when it cannot be."""
    tmp = directory / f".{file.name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, file)
        return True
    except OSError:
        tmp.unlink(missing_ok=True)
        return False
