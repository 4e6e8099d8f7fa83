"""VLLM_MLA_DISABLE as a release rule (issue 22 point 4(d)): every vLLM wheel from 0.7.1 to 0.33.0 reads it, and with it
set an MLA model is cached per head at qk_head_dim instead of the latent (doctor/model/engine_memory.yaml
``env_evidence``: file:line per release range)."""

from __future__ import annotations

import json
from typing import Any

from conftest import ROOT, run_cli

CONFIG = str(ROOT / "fixtures" / "configs" / "deepseek-ai__DeepSeek-V2-Lite.json")


def _facts(version: str, command: str) -> dict[str, Any]:
    result = run_cli("check", "--format", "json", "--config", CONFIG, "--gpu", "H100", "--engine-version", version,
                     "--command", command)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["facts"]


def test_the_launch_environment_switches_vllms_mla_layout() -> None:
    """DeepSeek-V2-Lite (16 heads, qk_nope 128 + qk_rope 64, 27 layers, bf16): latent (512 + 64) × 2 B × 27 = 31,104 B
    per token on vLLM 0.11.0; with VLLM_MLA_DISABLE=1, 2 × 16 × 192 × 2 B × 27 = 331,776 B, the source naming the
    variable and the wheels' lines; "0" is vLLM's off (bool(int(...)))."""
    plain = _facts("0.11.0", "vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert plain["model.kv_layout"]["value"] == "latent" and plain["model.kv_bytes_per_token"]["value"] == 31104
    off = _facts("0.11.0", "VLLM_MLA_DISABLE=1 vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert off["model.kv_layout"]["value"] == "per_head" and off["model.kv_bytes_per_token"]["value"] == 331776
    assert off["model.kv_layout"]["source"].startswith("VLLM_MLA_DISABLE=1 in the launch environment")
    assert "vllm/config/model.py:1444 (0.11.0" in off["model.kv_layout"]["source"]
    zero = _facts("0.11.0", "VLLM_MLA_DISABLE=0 vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert zero["model.kv_layout"]["value"] == "latent"


def test_mla_turned_off_keeps_prefix_caching_on_0_7_1() -> None:
    """vLLM 0.7.1 forces prefix caching off only when use_mla (vllm/config.py:3255-3263): with VLLM_MLA_DISABLE=1 the
    model runs per head and no such forcing is claimed."""
    on = _facts("0.7.1", "vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert on["engine.mla_prefix_caching_forced_off"]["value"] is True
    off = _facts("0.7.1", "VLLM_MLA_DISABLE=1 vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert off["model.kv_layout"]["value"] == "per_head" and "engine.mla_prefix_caching_forced_off" not in off


def test_a_release_before_the_variable_ignores_it() -> None:
    """vLLM 0.7.0 has no VLLM_MLA_DISABLE (its wheel reads none): its own per-head rule holds, cited as that
    release's, not the variable's."""
    old = _facts("0.7.0", "VLLM_MLA_DISABLE=1 vllm serve deepseek-ai/DeepSeek-V2-Lite")
    assert old["model.kv_layout"]["value"] == "per_head" and "VLLM_MLA_DISABLE" not in old["model.kv_layout"]["source"]
