"""Shared test plumbing: where the real fixtures live, and how to run the real CLI.

Real data is read in place from ../shared/fixtures (never copied into the project); when that folder is
absent (a user's own clone) the tests that need it skip with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

#: Tests never reach the real Hugging Face Hub: a model id not found locally stays unknown (as with --offline).
#: The resolution tests clear this and point HF_ENDPOINT at a local stand-in (tests/support/hubserver.py).
os.environ["HF_HUB_OFFLINE"] = "1"

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SHARED_FIXTURES = SHARED / "fixtures"
SEED = SHARED / "seed" / "serving-playbook.txt"

requires_shared = pytest.mark.skipif(
    not SHARED_FIXTURES.is_dir(),
    reason=f"real fixtures not found at {SHARED_FIXTURES} (they live beside the project checkout, not in it)",
)


def shared_config(name: str) -> Path:
    """Path of a real config.json under ../shared/fixtures/configs (skip when absent)."""
    path = SHARED_FIXTURES / "configs" / name
    if not path.is_file():
        pytest.skip(f"real fixture {path} not available")
    return path


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `python -m doctor ARGS` as a real subprocess, the way a user's shell would."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "doctor", *args],
        input=input, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=ROOT,
    )
