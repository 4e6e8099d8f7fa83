"""The hung symptom off the real engines: a real process tree (processes titled as the engines title theirs,
stopped with a real SIGSTOP, a real zombie), the real vllm_1.prom served twice over loopback (an engine with
84 running requests whose counters did not move), the cause files' own cases, and the liveness probe against
a real HTTP server that never answers. The engines themselves: tests/realengine/test_{vllm,sglang}_hung.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from support.httpserver import PROM, LocalServer, Response
from test_probe_metrics import real_scrape

from doctor.derive.health import derive_missing_workers
from doctor.facts import Facts
from doctor.playbook.engine import diagnose
from doctor.playbook.loader import builtin_dir, load_playbooks
from doctor.probes import liveness, metrics, process
from doctor.probes.base import ProbeOptions, Target, run_probe

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").is_file(), reason="the process tree is read from /proc")

#: A parent that starts two children under the titles vLLM gives its processes (bash's exec -a sets argv[0],
#: as setproctitle does), then waits.
TREE = ("(exec -a VLLM::EngineCore sleep 300) & (exec -a VLLM::Worker_TP0 sleep 300) & "
        "(exec -a VLLM::Worker_TP1 true) & wait")


@pytest.fixture
def server_tree():
    parent = subprocess.Popen(["bash", "-c", TREE], start_new_session=True)
    deadline = time.monotonic() + 10
    # wait for the two long-lived titles by name: a subshell is titled "bash" until its exec, so a count of
    # titles can be reached while one of them has not yet been renamed
    while time.monotonic() < deadline and not {"VLLM::EngineCore", "VLLM::Worker_TP0"} <= set(_titles(parent.pid)):
        time.sleep(0.05)
    yield parent
    os.killpg(parent.pid, signal.SIGKILL)
    parent.wait()


def _titles(pid: int) -> dict[str, int]:
    from doctor.probes import procfs

    return {str(p["title"]): int(p["pid"]) for p in procfs.tree(pid)}


def _process_facts(pid: int) -> Facts:
    result = run_probe(process, Target.parse("127.0.0.1:1"), ProbeOptions(pid=pid))
    assert result.ok, result.error
    return result.facts


def test_a_stopped_engine_core_and_a_zombie_worker_are_facts_and_findings(server_tree):
    titles = _titles(server_tree.pid)
    core = titles["VLLM::EngineCore"]
    os.kill(core, signal.SIGSTOP)
    deadline = time.monotonic() + 5  # the `true` worker exits at once and bash reaps it only at `wait`'s end
    facts = _process_facts(server_tree.pid)
    while time.monotonic() < deadline and not facts.get("process.stopped"):
        time.sleep(0.05)
        facts = _process_facts(server_tree.pid)
    assert [p["pid"] for p in facts.get("process.stopped")] == [core]
    assert facts.get("process.stopped")[0]["role"] == "engine-core"
    roles = {p["title"]: p["role"] for p in facts.get("process.tree")}
    assert roles["VLLM::Worker_TP0"] == "worker" and roles["bash"] == "other"
    found = diagnose(load_playbooks(), facts, ()).to_dict()["findings"]
    assert found[0]["id"] == "engine-process-stopped" and f"pid {core}" in found[0]["what"]
    os.kill(core, signal.SIGCONT)
    time.sleep(0.2)
    assert _process_facts(server_tree.pid).get("process.stopped") == []


def test_a_zombie_child_is_named_dead():
    # a parent that never reaps: python's os.fork child exits, the parent sleeps
    parent = subprocess.Popen([sys.executable, "-c", "import os, time\nif os.fork() == 0: os._exit(0)\ntime.sleep(30)"])
    try:
        deadline = time.monotonic() + 10
        facts = _process_facts(parent.pid)
        while time.monotonic() < deadline and not facts.get("process.zombies"):
            time.sleep(0.05)
            facts = _process_facts(parent.pid)
        assert len(facts.get("process.zombies")) == 1
        ids = [f["id"] for f in diagnose(load_playbooks(), facts, ()).to_dict()["findings"]]
        assert "engine-process-zombie" in ids
    finally:
        parent.kill()
        parent.wait()


@pytest.mark.parametrize(("engine", "tp", "workers", "titled", "missing"), [
    ("vllm", 4, 3, True, 1), ("vllm", 1, 0, True, None), ("sglang", 1, 1, True, 0), ("sglang", 2, 1, True, 1),
    ("sglang", 1, 0, False, None)])  # no engine titles in the tree (not the engine's, or titles not set): no claim
def test_missing_workers_count_the_ranks_the_command_asks_for(engine, tp, workers, titled, missing):
    facts = Facts()
    role = {"vllm": "engine-core", "sglang": "detokenizer"}[engine] if titled else "other"
    facts.set("process.tree", [{"pid": 2, "title": "t", "state": "S", "role": role}], "tree", observed=True)
    facts.set("process.workers", workers, "tree", observed=True)
    facts.set("launch.engine", engine, "cmd")
    facts.set("launch.tp", tp, "cmd")
    derive_missing_workers(facts)
    assert facts.get("process.missing_workers") == missing


def test_two_scrapes_of_a_busy_engine_that_did_not_move_are_a_stall():
    path = real_scrape("vllm_1.prom")  # 84 running, 16 queued
    with LocalServer({"/metrics": Response(file=path, content_type=PROM)}) as srv:
        result = run_probe(metrics, Target.parse(srv.endpoint), ProbeOptions(sample_s=0.2))
    assert result.facts.get("metrics.in_flight") == 100
    assert result.facts.get("metrics.stalled") is True
    assert result.facts.get("metrics.queued_delta") == 0
    found = [f["id"] for f in diagnose(load_playbooks(), result.facts, ()).to_dict()["findings"]]
    assert "engine-no-progress" in found


def test_liveness_times_out_on_a_server_that_never_answers(monkeypatch):
    monkeypatch.setattr(liveness, "DEADLINE_S", 0.3)
    with LocalServer({"/health_generate": Response(delay=3, body=b"")}) as srv:
        start = time.monotonic()
        result = run_probe(liveness, Target.parse(srv.endpoint), ProbeOptions(timeout_s=0.1))
    assert time.monotonic() - start < 2
    assert result.facts.get("server.health_generate") == "timeout"


def _cause_cases():
    for path in sorted((builtin_dir() / "causes").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        if any(c.get("symptom") == "hung" for c in doc.get("cases", [])):
            for index, case in enumerate(doc["cases"]):
                yield pytest.param(doc["id"], case, id=f"{doc['id']}-{index}")


@pytest.mark.parametrize(("cause", "case"), list(_cause_cases()))
def test_hung_cause_cases(cause, case):
    pbset = load_playbooks()

    def found(overrides):
        facts = Facts()
        for key, value in {**case["facts"], **overrides}.items():
            if value is not None:
                facts.set(key, value, "case", observed=True)
        return {f["id"]: f for f in diagnose(pbset, facts, (case["symptom"],)).to_dict()["findings"]}

    hit = found({}).get(cause)
    assert hit is not None, f"{cause} not found from {case['facts']}"
    assert {e["fact"] for e in hit["evidence"]} >= set(case["evidence"])
    assert cause not in found(case["negative"])
