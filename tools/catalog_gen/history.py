"""One table per engine instead of one catalog per release: since/until for every flag, parser, metric and default.

Every release read yields a full catalog (``gen_catalog.generate``); consecutive releases share nearly all of it,
so sixty copies would be sixty near-identical files. The history table keeps, per item (a flag by its first
option, a parser or metric by name, a parser-behaviour or default setting by key), the runs of consecutive
releases in which the item was the same, as ``{"since", "until", "value"}``. "The same" ignores evidence —
file:line, help text, argument group — which moves with every edit of the engine's source; each run keeps the
full value, evidence included, of the first release in the run (the release that introduced that form).

``doctor.engines.catalog`` rebuilds any release's catalog from the table (``view``): for the first release read,
byte for byte what the generator produced; for later releases the same flags, choices, defaults and parser
names, with file:line evidence from the release each one took its form in.
"""

from __future__ import annotations

import json
from typing import Any

from doctor.engines.history import DICT_SECTIONS, LIST_SECTIONS, SCHEMA

#: keys that record where a fact was read (or how it is documented), not what the engine does
EVIDENCE_KEYS = frozenset({"source", "field_source", "values_source", "help", "group", "allow_abbrev_source",
                           "underscores_source", "choices_from", "evidence_from"})

_ABSENT = object()
RELEASE_KEYS = ("version", "wheel", "sha256", "generated")


def semantic(value: Any) -> Any:
    """``value`` without its evidence keys, at any depth: what two releases must share to be "the same"."""
    if isinstance(value, dict):
        return {k: semantic(v) for k, v in value.items() if k not in EVIDENCE_KEYS}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def _same(section: str, key: str, before: Any, now: Any) -> bool:
    """Whether an item is unchanged between two consecutive releases. A parser registry entry's value is only
    its file:line, and so are the parser section's ``*_source`` settings: there presence is what counts."""
    if section in ("tool_parsers", "reasoning_parsers") or key in EVIDENCE_KEYS:
        return True
    return semantic(before) == semantic(now)


def item_key(section: str, item: dict[str, Any]) -> str:
    key = item[LIST_SECTIONS[section]]
    return key[0] if isinstance(key, list) else key


def items(section: str, catalog: dict[str, Any]) -> dict[str, Any]:
    body = catalog.get(section, {} if section in DICT_SECTIONS else [])
    if section in LIST_SECTIONS:
        return {item_key(section, item): item for item in body}
    return dict(body)


def build(engine: str, reads: list[dict[str, Any]]) -> dict[str, Any]:
    """The history table of ``engine`` from its releases' catalogs, given oldest first."""
    releases = [{k: r["header"][k] for k in RELEASE_KEYS} for r in reads]
    sections: dict[str, dict[str, list[dict[str, Any]]]] = {s: {} for s in (*DICT_SECTIONS, *LIST_SECTIONS)}
    previous: dict[str, dict[str, Any]] = {s: {} for s in sections}
    for index, catalog in enumerate(reads):
        version = catalog["header"]["version"]
        for section, table in sections.items():
            now = items(section, catalog)
            for key, value in now.items():
                runs = table.setdefault(key, [])
                before = previous[section].get(key, _ABSENT)
                if before is not _ABSENT and runs and runs[-1]["until"] == reads[index - 1]["header"]["version"] \
                        and _same(section, key, before, value):
                    runs[-1]["until"] = version
                else:
                    runs.append({"since": version, "until": version, "value": value})
            previous[section] = now
    return {
        "header": {
            "schema": SCHEMA,
            "engine": engine,
            "generator": f"python tools/gen_catalog.py --all --engine {engine}",
            "read": f"every release listed for {engine} in tools/catalog_versions.txt: "
                    f"{len(releases)} releases, {releases[0]['version']} to {releases[-1]['version']}",
            "catalog_schema": reads[0]["header"]["schema"],
        },
        "releases": releases,
        **{s: dict(sorted(t.items())) for s, t in sections.items()},
    }


def dump(table: dict[str, Any]) -> str:
    """Compact but diffable: one line per run of one item."""
    lines = ["{"]
    head = [f' "header": {json.dumps(table["header"], sort_keys=True, ensure_ascii=False)},',
            ' "releases": [']
    head += [f"  {json.dumps(r, sort_keys=True)}," for r in table["releases"]]
    head[-1] = head[-1].rstrip(",")
    lines += head + [" ],"]
    names = [s for s in table if s not in ("header", "releases")]
    for n, section in enumerate(sorted(names)):
        lines.append(f" {json.dumps(section)}: {{")
        entries = list(table[section].items())
        for i, (key, runs) in enumerate(entries):
            lines.append(f"  {json.dumps(key, ensure_ascii=False)}: [")
            lines += [f"   {json.dumps(run, sort_keys=True, ensure_ascii=False)}" + ("," if j < len(runs) - 1 else "")
                      for j, run in enumerate(runs)]
            lines.append("  ]" + ("," if i < len(entries) - 1 else ""))
        lines.append(" }" + ("," if n < len(names) - 1 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"
