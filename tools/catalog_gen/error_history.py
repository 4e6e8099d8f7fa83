"""One engine's error catalog: every template of every release read, with since/until runs per site.

A release's read (``read_release``) is the list of its template sites. The table (``build``) keys templates
by id — a hash of the template's text, so the same wording keeps its id across releases however often it
moves — and gives each *site* (file, function, guarding condition, raise/log kind, exception type or level)
the runs of consecutive releases in which it existed, with its line per release of the run (one int when
it never moved). The flag history keeps runs the same way (tools/catalog_gen/history.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from doctor.logs.catalog import template_text
from tools.catalog_gen import errors
from tools.catalog_gen.wheel import WheelSource

SCHEMA = "llmdoctor.errors/1"

#: Source folders that are not the engine's code (vendored tests, benchmarks, examples).
_SKIP_PARTS = {"tests", "test", "benchmarks", "examples"}


def template_id(engine: str, parts: list[Any]) -> str:
    """The template's stable id: ``<engine>-`` and 10 hex digits of the hash of its text."""
    return f"{engine}-" + hashlib.sha1(template_text(parts).encode()).hexdigest()[:10]


def engine_files(source: WheelSource, package: str) -> list[str]:
    """The engine's own modules (``vllm.*`` / ``sglang.*``), without tests and benchmarks. ``package`` may name
    several packages or modules, blank-separated (``flashinfer.jit flashinfer.utils``: the part of a large
    library whose messages are read), and sub-packages to leave out, each with a leading ``-``."""
    names = [p for p in package.split() if not p.startswith("-")]
    left_out = tuple(p[1:] for p in package.split() if p.startswith("-"))
    found = sorted({m for name in names for m in source.modules(name)})
    return [m for m in found if not (_SKIP_PARTS & set(m.split(".")))
            and not any(m == p or m.startswith(p + ".") for p in left_out)]


def read_release(engine: str, source: WheelSource, package: str, cache: dict[str, dict]) -> dict[str, Any]:
    """Every template site of one wheel. ``cache`` maps a file's content hash to its scan, so a file that did
    not change since an earlier release is not parsed again."""
    templates: dict[str, list[Any]] = {}
    sites: list[list[Any]] = []
    counts = {"files": 0, "parsed": 0, "skipped": 0, "too_short": 0}
    for module in engine_files(source, package):
        path = source.path(module)
        text = source.text(module)
        digest = hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()
        counts["files"] += 1
        scan = cache.get(digest)
        if scan is None:
            scan = errors.scan_source(text, path)
            cache[digest] = scan
            counts["parsed"] += 1
        counts["skipped"] += scan["skipped"]
        for site in scan["sites"]:
            if errors.letters(site["parts"]) < errors.MIN_LETTERS:
                counts["too_short"] += 1
                continue
            tid = template_id(engine, site["parts"])
            templates.setdefault(tid, site["parts"])
            sites.append([tid, path, site["line"], site["function"], site["guard"], site["kind"], site["type"],
                          site["cut"]])
    return {"templates": templates, "sites": sites, "counts": counts}


def build(engine: str, reads: list[tuple[str, dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    """The history table from ``(version, release header, read)`` in release order."""
    order = [version for version, _h, _r in reads]
    table: dict[str, dict[str, Any]] = {}
    # site key -> list of (release index, line)
    seen: dict[tuple[str, tuple], list[tuple[int, int]]] = {}
    for index, (_version, _header, read) in enumerate(reads):
        for tid, parts in read["templates"].items():
            entry = table.setdefault(tid, {"parts": parts})
            entry.setdefault("cut", False)
        for tid, path, line, function, guard, kind, typ, cut in read["sites"]:
            if cut:
                table[tid]["cut"] = True
            key = (tid, (path, function, guard, kind, typ))
            hits = seen.setdefault(key, [])
            if hits and hits[-1][0] == index:
                continue  # the same site twice in one function (two branches with one guard): keep the first
            hits.append((index, line))
    for (tid, (path, function, guard, kind, typ)), hits in sorted(seen.items()):
        runs: list[list[tuple[int, int]]] = []
        for index, line in hits:
            if runs and runs[-1][-1][0] == index - 1:
                runs[-1].append((index, line))
            else:
                runs.append([(index, line)])
        for run in runs:
            lines = [line for _i, line in run]
            site = {"file": path, "function": function, "kind": kind, "type": typ,
                    "since": order[run[0][0]], "until": order[run[-1][0]],
                    "line": lines[0] if len(set(lines)) == 1 else lines}
            if guard:
                site["guard"] = guard
            table[tid].setdefault("sites", []).append(site)
    for entry in table.values():
        if not entry.pop("cut"):
            continue
        entry["multiline"] = True
    releases = [dict(header, version=version, counts=read["counts"]) for version, header, read in reads]
    return {"header": {"schema": SCHEMA, "engine": engine, "generator": "python tools/gen_errors.py --all",
                       "releases": releases},
            "templates": dict(sorted(table.items()))}


def reads_of(table: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The ``(version, release header, read)`` list a table was built from, taken back out of it.

    Lossless: the table keeps every site's line per release of its run, and a site's ``cut`` only ever shows
    as its template's ``multiline``, so ``build(engine, reads_of(t)) == t``. This lets a run add releases
    (older or newer) to a shipped table without downloading again the wheels it was built from
    (``tools/gen_errors.py --all --reuse-table``)."""
    releases = table["header"]["releases"]
    order = {r["version"]: i for i, r in enumerate(releases)}
    reads: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    for release in releases:
        header = {k: v for k, v in release.items() if k not in ("version", "counts")}
        reads.append((release["version"], header, {"templates": {}, "sites": [], "counts": release["counts"]}))
    for tid, entry in table["templates"].items():
        cut = bool(entry.get("multiline"))
        for site in entry.get("sites", ()):
            lo, hi = order[site["since"]], order[site["until"]]
            for index in range(lo, hi + 1):
                line = site["line"][index - lo] if isinstance(site["line"], list) else site["line"]
                read = reads[index][2]
                read["templates"].setdefault(tid, entry["parts"])
                read["sites"].append([tid, site["file"], line, site["function"], site.get("guard", ""),
                                      site["kind"], site["type"], cut])
    return reads


def dump(table: dict[str, Any]) -> bytes:
    return (json.dumps(table, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n").encode()
