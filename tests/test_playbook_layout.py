"""The knowledge layout of issue 20: a cause is one file, fact names are checked against the registry.

The acceptance tests go through the CLI as a user would: a cause file with a log signature dropped into a
``--playbooks DIR`` names its cause in ``check --log`` on a real log, and a typo in a fact name fails validation
with the file and line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import ROOT, run_cli

from doctor.playbook.loader import load_playbooks

PUBLIC = ROOT / "fixtures" / "logs" / "public"
#: A real vLLM start-up log (fixtures/logs/public/SOURCES.md) whose override line no built-in cause names.
OVERRIDE_LOG = PUBLIC / "vllm-kv-blocks-override.log"
OVERRIDE_LINE = "Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512"
#: The real DeepSeek-R1 config.json (fixtures/configs/SOURCES.md).
DEEPSEEK_R1 = ROOT / "fixtures" / "configs" / "deepseek-ai__DeepSeek-R1.json"


def _user_cause(directory: Path) -> Path:
    (directory / "causes").mkdir(parents=True)
    (directory / "causes" / "gpu-blocks-overridden-to-zero.yaml").write_text(
        "id: gpu-blocks-overridden-to-zero\n"
        "title: The KV block count was forced by num_gpu_blocks_override\n"
        "severity: warning\n"
        "what: >-\n  The log shows the profiled block count replaced by an override: {log.seen.gpu_blocks_overridden_to_zero}\n"
        "why: An override bypasses the memory profile that sizes the KV cache.\n"
        "fix: {vllm: Remove --num-gpu-blocks-override and let the profile size the cache.}\n"
        "ref: our runbook\n"
        "evidence: [log.causes]\n"
        "log_signatures:\n"
        "  - {engine: vllm, pattern: 'Overriding num_gpu_blocks=\\d+ with num_gpu_blocks_override=', "
        "seen: 'fixtures/logs/public/vllm-kv-blocks-override.log'}\n")
    return directory


def test_a_cause_with_a_log_signature_is_one_new_file(tmp_path: Path) -> None:
    assert OVERRIDE_LINE in OVERRIDE_LOG.read_text()
    before = json.loads(run_cli("check", "--log", str(OVERRIDE_LOG), "--format", "json").stdout)
    assert "gpu-blocks-overridden-to-zero" not in {f["id"] for f in before["findings"]}
    mine = _user_cause(tmp_path / "mine")
    result = run_cli("check", "--playbooks", str(mine), "--log", str(OVERRIDE_LOG), "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    found = {f["id"]: f for f in json.loads(result.stdout)["findings"]}
    assert "gpu-blocks-overridden-to-zero" in found, sorted(found)
    finding = found["gpu-blocks-overridden-to-zero"]
    assert finding["confidence"] == "high" and OVERRIDE_LINE in finding["what"]
    # the text report names it too, and `playbook validate` accepts the directory
    text = run_cli("check", "--playbooks", str(mine), "--log", str(OVERRIDE_LOG))
    assert "gpu-blocks-overridden-to-zero" in text.stdout
    assert run_cli("playbook", "validate", str(mine)).returncode == 0


def test_a_built_in_cause_with_a_log_signature_is_one_new_file(tmp_path: Path) -> None:
    """The same for a built-in: a copy of the package and its playbooks with one more file in playbooks/causes/
    (and nothing else edited: no tree, no catalog) names the cause in `check --log`."""
    import os
    import shutil
    import subprocess
    import sys

    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ROOT / "doctor", tmp_path / "doctor", ignore=ignore)
    shutil.copytree(ROOT / "playbooks", tmp_path / "playbooks", ignore=ignore)
    _user_cause(tmp_path / "mine")
    shutil.copy(tmp_path / "mine" / "causes" / "gpu-blocks-overridden-to-zero.yaml", tmp_path / "playbooks" / "causes")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "LLMDOCTOR_CACHE_DIR": "", "NO_COLOR": "1"}
    result = subprocess.run([sys.executable, "-m", "doctor", "check", "--log", str(OVERRIDE_LOG), "--format", "json"],
                            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert result.returncode in (0, 1), result.stderr
    found = {f["id"]: f for f in json.loads(result.stdout)["findings"]}
    assert "gpu-blocks-overridden-to-zero" in found, sorted(found)
    assert OVERRIDE_LINE in found["gpu-blocks-overridden-to-zero"]["what"]


def test_a_typo_in_a_fact_name_fails_validation_with_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "my-kv.yaml").write_text(
        "symptom: my-kv\ntitle: mine\ntree:\n  - when: {fact: metrics.kv_usgae, op: gt, value: 0.9}\n"
        "    cause: kv-cache-exhausted\n")
    result = run_cli("playbook", "validate", str(tmp_path))
    assert result.returncode == 2
    assert (f"{tmp_path / 'my-kv.yaml'}:4: fact 'metrics.kv_usgae' is not in the fact registry "
            "(did you mean 'metrics.kv_usage'") in result.stderr + result.stdout
    # and `check` refuses the directory the same way, before reading anything else: exit 2, one line
    check = run_cli("check", "--playbooks", str(tmp_path), "--gpu", "H100")
    assert check.returncode == 2 and "Traceback" not in check.stderr
    assert "my-kv.yaml:4: fact 'metrics.kv_usgae'" in check.stderr


def test_fact_names_in_cause_files_are_checked_too(tmp_path: Path) -> None:
    """A template placeholder, an evidence entry and a case's facts are names like a tree condition's."""
    mine = _user_cause(tmp_path / "mine")
    path = mine / "causes" / "gpu-blocks-overridden-to-zero.yaml"
    path.write_text(path.read_text().replace("evidence: [log.causes]", "evidence: [log.cuases]")
                    + "cases:\n  - facts: {log.causes: [gpu-blocks-overridden-to-zero], lgo.started: true}\n"
                      "    evidence: [log.causes]\n")
    result = run_cli("playbook", "validate", str(mine))
    assert result.returncode == 2
    assert f"{path}:9: fact 'log.cuases' is not in the fact registry (did you mean 'log.causes'" in result.stderr
    assert f"{path}:13: fact 'lgo.started'" in result.stderr


#: Each place a user's directory names a fact, with a typo in it: (file, its text, the typo'd line, the name, the
#: registered name the did-you-mean must offer). The alert rules `llmdoctor rules --playbooks DIR` exports are the
#: trees' conditions (the first case); the facts they record are promql.yaml's, checked with --data below.
_TYPOS = {
    "tree condition": ("kv-high.yaml", "symptom: kv-high\ntitle: t\ntree:\n"
                       "  - when: {fact: metrics.kv_usgae, op: gt, value: 0.9}\n    cause: kv-cache-exhausted\n",
                       4, "metrics.kv_usgae", "metrics.kv_usage"),
    "template": ("causes/kv-mine.yaml", "id: kv-mine\ntitle: t\nseverity: info\n"
                 "what: 'at {metrics.kv_usgae}'\nwhy: y\nfix: {any: f}\nref: ours\n",
                 4, "metrics.kv_usgae", "metrics.kv_usage"),
    "evidence list": ("causes/kv-mine.yaml", "id: kv-mine\ntitle: t\nseverity: info\nwhat: w\nwhy: y\n"
                      "fix: {any: f}\nref: ours\nevidence:\n  - metrics.kv_usgae\n",
                      9, "metrics.kv_usgae", "metrics.kv_usage"),
    "log-signature capture": ("causes/kv-mine.yaml", "id: kv-mine\ntitle: t\nseverity: info\n"
                              "what: 'the log: {log.seen.kv_mien}'\nwhy: y\nfix: {any: f}\nref: ours\n"
                              "log_signatures:\n  - {pattern: 'KV mine', seen: our runbook}\n",
                              4, "log.seen.kv_mien", "log.seen.kv_mine"),
}


@pytest.mark.parametrize("place", sorted(_TYPOS))
def test_a_typo_in_a_fact_name_fails_validation_wherever_it_is_named(tmp_path: Path, place: str) -> None:
    """Issue 20's list: conditions, templates, evidence lists, alert rules, log-signature captures. Each typo in a
    user's --playbooks DIR is exit 2 with the file, the line and a did-you-mean, before anything runs."""
    name, text, line, typo, meant = _TYPOS[place]
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    result = run_cli("playbook", "validate", str(tmp_path))
    assert result.returncode == 2, result.stdout
    assert f"{path}:{line}: fact '{typo}' " in result.stderr and f"did you mean '{meant}'" in result.stderr, \
        result.stderr
    alerts = run_cli("rules", "--playbooks", str(tmp_path))  # the alert rules are not written from it either
    assert alerts.returncode == 2 and f"{path}:{line}: fact '{typo}'" in alerts.stderr


def test_a_typo_in_an_alert_rules_fact_table_fails_validation(tmp_path: Path) -> None:
    """The facts the alert rules record (doctor/report/promql.yaml's series, keyed by fact) are registry names too:
    a copy with one misspelt fails `playbook validate --data` at the key's line with a did-you-mean."""
    original = (ROOT / "doctor" / "report" / "promql.yaml").read_text()
    assert "\n  metrics.kv_usage:\n" in original
    path = tmp_path / "promql.yaml"
    path.write_text(original.replace("\n  metrics.kv_usage:\n", "\n  metrics.kv_usgae:\n"))
    line = path.read_text().splitlines().index("  metrics.kv_usgae:") + 1
    result = run_cli("playbook", "validate", "--data", str(path))
    assert result.returncode == 2
    assert (f"{path}:{line}: series.metrics.kv_usgae: fact 'metrics.kv_usgae' is not in the fact registry "
            "(did you mean 'metrics.kv_usage'") in result.stderr
    path.write_text(original)  # the copy as shipped is valid
    assert run_cli("playbook", "validate", "--data", str(path)).returncode == 0


def test_the_facts_doc_is_generated_from_the_registry() -> None:
    from doctor.render.docs import facts_markdown

    committed = (ROOT / "docs" / "facts.md").read_text()
    assert committed == facts_markdown(load_playbooks()), (
        "docs/facts.md is stale: run `llmdoctor playbook docs --facts -o docs/facts.md`")
    assert "`workload.temperature`" in committed  # the hand-written page had missed it


def test_every_fact_a_real_check_produces_is_registered() -> None:
    """The registry covers what the code produces: every fact of a check over real inputs (a real config, a real
    /metrics scrape, a real server log, a seed command) has its entry."""
    registry = load_playbooks().registry
    runs = [("--command", "python3 -m vllm.entrypoints.openai.api_server --model /data/DeepSeek-R1 "
             "--enable-prefix-caching -tp 8", "--engine-version", "0.7.3", "--config", str(DEEPSEEK_R1),
             "--gpu", "H200:8", "--context", "8192", "--temperature", "0.6"),
            ("--metrics", str(ROOT / "fixtures" / "metrics" / "vllm_1.prom"), "--log",
             str(PUBLIC / "vllm-cudagraph-capture-oom.log"))]
    for args in runs:
        doc = json.loads(run_cli("check", *args, "--format", "json").stdout)
        unregistered = sorted(k for k in doc["facts"] if registry.spec(k) is None)
        assert unregistered == [], f"facts without a registry entry (playbooks/facts/): {unregistered}"


def test_alert_rule_facts_are_registered() -> None:
    """The facts `llmdoctor rules` records in PromQL (doctor/report/promql.yaml) are registry facts too."""
    import yaml

    registry = load_playbooks().registry
    data = yaml.safe_load((ROOT / "doctor" / "report" / "promql.yaml").read_text())
    keys = [k for k in [*data["series"], *(k for label in data["labels"].values() for k in label.get("facts", {}))]
            if "." in k]  # dotless entries are helper series (instance_host), not facts
    assert len(keys) > 10
    assert [k for k in keys if registry.spec(k) is None] == []


def _read_by_causes(pbset) -> set[str]:
    """Facts some cause reads: a tree condition on the path to it, its texts' placeholders, its evidence."""
    from doctor.playbook.template import placeholders

    read: set[str] = set()

    def conditions(obj: object) -> None:
        if isinstance(obj, dict):
            if "fact" in obj and "op" in obj:
                read.update(obj[k] for k in ("fact", "ref") if k in obj)
            for value in obj.values():
                conditions(value)
        elif isinstance(obj, list):
            for value in obj:
                conditions(value)

    for playbook in pbset.playbooks.values():
        conditions(playbook.tree)
    for cause in pbset.causes.values():
        read.update(cause.evidence)
        for text in (cause.title, cause.what, cause.why, *cause.fix.values()):
            read.update(placeholders(text))
    return read


def test_no_problem_fact_is_left_unwired() -> None:
    """A fact the registry marks as signalling a problem (an engine behaviour, a limit, a fault) is read by a cause."""
    pbset = load_playbooks()
    read = _read_by_causes(pbset)
    problems = [spec for spec in pbset.facts.values() if spec.signals == "problem"]
    assert len(problems) > 10
    unwired = sorted(spec.key for spec in problems if not any(pbset.registry.spec(k) is spec for k in read))
    assert unwired == [], f"problem facts no cause reads: {unwired}"


def test_a_derived_engine_limit_names_its_cause() -> None:
    """The issue's example: vLLM 0.7.3 forces prefix caching off for MLA; low-cache-hit now says so, citing the
    same wheel line the fact carries (it used to answer "No findings")."""
    result = run_cli("check", "--command", "python3 -m vllm.entrypoints.openai.api_server --model /data/DeepSeek-R1 "
                     "--enable-prefix-caching -tp 8", "--engine-version", "0.7.3", "--config", str(DEEPSEEK_R1),
                     "--symptom", "low-cache-hit", "--format", "json")
    doc = json.loads(result.stdout)
    fact = doc["facts"]["engine.mla_prefix_caching_forced_off"]
    assert fact["value"] is True and "vllm/config.py:3255-3263" in fact["source"]
    found = {f["id"]: f for f in doc["findings"]}
    assert "mla-prefix-caching-disabled" in found, sorted(found)
    assert "vllm/config.py:3255-3263" in found["mla-prefix-caching-disabled"]["ref"]
    assert "engine.mla_prefix_caching_forced_off" in {e["fact"] for e in found["mla-prefix-caching-disabled"]["evidence"]}
    # from 0.8.1 on GPUs the release keeps prefix caching: no such finding
    later = json.loads(run_cli("check", "--command", "vllm serve /data/DeepSeek-R1 --enable-prefix-caching -tp 8",
                               "--engine-version", "0.8.1", "--config", str(DEEPSEEK_R1), "--symptom", "low-cache-hit",
                               "--format", "json").stdout)
    assert "mla-prefix-caching-disabled" not in {f["id"] for f in later["findings"]}


def test_confidence_follows_how_a_fact_was_learnt(tmp_path: Path) -> None:
    """A guessed fact (a model's name read with no config.json) makes a finding low; the words of its source do
    not: confidence follows `learnt`, and a snapshot keeps it."""
    from doctor.facts import Facts
    from doctor.model.names import name_facts
    from doctor.playbook.engine import diagnose

    (tmp_path / "causes").mkdir()
    (tmp_path / "causes" / "awq-here.yaml").write_text(
        "id: awq-here\ntitle: AWQ\nseverity: info\nwhat: w\nwhy: y\nfix: {any: f}\nref: ours\n")
    (tmp_path / "awq.yaml").write_text(
        "symptom: awq\ntitle: t\ntree:\n  - when: {fact: model.quantization, op: eq, value: awq}\n    cause: awq-here\n")
    pbset = load_playbooks([tmp_path], builtin=False)

    def confidence(facts: Facts) -> str:
        [finding] = diagnose(pbset, facts, ["awq"]).findings
        return finding.confidence

    guessed = name_facts("TheBloke/Llama-2-7B-AWQ")
    assert guessed.fact("model.quantization").learnt == "guessed"
    assert confidence(guessed) == "low"
    assert confidence(Facts.from_dict(guessed.to_dict())) == "low"  # a replayed snapshot says the same
    configured = Facts()
    configured.set("model.quantization", "awq", "config.json quantization_config (read, not from the model name)")
    assert confidence(configured) == "medium"


def test_validate_runs_the_users_cause_cases(tmp_path: Path) -> None:
    """A user's cause file carries cases like a built-in one; `playbook validate` runs them."""
    mine = _user_cause(tmp_path / "mine")
    path = mine / "causes" / "gpu-blocks-overridden-to-zero.yaml"
    good = ("cases:  # scenario facts written for the tests, not captures of a real deployment\n"
            "  - symptom: launch-failure\n"
            "    facts: {log.causes: [gpu-blocks-overridden-to-zero], log.seen.gpu_blocks_overridden_to_zero: x}\n"
            "    evidence: [log.causes]\n"
            "    negative: {log.causes: []}\n")
    path.write_text(path.read_text() + good)
    assert run_cli("playbook", "validate", str(mine)).returncode == 0
    path.write_text(path.read_text().replace("negative: {log.causes: []}",
                                             "negative: {log.started: true}"))
    result = run_cli("playbook", "validate", str(mine))
    assert result.returncode == 2
    assert f"{path}:1: case 1: the negative case still leads to gpu-blocks-overridden-to-zero" in result.stderr


def test_a_one_file_causes_catalog_is_refused_with_the_new_layout_named(tmp_path: Path) -> None:
    (tmp_path / "causes.yaml").write_text("causes:\n  mine:\n    title: t\n")
    result = run_cli("playbook", "validate", str(tmp_path))
    assert result.returncode == 2
    assert f"{tmp_path / 'causes.yaml'}: causes now live one per file, as {tmp_path / 'causes'}/<cause-id>.yaml" \
        in result.stderr


def test_log_nodes_are_generated_with_the_precedence_their_files_state() -> None:
    tree = load_playbooks().playbooks["launch-failure"].tree
    [oom] = [node for node in tree if node.get("cause") == "startup-out-of-memory"]
    assert {"fact": "log.causes", "op": "not_contains", "value": "cuda-graph-capture-oom"} in oom["when"]["all"]
    assert {"fact": "log.started", "op": "is_false"} in oom["when"]["all"]
    assert not any("generate" in node for node in tree)  # the marker is replaced by the nodes


def test_a_log_node_goes_in_every_tree_its_file_names() -> None:
    """log_node.also: the same generated node in a second symptom's tree (a GPU refusal answers hardware-fit)."""
    playbooks = load_playbooks().playbooks
    named = {"fact": "log.causes", "op": "contains", "value": "fp8-unsupported-gpu"}
    for symptom in ("launch-failure", "hardware-fit"):
        assert any(node.get("when") == named for node in playbooks[symptom].tree), symptom


def test_a_log_node_in_a_tree_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    mine = _user_cause(tmp_path / "mine")
    path = mine / "causes" / "gpu-blocks-overridden-to-zero.yaml"
    path.write_text(path.read_text() + "log_node: {also: [no-such-symptom]}\n")
    result = run_cli("playbook", "validate", str(mine))
    assert result.returncode != 0 and "log_node.also: no symptom tree 'no-such-symptom'" in result.stdout + result.stderr


def test_fact_names_in_the_code_data_files_are_registered() -> None:
    """The engine and probe data (semantics.yaml, server_fields.yaml, promql.yaml, ...) name facts too: each
    string there that reads as a fact key is a registered one."""
    import re

    import yaml

    registry = load_playbooks().registry
    key = re.compile(r"^(model|launch|engine|expect|gpu|metrics|server|process|capacity|log|fit|workload|active)"
                     r"\.[a-z0-9_]+(\.[A-Za-z0-9_]+)*$")

    def names(obj: object):
        if isinstance(obj, dict):
            for k, v in obj.items():
                yield from names(k)
                yield from names(v)
        elif isinstance(obj, list):
            for v in obj:
                yield from names(v)
        elif isinstance(obj, str) and key.match(obj):
            yield obj

    files = sorted((ROOT / "doctor").rglob("*.yaml"))
    assert len(files) > 5
    unknown = sorted({f"{path.relative_to(ROOT)}: {name}" for path in files
                      for name in names(yaml.safe_load(path.read_text())) if registry.spec(name) is None})
    assert unknown == []


def test_every_producer_is_a_module_of_the_package() -> None:
    """A registry entry names the module that sets the fact (dotted, under doctor/): it must exist, so a module
    move updates the registry with it."""
    missing = sorted({spec.producer for spec in load_playbooks().facts.values()
                      if not (ROOT / "doctor" / spec.producer.replace(".", "/")).with_suffix(".py").is_file()
                      and not (ROOT / "doctor" / spec.producer.replace(".", "/")).is_dir()})
    assert missing == []


def test_no_tree_writes_a_log_signature_node_by_hand() -> None:
    """The nodes that name a cause from its log signatures come from the cause files (lognodes.py): no tree file
    holds a node whose cause is named by ``log.causes contains <that cause>`` (the node the generator makes), and
    every cause with signatures gets its generated node."""
    import yaml

    def nodes(tree):
        for node in tree:
            yield node
            yield from nodes(node.get("then", []))

    def names_itself(node) -> bool:
        tests = [node.get("when", {})] + list(node.get("when", {}).get("all", []))
        return any(t == {"fact": "log.causes", "op": "contains", "value": node["cause"]} for t in tests)

    by_hand = sorted(f"{path.name}: {node['cause']}" for path in sorted((ROOT / "playbooks").glob("*.yaml"))
                     if "tree" in (data := yaml.safe_load(path.read_text()) or {})
                     for node in nodes(data["tree"]) if "cause" in node and names_itself(node))
    assert by_hand == []
    pbset = load_playbooks()
    placed = {node["cause"] for playbook in pbset.playbooks.values() for node in nodes(playbook.tree)
              if "cause" in node and names_itself(node)}
    signed = {c.id for c in pbset.causes.values() if c.log_signatures}
    assert len(signed) > 50 and signed - placed == set()
