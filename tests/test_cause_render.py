"""Every cause in the catalog renders in words: no unfilled template field (``<fit.kv_bytes_per_gpu_per_5pct?>``).

Data-driven, so causes added to playbooks/causes.yaml (and trees added to any playbook) are covered without
editing this file. For every path of every playbook tree that reaches a cause, the test keeps only the facts
that path's conditions *guarantee* are known when the cause fires (a condition that holds has read its
facts; ``any`` guarantees only what all its branches read), fills them with real values gathered from the
real fixtures in fixtures (metrics scrapes, model configs, the seed's launch commands) and renders
the cause's title, what, why and every engine's fix. A field whose fact the path does not guarantee must
carry an ``or:`` fallback that says in words what is unknown — the bug this catches: ``check --metrics
vllm_2.prom`` printed ``every 0.05 is about <fit.kv_bytes_per_gpu_per_5pct?> of KV per GPU``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
import seed_commands
from conftest import ROOT, SHARED_FIXTURES, requires_shared

from doctor.facts import Facts
from doctor.playbook.engine import _finding, render_fix
from doctor.playbook.loader import load_playbooks
from doctor.playbook.template import render

UNFILLED = re.compile(r"<[a-z][a-z0-9_.]*\?>")
PBSET = load_playbooks()


def _leaf(cond: dict[str, Any], holds: bool) -> frozenset[str]:
    """One test a path relies on, and whether it held: the facts it read are known, with values that pass it."""
    return frozenset({json.dumps([cond, holds], sort_keys=True)})


def _guaranteed(cond: dict[str, Any]) -> list[frozenset[str]]:
    """The ways ``cond`` can come out true, each as the leaf tests it then rests on (three-valued logic: an
    unknown fact never makes a test true). ``any`` is true through any one branch: one way per branch."""
    if "all" in cond:
        return _product([_guaranteed(c) for c in cond["all"]])
    if "any" in cond:
        return [way for c in cond["any"] for way in _guaranteed(c)]
    if "not" in cond:
        return _guaranteed_if_false(cond["not"])
    return [frozenset()] if cond["op"] == "missing" else [_leaf(cond, True)]


def _guaranteed_if_false(cond: dict[str, Any]) -> list[frozenset[str]]:
    """The ways ``cond`` can come out false, each as the leaf tests it then rests on."""
    if "all" in cond:  # one part false
        return [way for c in cond["all"] for way in _guaranteed_if_false(c)]
    if "any" in cond:  # every part false
        return _product([_guaranteed_if_false(c) for c in cond["any"]])
    if "not" in cond:
        return _guaranteed(cond["not"])
    return [frozenset()] if cond["op"] == "exists" else [_leaf(cond, False)]


def _keys(way: frozenset[str]) -> list[str]:
    keys = set()
    for leaf in way:
        cond, _ = json.loads(leaf)
        keys.update([cond["fact"], *([cond["ref"]] if "ref" in cond else [])])
    return sorted(keys)


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


def _explain_cases() -> list[tuple[str, int, frozenset[str]]]:
    """lint's flag explanations (doctor/engines/explain.yaml): each case's text, with what its `when` guarantees,
    the flag's own fact (the flag is in the command) and the engine (a command was read)."""
    from doctor.commands.lint import EXPLAIN_PATH
    from doctor.yamlsafe import load_packaged

    out = []
    for key, entry in load_packaged(EXPLAIN_PATH).items():
        for index, case in enumerate(entry.get("cases", ())):
            for way in _guaranteed(case["when"]) if "when" in case else [frozenset()]:
                present = _leaf({"fact": key, "op": "exists"}, True) | _leaf({"fact": "launch.engine", "op": "exists"}, True)
                out.append((key, index, way | present))
    return out


EXPLAIN_CASES = _explain_cases()


@cache
def _real_scenarios() -> tuple[Facts, ...]:
    """The facts of real inputs, one scenario each: every scrape, config (alone and with GPUs), GPU, seed
    command (alone and with a config and GPUs), server log and nvidia-smi reading — the shapes in which users
    hand inputs over."""
    from doctor.commands.check import CheckOptions, run_check
    from doctor.sources.offline import OfflineInputs

    configs = sorted((SHARED_FIXTURES / "configs").glob("*.json"))
    seeds = [v for k, v in vars(seed_commands).items() if k.startswith("SEED_") and isinstance(v, str)]
    scenarios = [OfflineInputs(metrics=str(p)) for p in sorted((SHARED_FIXTURES / "metrics").glob("*.prom"))]
    scenarios += [OfflineInputs(config=str(c)) for c in configs]
    scenarios += [OfflineInputs(config=str(c), gpu="H200:8") for c in configs]
    scenarios += [OfflineInputs(gpu=g) for g in ("H200:8", "B300:8", "RTX 4090:2", "MI300X:8")]
    scenarios += [OfflineInputs(command=cmd) for cmd in seeds]
    scenarios += [OfflineInputs(command=cmd, config=str(configs[0]), gpu="B300:8") for cmd in seeds]
    logs = sorted((SHARED_FIXTURES / "live").glob("*/*.log")) + sorted((SHARED_FIXTURES / "live").glob("*/*/*.log"))
    logs += sorted((ROOT / "fixtures" / "logs" / "public").glob("*.log"))  # cited public excerpts (SOURCES.md)
    scenarios += [OfflineInputs(log=str(log)) for log in logs]
    readings = [p for p in sorted((SHARED_FIXTURES / "nvml").iterdir())  # real nvidia-smi -q -x / table output
                if p.suffix in (".xml", ".txt") and ("nvidia-smi" in p.name or p.name.startswith("telegraf"))]
    scenarios += [OfflineInputs(nvidia_smi=str(p)) for p in readings]
    return tuple(run_check(CheckOptions(offline=inputs)).facts for inputs in scenarios)


#: Facts one derivation sets together, for keys no real fixture produces (they need a GPU host, a second scrape
#: or an active probe): what the path guarantees, the derivation guarantees too.
DERIVED_TOGETHER = {
    "capacity.ratio": ("capacity.measured_tokens", "capacity.measured_source",  # doctor/derive/analyzers.py derive_capacity
                       "capacity.expected_tokens"),
    "gpu.util_max": ("gpu.util",),  # doctor/derive/analyzers.py derive_gpu_balance
    "metrics.running_per_ep_rank": ("metrics.running", "launch.ep"),  # doctor/derive/analyzers.py derive_ep_load
    "launch.misaligned_chunks": ("engine.block_size",),  # doctor/derive/analyzers.py derive_misaligned_chunks
}


def _real_facts(way: frozenset[str]) -> Facts:
    """The facts a path's tests read, with real values that pass them, plus every fact that came with them in
    every real scenario where the test held (a config with model.moe true gives model.moe.experts; a metrics
    scrape gives no fit.* at all). A test no real scenario passes falls back to the scenarios that know its fact."""
    from doctor.playbook.conditions import evaluate

    facts = Facts()
    for leaf in sorted(way):
        cond, holds = json.loads(leaf)
        keys = [cond["fact"], *([cond["ref"]] if "ref" in cond else [])]
        together = list(DERIVED_TOGETHER.get(cond["fact"], ()))
        if cond["fact"] == "log.causes" and cond["op"] == "contains" and holds:
            # the log parser sets the line that names a cause with it (doctor/logs/parse.py, log.seen.<cause>)
            together.append(f"log.seen.{cond['value'].replace('-', '_')}")
        for key in [*keys, *together]:
            having = [f for f in _real_scenarios() if key in f]
            passing = [f for f in having if key not in keys or evaluate(cond, f).value is holds] or having
            if not passing:
                # No real fixture produces this key, yet the path guarantees it: its presence, not its value,
                # is what matters here, so it is marked as such; nothing is assumed to come with it.
                facts.set_default(key, f"[{key}]", "scenario: no real value")
                continue
            facts.set_default(key, passing[0].get(key), passing[0].fact(key).source)
            for fact in passing[0]:
                if all(fact.key in other for other in passing):
                    facts.set_default(fact.key, fact.value, fact.source)
    return facts


def test_every_cause_is_reached_by_a_tree_or_renders_on_its_own() -> None:
    reached = {cause for cause, _, _ in CASES}
    for cause_id in sorted(set(PBSET.causes) - reached):
        cause = PBSET.causes[cause_id]
        for text in (cause.title, cause.what, cause.why, render_fix(cause, Facts())):
            assert not UNFILLED.search(render(text, Facts())), (cause_id, text)


@requires_shared
@pytest.mark.parametrize(("cause_id", "symptom", "known"), CASES,
                         ids=[f"{c}@{s}:{'+'.join(_keys(k))}" for c, s, k in CASES])
def test_cause_renders_with_only_the_facts_its_path_guarantees(cause_id: str, symptom: str,
                                                              known: frozenset[str]) -> None:
    facts = _real_facts(known)
    cause = PBSET.causes[cause_id]
    playbook = PBSET.playbooks[symptom]
    engines = [None, *sorted(k for k in cause.fix if k != "any")]
    for engine in engines:
        if engine:
            facts.set("launch.engine", engine, "scenario: each engine's fix")
        # The engine's own finding builder (a cause named by the server log alone reads its log line instead).
        finding = _finding(cause, {"cause": cause_id}, playbook, [], facts, PBSET.registry)
        texts = {"title": finding.title, "what": finding.what, "why": finding.why, "fix": finding.fix}
        for field, text in texts.items():
            gaps = UNFILLED.findall(text)
            assert not gaps, (f"{cause_id} ({symptom}) {field} needs {gaps} but its conditions only guarantee "
                              f"{_keys(known)}: add an or: fallback that says so in words — {text!r}")


@requires_shared
@pytest.mark.parametrize(("key", "index", "known"), EXPLAIN_CASES,
                         ids=[f"{k}#{i}:{'+'.join(_keys(w))}" for k, i, w in EXPLAIN_CASES])
def test_flag_explanation_renders_with_only_the_facts_its_case_guarantees(key: str, index: int,
                                                                          known: frozenset[str]) -> None:
    from doctor.commands.lint import EXPLAIN_PATH
    from doctor.yamlsafe import load_packaged

    text = render(load_packaged(EXPLAIN_PATH)[key]["cases"][index]["why"], _real_facts(known))
    gaps = UNFILLED.findall(text)
    assert not gaps, f"explain.yaml {key} case {index} needs {gaps} but only {_keys(known)} are sure: {text!r}"


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
