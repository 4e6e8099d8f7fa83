"""The card as model.* facts: values, provenance, and that every key is documented."""

from __future__ import annotations

import re

from conftest import ROOT, requires_shared, shared_config

from doctor.model.architecture import analyze
from doctor.model.config import load_config
from doctor.model.facts import model_facts


def facts_for(spec: str, **kwargs):
    loaded = load_config(spec)
    return model_facts(analyze(loaded.raw, name=loaded.name, source=str(loaded.path)), **kwargs)


def documented_keys() -> set[str]:
    """Keys in the first column of the tables in docs/facts.md and docs/inspect.md."""
    keys: set[str] = set()
    for doc in ("facts.md", "inspect.md"):
        for line in (ROOT / "docs" / doc).read_text(encoding="utf-8").splitlines():
            if not line.startswith("| `model."):
                continue
            names = re.findall(r"`([^`]+)`", line.split("|")[1])
            first = names[0]
            keys.add(first)
            keys.update(first.rsplit(".", 1)[0] + n if n.startswith(".") else n for n in names[1:])
    return keys


def test_every_fact_is_documented() -> None:
    for spec in ("example:seed-mla-moe", "example:seed-dsa-moe", "example:seed-hybrid-moe", "example:seed-gqa-27b"):
        undocumented = {f.key for f in facts_for(spec)} - documented_keys()
        assert not undocumented, f"document these in docs/inspect.md: {sorted(undocumented)}"


def test_mla_moe_facts_and_sources() -> None:
    facts = facts_for("example:seed-mla-moe")
    assert facts.get("model.attention") == "mla"
    assert facts.fact("model.kv_lora_rank").source == "config.json:kv_lora_rank"
    assert facts.get("model.moe") is True
    assert facts.get("model.moe.experts") == 256
    assert facts.fact("model.moe.experts").source == "config.json:n_routed_experts"
    kv = facts.fact("model.kv_bytes_per_token")
    assert kv.value == 61 * 576 * 2 and kv.source == "derived: 61 × [latent 576 × 2 B]"
    assert facts.get("model.quantization") == "fp8"
    assert facts.get("model.mtp_layers") == 1 and facts.get("model.mtp_kv_bytes_per_token") == 576 * 2


def test_dense_model_says_known_unset() -> None:
    facts = facts_for("example:seed-gqa-27b", kv_dtype="fp8")
    assert facts.get("model.moe") is False and "model.moe.experts" not in facts
    assert "model.quantization" in facts and facts.get("model.quantization") is None
    assert facts.get("model.kv_dtype") == "fp8" and facts.get("model.kv_bytes_per_token") == 98_304
    assert facts.get("model.state_bytes_per_sequence") == 0


@requires_shared
def test_nested_configs_cite_the_text_config_path() -> None:
    facts = facts_for(str(shared_config("Qwen__Qwen3.5-27B.json")))
    assert facts.fact("model.kv_heads").source == "config.json:text_config.num_key_value_heads"
    assert facts.get("model.attention") == "hybrid"
    assert facts.fact("model.attention").source == "config.json:text_config.layer_types"
    assert facts.get("model.state_bytes_per_sequence") > 0
    sglang = facts_for(str(shared_config("Qwen__Qwen3-Next-80B-A3B-Thinking.json")), engine="sglang")
    assert sglang.get("model.kv_engine") == "sglang"
