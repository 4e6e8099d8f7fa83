"""Today's answers of every data-file rule, pinned on real inputs, so moving a rule onto the one condition
evaluator (doctor/playbook/conditions.py) cannot change what it means.

The inputs are real: every release the engine history tables list (read from the wheels), with the pre-, post-
and local-tag spellings users type; every config under fixtures/configs with its Hugging Face repo id; the real
/server_info answers captured from running servers. The pinned answers in tests/data/pins/ were written by the
code before the move (``LLMDOCTOR_WRITE_PINS=1`` rewrites them; a diff in review is a change of meaning).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PINS = Path(__file__).with_name("data") / "pins"
ENGINES = ("vllm", "sglang")


def _versions(engine: str) -> list[str | None]:
    from doctor.engines.catalog import available

    out: list[str | None] = [None]
    for version in available(engine):
        out += [version, f"v{version}+cu129"]
        if "post" not in version:
            out += [f"{version}rc1", f"{version}.post1"]
    return out


def _runs(answers: dict[str, Any]) -> dict[str, Any]:
    """``prefix/version`` answers as runs per prefix (the versions from which each answer holds), so a pin file
    stays small and a changed boundary shows as one line."""
    out: dict[str, list[Any]] = {}
    for key, answer in answers.items():
        prefix, _, version = key.rpartition("/")
        runs = out.setdefault(prefix, [])
        if not runs or runs[-1][1] != answer:
            runs.append([version, answer])
    return out


def _check(name: str, answers: dict[str, Any], *, by_version: bool = True) -> None:
    answers = json.loads(json.dumps(_runs(answers) if by_version else answers))
    path = PINS / f"{name}.json"
    if os.environ.get("LLMDOCTOR_WRITE_PINS"):
        path.write_text(json.dumps(answers, indent=0, sort_keys=True, separators=(',', ':')) + "\n")
    pinned = json.loads(path.read_text())
    changed = sorted(k for k in {*pinned, *answers} if pinned.get(k) != answers.get(k))
    assert not changed, f"{len(changed)} answers changed, e.g. " + "; ".join(
        f"{k}: {pinned.get(k)!r} -> {answers.get(k)!r}" for k in changed[:5])


@pytest.mark.parametrize("module", ["doctor.model.memory", "doctor.engines.release_rules"])
def test_release_rules_keep_their_answers(module: str) -> None:
    import importlib

    from doctor.versions import load_rules

    mod = importlib.import_module(module)
    answers = {}
    for topic, engines in load_rules(mod.DATA_PATH).items():
        for engine in engines:
            for version in _versions(engine):
                found = mod.rule(topic, engine, version)
                answers[f"{topic}/{engine}/{version}"] = None if found is None else found.since
    _check(Path(str(mod.DATA_PATH)).stem, answers)


def test_kernel_rules_keep_their_answers() -> None:
    from doctor.hardware.catalog import all_gpus
    from doctor.hardware.gating import kernel_support

    answers = {}
    for gpu in {g.sm: g for g in all_gpus()}.values():  # the rules read only the GPU's sm
        for engine in ENGINES:
            for version in _versions(engine):
                answers[f"sm{gpu.sm}/{engine}/{version}"] = kernel_support(gpu, engine, version)
    _check("kernels", answers)


def test_parser_rules_keep_their_answers() -> None:
    from doctor.engines.families import families, family

    answers = {}
    for fam in families():
        variants = [None, *[v["id"] for v in _raw(fam.id).get("variants") or []]]
        for variant in variants:
            spec_family = family(fam.id, variant)
            for engine in ENGINES:
                for job in ("tool", "reasoning"):
                    spec = getattr(spec_family.engines[engine], job)
                    for version in _versions(engine):
                        answers[f"{fam.id}/{variant}/{engine}/{job}/{version}"] = [
                            list(spec.at(version)), list(spec.accepted(version))]
    _check("parsers", answers)


def _raw(fid: str) -> dict[str, Any]:
    from doctor.engines.families import load_families

    return next(e for e in load_families() if e["id"] == fid)


def test_family_matching_keeps_its_answers() -> None:
    from doctor.engines.families import match_family

    answers = {}
    for path in sorted((ROOT / "fixtures" / "configs").glob("*.json")):
        config = json.loads(path.read_text())
        repo = path.stem.replace(".reconstructed", "").replace("__", "/")
        for name in (repo, f"/data/models--{repo.replace('/', '--')}/snapshots/0123456789abcdef0123", None):
            found = match_family(architectures=config.get("architectures"), model_type=config.get("model_type"),
                                 name=name)
            answers[f"{path.name}/{name}"] = None if found is None else [
                found.id, found.variant, found.matched_by, list(found.alternatives)]
    _check("families", answers, by_version=False)


SERVER_INFO = [
    "fixtures/scenarios/vllm_server_info_dev.json",
    "fixtures/scenarios/sglang_server_info.json",
    "fixtures/live/sglang-0.5.23-cpu/server_info.before.out",
    "fixtures/live/sglang-0.5.23-cpu/get_server_info.before.out",
    "fixtures/live/vllm-0.32.0-cpu/devmode/server_info_json.txt",
]


def test_server_fields_keep_their_answers() -> None:
    from doctor.facts import Facts
    from doctor.probes.server import _mapped_facts

    answers = {}
    for name in SERVER_INFO:
        text = (ROOT / name).read_text()
        body = json.loads(text[text.index("{"):])
        engine = "vllm" if "vllm_config" in body else "sglang"
        facts = Facts()
        _mapped_facts(facts, body, engine)
        for fact in facts:
            answers[f"{name}/{fact.key}"] = [fact.value, fact.source]
        for key, why in sorted(facts.errors.items()):
            answers[f"{name}/{key}/error"] = why
    _check("server_fields", answers, by_version=False)


@pytest.mark.parametrize(("field", "value", "fact", "expected"), [
    ("disable_radix_cache", 0, "launch.prefix_caching", None),       # a number where a bool is tested: null
    ("disable_radix_cache", True, "launch.prefix_caching", False),
    ("ep_size", "8", "launch.expert_parallel", None),                 # text where a number is compared: null
    ("ep_size", 8, "launch.expert_parallel", True),
    ("dtype", "auto", "launch.dtype", None),
    ("speculative_algorithm", None, "launch.speculative", False),
    ("speculative_algorithm", False, "launch.speculative", False),  # `set` is "known, neither null nor false"
    ("speculative_algorithm", "EAGLE", "launch.speculative", True),
])
def test_server_field_tests_read_only_their_type(field: str, value: Any, fact: str, expected: Any) -> None:
    """A real SGLang answer with one field changed: a test on a value of another type answers nothing."""
    from doctor.facts import Facts
    from doctor.probes.server import _mapped_facts

    body = json.loads((ROOT / "fixtures/scenarios/sglang_server_info.json").read_text())
    body[field] = value
    facts = Facts()
    _mapped_facts(facts, body, "sglang")
    assert facts.fact(fact) is not None and facts.get(fact) == expected



def test_every_kind_of_rule_is_decided_by_the_one_evaluator(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 20 point 3: the release rules (engine_memory.yaml, release_rules.yaml, kernels.yaml), a parser's
    since/earlier names, the family table, the flag semantics, the engines' value ranges (refusals.yaml), the
    server_info fields and the generated catalogs' history runs (a deprecated parser) all answer through
    doctor/playbook/conditions.py ``evaluate``: with it made to answer "unknown" to every test, each of them
    changes its answer (a matcher of its own would not notice)."""
    from doctor import versions
    from doctor.engines import families, launch_facts
    from doctor.engines.command import parse_command
    from doctor.engines.refusals import refused_values
    from doctor.engines.release_rules import rule as release_rule
    from doctor.engines.upgrade import deprecated_parser
    from doctor.facts import Facts
    from doctor.hardware.catalog import lookup_gpu
    from doctor.hardware.gating import kernel_support
    from doctor.model.memory import rule as memory_rule
    from doctor.playbook import conditions
    from doctor.probes.server import _mapped_facts

    body = json.loads((ROOT / "fixtures/scenarios/sglang_server_info.json").read_text())
    config = json.loads((ROOT / "fixtures/configs/zai-org__GLM-4.5-Air.json").read_text())
    glm = families.match_family(architectures=config["architectures"], model_type=config["model_type"],
                                name="zai-org/GLM-4.5-Air")
    assert glm is not None

    def answers() -> dict[str, Any]:
        families._match.cache_clear()
        versions._holding.cache_clear()
        served = Facts()
        _mapped_facts(served, body, "sglang")
        launched = Facts()
        launched.set("launch.engine", "vllm", "argv")
        launched.set("launch.flags.gpu_memory_utilization", 0.9, "argv --gpu-memory-utilization 0.9")
        refused_values(launched)
        family = families.match_family(architectures=config["architectures"], model_type=config["model_type"],
                                       name="zai-org/GLM-4.5-Air")
        return {"engine_memory.yaml": memory_rule("profile", "vllm", "0.4.0"),
                "release_rules.yaml": release_rule("quantization_from_checkpoint", "vllm", "0.2.0"),
                "kernels.yaml": kernel_support(lookup_gpu("H100"), "sglang", "0.2.0"),
                "parser earlier": glm.tool_spec("vllm").at("0.10.0"),
                "families.yaml": family and family.id,
                "server_fields.yaml": served.get("launch.prefix_caching"),
                "semantics.yaml": launch_facts.launch_facts(command).to_dict(),
                "refusals.yaml": launched.get("launch.refused_values"),
                "catalog history run": deprecated_parser("sglang", "tool_parsers", "glm45", "0.5.10")}

    command = parse_command("vllm serve zai-org/GLM-4.5-Air -tp 4 -dp 2 --enable-expert-parallel",
                            engine_version="0.10.1")
    before = answers()
    assert launch_facts.evaluate is conditions.evaluate  # the semantics' module holds the one evaluator itself
    unknown = lambda cond, facts: conditions.Outcome(None)  # noqa: E731 - the stand-in evaluator
    monkeypatch.setattr(conditions, "evaluate", unknown)
    monkeypatch.setattr(launch_facts, "evaluate", unknown)
    after = answers()
    monkeypatch.undo()  # and forget what the stand-in decided: later tests must not read its answers from a cache
    families._match.cache_clear()
    versions._holding.cache_clear()
    same = sorted(k for k in before if before[k] == after[k])
    assert same == [], {k: before[k] for k in same}


@pytest.mark.parametrize(("value", "is_set"), [(None, False), (False, False), (0, True), ("", True), ("EAGLE", True)])
def test_set_means_one_thing_in_every_data_file(value: Any, is_set: bool) -> None:
    """Issue 20: ``set`` meant "not None and not False" in the trees and "not None" in server_fields.yaml. Now a
    tree condition, a flag-semantics case (semantics.yaml: launch.speculative from --speculative-config) and a
    server_info field (server_fields.yaml's ``as: {op: set}``) answer alike for the same value."""
    from doctor.engines.semantics import load_semantics
    from doctor.facts import Facts
    from doctor.playbook.conditions import evaluate
    from doctor.probes.server import _mapped_facts

    facts = Facts()
    facts.set("launch.flags.speculative_config", value, "argv")
    [case, *_] = load_semantics()["facts"]["launch.speculative"]["vllm"]
    assert case["when"] == {"fact": "launch.flags.speculative_config", "op": "set"}
    assert (evaluate(case["when"], facts).value is True) is is_set
    body = json.loads((ROOT / "fixtures/scenarios/sglang_server_info.json").read_text())
    body["speculative_algorithm"] = value
    served = Facts()
    _mapped_facts(served, body, "sglang")
    assert served.get("launch.speculative") is is_set
