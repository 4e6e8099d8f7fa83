"""bench/incidents.py's case schema: every case file loads, and evidence under a key the runner does not pass is
refused rather than silently dropped (a log's last line indented as a key of its own, i421 until acc5)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import incidents  # noqa: E402


def test_every_case_loads_with_known_evidence_keys() -> None:
    cases = incidents.load_cases(None)
    assert len(cases) >= 486
    assert all(set(c.evidence) <= set(incidents.EVIDENCE_KEYS) for c in cases)


def test_an_unknown_evidence_key_is_refused(tmp_path: Path) -> None:
    text = (ROOT / "bench" / "incidents" / "i421-vllm-omni-2859.yaml").read_text(encoding="utf-8")
    line = "    ModuleNotFoundError: No module named 'vllm.inputs.data'\n"
    assert line in text
    bad = tmp_path / "i421-vllm-omni-2859.yaml"
    bad.write_text(text.replace(line, line[2:]), encoding="utf-8")  # the slip: a key beside `log`
    with pytest.raises(incidents.CaseError, match="ModuleNotFoundError"):
        incidents.load_case(bad)
