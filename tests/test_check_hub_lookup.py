"""`check --endpoint` of a server whose /v1/models names a repo id: the model's lookup runs in its own thread
beside the probes, under its own budget (doctor/commands/check.py HUB_BUDGET_S), and what it finds is kept for
the next run — which then imports no Hub client at all.

The engine is a loopback server answering a real vLLM /metrics scrape (fixtures/metrics) and the scenario
/v1/models and /version bodies, the /v1/models ``root`` naming Qwen/Qwen3-8B as a vLLM serving that repo does; the Hub is the loopback stand-in (tests/support/hubserver.py) with the real
Qwen3-8B config.json, answering at once or stalling past every client timeout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, shared_config
from support.httpserver import JSON, PROM, LocalServer, Response
from support.hubserver import HubServer, config_repo, dense_tensors, sharded

from doctor.commands.check import HUB_BUDGET_S

REPO = "Qwen/Qwen3-8B"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scenarios = ROOT / "fixtures" / "scenarios"
    body = json.loads((scenarios / "vllm_v1_models.json").read_text())
    for card in body["data"]:
        card["root"] = REPO
    routes = {"/v1/models": Response(body=json.dumps(body), content_type=JSON),
              "/version": Response(file=scenarios / "vllm_version.json", content_type=JSON),
              "/metrics": Response(file=ROOT / "fixtures" / "metrics" / "vllm_1.prom", content_type=PROM)}
    with LocalServer(routes) as srv:
        yield srv.endpoint


def _env(hub: HubServer, tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN")}
    return {**env, "HF_ENDPOINT": hub.endpoint, "HF_HUB_CACHE": str(tmp / "hf"), "HF_HOME": str(tmp / "home"),
            "LLMDOCTOR_CACHE_DIR": str(tmp / "ld"), "NO_COLOR": "1"}


def _check(env: dict[str, str], endpoint: str) -> tuple[dict, set[str]]:
    """One `check --endpoint --format json` run: its document and the top-level modules it imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", "check", "--endpoint", endpoint,
                           "--format", "json", "--fail-on", "never"], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    modules = {m.group(1).split(".")[0] for m in re.finditer(r"^import time:.*\|\s*(\S+)\s*$", done.stderr, re.M)}
    return json.loads(done.stdout), modules


def test_a_repo_found_on_the_hub_is_kept_and_the_next_check_imports_no_hub_client(engine: str,
                                                                                    tmp_path: Path) -> None:
    config = shared_config("Qwen__Qwen3-8B.json")
    tensors = dense_tensors(json.loads(config.read_text()), "BF16")
    with HubServer({REPO: config_repo(config, extra=sharded(tensors, 2))}) as hub:
        env = _env(hub, tmp_path)
        first, imported = _check(env, engine)
        assert first["facts"]["model.resolved_from"]["value"] == "Hub", first["facts"].get("model")
        assert "huggingface_hub" in imported
        asked = len(hub.requests)
        again, imported = _check(env, engine)
    assert again["facts"]["model.resolved_from"]["value"] == "HF cache"
    assert "huggingface_hub" not in imported and len(hub.requests) == asked
    # the same answer: the config from the cache, the exact weights from the memo
    assert again["facts"]["model.weight_bytes"] == first["facts"]["model.weight_bytes"]
    assert [f["id"] for f in again["findings"]] == [f["id"] for f in first["findings"]]


def test_a_stalled_hub_does_not_hold_the_answer(engine: str, tmp_path: Path) -> None:
    """The Hub accepts the connection and never answers: the check is out within its budget (stdout closed),
    says why the model is unknown, and the next run does not wait on that Hub again."""
    with HubServer({}, stall_s=60) as hub:
        env = _env(hub, tmp_path)
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-m", "doctor", "check", "--endpoint", engine, "--format", "json",
                                 "--fail-on", "never"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                env=env)
        out = proc.stdout.read() if proc.stdout else b""  # until the check closes its standard output
        answered = time.monotonic() - start
        proc.wait(timeout=60)
        assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
        doc = json.loads(out)
        # the Hub client's own limit is 5 s a request (doctor/model/resolve.py HUB_TIMEOUT): the answer came first
        assert answered < HUB_BUDGET_S + 2.5, answered
        assert f"did not answer within {HUB_BUDGET_S:g} s" in doc["errors"]["model"], doc["errors"]
        assert doc["engine"] == "vllm" and doc["findings"]
        again, imported = _check(env, engine)
    assert "huggingface_hub" not in imported
    assert "did not answer in a run less than 1 h ago" in again["errors"]["model"]


_RACE = """
import dataclasses, sys, threading
from doctor.model.resolve import _import_typing_whole
assert "typing" not in sys.modules
def plain():
    import typing  # noqa: F401
worker = threading.Thread(target=plain if sys.argv[1] == "plain" else _import_typing_whole)
worker.start()
made = 0
while worker.is_alive() or made < 50:  # a dataclass defined the whole time typing is being imported
    dataclasses.make_dataclass(f"C{made}", [("a", int), ("b", "str")])
    made += 1
worker.join()
"""


def test_typing_is_published_whole_for_the_hub_thread() -> None:
    """huggingface_hub imports typing, and `check` itself never does (doctor/__init__.py): a thread importing it the
    plain way leaves it half made in sys.modules while the main thread defines dataclasses, which read
    typing.ClassVar from there (the AttributeError `check` once exited 4 on). The lookup imports it whole before its
    thread starts (doctor/model/resolve.py ``_import_typing_whole``)."""
    def run(how: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", _RACE, how], capture_output=True, text=True, cwd=ROOT,
                              timeout=60)

    plain = run("plain")
    assert plain.returncode != 0 and "has no attribute 'ClassVar'" in plain.stderr  # the hazard is real
    for _ in range(5):
        whole = run("whole")
        assert whole.returncode == 0, whole.stderr[-2000:]


def test_the_hub_lookup_runs_beside_the_probes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check` starts a lookup from the server probe's thread: what only the Hub can add is asked at once, in a thread
    of its own, so it runs beside the other probes; a repo the HF cache and the memo answer whole needs no thread."""
    import threading

    from doctor.model import resolve

    config = shared_config("Qwen__Qwen3-8B.json")
    tensors = dense_tensors(json.loads(config.read_text()), "BF16")
    with HubServer({REPO: config_repo(config, extra=sharded(tensors, 2))}) as hub:
        for name, value in _env(hub, tmp_path).items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        monkeypatch.setattr(resolve, "_LOOKUPS", {})
        monkeypatch.setattr(resolve, "_RESOLVED", {})
        prober = threading.Thread(target=resolve.prefetch, args=(REPO,))
        prober.start()
        prober.join()
        (lookup,) = resolve._LOOKUPS.values()
        assert lookup.thread.ident is not None  # asked at once, not when the answer is awaited
        found = resolve.resolve_model(REPO, budget_s=30)
        assert found.origin == "Hub" and found.weights is not None
        # the next lookup of the same repo: the cache and the memo answer it whole, no thread
        monkeypatch.setattr(resolve, "_LOOKUPS", {})
        monkeypatch.setattr(resolve, "_RESOLVED", {})
        resolve.prefetch(REPO)
        (again,) = resolve._LOOKUPS.values()
        assert again.found is not None and again.found.origin == "HF cache" and again.thread.ident is None
        assert again.found.weights == found.weights
