"""The per-engine history tables (``doctor/engines/catalogs/<engine>.json``) and one release's view of them.

A history table holds, for every flag, parser, metric and default of an engine, the runs of consecutive
releases in which it stayed the same (``since``/``until``, both releases that were read) and its full value as
first seen in that run — file:line evidence included. ``tools/catalog_gen/history.py`` builds the tables from
every release's wheel; this module only reads them. Splitting the table into one release's catalog is what
``doctor.engines.catalog`` caches (doctor/datacache.py), so a run pays for one view, not for the history.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "llmdoctor.catalog-history/1"
#: sections stored as name → value (rebuilt as dicts) and as lists of items keyed by one field (sorted by it)
DICT_SECTIONS = ("parser", "tool_parsers", "reasoning_parsers", "defaults")
LIST_SECTIONS = {"flags": "options", "metrics": "name"}


def release_index(table: dict[str, Any]) -> dict[str, int]:
    """Release read → its position, oldest first."""
    return {r["version"]: i for i, r in enumerate(table["releases"])}


def view(table: dict[str, Any], version: str) -> dict[str, Any]:
    """The catalog of ``version`` (a release that was read), in the generator's own layout: byte for byte the
    generator's output for the first release read; for later ones, items unchanged since an earlier release
    carry that release's file:line, named by ``evidence_from``."""
    order = release_index(table)
    at = order[version]
    release = table["releases"][at]
    engine = table["header"]["engine"]
    out: dict[str, Any] = {"header": {
        "schema": table["header"]["catalog_schema"], "engine": engine, "version": version,
        "generator": f"python tools/gen_catalog.py {engine} {version}",
        "wheel": release["wheel"], "sha256": release["sha256"], "generated": release["generated"],
    }}
    for section in (*DICT_SECTIONS, *LIST_SECTIONS):
        found = {key: _as_of(run, version) for key, runs in table.get(section, {}).items()
                 for run in runs if order[run["since"]] <= at <= order[run["until"]]}
        out[section] = [found[k] for k in sorted(found)] if section in LIST_SECTIONS else dict(sorted(found.items()))
    return out


def _as_of(run: dict[str, Any], version: str) -> Any:
    """A run's value for a release inside it. Its file:line evidence was read in the run's first release: when
    that is another release, ``evidence_from`` names it, so a reviewer opens the right wheel."""
    value = run["value"]
    if run["since"] != version and isinstance(value, dict):
        return {**value, "evidence_from": run["since"]}
    return value


def option_runs(table: dict[str, Any]) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """Option string → [(since, until, flag)] over every release read: for removed, renamed and too-new flags."""
    out: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    for runs in table.get("flags", {}).values():
        for run in runs:
            for option in run["value"]["options"]:
                out.setdefault(option, []).append((run["since"], run["until"], run["value"]))
    order = release_index(table)
    for runs in out.values():
        runs.sort(key=lambda r: order[r[0]])
    return out
