"""The methods ``dataclasses`` generates, kept compiled between runs (a run defines ~40 dataclasses).

For every ``@dataclass`` the standard library writes ``__init__``, ``__repr__``, ``__eq__`` (and, frozen,
``__setattr__``/``__delattr__``/``__hash__``) as Python source and compiles each with ``exec``: ~4 M
instructions per class, a quarter of a short `check`. The source is the same every run, so its compiled form is
kept — the same bytecode CPython's own ``__pycache__`` holds, as marshal — in the user's cache directory
(doctor.datacache's rules: the user's own directory, not writable by others), keyed by llmdoctor's and Python's
versions and, per entry, by the full source text it was compiled from.

The hook is the name ``exec`` in the ``dataclasses`` module's namespace (a module global shadows the builtin):
given source text it runs the cached code for exactly that text, else compiles it as ``exec`` would (filename
``<string>``) and remembers it. Nothing else in the process is touched; with caching off
(``LLMDOCTOR_CACHE_DIR=""``) or no safe cache directory nothing is installed.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Sources kept at most; past this the table starts again from those one run added.
MAX_SOURCES = 2000
_installed = False


def install() -> None:
    """Compile the dataclasses of this process from the persistent table (once)."""
    global _installed
    if _installed:
        return
    _installed = True
    import atexit
    import builtins
    import dataclasses
    import marshal

    from doctor.datacache import _write, cache_dir

    directory = cache_dir()
    if directory is None or "exec" in vars(dataclasses):
        return
    from doctor import __version__

    file = directory / f"dataclass-code@{__version__}-{sys.implementation.cache_tag}-{sys.hexversion:x}.marshal"
    try:
        table: dict[str, bytes] = marshal.loads(file.read_bytes())  # source -> marshalled code, decoded on use
        if not isinstance(table, dict):
            table = {}
    except Exception:  # noqa: BLE001 - missing, corrupt or foreign: start an empty table
        table = {}
    added: dict[str, bytes] = {}
    run = builtins.exec

    def cached_exec(source: Any, globals: Any = None, locals: Any = None) -> None:  # noqa: A002 - exec's own names
        code = None
        if isinstance(source, str):
            kept = table.get(source)
            if kept is not None:
                try:
                    code = marshal.loads(kept)
                except Exception:  # noqa: BLE001 - a bad entry is compiled afresh
                    code = None
            if code is None:
                # as exec compiles it: no __future__ flags of this module (dont_inherit), filename <string>
                code = compile(source, "<string>", "exec", dont_inherit=True)
                added[source] = marshal.dumps(code)
        run(code if code is not None else source, globals, locals)

    def save() -> None:
        if added:
            merged = {**table, **added} if len(table) + len(added) <= MAX_SOURCES else added
            _write(directory, file, marshal.dumps(merged))

    dataclasses.exec = cached_exec  # type: ignore[attr-defined]
    atexit.register(save)
