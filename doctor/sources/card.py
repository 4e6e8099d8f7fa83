"""What the model card and its directory say under the launch's flags: the weights and KV held at the precision
`--quantization fp8` (on a 16-bit checkpoint) or `--dtype float32` asks for, and the tokens a tool parser needs
that the served tokenizer lacks.

Input reading, not derivation: each reads the model card (the checkpoint's dtype, its weights sized again, the
tokenizer files beside its config.json), which is no fact, so ``gather`` (doctor/sources/offline.py) runs them as
soon as the model and the command are both known — before the memory model (doctor/model/memory.py
``non_kv_facts``, ``engine_pool_facts``) reads the sizes.
"""

from __future__ import annotations

from pathlib import Path

from doctor.errors import InputError
from doctor.facts import Facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def online_fp8_facts(card: Any, facts: Facts) -> Facts:
    """`--quantization fp8` on a 16-bit checkpoint: the engine quantizes while loading, so the GPUs hold FP8."""
    out = Facts()
    if card is None or facts.get("model.quantization") is not None or facts.get("launch.quantization") != "fp8" \
            or facts.get("model.same_checkpoint") is False:  # then the served checkpoint was sized already
        return out
    from doctor.model.weights import plan_weights

    weights = plan_weights(card, "fp8", model_path=None)
    out.set("model.weight_bytes", weights.total_bytes, f"{weights.source} (--quantization fp8)")
    out.set("model.expert_weight_bytes", weights.expert_bytes, f"{weights.source} (--quantization fp8)")
    return out


#: --dtype spellings that mean 32-bit floats (vllm 0.32.0 vllm/config/model.py:2369 maps "float" and "float32")
FLOAT32_DTYPES = ("float32", "float")


def float32_facts(card: Any, facts: Facts) -> Facts:
    """`--dtype float32` on an unquantized checkpoint: the engine holds every weight in 4 bytes, and its KV too
    unless --kv-cache-dtype says otherwise (``auto`` follows the model's dtype)."""
    out = Facts()
    dtype = str(facts.get("launch.flags.dtype") or "").lower()
    if card is None or dtype not in FLOAT32_DTYPES or facts.get("model.quantization") is not None:
        return out
    weights, per_token = facts.get("model.weight_bytes"), facts.get("model.kv_bytes_per_token")
    if isinstance(weights, int) and card.dtype in ("bfloat16", "float16"):
        out.set("model.weight_bytes", weights * 2, f"derived: {card.dtype} weights held in float32 (--dtype {dtype})")
    if isinstance(per_token, int) and str(facts.get("launch.kv_cache_dtype") or "auto") == "auto" \
            and facts.get("model.kv_dtype") in ("bf16", "fp16"):
        why = f"derived: KV in float32, the model's dtype (--dtype {dtype}, --kv-cache-dtype auto)"
        out.set("model.kv_bytes_per_token", per_token * 2, why)
        growing = facts.get("model.kv_bytes_per_token_growing")
        if isinstance(growing, (int, float)):
            out.set("model.kv_bytes_per_token_growing", growing * 2, why)
        out.set("model.kv_dtype", "fp32", f"--dtype {dtype} with --kv-cache-dtype auto")
    return out


def parser_token_facts(facts: Facts, card: Any) -> Facts:
    """launch.tool_parser_tokens_missing: tokens the tool parser's constructor needs (doctor/engines/
    parser_tokens.yaml, read from the engine's wheel) that the served tokenizer lacks — vLLM then refuses to
    start. Read only for the parsers listed, from the model directory's tokenizer files; unknown otherwise."""
    out = Facts()
    parser, engine = facts.get("launch.tool_call_parser"), facts.get("launch.engine")
    if not parser or engine != "vllm":
        return out
    if card is None:
        out.error("launch.tool_parser_tokens_missing", "the served tokenizer is not at hand (no model directory: "
                                                        "pass --config DIR of the served model)")
        return out
    from doctor.engines.catalog import version_key
    from doctor.yamlsafe import load_packaged

    table = load_packaged(Path(__file__).parents[1] / "engines" / "parser_tokens.yaml").get(engine) or {}
    read = sorted(table, key=version_key)
    entry = (table.get(read[-1]) or {}).get(parser) if read else None
    if entry is None:
        out.set("launch.tool_parser_tokens_missing", [], f"{parser} is not among the parsers that need tokens "
                                                         "(doctor/engines/parser_tokens.yaml)")
        return out
    config = Path(card.source)  # the config.json the card was read from (resolve.py: local, HF cache or Hub)
    if config.name != "config.json" or not config.is_file():
        out.error("launch.tool_parser_tokens_missing", f"the served tokenizer is not at hand (the config "
                                                        f"{card.source} is not in a model directory)")
        return out
    vocab = _tokenizer_vocab(config.parent)
    if vocab is None:
        out.error("launch.tool_parser_tokens_missing", f"no readable tokenizer.json or tokenizer_config.json in "
                                                        f"{config.parent}")
        return out
    missing = [t for t in entry["tokens"] if t not in vocab]
    out.set("launch.tool_parser_tokens_missing", missing,
            f"{config.parent.name}/tokenizer files vs tokens {parser} needs ({engine} {read[-1]} "
            f"{entry['source']})")
    return out


#: tokenizer.json of a large vocabulary is a few MB; past this it is not one.
_TOKENIZER_BYTES = 64 * 1024 * 1024


def _tokenizer_vocab(directory: Path) -> set[str] | None:
    """Every token string of the tokenizer in ``directory`` (vocabulary and added tokens), or None."""
    import json

    from doctor.inio import read_text_capped

    tokens: set[str] = set()
    found = False
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "added_tokens.json"):
        path = directory / name
        if not path.is_file():
            continue
        try:
            data = json.loads(read_text_capped(path, limit=_TOKENIZER_BYTES, label=str(path)))
        except (InputError, ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        found = True
        model = data.get("model") if isinstance(data.get("model"), dict) else {}
        for source in (model.get("vocab"), data if name in ("vocab.json", "added_tokens.json") else None):
            if isinstance(source, dict):
                tokens.update(k for k in source if isinstance(k, str))
            elif isinstance(source, list):  # unigram vocabularies: [[piece, score], ...]
                tokens.update(p[0] for p in source if isinstance(p, list) and p and isinstance(p[0], str))
        for item in data.get("added_tokens") or []:
            if isinstance(item, dict) and isinstance(item.get("content"), str):
                tokens.add(item["content"])
        for item in (data.get("added_tokens_decoder") or {}).values():
            if isinstance(item, dict) and isinstance(item.get("content"), str):
                tokens.add(item["content"])
    return tokens if found else None
