"""The weights the engine will load: the checkpoint's own quantization, or the format --weights-dtype asks for.

Bytes are priced part by part with the model foundation's own rule (doctor/model/params.py ``part_bytes``):
embeddings, lm_head and routers stay 16-bit whatever the format, the vision tower is 16-bit, and the quantized
parts pay their scales (FP8 blocks, NVFP4's fp8 scale per 16 values, MXFP4's byte per 32).

Only FP8 can be made from a 16-bit checkpoint at load time (``--quantization fp8`` in both engines); any other
change of format needs another checkpoint (an NVFP4 repo, a BF16 original), which the user must name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from doctor.errors import InputError
from doctor.model.card import ModelCard, ParamEstimate, Quantization
from doctor.model.params import part_bytes
from doctor.model.quantization import MXFP4, NVFP4

if TYPE_CHECKING:
    from doctor.engines.catalog import Catalog

WEIGHT_DTYPES = ("auto", "bf16", "fp16", "fp8", "nvfp4", "mxfp4")
#: --weights-dtype → the storage format it prices (None: 16-bit).
_FORMATS: dict[str, Quantization | None] = {
    "bf16": None,
    "fp16": None,
    "fp8": Quantization("fp8", "fp8 (one scale per tensor)", "fp8", 1.0),
    "nvfp4": Quantization("nvfp4", "NVFP4 (fp4, fp8 scale per 16)", "nvfp4", NVFP4),
    "mxfp4": Quantization("mxfp4", "MXFP4 (4-bit, UE8M0 scale per 32)", "mxfp4", MXFP4),
}
#: Formats the engines produce from a 16-bit checkpoint while loading it.
ONLINE = ("fp8",)


@dataclass(frozen=True)
class WeightPlan:
    """What the GPUs hold: ``method`` in the facts vocabulary (None: 16-bit)."""

    requested: str
    method: str | None
    detail: str
    total_bytes: int
    expert_bytes: int
    online: bool  # quantized by the engine while loading a 16-bit checkpoint
    other_checkpoint: bool  # the served weights are not the config's checkpoint
    special: bool  # the checkpoint mixes formats (DeepSeek V4 fp4 experts): the engine reads its own config

    @property
    def source(self) -> str:
        how = ("the checkpoint's quantization" if self.requested == "auto" else
               f"--weights-dtype {self.requested}" + (" (quantized while loading)" if self.online else "")
               + (" (another checkpoint)" if self.other_checkpoint else ""))
        return f"derived: layer shapes at {self.detail}, {how} (doctor/model/params.py part_bytes)"

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "method": self.method, "detail": self.detail,
                "total_bytes": self.total_bytes, "expert_bytes": self.expert_bytes, "online": self.online,
                "other_checkpoint": self.other_checkpoint}


def plan_weights(card: ModelCard, requested: str, *, model_path: str | None) -> WeightPlan:
    if requested not in WEIGHT_DTYPES:
        raise InputError(f"--weights-dtype: {requested!r} is not one of {', '.join(WEIGHT_DTYPES)}")
    checkpoint = card.quantization
    method = checkpoint.method if checkpoint else None
    if requested == "auto" or requested == method or (checkpoint is None and _FORMATS[requested] is None):
        detail = checkpoint.detail if checkpoint else card.dtype
        special = bool(checkpoint and checkpoint.expert_bytes_per_param)
        return WeightPlan(requested, method, detail, card.weight_bytes, card.expert_weight_bytes, False, False,
                          special)
    target = _FORMATS[requested]
    online = checkpoint is None and requested in ONLINE
    if not online and model_path is None:
        have = checkpoint.detail if checkpoint else f"{card.dtype} (unquantized)"
        raise InputError(f"--weights-dtype {requested}: {card.source} is {have}, and no engine converts it to "
                         f"{requested} while loading; name the {requested} checkpoint with --model-path")
    parts = part_bytes(ParamEstimate(card.param_parts, card.active_params, card.vision_params), target)
    total = sum(parts.values()) + card.vision_params * 2
    detail = target.detail if target else "bfloat16" if requested == "bf16" else "float16"
    return WeightPlan(requested, target.method if target else None, detail, total, parts.get("experts", 0),
                      online, not online, False)


def quantization_value(weights: WeightPlan, catalog: Catalog) -> str | None:
    """The --quantization value that loads these weights on this engine version (None: leave it unset).

    The first loader of doctor/derive.py's QUANTIZATION_LOADERS table (the one lint checks against) that the
    catalog's choices accept; an unquantized 16-bit load needs none.
    """
    if weights.method is None or weights.special:
        return None
    from doctor.derive import QUANTIZATION_LOADERS

    key = None if weights.online else weights.method
    loaders = QUANTIZATION_LOADERS.get(key, ())
    choices = catalog.choices("quantization") or ()
    return next((name for name in loaders if name in choices), None)
