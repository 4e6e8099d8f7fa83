"""The judged sample of the error catalogs' mapping (tools/mapping_sample.yaml, issue 22 point 2): the verdicts were
given to the mapping the rules give today, so a rule that moves a judged template fails here until it is judged
again; the random stratum is the one the seed draws; the strata and verdicts use the documented words."""

from __future__ import annotations

import pytest

from tools.catalog_gen.mapping_sample import ROUTES, VERDICT_KINDS, draw, load, moved


@pytest.fixture(scope="module")
def doc() -> dict:
    return load()


def test_every_judged_template_maps_as_it_was_judged(doc: dict) -> None:
    assert moved(doc) == []


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_random_stratum_is_the_seeds_draw(doc: dict, engine: str) -> None:
    drawn = [t for t, i in doc["templates"].items() if t.startswith(engine + "-") and i["stratum"] == "random"]
    assert drawn == draw(engine, 60, 22)


def test_verdicts_routes_and_strata_use_the_documented_words(doc: dict) -> None:
    for tid, item in doc["templates"].items():
        assert item["verdict"] in VERDICT_KINDS and item["route"] in ROUTES, tid
        assert item["stratum"] in ("random", "message", "stage") and item["why"], tid
        if "before" in item:
            assert item["before"]["verdict"] in VERDICT_KINDS and item["before"]["route"] in ROUTES, tid
        # a template no longer read as a start-up refusal maps to no cause
        assert (item["route"] == "not-startup") == (item["cause"] is None and item["route"] != "unmapped"), tid
