"""`llmdoctor inspect` as a user runs it: real subprocesses, real files, exit codes, one-line errors.

The JSON document is also checked in-process for every real fixture config (fast), against the
``llmdoctor.inspect/1`` keys documented in docs/inspect.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, requires_shared, run_cli, shared_config

from doctor.commands.inspect import build_report
from doctor.model.architecture import analyze
from doctor.model.config import load_config
from doctor.render.inspect import render_text

# Scenario: a config of an architecture nobody ships, written for this test.
UNKNOWN = {"_scenario": "test scenario, not a real checkpoint", "architectures": ["WarpDriveForCausalLM"],
           "model_type": "warp", "num_hidden_layers": 4, "hidden_size": 256, "num_attention_heads": 8,
           "num_key_value_heads": 2, "vocab_size": 1000}


def one_error_line(result, *fragments: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("llmdoctor: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_readme_first_command_text_card() -> None:
    result = run_cli("inspect", "example:seed-gqa-27b", "--kv-dtype", "fp8")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "GQA · 32 query heads · 8 KV heads × head_dim 128" in out
    assert "48 total · 48 hold KV" in out
    assert "KV/token    96.0 KiB at fp8" in out
    assert "32k ctx     ≈ 3.0 GiB per user" in out
    assert "Evidence" in out and "num_key_value_heads=8" in out


def test_json_document_has_the_promised_keys() -> None:
    result = run_cli("inspect", "example:seed-hybrid-moe", "--format", "json", "--engine", "sglang",
                     "--context", "1M", "--gpu-mem", "141GB")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    check_schema(doc)
    assert doc["attention"]["kind"] == "hybrid" and doc["moe"] == {"experts": 512, "active": 10, "shared": 1,
                                                                    "layers": 48}
    assert doc["kv_cache"]["engine"] == "sglang" and doc["kv_cache"]["context"] == 2**20
    assert doc["kv_cache"]["state_bytes_per_sequence"] == doc["kv_cache"]["by_engine"]["sglang"][
        "state_bytes_per_sequence"] != doc["kv_cache"]["by_engine"]["vllm"]["state_bytes_per_sequence"]
    assert doc["capacity"]["gpu_memory_bytes"] == 141 * 10**9


def check_schema(doc: dict) -> None:
    assert doc["schema"] == "llmdoctor.inspect/1"
    assert isinstance(doc["model"]["architectures"], list) and isinstance(doc["model"]["model_type"], str)
    assert isinstance(doc["model"]["known"], bool)
    assert doc["attention"]["kind"] in ("mha", "mqa", "gqa", "mla", "dsa", "hybrid")
    for key in ("kv_heads", "head_dim"):
        assert isinstance(doc["attention"][key], int)
    assert doc["attention"]["sliding_window"] is None or isinstance(doc["attention"]["sliding_window"], int)
    assert all(isinstance(doc["layers"][k], int) for k in ("total", "kv", "linear", "sliding"))
    assert doc["moe"] is None or {"experts", "active", "shared"} <= set(doc["moe"])
    assert isinstance(doc["mtp_layers"], int) and isinstance(doc["multimodal"], bool)
    assert doc["quantization"] is None or isinstance(doc["quantization"], str)
    kv = doc["kv_cache"]
    assert kv["dtype"] in ("bf16", "fp16", "fp32", "fp8", "fp4")
    assert isinstance(kv["bytes_per_token"], int) and isinstance(kv["state_bytes_per_sequence"], int)
    assert doc["evidence"] and all(set(e) == {"claim", "fields"} for e in doc["evidence"])


@requires_shared
@pytest.mark.parametrize("path", sorted((SHARED_FIXTURES / "configs").glob("*.json")), ids=lambda p: p.stem)
def test_every_fixture_renders_as_json_and_text(path: Path) -> None:
    loaded = load_config(str(path))
    card = analyze(loaded.raw, name=loaded.name, source=str(path))
    doc = build_report(card, kv_dtype="auto", context=32768, gpu_mem=141 * 10**9)
    check_schema(json.loads(json.dumps(doc)))
    assert card.name in render_text(card, doc)


@requires_shared
def test_real_config_with_bare_infinity() -> None:
    result = run_cli("inspect", str(shared_config("nvidia__Nemotron-H-56B-Base-8K.json")))
    assert result.returncode == 0, result.stderr
    assert "HYBRID (GQA + Mamba-2)" in result.stdout


def test_model_directory_and_hf_cache_repo_id(tmp_path: Path) -> None:
    scenario = {**UNKNOWN, "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}
    snapshot = tmp_path / "hub" / "models--acme--tiny-qwen" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(scenario), encoding="utf-8")
    by_repo = run_cli("inspect", "acme/tiny-qwen", env={"HF_HUB_CACHE": str(tmp_path / "hub")})
    assert by_repo.returncode == 0, by_repo.stderr
    assert by_repo.stdout.startswith("acme/tiny-qwen · Qwen3ForCausalLM (qwen3)")
    by_dir = run_cli("inspect", str(snapshot))
    assert by_dir.returncode == 0 and "4 total · 4 hold KV" in by_dir.stdout


def test_unknown_architecture_prints_a_card_and_exits_2(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(UNKNOWN), encoding="utf-8")
    result = run_cli("inspect", str(config), "--format", "json")
    one_error_line(result, str(config), "architectures: WarpDriveForCausalLM is not a known architecture")
    doc = json.loads(result.stdout)
    assert doc["model"]["known"] is False and doc["attention"]["kind"] == "gqa"


@pytest.mark.parametrize(("content", "fragments"), [
    (None, ["no such file or directory"]),
    ("{ not json", ["invalid JSON at line 1 column 3"]),
    ('{"architectures": ["LlamaForCausalLM"], "hidden_size": 64}', ["num_hidden_layers: missing"]),
    ('{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": "many", "hidden_size": 64}',
     ["num_hidden_layers: expected an integer, got 'many'"]),
])
def test_bad_configs_get_one_line_and_exit_2(tmp_path: Path, content: str | None, fragments: list[str]) -> None:
    config = tmp_path / "config.json"
    if content is not None:
        config.write_text(content, encoding="utf-8")
    one_error_line(run_cli("inspect", str(config)), str(config), *fragments)


def test_directory_without_config(tmp_path: Path) -> None:
    one_error_line(run_cli("inspect", str(tmp_path)), "config.json: not found in this directory")


def test_bad_options_get_one_line_and_exit_2() -> None:
    one_error_line(run_cli("inspect", "example:seed-gqa-27b", "--gpu-mem", "lots"), "--gpu-mem")
    one_error_line(run_cli("inspect", "example:seed-gqa-27b", "--context", "long"), "--context")
    one_error_line(run_cli("inspect", "example:seed-mla-moe", "--kv-dtype", "fp4", "--engine", "vllm"),
                   "--kv-dtype fp4: vLLM 0.33.0 has no fp4 KV layout for dense MLA")
    usage = run_cli("inspect", "example:seed-gqa-27b", "--kv-dtype", "int2")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_capacity_line_when_weights_do_not_fit() -> None:
    result = run_cli("inspect", "example:seed-mla-moe", "--gpu-mem", "141GB")
    assert result.returncode == 0
    assert "do not fit one 131 GiB GPU: shard over ≥ 5 GPUs" in result.stdout
