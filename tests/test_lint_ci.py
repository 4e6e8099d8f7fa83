"""`lint --files` and the CI formats, as a pipeline runs them: the real CLI over a small repository of files.

The manifests and scripts are scenarios written for these tests (what a platform team keeps in git); the model
configs are real (fixtures/configs). SARIF is read back with sarif-pydantic, an implementation of the SARIF
2.1.0 object model, so a document the standard does not allow fails here; JUnit is read back as XML.
"""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree

from conftest import SHARED_FIXTURES, run_cli

CONFIG = str(SHARED_FIXTURES / "configs" / "Qwen__Qwen3-30B-A3B.json")

BAD = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: moe}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          args:
            - --model
            - Qwen/Qwen3-30B-A3B
            - --tensor-parallel-size
            - "4"
            - --enable-auto-tool-choice
            - --tool-call-parser
            - hermes
            - --reasoning-parser
            - qwen3
"""
GOOD = BAD.replace("            - qwen3\n", "            - qwen3\n            - --enable-expert-parallel\n")
SCRIPT = "#!/bin/sh\n# start the server\nvllm serve Qwen/Qwen3-30B-A3B \\\n  --tp-size 4\n"
UNRELATED = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {a: b}\n"


def _repo(tmp_path: Path) -> list[str]:
    (tmp_path / "deploy").mkdir()
    files = {"deploy/bad.yaml": BAD, "deploy/good.yaml": GOOD, "serve.sh": SCRIPT, "deploy/other.yaml": UNRELATED}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return sorted(files)


def _files(tmp_path: Path, *args: str):
    import subprocess
    import sys

    from conftest import ROOT

    return subprocess.run([sys.executable, "-m", "doctor", "lint", "--offline", "--config", CONFIG, "--files",
                           *args], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "NO_COLOR": "1"})


def test_text_places_each_finding_at_its_launch_line(tmp_path: Path) -> None:
    names = _repo(tmp_path)
    proc = _files(tmp_path, *names)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.startswith("deploy/bad.yaml:11: WARNING moe-without-ep") for line in lines), lines
    assert not any(line.startswith("deploy/good.yaml") and "moe-without-ep" in line for line in lines)
    assert any(line.startswith("serve.sh:3: CRITICAL flag-from-other-engine") for line in lines), lines
    assert "3 launch file(s) linted" in lines[-1] and "1 file(s) without a launch skipped" in lines[-1]


def test_sarif_is_sarif_2_1_0(tmp_path: Path) -> None:
    from sarif_pydantic import Sarif

    names = _repo(tmp_path)
    proc = _files(tmp_path, "--format", "sarif", *names)
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    log = Sarif.model_validate(document)
    run = log.runs[0]
    rules = {r.id: r for r in run.tool.driver.rules}
    assert "moe-without-ep" in rules and str(rules["moe-without-ep"].help_uri).endswith("causes.md#moe-without-ep")
    placed = {(r.rule_id, r.locations[0].physical_location.artifact_location.uri,
               r.locations[0].physical_location.region.start_line) for r in run.results}
    assert ("moe-without-ep", "deploy/bad.yaml", 11) in placed
    assert ("flag-from-other-engine", "serve.sh", 3) in placed
    assert not any(uri == "deploy/good.yaml" and rule == "moe-without-ep" for rule, uri, _ in placed)
    levels = {r.rule_id: r.level for r in run.results}
    assert str(levels["flag-from-other-engine"].value if hasattr(levels["flag-from-other-engine"], "value")
               else levels["flag-from-other-engine"]) == "error"


def test_junit_fails_only_at_fail_on(tmp_path: Path) -> None:
    names = _repo(tmp_path)
    proc = _files(tmp_path, "--format", "junit", "--fail-on", "critical", *names)
    assert proc.returncode == 1, proc.stderr   # serve.sh has a critical finding
    root = ElementTree.fromstring(proc.stdout)
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert set(suites) == {"deploy/bad.yaml", "deploy/good.yaml", "serve.sh"}
    bad = suites["deploy/bad.yaml"]
    moe = next(c for c in bad.iter("testcase") if c.get("name") == "moe-without-ep")
    assert moe.find("failure") is None and "moe-without-ep" in moe.find("system-out").text  # a warning < critical
    flag = next(c for c in suites["serve.sh"].iter("testcase") if c.get("name") == "flag-from-other-engine")
    assert flag.find("failure") is not None
    assert root.get("failures") == "1"


def test_an_unreadable_file_is_exit_2_after_the_others(tmp_path: Path) -> None:
    names = _repo(tmp_path)
    proc = _files(tmp_path, "missing.yaml", *names)
    assert proc.returncode == 2
    assert "missing.yaml" in proc.stderr
    assert "deploy/bad.yaml:11" in proc.stdout   # the other files were still linted


def test_single_command_sarif_has_no_location() -> None:
    proc = run_cli("lint", "--offline", "--format", "sarif", "vllm serve m --tp-size 2")
    assert proc.returncode == 1
    result = json.loads(proc.stdout)["runs"][0]["results"][0]
    assert result["ruleId"] == "flag-from-other-engine" and "locations" not in result


def test_files_refuses_fix() -> None:
    proc = run_cli("lint", "--files", "--fix", "a.yaml")
    assert proc.returncode == 2 and "--files" in proc.stderr
