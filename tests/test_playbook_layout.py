"""The knowledge layout of issue 20: a cause is one file, fact names are checked against the registry.

The acceptance tests go through the CLI as a user would: a cause file with a log signature dropped into a
``--playbooks DIR`` names its cause in ``check --log`` on a real log, and a typo in a fact name fails validation
with the file and line.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import ROOT, run_cli

PUBLIC = ROOT / "fixtures" / "logs" / "public"
#: A real vLLM start-up log (fixtures/logs/public/SOURCES.md) whose override line no built-in cause names.
OVERRIDE_LOG = PUBLIC / "vllm-kv-blocks-override.log"
OVERRIDE_LINE = "Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512"


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
