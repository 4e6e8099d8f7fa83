"""The walk's shortcuts change nothing: a compiled condition gives what ``evaluate`` gives, a fact in
``blocked_by`` really keeps its condition from holding, and a lint over the pruned trees finds and leaves
unchecked exactly what the whole trees do (doctor.playbook.conditions.compile_condition, blocked_by;
doctor.playbook.engine.Tree)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from doctor.facts import Facts
from doctor.playbook.conditions import blocked_by, compile_condition, evaluate
from doctor.playbook.engine import Tree, _every
from doctor.playbook.loader import load_playbooks

KEYS = ("a.x", "a.y", "b.z", "b.w")
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "fp8", "qwen3", "1"]),
                   st.lists(st.sampled_from(["fp8", "qwen3"]), max_size=2))
WORD_OPS = ("exists", "missing", "set", "unset", "is_true", "is_false", "empty", "nonempty", "truthy", "all_zero")
VALUE_OPS = ("eq", "ne", "gt", "ge", "lt", "le", "in", "not_in", "contains", "not_contains", "matches",
             "version_lt", "version_ge", "version_le")
OPERANDS = st.one_of(VALUES, st.sampled_from(["0.5.4", "q.*", ["fp8", "qwen3"], "fp"]))


def _leaf() -> st.SearchStrategy[dict[str, Any]]:
    word = st.builds(lambda k, op: {"fact": k, "op": op}, st.sampled_from(KEYS), st.sampled_from(WORD_OPS))
    value = st.builds(lambda k, op, v: {"fact": k, "op": op, "value": v}, st.sampled_from(KEYS),
                      st.sampled_from(VALUE_OPS), OPERANDS)
    ref = st.builds(lambda k, op, r: {"fact": k, "op": op, "ref": r}, st.sampled_from(KEYS),
                    st.sampled_from(VALUE_OPS), st.sampled_from(KEYS))
    return st.one_of(word, value, ref)


CONDITIONS = st.recursive(_leaf(), lambda inner: st.one_of(
    st.builds(lambda parts: {"all": parts}, st.lists(inner, max_size=3)),
    st.builds(lambda parts: {"any": parts}, st.lists(inner, max_size=3)),
    st.builds(lambda part: {"not": part}, inner)), max_leaves=8)
FACTS = st.dictionaries(st.sampled_from(KEYS), VALUES)


def _facts(known: dict[str, Any]) -> Facts:
    facts = Facts()
    for key, value in known.items():
        facts.set(key, value, f"test {key}", observed=key.startswith("b."))
    return facts


@settings(max_examples=400, deadline=None)
@given(CONDITIONS, FACTS)
def test_compiled_condition_gives_what_evaluate_gives(cond: dict[str, Any], known: dict[str, Any]) -> None:
    facts = _facts(known)
    assert compile_condition(cond)(facts) == evaluate(cond, facts)


@settings(max_examples=400, deadline=None)
@given(CONDITIONS, FACTS)
def test_an_absent_blocking_fact_keeps_the_condition_from_holding(cond: dict[str, Any],
                                                                  known: dict[str, Any]) -> None:
    facts = _facts(known)
    outcome = evaluate(cond, facts)
    for key in blocked_by(cond) - set(known):
        assert outcome.value is False or (outcome.value is None and key in outcome.missing), (key, outcome)


def test_blocked_by_reads_kleene_logic() -> None:
    # any: only a fact every part needs; not: turns "absent makes it true" into "absent makes it false"
    assert blocked_by({"any": [{"fact": "a.x", "op": "set"}, {"fact": "a.y", "op": "set"}]}) == frozenset()
    assert blocked_by({"all": [{"fact": "a.x", "op": "set"}, {"fact": "a.y", "op": "gt", "value": 1}]}) \
        == {"a.x", "a.y"}
    assert blocked_by({"not": {"fact": "a.x", "op": "missing"}}) == {"a.x"}
    assert blocked_by({"not": {"fact": "a.x", "op": "exists"}}) == frozenset()
    assert blocked_by({"fact": "a.x", "op": "eq", "ref": "a.y"}) == {"a.x"}  # the ref is named only if a.x is known


LINTS = [
    ({"command": "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --enable-prefix-caching --max-model-len 32768"},
     None),
    ({"command": "vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --kv-cache-dtype fp8",
      "engine_version": "0.13.0", "config": "example:seed-mla-moe", "gpu": "H200:8"}, None),
    ({"command": "python3 -m sglang.launch_server --model-path Qwen/Qwen3.6-27B --tp-size 2 --quantization fp8",
      "engine_version": "0.5.4", "config": "example:seed-gqa-27b", "gpu": "H100:1"}, None),
    ({"command": "vllm serve m --max-model-len 131072 --tool-call-parser qwen25", "config": "example:seed-dsa-moe",
      "gpu": "RTX 4090:2"}, "reasoning-leak"),
]


@pytest.mark.parametrize(("given_inputs", "symptom"), LINTS)
def test_a_lint_over_the_pruned_trees_is_the_lint_over_the_whole_trees(
        given_inputs: dict[str, Any], symptom: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from doctor.commands.lint import lint
    from doctor.sources.offline import OfflineInputs

    symptoms = [symptom] if symptom else []
    for _ in range(Tree.AS_LOADED):  # the first walks read the trees as loaded
        lint(OfflineInputs(**given_inputs), symptoms=symptoms)
    pruned = lint(OfflineInputs(**given_inputs), symptoms=symptoms).to_dict()
    original = Tree.for_run
    monkeypatch.setattr(Tree, "for_run", lambda self, facts, unreachable: self.steps)
    whole = lint(OfflineInputs(**given_inputs), symptoms=symptoms).to_dict()
    monkeypatch.setattr(Tree, "for_run", lambda self, facts, unreachable: None)
    as_loaded = lint(OfflineInputs(**given_inputs), symptoms=symptoms).to_dict()
    assert pruned == whole == as_loaded
    assert pruned["playbooks_run"]  # the trees did run: the comparison is not between two empty walks
    monkeypatch.setattr(Tree, "for_run", original)
    tree = load_playbooks().playbooks["launch-failure"].steps
    assert tree.for_run(Facts(), ("log",)) is not None  # walked AS_LOADED times before: compiled and pruned


def test_lint_prunes_the_nodes_that_need_a_server() -> None:
    """The pruning is real: a lint (no server log, no /metrics) walks far fewer of launch-failure's nodes, and
    none it leaves out could have held."""
    from doctor.commands.lint import UNREACHABLE
    from doctor.derive import derive_all
    from doctor.sources.offline import OfflineInputs, gather

    facts = gather(OfflineInputs(command=LINTS[0][0]["command"])).facts
    derive_all(facts)
    tree = load_playbooks().playbooks["launch-failure"].steps
    for _ in range(Tree.AS_LOADED):  # the first walks read the nodes as loaded (None), or it was walked before
        tree.for_run(facts, UNREACHABLE)
    kept = tree.for_run(facts, UNREACHABLE)
    assert kept is not None
    assert len(list(_every(kept))) < len(list(_every(tree.steps))) / 2
    _left_out_could_not_hold(tree.steps, kept, facts, UNREACHABLE)


def _left_out_could_not_hold(whole: tuple[Any, ...], kept: tuple[Any, ...], facts: Facts,
                             unreachable: tuple[str, ...]) -> None:
    by_node = {id(step.node): step for step in kept}
    for step in whole:
        if id(step.node) in by_node:
            _left_out_could_not_hold(step.then, by_node[id(step.node)].then, facts, unreachable)
            continue
        outcome = evaluate(step.node["when"], facts)
        beyond = [k for k in outcome.missing if any(k == p or k.startswith(p + ".") for p in unreachable)]
        assert outcome.value is False or (outcome.value is None and beyond), step.node
