"""Compiled regular expressions kept between runs, so that a run does not compile the same patterns every time.

A `check --log` compiles ~260 patterns (the modules' own, click's, the causes' log signatures, the error
catalogs' templates): 45-55 ms of a ~300 ms run, because CPython's regex parser and compiler are Python code.
What they produce is plain data — the pattern, its flags, a list of opcodes, the group names — which
``_sre.compile`` turns into the same Pattern object in microseconds. So the compiler's output is kept in the
user's cache directory (doctor.datacache: the same safety rules, marshal only) keyed by llmdoctor's and
Python's versions and the regex engine's own version (``_sre.MAGIC``), loaded once at the start of a CLI run,
and written back (atomically) only when the run compiled a pattern the table lacked.

The hook sits under ``re``'s own per-process cache (``re._compiler.compile``, reached only on a miss), so every
``re.compile`` and ``re.search(pattern, …)`` of the run benefits and each Pattern is the one ``re`` would build.
It is installed only on the Python versions whose compiler it mirrors (3.11-3.13); elsewhere, with caching off
(``LLMDOCTOR_CACHE_DIR=""``) or with no safe cache directory, nothing changes. An entry ``_sre`` refuses (a
corrupt file) is compiled afresh.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Patterns kept at most; a table past this (patterns built from inputs) starts again from those one run added.
MAX_PATTERNS = 5000
#: A pattern whose compiled form is larger is compiled each run instead (a flag catalog's alternation of every
#: flag name compiles to ~230 KB, one per release: kept, they grew the table a run loads to over 100 MB).
MAX_ENTRY_BYTES = 16 * 1024
#: The table's size at most: past it, the table starts again from what this run added.
MAX_TABLE_BYTES = 4 * 1024 * 1024
_SUPPORTED = ((3, 11), (3, 12), (3, 13))
_installed = False


def install() -> None:
    """Route regex compilation of this process through the persistent table (once; a no-op where unsupported)."""
    global _installed
    if _installed or sys.version_info[:2] not in _SUPPORTED:
        return
    _installed = True
    import _sre
    import atexit
    import marshal
    from re import _compiler, _parser  # type: ignore[attr-defined]

    from doctor.datacache import cache_dir

    directory = cache_dir()
    if directory is None:
        return
    from doctor import __version__

    file = directory / f"regex@{__version__}-{sys.version_info[:3]}-{_sre.MAGIC}-{_sre.CODESIZE}.marshal".replace(
        " ", "").replace(",", ".")
    try:
        # each entry's arguments stay marshalled until a run asks for that pattern: the table holds every
        # pattern any command compiled, a run uses a part
        # a table past its bound (written before the bound existed) is not worth reading: it starts again
        table: dict[tuple[Any, int], bytes] = (
            marshal.loads(file.read_bytes()) if file.stat().st_size <= MAX_TABLE_BYTES else {})
        if not isinstance(table, dict):
            table = {}
    except Exception:  # noqa: BLE001 - missing, corrupt or foreign: start an empty table
        table = {}
    added: dict[tuple[Any, int], bytes] = {}
    original = _compiler.compile

    def compile(p: Any, flags: int = 0) -> Any:
        if not isinstance(p, (str, bytes)) or flags & _compiler.SRE_FLAG_DEBUG:
            return original(p, flags)
        key = (p, flags)
        kept = table.get(key)
        if kept is not None:
            try:
                return _sre.compile(p, *marshal.loads(kept))
            except Exception:  # noqa: BLE001 - an entry the engine refuses is compiled afresh
                table.pop(key, None)
        try:
            parsed = _parser.parse(p, flags)
        except Exception:  # noqa: BLE001 - a bad pattern: let re raise its own error, as without the table
            return original(p, flags)
        groupindex = parsed.state.groupdict
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        # exactly what re._compiler.compile passes to _sre.compile after parsing and generating the code
        # (the opcodes as plain ints: the compiler's are named int constants, which marshal does not store)
        args = (int(flags | parsed.state.flags), [int(op) for op in _compiler._code(parsed, flags)],
                parsed.state.groups - 1, dict(groupindex), tuple(indexgroup))
        try:
            pattern = _sre.compile(p, *args)
        except Exception:  # noqa: BLE001 - an engine whose compile differs: compile as re does, keep nothing
            return original(p, flags)
        entry = marshal.dumps(args)
        if len(entry) <= MAX_ENTRY_BYTES:
            added[key] = entry
        return pattern

    def save() -> None:
        if not added:
            return
        from doctor.datacache import _write

        merged = {**table, **added} if len(table) + len(added) <= MAX_PATTERNS else added
        if sum(map(len, merged.values())) > MAX_TABLE_BYTES:
            merged = added
        _write(directory, file, marshal.dumps(merged))

    _compiler.compile = compile
    atexit.register(save)
