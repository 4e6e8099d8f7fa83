"""semantics.yaml names only real things: dests that exist in the catalogs, facts from docs/facts.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from doctor.engines.catalog import available, load_catalog
from doctor.engines.semantics import load_semantics

ROOT = Path(__file__).resolve().parents[1]


def dests_in(cases: list[dict[str, Any]]) -> set[str]:
    found: set[str] = set()

    def cond(c: dict[str, Any]) -> None:
        for sub in c.get("any", []) + c.get("all", []):
            cond(sub)
        if str(c.get("fact", "")).startswith("launch.flags."):  # a flag's value, by its dest
            found.add(c["fact"].removeprefix("launch.flags."))

    for case in cases:
        for key in ("from", "default"):
            if key in case:
                found.update(case[key] if isinstance(case[key], list) else [case[key]])
        if "json" in case:
            found.add(case["json"][0])
        if "when" in case:
            cond(case["when"])
    return found


def all_dests(engine: str) -> set[str]:
    return {f.dest for v in available(engine) for f in load_catalog(engine, v).flags}


def test_every_dest_exists_in_some_catalog() -> None:
    sem = load_semantics()
    for engine in ("vllm", "sglang"):
        known = all_dests(engine)
        for key, rule in sem["facts"].items():
            missing = dests_in(rule.get(engine, [])) - known
            assert not missing, f"{key}: {engine} has no {missing}"
        for item in sem["equivalents"]:
            assert item[engine] in known, item


def test_core_dests_exist_in_the_newest_catalogs() -> None:
    sem = load_semantics()
    for engine in ("vllm", "sglang"):
        newest = {f.dest for f in load_catalog(engine).flags}
        for key in ("launch.tp", "launch.dp", "launch.pp", "launch.kv_cache_dtype", "launch.mem_fraction",
                    "launch.max_num_seqs", "launch.max_model_len", "launch.tool_call_parser"):
            first = sem["facts"][key][engine][0]["from"]
            assert first in newest, (engine, key)


def test_fact_keys_are_documented() -> None:
    documented = set(re.findall(r"`(launch\.[a-z_]+)`", (ROOT / "docs" / "facts.md").read_text()))
    for key in load_semantics()["facts"]:
        assert key in documented, key


def test_folk_flags_are_in_no_catalog() -> None:
    for option, folk in load_semantics()["folk_flags"].items():
        for engine in ("vllm", "sglang"):
            for version in available(engine):
                assert option not in load_catalog(engine, version).options(), (option, engine, version)
        assert folk["means"] in all_dests(folk["engine"])
