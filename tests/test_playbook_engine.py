"""The playbook machinery itself: conditions in three-valued logic, tree walking, evidence chains,
unknowns, templated fixes, and validation errors that name file, line and key.

The trees here are small ones written for these tests; the shipped trees are tested per cause in
test_playbook_causes.py.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from support.playbook_dirs import cause_files, write_dir

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.playbook.conditions import evaluate
from doctor.playbook.engine import diagnose
from doctor.playbook.loader import load_playbooks, validate_dirs
from doctor.playbook.template import render
from doctor.versions import version_key

CAUSES = cause_files(yaml.safe_load("""
moe-without-ep:
  title: MoE model on TP {launch.tp} without expert parallelism
  severity: warning
  what: Experts are sliced across {launch.tp} GPUs.
  why: TP slices every expert; EP places them whole.
  fix:
    vllm: add --enable-expert-parallel
    sglang: add --ep-size {launch.tp}
  ref: "seed: MoE and Expert Parallelism"
kv-cache-exhausted:
  title: KV cache exhausted
  severity: critical
  what: usage {metrics.kv_usage|pct}
  why: full
  fix: {any: "add GPUs"}
  ref: "seed: KV Cache Sizing"
unknown-flag:
  title: unknown flags
  severity: critical
  what: "{launch.unknown_flags|each:<flag> (did you mean <nearest>?)}"
  why: argparse exits
  fix: {any: "rename them"}
  ref: "engine catalogs"
"""))

TREE = """
symptom: memory-filling-fast
title: KV fills fast
applies_when: {fact: model.moe, op: exists}
tree:
  - when:
      all:
        - {fact: model.moe, op: is_true}
        - {fact: launch.tp, op: gt, value: 1}
        - {not: {fact: launch.expert_parallel, op: is_true}}
    cause: moe-without-ep
  - when:
      all:
        - {fact: metrics.kv_usage, op: ge, value: 0.95}
        - {fact: metrics.preemptions_total, op: gt, value: 0}
    cause: kv-cache-exhausted
"""


def _dir(tmp_path: Path, files: dict[str, str]) -> Path:
    return write_dir(tmp_path / "pb", {name: textwrap.dedent(text) for name, text in files.items()})


def _facts(**values: object) -> Facts:
    facts = Facts()
    for key, value in values.items():
        facts.set(key.replace("__", "."), value, f"test {key}", observed=key.startswith("metrics"))
    return facts


def _only_user(tmp_path: Path, files: dict[str, str]):
    """A playbook set of this directory alone (no built-ins), to test the machinery in isolation."""
    return load_playbooks([_dir(tmp_path, files)], builtin=False)


def test_three_valued_all_any_not() -> None:
    facts = _facts(a=1, b=None)
    known_false = {"fact": "a", "op": "gt", "value": 5}
    unknown = {"fact": "zzz", "op": "gt", "value": 5}
    true = {"fact": "a", "op": "eq", "value": 1}
    assert evaluate({"all": [true, unknown]}, facts).value is None
    assert evaluate({"all": [known_false, unknown]}, facts).value is False
    assert evaluate({"any": [true, unknown]}, facts).value is True
    assert evaluate({"any": [known_false, unknown]}, facts).value is None
    assert evaluate({"not": unknown}, facts).value is None
    assert evaluate({"fact": "zzz", "op": "missing"}, facts).value is True
    assert evaluate({"fact": "b", "op": "unset"}, facts).value is True
    assert evaluate({"fact": "b", "op": "missing"}, facts).value is False
    # a type mismatch is a plain "no", never an exception
    assert evaluate({"fact": "a", "op": "gt", "value": "x"}, facts).value is False


def test_ref_and_version_ops() -> None:
    facts = _facts(launch__version="0.5.4.post3", expect__since="0.5.10", model__kv_heads=8, launch__tp=16)
    assert evaluate({"fact": "launch.version", "op": "version_lt", "ref": "expect.since"}, facts).value is True
    assert evaluate({"fact": "model.kv_heads", "op": "lt", "ref": "launch.tp"}, facts).value is True
    assert evaluate({"fact": "model.kv_heads", "op": "lt", "ref": "nope.x"}, facts).value is None
    assert version_key("0.33.0") > version_key("0.5.23") > version_key("0.5.4.post3")


def test_finding_carries_evidence_chain_and_templated_fix(tmp_path: Path) -> None:
    pbset = _only_user(tmp_path, {**CAUSES, "memory-filling-fast.yaml": TREE})
    facts = _facts(model__moe=True, launch__tp=8, launch__expert_parallel=False, launch__engine="sglang")
    diagnosis = diagnose(pbset, facts)
    [finding] = [f for f in diagnosis.findings if f.id == "moe-without-ep"]
    assert finding.title == "MoE model on TP 8 without expert parallelism"
    assert finding.fix == "add --ep-size 8"
    chain = [(e.fact, e.test) for e in finding.evidence]
    assert chain == [("model.moe", "is true"), ("launch.tp", "> 1"), ("launch.expert_parallel", "is not true")]
    assert finding.confidence == "medium"  # configuration only
    # metrics unknown: the exhaustion branch is reported as unchecked, with the hint to get metrics
    [unchecked] = diagnosis.unchecked
    assert unchecked.cause == "kv-cache-exhausted"
    assert "metrics.kv_usage" in unchecked.missing
    assert "--metrics FILE" in unchecked.hint


def test_negative_near_identical_facts(tmp_path: Path) -> None:
    pbset = _only_user(tmp_path, {**CAUSES, "memory-filling-fast.yaml": TREE})
    facts = _facts(model__moe=True, launch__tp=8, launch__expert_parallel=True)
    assert [f.id for f in diagnose(pbset, facts).findings] == []


def test_observed_evidence_ranks_high_and_unknown_reason_is_reported(tmp_path: Path) -> None:
    pbset = _only_user(tmp_path, {**CAUSES, "memory-filling-fast.yaml": TREE})
    facts = _facts(model__moe=True, metrics__kv_usage=0.999, metrics__preemptions_total=53366.0)
    facts.error("launch", "no launch command given")
    diagnosis = diagnose(pbset, facts)
    [finding] = diagnosis.findings
    assert (finding.id, finding.confidence, finding.severity) == ("kv-cache-exhausted", "high", "critical")
    assert finding.what == "usage 99.9%"  # not rounded up to "full"
    [unchecked] = diagnosis.unchecked
    assert unchecked.reason == "no launch command given"


def test_applies_when_gates_trees_but_symptom_forces_them(tmp_path: Path) -> None:
    pbset = _only_user(tmp_path, {**CAUSES, "memory-filling-fast.yaml": TREE})
    facts = _facts(metrics__kv_usage=0.99, metrics__preemptions_total=3)
    assert diagnose(pbset, facts).ran == []
    forced = diagnose(pbset, facts, ["memory-filling-fast"])
    assert [f.id for f in forced.findings] == ["kv-cache-exhausted"]
    with pytest.raises(InputError, match="no such playbook"):
        diagnose(pbset, facts, ["no-such-symptom"])


def test_stop_skips_later_siblings(tmp_path: Path) -> None:
    tree = """
    symptom: memory-filling-fast
    title: t
    tree:
      - when: {fact: launch.tp, op: gt, value: 1}
        cause: moe-without-ep
        stop: true
      - cause: kv-cache-exhausted
    """
    pbset = _only_user(tmp_path, {**CAUSES, "memory-filling-fast.yaml": tree})
    assert [f.id for f in diagnose(pbset, _facts(launch__tp=2)).findings] == ["moe-without-ep"]
    assert [f.id for f in diagnose(pbset, _facts(launch__tp=1)).findings] == ["kv-cache-exhausted"]


def test_template_filters() -> None:
    facts = _facts(launch__unknown_flags=[{"flag": "--tp", "nearest": "--tp-size"}], model__kv=2**31,
                   launch__names=["a", "b"])
    assert render("{launch.unknown_flags|each:<flag> → <nearest>}", facts) == "--tp → --tp-size"
    assert render("{model.kv|gib} {launch.names|join} {nope.x}", facts) == "2.0 GiB a, b <nope.x?>"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("symptom: memory-filling-fast\ntitle: t\ntree:\n  - when: {fact: model.moe, op: bogus}\n    cause: moe-without-ep\n",
         ":4: tree.0.when"),
        ("symptom: memory-filling-fast\ntitle: t\ntree:\n  - cause: no-such-cause\n", ":4: cause 'no-such-cause'"),
        ("symptom: memory-filling-fast\ntitle: t\ntree:\n  - when: {fact: modle.moe, op: is_true}\n    cause: moe-without-ep\n",
         ":4: fact 'modle.moe' is not in the fact registry (did you mean 'model.moe'?)"),
        ("symptom: memory-filling-fast\ntitle: t\nextra: 1\ntree:\n  - cause: moe-without-ep\n", "extra"),
        ("symptom: memory-filling-fast\ntitle: t\ntree:\n  - when: {fact: model.x, op: matches, value: '('}\n"
         "    cause: moe-without-ep\n", "not a valid regular expression"),
        ("a: &x [1]\nb: *x\n", "aliases"),
        ("symptom: [unclosed\n", "invalid YAML"),
    ],
)
def test_validation_errors_name_file_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    d = _dir(tmp_path, {**{k.replace("moe-without-ep", "moe-without-ep-x"): v.replace("moe-without-ep", "moe-without-ep-x")
                           for k, v in CAUSES.items()},
                        "memory-filling-fast.yaml": text.replace("moe-without-ep", "moe-without-ep-x")})
    errors = validate_dirs([d], builtin=False)
    assert errors, "a broken playbook must not validate"
    joined = "\n".join(errors)
    assert "memory-filling-fast.yaml" in joined or "causes/" in joined
    assert expected.replace("moe-without-ep", "moe-without-ep-x") in joined
    with pytest.raises(InputError):
        load_playbooks([d], builtin=False)


def test_duplicate_cause_is_rejected(tmp_path: Path) -> None:
    """A user's cause files may add causes but not redefine a built-in one: each cause is defined once."""
    d = _dir(tmp_path, CAUSES)
    errors = validate_dirs([d])
    assert any("cause 'moe-without-ep' is already defined" in e for e in errors)


def test_the_evaluator_knows_the_schemas_word_operators() -> None:
    """conditions.py sends the operand-less tests down their own path: it must be the schema's list exactly, or an
    operator would be read as a comparison with no value (or the other way round)."""
    from doctor.playbook.conditions import _WORD_OPS
    from doctor.playbook.schema import UNARY_OPS

    assert set(UNARY_OPS) == _WORD_OPS


def test_a_diagnosis_builds_only_the_causes_it_reports() -> None:
    """The built-in set is loaded with its causes left marshalled until read (doctor.playbook.loader.LazyEntries):
    a diagnosis over a real launch, model and GPU builds the causes it found and no other, so that no walk over
    every cause creeps back onto the path of each check (one did: +15 M instructions, sorting stage causes)."""
    from doctor.derive import derive_all
    from doctor.playbook import loader
    from doctor.sources.offline import OfflineInputs, gather

    loader._load_builtin.cache_clear()
    try:
        pbset = load_playbooks(())
        gathered = gather(OfflineInputs(command="vllm serve Qwen/Qwen3-8B --max-num-seqs 4",
                                        config="example:seed-gqa-27b", gpu="H100:1"))
        diagnosis = diagnose(pbset, derive_all(gathered.facts), ())
        assert diagnosis.findings and len(diagnosis.unchecked) > 10
        assert isinstance(pbset.causes, loader.LazyEntries)
        assert set(pbset.causes._built) == {f.id for f in diagnosis.findings}
    finally:
        loader._load_builtin.cache_clear()
