"""The longest context SGLang lets a model be served with, from its config.json — SGLang's own rule.

SGLang refuses ``--context-length`` above this length unless ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`` is true
(then it only warns: "This may lead to incorrect model outputs or CUDA errors"):
sglang/srt/configs/model_config.py:1291-1316 ``_derive_context_length`` in the sglang 0.5.23 wheel. The length is
the first of the config's length keys in SGLang's order, times the RoPE scaling factor unless the scaling names
``original_max_position_embeddings`` or is Llama 3's (sglang/srt/utils/hf_transformers/common.py:666-697
``get_context_length``), read from the text config of a multimodal model; 2048 when no key is present. It differs
from vLLM's rule (doctor/engines/maxlen.py): vLLM takes the smallest key, SGLang the first in its order.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: sglang/srt/utils/hf_transformers/common.py:667-673, in SGLang's order (the first present wins)
CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                       "max_position_embeddings")
#: get_context_length's answer for a config with none of the keys (common.py:697)
DEFAULT_CONTEXT_LENGTH = 2048


def sglang_context_len(config: dict[str, Any]) -> tuple[int, str]:
    """(length, how it was derived) the way SGLang 0.5.23 derives a model's context length."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    factor, how_factor = 1.0, ""
    rope = text.get("rope_scaling")
    scaled = isinstance(rope, dict) and rope and "original_max_position_embeddings" not in rope
    if scaled and rope.get("rope_type") != "llama3":
        scale = rope.get("factor", 1)
        if isinstance(scale, (int, float)) and not isinstance(scale, bool):
            factor = float(scale)
            how_factor = f" × rope_scaling.factor {factor:g}" if factor != 1 else ""
    for key in CONTEXT_LENGTH_KEYS:
        value = text.get(key)
        if value is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(factor * value), f"config.json:{key}{how_factor}"
    return DEFAULT_CONTEXT_LENGTH, "config.json has no length key: SGLang's default"
