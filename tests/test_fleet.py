"""`check --targets`: many endpoints concurrently, some dead, bounded in time and file descriptors."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from conftest import ROOT, SHARED_FIXTURES, requires_shared, run_cli
from support.multiport import MultiPortServer

from doctor.commands.fleet import load_targets, run_fleet
from doctor.errors import InputError

SCENARIOS = ROOT / "fixtures" / "scenarios"


def _vllm_routes(metrics: Path) -> dict[str, tuple[str, bytes]]:
    return {"/version": ("application/json", (SCENARIOS / "vllm_version.json").read_bytes()),
            "/v1/models": ("application/json", (SCENARIOS / "vllm_v1_models.json").read_bytes()),
            "/metrics": ("text/plain; version=0.0.4", metrics.read_bytes())}


@requires_shared
def test_200_targets_with_10_percent_dead_finish_in_about_one_timeout(tmp_path: Path) -> None:
    timeout = 2.0  # generous: the one-thread test server shares 2 busy cores with 64 client threads
    with MultiPortServer(_vllm_routes(SHARED_FIXTURES / "metrics" / "vllm_1.prom"), healthy=180, dead=20) as srv:
        targets = tmp_path / "fleet.yaml"
        targets.write_text("targets:\n" + "".join(
            f"  - {{name: t{i}, endpoint: '{ep}'}}\n" for i, ep in enumerate(srv.healthy_endpoints + srv.dead_endpoints)))
        fds_before = len(os.listdir("/proc/self/fd"))
        start = time.monotonic()
        fleet = run_fleet(load_targets(str(targets)), timeout_s=timeout)
        elapsed = time.monotonic() - start
        fds_after = len(os.listdir("/proc/self/fd"))
    assert elapsed < timeout * 2 + 6, elapsed  # one (bounded) timeout plus the work, not 20 timeouts
    reachable = [r for r in fleet.results if r.reachable]
    assert len(reachable) == 180 and sum(not r.reachable for r in fleet.results) == 20
    assert all("kv-cache-exhausted" in {f.id for f in r.run.diagnosis.findings} for r in reachable)
    assert fds_after <= fds_before + 2, (fds_before, fds_after)


@requires_shared
def test_worker_processes_give_the_same_results_in_the_same_order(tmp_path: Path) -> None:
    routes = _vllm_routes(SHARED_FIXTURES / "metrics" / "vllm_1.prom")
    with MultiPortServer(routes, healthy=16, dead=4) as srv:
        targets = tmp_path / "fleet.yaml"
        # dead ones bunched at the start: dealt round-robin, they spread over the workers
        targets.write_text("".join(f"- {ep}\n" for ep in srv.dead_endpoints + srv.healthy_endpoints))
        specs = load_targets(str(targets))
        parent = os.getpid()
        one = run_fleet(specs, timeout_s=1.0, processes=1)
        three = run_fleet(specs, timeout_s=1.0, processes=3)
    assert os.getpid() == parent
    assert [r.spec.endpoint for r in three.results] == [s.endpoint for s in specs]
    assert [r.reachable for r in three.results] == [r.reachable for r in one.results] == [False] * 4 + [True] * 16
    assert [r.to_dict()["findings"] for r in three.results] == [r.to_dict()["findings"] for r in one.results]
    assert all(p.raw == {} for r in three.results for p in r.run.probes)  # compact: no raw answers kept


@requires_shared
def test_cli_fleet_table_json_and_exit_codes(tmp_path: Path) -> None:
    with MultiPortServer(_vllm_routes(SHARED_FIXTURES / "metrics" / "vllm_3.prom"), healthy=3, dead=1) as srv:
        targets = tmp_path / "fleet.json"
        targets.write_text(json.dumps([{"name": "a", "endpoint": srv.healthy_endpoints[0]},
                                       srv.healthy_endpoints[1], srv.healthy_endpoints[2],
                                       {"name": "dead", "endpoint": srv.dead_endpoints[0]}]))
        text = run_cli("check", "--targets", str(targets), "--timeout", "0.5")
        doc = json.loads(run_cli("check", "--targets", str(targets), "--timeout", "0.5", "--format", "json").stdout)
    assert "dead" in text.stdout and "unreachable" in text.stdout
    assert doc["schema"] == "llmdoctor.fleet/1" and doc["summary"]["targets"] == 4
    assert doc["summary"]["reachable"] == 3


def test_all_dead_is_exit_3(tmp_path: Path) -> None:
    with MultiPortServer({}, healthy=0, dead=2) as srv:
        targets = tmp_path / "fleet.yaml"
        targets.write_text("\n".join(f"- {ep}" for ep in srv.dead_endpoints))
        result = run_cli("check", "--targets", str(targets), "--timeout", "0.3")
    assert result.returncode == 3 and "no target could be examined" in result.stderr


@pytest.mark.parametrize(("text", "message"), [
    ("[]", "expected a list of targets"),
    ("- {endpoint: 'h:1', api_key: sk-123}", "api_key_env"),
    ("- {endpoint: 'h:1', colour: red}", "unknown key"),
    ("- {name: x}", "endpoint: missing"),
    ("- 42", "expected an endpoint string"),
    ("a: &x [1]\nb: *x", "aliases"),
])
def test_bad_targets_files(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_targets(str(path))
    result = run_cli("check", "--targets", str(path))
    assert result.returncode == 2 and result.stderr.count("\n") == 1


def test_what_a_fleet_learns_once_per_shape_gives_each_target_its_own_answer(tmp_path: Path) -> None:
    """check --targets works out a scrape's redaction and a model's family once per shape (doctor/probes/metrics.py
    _clean, doctor/derive/family.py _family_facts): over three different real vLLM scrapes, interleaved, across
    two worker processes, each target's answer is the one a lone check of it gives with nothing remembered."""
    from contextlib import ExitStack

    from doctor.commands.fleet import TargetSpec, check_target
    from doctor.derive.family import _family_facts
    from doctor.probes.metrics import _clean

    scrapes = [ROOT / "fixtures" / "metrics" / name for name in ("vllm_1.prom", "vllm_2.prom", "vllm_3.prom")]
    with ExitStack() as stack:
        servers = [stack.enter_context(MultiPortServer(_vllm_routes(path), healthy=4, dead=0)) for path in scrapes]
        specs = [TargetSpec(endpoint=srv.healthy_endpoints[i], name=f"{n}-{i}")
                 for i in range(4) for n, srv in enumerate(servers)]
        fleet = run_fleet(specs, timeout_s=2.0, processes=2)
        alone = []
        for spec in specs[:3]:
            _clean.cache_clear()
            _family_facts.cache_clear()
            alone.append(check_target(spec, 2.0, (), (), unchecked=False))

    def answer(result) -> dict:  # noqa: ANN001 - a TargetResult
        doc = result.run.to_dict()
        return {k: doc[k] for k in ("engine", "engine_version", "model", "findings", "facts", "errors")}

    assert all(r.reachable for r in fleet.results)
    answers = [answer(r) for r in alone]
    assert answers[0]["facts"]["metrics.kv_usage"] != answers[1]["facts"]["metrics.kv_usage"]  # three shapes
    for index, result in enumerate(fleet.results):
        assert answer(result) == answers[index % 3], result.spec.name
