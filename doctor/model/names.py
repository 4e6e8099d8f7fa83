"""What a model's name says when nothing else is there: multimodality and a quantization suffix.

Repo names follow conventions (``Qwen3-VL-8B-Instruct``, ``Llama-3.2-11B-Vision-Instruct``,
``Qwen3-8B-AWQ``, ``nvidia/GLM-5.1-NVFP4``) that are right far more often than not, but a name is not a
config: these facts are set only when the config could not be found, each with "from the model name" and
"low confidence" in its source, so a finding resting on them says so. The family (parser expectations,
reasoning) is matched by name in doctor/engines/families.py.
"""

from __future__ import annotations

import re

from doctor.facts import Facts

#: Name tokens that mark a model taking images, video or audio (vLLM's and SGLang's multimodal repos).
MULTIMODAL_TOKENS = ("vl", "vision", "omni", "llava", "pixtral", "vlm", "audio", "video")
#: Name tokens → the checkpoint quantization method in the facts vocabulary (model.quantization).
QUANT_TOKENS = (("nvfp4", "nvfp4"), ("mxfp4", "mxfp4"), ("fp4", "nvfp4"), ("awq", "awq"), ("gptq", "gptq"),
                ("fp8", "fp8"))
#: In the source of every fact read from a name, for people; such facts are set ``learnt="guessed"``, and the
#: playbook engine makes findings resting on one ``low``.
NAME_ONLY = "from the model name"
LOW = "low confidence: no config.json"


def tokens(name: str) -> list[str]:
    """``nvidia/GLM-5.1-NVFP4`` → ``['glm', '5', '1', 'nvfp4']`` (the repo part, split on - _ . and space)."""
    return [t for t in re.split(r"[-_. ]+", name.rstrip("/").rsplit("/", 1)[-1].lower()) if t]


def name_facts(name: str) -> Facts:
    """model.multimodal and model.quantization as far as ``name`` says; nothing when it says nothing."""
    from doctor.redact import redact_text

    out = Facts()
    words = tokens(name)
    shown = redact_text(name)
    hit = next((t for t in words if t in MULTIMODAL_TOKENS), None)
    if hit is not None:
        out.set("model.multimodal", True, f"{NAME_ONLY} {shown!r} ({hit!r}); {LOW}", learnt="guessed")
    quant = next(((token, method) for token, method in QUANT_TOKENS if token in words), None)
    if quant is not None:
        out.set("model.quantization", quant[1], f"{NAME_ONLY} {shown!r} ({quant[0]!r} suffix); {LOW}",
                learnt="guessed")
    return out
