"""Finding and parsing config.json: files, directories, the local HF cache, bundled examples, bad input.

The HF cache tests build a real cache layout (models--ORG--NAME/snapshots/HASH, refs/main) in a
temporary directory, holding scenario configs written here, not copies of real ones.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import requires_shared, shared_config

from doctor.errors import InputError
from doctor.model.config import MAX_CONFIG_BYTES, example_names, hf_hub_cache, load_config

# Scenario: the smallest config the analyzer accepts, not a real model.
TINY = {"_scenario": "test scenario, not a real checkpoint", "architectures": ["LlamaForCausalLM"],
        "model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        "num_key_value_heads": 2, "vocab_size": 100}


def write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_file_directory_and_name(tmp_path: Path) -> None:
    config = write(tmp_path / "my-model" / "config.json", TINY)
    by_file = load_config(str(config))
    by_dir = load_config(str(config.parent))
    assert by_file.raw == by_dir.raw == TINY
    assert by_file.name == by_dir.name == "my-model"
    assert by_dir.path == config
    other = write(tmp_path / "renamed.json", TINY)
    assert load_config(str(other)).name == "renamed"


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.json: no such file or directory"):
        load_config(str(tmp_path / "nope.json"))


def test_directory_without_config_json(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="config.json: not found in this directory"):
        load_config(str(tmp_path))


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    bad = write(tmp_path / "config.json", '{\n  "num_hidden_layers": 2,\n  oops\n}')
    with pytest.raises(InputError, match=r"config.json: invalid JSON at line 3 column 3"):
        load_config(str(bad))


def test_bare_infinity_and_nan_are_accepted(tmp_path: Path) -> None:
    text = json.dumps(TINY)[:-1] + ', "time_step_limit": [0.0, Infinity], "x": NaN}'
    loaded = load_config(str(write(tmp_path / "config.json", text)))
    assert loaded.raw["time_step_limit"][1] == float("inf")


@requires_shared
def test_real_nemotron_h_with_bare_infinity_parses() -> None:
    loaded = load_config(str(shared_config("nvidia__Nemotron-H-56B-Base-8K.json")))
    assert loaded.raw["time_step_limit"][1] == float("inf")


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="expected a JSON object at the top level, got list"):
        load_config(str(write(tmp_path / "config.json", "[1, 2]")))


def test_size_is_capped_before_parsing(tmp_path: Path) -> None:
    big = tmp_path / "model.safetensors"
    with big.open("wb") as fh:
        fh.truncate(MAX_CONFIG_BYTES + 1)
    with pytest.raises(InputError, match=r"larger than the 16 MiB limit; refusing to read it \(is this a weights"):
        load_config(str(big))


def test_binary_file_is_refused(tmp_path: Path) -> None:
    blob = tmp_path / "config.json"
    blob.write_bytes(b"\xff\xfe\x00\x81binary")
    with pytest.raises(InputError, match=r"binary data, not text \(is this a weights file\?\)"):
        load_config(str(blob))
    blob.write_bytes(b'{"model_type": "\xff\xfe"}')
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 16\)"):
        load_config(str(blob))


def _snapshot(cache: Path, repo: str, revision: str, data: dict) -> Path:
    repo_dir = cache / ("models--" + repo.replace("/", "--"))
    return write(repo_dir / "snapshots" / revision / "config.json", data)


def test_repo_id_from_hf_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "hub"
    _snapshot(cache, "acme/tiny", "aaa111", {**TINY, "num_hidden_layers": 3})
    pinned = _snapshot(cache, "acme/tiny", "bbb222", {**TINY, "num_hidden_layers": 4})
    write(cache / "models--acme--tiny" / "refs" / "main", "bbb222")
    os.utime(pinned, (1, 1))  # older on disk, but refs/main points at it
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    loaded = load_config("acme/tiny")
    assert loaded.name == "acme/tiny" and loaded.raw["num_hidden_layers"] == 4 and loaded.path == pinned


def test_repo_id_from_hf_home_newest_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    old = _snapshot(tmp_path / "hf" / "hub", "acme/tiny", "old", {**TINY, "num_hidden_layers": 3})
    _snapshot(tmp_path / "hf" / "hub", "acme/tiny", "new", {**TINY, "num_hidden_layers": 5})
    os.utime(old, (1, 1))
    assert hf_hub_cache() == tmp_path / "hf" / "hub"
    assert load_config("acme/tiny").raw["num_hidden_layers"] == 5


def test_repo_id_not_cached_says_where_it_looked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(InputError, match=f"not in the Hugging Face cache at {tmp_path}"):
        load_config("acme/missing")


def test_bundled_examples_load_and_carry_a_scenario_label() -> None:
    names = example_names()
    assert {"seed-gqa-27b", "seed-mla-moe", "seed-dsa-moe", "seed-hybrid-moe"} <= set(names)
    for name in names:
        loaded = load_config(f"example:{name}")
        assert "not a published checkpoint" in loaded.raw["_scenario"].lower()
        assert loaded.name == f"example:{name}"


def test_unknown_example_lists_the_available_ones() -> None:
    with pytest.raises(InputError, match=r"example:nope: no such bundled example \(available: .*seed-gqa-27b"):
        load_config("example:nope")
