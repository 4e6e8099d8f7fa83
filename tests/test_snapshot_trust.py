"""A snapshot comes from someone else's machine (a bug report, a postmortem): `check --snapshot F` replays only
what the file holds. No request leaves this host (no Hub lookup, no HF_TOKEN sent) and no path it names is
read here, whatever its ``extra.inputs`` say (issue 23, Security)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, run_cli
from support.httpserver import LocalServer

BUNDLED = ROOT / "doctor" / "examples" / "snapshots" / "vllm-kv-full.json"


def _edited(tmp_path: Path, config_name: str, *, keep_command: bool = True) -> Path:
    """The bundled snapshot with its config body removed and ``config_name`` set, as an attacker edits it."""
    snap = json.loads(BUNDLED.read_text())
    inputs = snap["extra"]["inputs"]
    inputs.pop("config_json")
    inputs["config_name"] = config_name
    if not keep_command:
        inputs.pop("command")
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(snap))
    return path


@pytest.mark.parametrize("name", ["attacker/some-model", "deepseek-ai/DeepSeek-V3"])
def test_replay_sends_nothing_to_the_hub(tmp_path, name):
    """A real HTTP server on loopback stands in as HF_ENDPOINT and records every request: none may arrive."""
    with LocalServer() as hub:
        env = {"HF_ENDPOINT": hub.url(""), "HF_TOKEN": "hf_SECRETtoken123", "HF_HUB_OFFLINE": "0",
               "HF_HOME": str(tmp_path / "hf")}
        for keep in (True, False):
            done = run_cli("check", "--snapshot", str(_edited(tmp_path, name, keep_command=keep)), "--format", "json",
                           env=env)
            assert done.returncode in (0, 1), done.stderr
            assert "hf_SECRET" not in done.stdout + done.stderr
        assert hub.requests == []
    errors = json.loads(done.stdout)["errors"]
    assert "model" in errors


def test_replay_reads_no_local_path_it_names(tmp_path):
    """A config the snapshot names by path (a directory with a real config.json here) is not read in its place."""
    model_dir = tmp_path / "here"
    model_dir.mkdir()
    shutil.copy(ROOT / "doctor" / "examples" / "seed-gqa-27b.json", model_dir / "config.json")
    for name in (str(model_dir), "../../../../etc/passwd", "/etc"):
        done = run_cli("check", "--snapshot", str(_edited(tmp_path, name, keep_command=False)), "--format", "json")
        assert done.returncode in (0, 1), done.stderr
        doc = json.loads(done.stdout)
        assert "model.resolved_from" not in doc["facts"], name
        assert "model" in doc["errors"]


def test_replay_still_uses_the_config_the_file_carries():
    """The bundled snapshot carries its config body: the replay sizes the model from it, no lookup needed."""
    done = run_cli("check", "--snapshot", str(BUNDLED), "--format", "json", env={"HF_HUB_OFFLINE": "1"})
    assert done.returncode in (0, 1), done.stderr
    facts = json.loads(done.stdout)["facts"]
    assert facts["model.resolved_from"]["value"] == "given"
