"""Snapshots: written from a live run over real HTTP, read back, replayed to the same facts; bad files refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor.errors import InputError
from doctor.probes.base import ProbeOptions, Target
from doctor.probes.runner import run_probes
from doctor.sources import snapshot

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
SECRETS = ("sk-scenario-0123456789abcdef", "scenario-admin-secret-value", "pa55word", "sk-live-key-0123456789")

ROUTES = {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
          "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
          "/model_info": Response(file=SCENARIOS / "sglang_model_info.json", content_type=JSON),
          "/metrics": [Response(file=SCENARIOS / "sglang_dp2_tp4_metrics.prom", content_type=PROM)]}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """One live run (two metrics scrapes) and its snapshot file."""
    with LocalServer(ROUTES) as srv:
        target = Target.parse(f"http://ops:pa55word@{srv.endpoint}")
        results = run_probes(target, ProbeOptions(api_key="sk-live-key-0123456789", sample_s=0.1))
    snap = snapshot.build_snapshot(target, results, {"argv": ["check", "--api-key-env", "VLLM_KEY"],
                                                     "note": "token=abcdefgh12345678"})
    path = tmp_path_factory.mktemp("snap") / "run.json"
    snapshot.write_snapshot(path, snap)
    return results, snap, path


def test_round_trip_replays_to_the_same_facts(live):
    results, _, path = live
    replayed = snapshot.replay(snapshot.read_snapshot(path))
    assert [r.name for r in replayed] == [r.name for r in results]
    for before, after in zip(results, replayed, strict=True):
        assert (after.ok, after.error) == (before.ok, before.error)
        assert after.facts.to_dict() == before.facts.to_dict()
    metrics = next(r for r in replayed if r.name == "metrics")
    assert metrics.facts.get("metrics.preemptions_per_s") == 0.0  # two scrapes were kept, and rates replay


def test_document_shape(live):
    _, snap, path = live
    assert snap["schema"] == "llmdoctor.snapshot/1" and snap["llmdoctor"]
    assert snap["created"].endswith("+00:00")
    assert snap["target"]["url"].startswith("http://***@127.0.0.1:")
    assert set(snap["probes"]) == {"server", "metrics", "process", "gpu"}  # a failed probe is recorded too
    assert set(snap["probes"]["server"]) == {"ok", "error", "elapsed_ms", "raw"}
    assert json.loads(path.read_text()) == snap
    assert snapshot.snapshot_target(snap).port == snap["target"]["port"]


def test_no_secret_reaches_the_file(live):
    _, _, path = live
    text = path.read_text()
    for secret in SECRETS + ("abcdefgh12345678",):
        assert secret not in text


def test_unknown_probe_replays_as_a_failed_result(live):
    _, snap, _ = live
    newer = {**snap, "probes": {**snap["probes"], "nvml": {"ok": True, "error": None, "elapsed_ms": 3, "raw": {}}}}
    result = snapshot.replay(newer)[-1]
    assert result.name == "nvml" and not result.ok and "written by a newer llmdoctor" in result.error


def _write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "snap.json"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def _valid() -> dict:
    return {"schema": "llmdoctor.snapshot/1", "target": {"scheme": "http", "host": "h", "port": 1},
            "probes": {"server": {"ok": True, "error": None, "elapsed_ms": 1.5, "raw": {}}}}


@pytest.mark.parametrize("change,message", [
    (lambda d: d.pop("schema"), "schema: missing: not an llmdoctor snapshot (expected 'llmdoctor.snapshot/1')"),
    (lambda d: d.update(schema="llmdoctor.snapshot/2"), "schema: 'llmdoctor.snapshot/2' is not 'llmdoctor.snapshot/1' "
                                                        "(written by another llmdoctor version)"),
    (lambda d: d.update(target="h:1"), "target: expected an object"),
    (lambda d: d["target"].update(port="1"), "target.port: expected a number"),
    (lambda d: d.update(probes=[]), "probes: expected an object of probe name -> result"),
    (lambda d: d["probes"]["server"].update(ok="yes"), "probes.server.ok: expected true or false"),
    (lambda d: d["probes"]["server"].update(error=3), "probes.server.error: expected a string or null"),
    (lambda d: d["probes"]["server"].pop("elapsed_ms"), "probes.server.elapsed_ms: expected a number"),
    (lambda d: d["probes"]["server"].update(raw="x"), "probes.server.raw: expected an object"),
    (lambda d: d.update(extra=[]), "extra: expected an object"),
])
def test_bad_documents_name_the_key(tmp_path, change, message):
    doc = _valid()
    change(doc)
    path = _write(tmp_path, json.dumps(doc))
    with pytest.raises(InputError) as info:
        snapshot.read_snapshot(path)
    assert str(info.value) == f"{path}: {message}"


def test_valid_minimal_document_reads(tmp_path):
    assert snapshot.read_snapshot(_write(tmp_path, json.dumps(_valid())))["probes"]["server"]["ok"] is True


@pytest.mark.parametrize("content,message", [
    ("{\"schema\": ", "not JSON: Expecting value at line 1 column 12"),
    (b"\xff\xfe{}", "not UTF-8 text"),
    ("[1, 2]", "(top level): expected a JSON object"),
])
def test_bad_files(tmp_path, content, message):
    path = _write(tmp_path, content)
    with pytest.raises(InputError, match=f"^{path}: "):
        snapshot.read_snapshot(path)
    with pytest.raises(InputError) as info:
        snapshot.read_snapshot(path)
    assert message in str(info.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        snapshot.read_snapshot(tmp_path / "nope.json")
    with pytest.raises(InputError, match="is a directory"):
        snapshot.read_snapshot(tmp_path)


def test_size_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(snapshot, "MAX_SNAPSHOT_BYTES", 100)
    path = _write(tmp_path, json.dumps({**_valid(), "extra": {"pad": "x" * 200}}))
    with pytest.raises(InputError, match="larger than the 100 bytes limit; refusing to read it"):
        snapshot.read_snapshot(path)


def test_write_into_a_missing_directory(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        snapshot.write_snapshot(tmp_path / "no" / "snap.json", _valid())
