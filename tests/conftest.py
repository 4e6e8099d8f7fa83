"""Shared test plumbing: where the real fixtures live, and how to run the real CLI.

Real data travels with the project: fixtures/ holds every real fixture the tests read, each folder with its
SOURCES.md (copied from the shared fixtures the project was given), so a fresh clone runs the same suite CI
runs. Where an input is missing — an unpacked sdist has no fixtures/, an engine wheel was not fetched — the
tests that need it skip with the reason, except under CI (``CI=true``), where a missing input is a failure: CI
must not pass by skipping. The engines' wheels, which some tests read in place (never installed), come from
``LLMDOCTOR_WHEEL_DIR`` (default ``../wheelcache`` beside the checkout); ``tools/fetch_test_wheels.sh`` (README,
``.ci/run``) downloads the few they need into a cache outside the checkout.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

#: Tests never reach the real Hugging Face Hub: a model id not found locally stays unknown (as with --offline).
#: The resolution tests clear this and point HF_ENDPOINT at a local stand-in (tests/support/hubserver.py).
os.environ["HF_HUB_OFFLINE"] = "1"
#: Nor the user's own calibration file (doctor/model/calibration.py): every run starts with none; the calibration
#: tests give each CLI run its own LLMDOCTOR_DATA_DIR.
os.environ["LLMDOCTOR_DATA_DIR"] = tempfile.mkdtemp(prefix="llmdoctor-test-data-")
atexit.register(shutil.rmtree, os.environ["LLMDOCTOR_DATA_DIR"], ignore_errors=True)

ROOT = Path(__file__).resolve().parents[1]
#: The real fixtures (fixtures/ in the checkout); LLMDOCTOR_FIXTURES_DIR points elsewhere (tests/test_ci_skips.py
#: uses it to show that a missing input skips locally and fails under CI).
SHARED_FIXTURES = Path(os.environ.get("LLMDOCTOR_FIXTURES_DIR") or ROOT / "fixtures")
SEED = ROOT / "fixtures" / "seed" / "serving-playbook.txt"

#: Under CI a test must run, not skip for want of an input (CI=true is set by GitHub Actions, GitLab and others).
IN_CI = os.environ.get("CI", "").lower() in ("true", "1")
#: The engines' wheels some tests read in place (tools/README.md; `.ci/run` fills it).
WHEEL_DIR = Path(os.environ.get("LLMDOCTOR_WHEEL_DIR") or ROOT.parent / "wheelcache")


def unavailable(reason: str) -> None:
    """An input this test needs is missing: skip with the reason, or fail under CI."""
    if IN_CI:
        pytest.fail(f"CI=true and {reason}: CI must run this test, not skip it", pytrace=False)
    pytest.skip(reason)


_NO_SHARED = f"real fixtures not found at {SHARED_FIXTURES} (they are in the repository's fixtures/, not in an sdist)"
requires_shared = pytest.mark.skipif(not SHARED_FIXTURES.is_dir() and not IN_CI, reason=_NO_SHARED)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under CI, a test marked requires_shared fails when the real fixtures are missing (instead of skipping)."""
    if IN_CI and not SHARED_FIXTURES.is_dir() and any(
            m.name == "skipif" and m.kwargs.get("reason") == _NO_SHARED for m in item.iter_markers()):
        unavailable(_NO_SHARED)


def find_wheel_file(engine: str, version: str) -> Path | None:
    """``engine-version-*.whl`` in WHEEL_DIR (exactly that version, not a .postN), or None."""
    found = sorted(WHEEL_DIR.glob(f"{engine}-{version}-*.whl")) if WHEEL_DIR.is_dir() else []
    return found[0] if found else None


def shared_config(name: str) -> Path:
    """Path of a real config.json under fixtures/configs (skip when absent)."""
    path = SHARED_FIXTURES / "configs" / name
    if not path.is_file():
        unavailable(f"real fixture {path} not available")
    return path


def run_cli(*args: str, input: str | None = None, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run `python -m doctor ARGS` as a real subprocess, the way a user's shell would."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "doctor", *args],
        input=input, capture_output=True, text=True, env=full_env, timeout=timeout, cwd=ROOT,
    )
