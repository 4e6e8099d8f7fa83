"""The bundled demo snapshot (a scenario recorded by tools/make_demo_snapshot.py) replays anywhere."""

from __future__ import annotations

import json

from conftest import ROOT, run_cli


def test_demo_snapshot_replays_to_its_causes() -> None:
    result = run_cli("check", "--snapshot", "example:vllm-kv-full", "--format", "json")
    assert result.returncode == 1, result.stderr
    doc = json.loads(result.stdout)
    ids = [f["id"] for f in doc["findings"]]
    assert ids[0] == "kv-cache-exhausted" and doc["findings"][0]["confidence"] == "high"
    assert "moe-without-ep" in ids


def test_demo_snapshot_is_labelled_a_scenario() -> None:
    snap = json.loads((ROOT / "doctor" / "examples" / "snapshots" / "vllm-kv-full.json").read_text())
    assert snap["extra"]["_scenario"].startswith("Scenario, not a real capture")


def test_unknown_bundled_snapshot() -> None:
    result = run_cli("check", "--snapshot", "example:nope")
    assert result.returncode == 2 and "vllm-kv-full" in result.stderr and result.stderr.count("\n") == 1


def test_the_generator_is_deterministic_and_the_committed_file_is_current(tmp_path) -> None:
    """Run twice (two servers on two ephemeral ports, two clocks): the same bytes, and the committed file's."""
    import subprocess
    import sys

    outputs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outputs:
        run = subprocess.run([sys.executable, str(ROOT / "tools" / "make_demo_snapshot.py"), "--output", str(out)],
                             capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert run.returncode == 0, run.stderr
    first, second = (p.read_bytes() for p in outputs)
    assert first == second
    committed = ROOT / "doctor" / "examples" / "snapshots" / "vllm-kv-full.json"
    assert first == committed.read_bytes(), "stale: run python tools/make_demo_snapshot.py"
