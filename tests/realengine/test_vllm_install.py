"""The installer is idempotent: a complete install is reused in a moment, and says where it is."""

from __future__ import annotations

import subprocess
import time

import pytest

from realengine.conftest import ROOT
from realengine.vllm_engine import VLLM

pytestmark = pytest.mark.realengine


def test_a_complete_install_is_reused_at_once():
    home = VLLM.require()
    started = time.monotonic()
    done = subprocess.run([str(ROOT / VLLM.install), VLLM.version], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(home)
    assert time.monotonic() - started < 10
