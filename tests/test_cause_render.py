"""Every cause in the catalog renders in words: no unfilled template field (``<fit.kv_bytes_per_gpu_per_5pct?>``).

Data-driven, so causes added to playbooks/causes.yaml (and trees added to any playbook) are covered without
editing this file. For every path of every playbook tree that reaches a cause, the test keeps only the facts
that path's conditions *guarantee* are known when the cause fires (a condition that holds has read its
facts; ``any`` guarantees only what all its branches read), fills them with real values gathered from the
real fixtures in ../shared/fixtures (metrics scrapes, model configs, the seed's launch commands) and renders
the cause's title, what, why and every engine's fix. A field whose fact the path does not guarantee must
carry an ``or:`` fallback that says in words what is unknown — the bug this catches: ``check --metrics
vllm_2.prom`` printed ``every 0.05 is about <fit.kv_bytes_per_gpu_per_5pct?> of KV per GPU``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
import seed_commands
from conftest import SHARED_FIXTURES, requires_shared

from doctor.facts import Facts
from doctor.playbook.engine import render_fix
from doctor.playbook.loader import load_playbooks
from doctor.playbook.template import render

UNFILLED = re.compile(r"<[a-z][a-z0-9_.]*\?>")
PBSET = load_playbooks()


def _guaranteed(cond: dict[str, Any]) -> list[frozenset[str]]:
    """The ways ``cond`` can come out true, each as the fact keys it then has read (three-valued logic: an
    unknown fact never makes a test true). ``any`` is true through any one branch: one way per branch."""
    if "all" in cond:
        return _product([_guaranteed(c) for c in cond["all"]])
    if "any" in cond:
        return [way for c in cond["any"] for way in _guaranteed(c)]
    if "not" in cond:
        return _guaranteed_if_false(cond["not"])
    if cond["op"] == "missing":
        return [frozenset()]
    return [frozenset({cond["fact"], *([cond["ref"]] if "ref" in cond else [])})]


def _guaranteed_if_false(cond: dict[str, Any]) -> list[frozenset[str]]:
    """The ways ``cond`` can come out false, each as the fact keys it then has read."""
    if "all" in cond:  # one part false
        return [way for c in cond["all"] for way in _guaranteed_if_false(c)]
    if "any" in cond:  # every part false
        return _product([_guaranteed_if_false(c) for c in cond["any"]])
    if "not" in cond:
        return _guaranteed(cond["not"])
    if cond["op"] == "exists":
        return [frozenset()]
    return [frozenset({cond["fact"], *([cond["ref"]] if "ref" in cond else [])})]


def _product(parts: list[list[frozenset[str]]]) -> list[frozenset[str]]:
    ways = [frozenset()]
    for options in parts:
        ways = list(dict.fromkeys(w | o for w in ways for o in options))
    return ways


def _paths(nodes: list[dict[str, Any]], known: frozenset[str] = frozenset()) -> Iterator[tuple[str, frozenset[str]]]:
    for node in nodes:
        for way in _guaranteed(node["when"]) if "when" in node else [frozenset()]:
            if "cause" in node:
                yield node["cause"], known | way
            else:
                yield from _paths(node["then"], known | way)


def _cases() -> list[tuple[str, str, frozenset[str]]]:
    cases: dict[tuple[str, frozenset[str]], str] = {}
    for playbook in PBSET.playbooks.values():
        for cause, known in _paths(playbook.tree):
            cases.setdefault((cause, known), playbook.symptom)
    return [(cause, symptom, known) for (cause, known), symptom in cases.items()]


CASES = _cases()


@cache
def _real_scenarios() -> tuple[Facts, ...]:
    """The facts of real inputs, one scenario each: every scrape, config (alone and with GPUs), GPU and seed
    command (alone and with a config and GPUs) — the shapes in which users hand inputs over."""
    from doctor.check import CheckOptions, run_check
    from doctor.sources import OfflineInputs

    configs = sorted((SHARED_FIXTURES / "configs").glob("*.json"))
    seeds = [v for k, v in vars(seed_commands).items() if k.startswith("SEED_") and isinstance(v, str)]
    scenarios = [OfflineInputs(metrics=str(p)) for p in sorted((SHARED_FIXTURES / "metrics").glob("*.prom"))]
    scenarios += [OfflineInputs(config=str(c)) for c in configs]
    scenarios += [OfflineInputs(config=str(c), gpu="H200:8") for c in configs]
    scenarios += [OfflineInputs(gpu=g) for g in ("H200:8", "B300:8", "RTX 4090:2", "MI300X:8")]
    scenarios += [OfflineInputs(command=cmd) for cmd in seeds]
    scenarios += [OfflineInputs(command=cmd, config=str(configs[0]), gpu="B300:8") for cmd in seeds]
    return tuple(run_check(CheckOptions(offline=inputs)).facts for inputs in scenarios)


#: Facts one derivation sets together, for keys no real fixture produces (they need a GPU host, a second scrape
#: or an active probe): what the path guarantees, the derivation guarantees too.
DERIVED_TOGETHER = {
    "capacity.ratio": ("capacity.measured_tokens", "capacity.expected_tokens"),  # doctor/derive.py derive_capacity
    "metrics.running_per_ep_rank": ("metrics.running", "launch.ep"),  # doctor/derive.py derive_ep_load
    "launch.misaligned_chunks": ("engine.block_size",),  # doctor/derive.py derive_misaligned_chunks
}


def _real_facts(known: frozenset[str]) -> Facts:
    """``known`` with real values, plus every fact that came with one of them in every real scenario that had it
    (a config read gives model.label with model.attention; a metrics scrape gives no fit.* at all)."""
    facts = Facts()
    keys = set(known).union(*(DERIVED_TOGETHER.get(k, ()) for k in known))
    for key in sorted(keys):
        having = [f for f in _real_scenarios() if key in f]
        if not having:
            # No real fixture produces this key, yet the path guarantees it: its presence, not its value, is
            # what matters here, so it is marked as such; nothing is assumed to come with it.
            facts.set(key, f"[{key}]", "scenario: no real value")
            continue
        facts.set(key, having[0].get(key), having[0].fact(key).source)
        for fact in having[0]:
            if fact.key not in facts and all(fact.key in other for other in having):
                facts.set(fact.key, fact.value, fact.source)
    return facts


def test_every_cause_is_reached_by_a_tree_or_renders_on_its_own() -> None:
    reached = {cause for cause, _, _ in CASES}
    for cause_id in sorted(set(PBSET.causes) - reached):
        cause = PBSET.causes[cause_id]
        for text in (cause.title, cause.what, cause.why, render_fix(cause, Facts())):
            assert not UNFILLED.search(render(text, Facts())), (cause_id, text)


@requires_shared
@pytest.mark.parametrize(("cause_id", "symptom", "known"), CASES,
                         ids=[f"{c}@{s}:{'+'.join(sorted(k))}" for c, s, k in CASES])
def test_cause_renders_with_only_the_facts_its_path_guarantees(cause_id: str, symptom: str,
                                                              known: frozenset[str]) -> None:
    facts = _real_facts(known)
    cause = PBSET.causes[cause_id]
    engines = [None, *sorted(k for k in cause.fix if k != "any")]
    for engine in engines:
        if engine:
            facts.set("launch.engine", engine, "scenario: each engine's fix")
        texts = {"title": render(cause.title, facts), "what": render(cause.what, facts),
                 "why": render(cause.why, facts), "fix": render_fix(cause, facts)}
        for field, text in texts.items():
            gaps = UNFILLED.findall(text)
            assert not gaps, (f"{cause_id} ({symptom}) {field} needs {gaps} but its conditions only guarantee "
                              f"{sorted(known)}: add an or: fallback that says so in words — {text!r}")


@requires_shared
@pytest.mark.parametrize("scrape", ["vllm_1", "vllm_2", "vllm_3", "sglang_1", "sglang_2", "sglang_3"])
def test_real_scrapes_print_no_unfilled_field_and_keep_small_percentages(scrape: str) -> None:
    from conftest import run_cli

    path = SHARED_FIXTURES / "metrics" / f"{scrape}.prom"
    for args in ((), ("-v",), ("--format", "markdown"), ("--format", "json")):
        result = run_cli("check", "--metrics", str(path), *args, env={"COLUMNS": "100"})
        assert result.returncode in (0, 1), result.stderr
        assert not UNFILLED.search(result.stdout), (args, UNFILLED.findall(result.stdout))
        assert "only 0%" not in result.stdout


@requires_shared
def test_vllm_2_says_the_unknown_kv_size_in_words() -> None:
    from conftest import run_cli

    result = run_cli("check", "--metrics", str(SHARED_FIXTURES / "metrics" / "vllm_2.prom"), "-v",
                     env={"COLUMNS": "100"})
    text = " ".join(result.stdout.split())
    assert "KV usage is only 0.46%" in text  # 0.004618937644341847, not "0%"
    assert "every 0.05 is about 5% of each GPU's memory" in text and "pass --gpu" in text
