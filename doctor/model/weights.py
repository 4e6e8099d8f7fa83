"""The weights the engine will load: exact from the checkpoint's safetensors headers when they can be read,
else priced from the layer shapes at the checkpoint's own quantization, the served checkpoint's (when the
config is a base model's and the served repo is quantized), or the format --weights-dtype asks for.

Bytes are priced part by part with the model foundation's own rule (doctor/model/params.py ``part_bytes``):
embeddings, lm_head and routers stay 16-bit whatever the format, the vision tower is 16-bit, and the quantized
parts pay their scales (FP8 blocks, NVFP4's fp8 scale per 16 values, MXFP4's byte per 32).

Only FP8 can be made from a 16-bit checkpoint at load time (``--quantization fp8`` in both engines); any other
change of format needs another checkpoint (an NVFP4 repo, a BF16 original), which the user must name.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from doctor.errors import InputError
from doctor.model.card import ModelCard, ParamEstimate, Quantization
from doctor.model.params import part_bytes
from doctor.model.quantization import FP8_BLOCK, MXFP4, NVFP4

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.engines.catalog import Catalog
    from doctor.model.checkpoint import CheckpointWeights

WEIGHT_DTYPES = ("auto", "bf16", "fp16", "fp8", "nvfp4", "mxfp4")
#: --weights-dtype → the storage format it prices (None: 16-bit).
_FORMATS: dict[str, Quantization | None] = {
    "bf16": None,
    "fp16": None,
    "fp8": Quantization("fp8", "fp8 (one scale per tensor)", "fp8", 1.0),
    "nvfp4": Quantization("nvfp4", "NVFP4 (fp4, fp8 scale per 16)", "nvfp4", NVFP4),
    "mxfp4": Quantization("mxfp4", "MXFP4 (4-bit, UE8M0 scale per 32)", "mxfp4", MXFP4),
}
#: What a served checkpoint's format costs when only its name or launch flag says which it is: int4/int8 as
#: AWQ/GPTQ store them (group 128, a 16-bit scale per group), FP8 with 128×128 block scales.
_SERVED: dict[str, Quantization] = {
    "fp8": Quantization("fp8", "fp8", "fp8", FP8_BLOCK),
    "nvfp4": _FORMATS["nvfp4"],  # type: ignore[dict-item]
    "mxfp4": _FORMATS["mxfp4"],  # type: ignore[dict-item]
    "int4": Quantization("int4", "int4, group 128", "int4", 0.5 + 2 / 128),
    "int8": Quantization("int8", "int8, group 128", "int8", 1 + 2 / 128),
    # bitsandbytes 4-bit (NF4): packed nibbles, an 8-bit absmax per 64 weights and an fp32 scale per 256 of those
    # (double quantization, as the -bnb-4bit checkpoints on the Hub are saved)
    "bnb4": Quantization("bitsandbytes", "bitsandbytes NF4, double-quantized absmax per 64", "nf4",
                         0.5 + 1 / 64 + 4 / (64 * 256)),
}
#: Name tokens (``nvidia/GLM-5.1-NVFP4``, ``Qwen3-8B-AWQ``, ``…-GPTQ-Int8``) → the served format; the first
#: token found in this order wins, so ``GPTQ-Int8`` is int8 and a bare ``GPTQ`` int4.
NAME_FORMATS = (("nvfp4", "nvfp4"), ("mxfp4", "mxfp4"), ("fp4", "nvfp4"), ("int8", "int8"), ("w8a8", "int8"),
                ("fp8", "fp8"), ("bnb", "bnb4"), ("int4", "int4"), ("w4a16", "int4"), ("awq", "int4"),
                ("gptq", "int4"))
#: --quantization values (vLLM and SGLang choices) → the served format they load.
LAUNCH_FORMATS = {"modelopt_fp4": "nvfp4", "nvfp4": "nvfp4", "modelopt": "fp8", "modelopt_fp8": "fp8",
                  "fp8": "fp8", "fbgemm_fp8": "fp8", "w8a8_fp8": "fp8", "mxfp4": "mxfp4", "awq": "int4",
                  "awq_marlin": "int4", "gptq": "int4", "gptq_marlin": "int4", "w8a8_int8": "int8",
                  # 4-bit assumed: what bitsandbytes checkpoints served with vLLM almost always are
                  "bitsandbytes": "bnb4"}

#: --quantization values that name a checkpoint family, not its format: vLLM takes the format from the checkpoint's
#: own quant_algo whatever the flag says (vllm 0.33.0 config/model.py:1383-1450 runs every method's
#: override_quantization_method first; quantization/modelopt.py:453-459 keeps "modelopt" for FP8, :776-782 turns
#: an NVFP4 checkpoint into "modelopt_fp4"), so the served name's format, where it gives one, goes first.
CHECKPOINT_DECIDES = frozenset({"modelopt"})

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
    #: the card's own account when its weights are the checkpoint's as stored (safetensors headers)
    stored: str = ""
    #: what the format was inferred from when the user did not name it (``--model-path …-NVFP4``)
    assumed: str = ""

    @property
    def source(self) -> str:
        if self.stored:
            return self.stored
        if self.assumed:
            return f"derived: layer shapes at {self.detail}; assumed: {self.assumed} (doctor/model/params.py part_bytes)"
        how = ("the checkpoint's quantization" if self.requested == "auto" else
               f"--weights-dtype {self.requested}" + (" (quantized while loading)" if self.online else "")
               + (" (another checkpoint)" if self.other_checkpoint else ""))
        return f"derived: layer shapes at {self.detail}, {how} (doctor/model/params.py part_bytes)"

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "method": self.method, "detail": self.detail,
                "total_bytes": self.total_bytes, "expert_bytes": self.expert_bytes, "online": self.online,
                "other_checkpoint": self.other_checkpoint, "source": self.source}


def plan_weights(card: ModelCard, requested: str, *, model_path: str | None) -> WeightPlan:
    """The weights for --weights-dtype ``requested``. With ``auto`` and a --model-path whose name announces
    another format than the config's (the config is a base model's), that format, stated as an assumption."""
    if requested == "auto" and model_path:
        own = card.quantization.weight_format if card.quantization else None
        announced = name_format(model_path)
        if announced in _FORMATS and _FORMATS[announced] is not None and announced != own:
            inferred = plan_weights(card, announced, model_path=model_path)
            return replace(inferred, requested="auto", online=False, other_checkpoint=True,
                           assumed=f"the served checkpoint {model_path} is {announced.upper()}, from its name")
    if requested not in WEIGHT_DTYPES:
        raise InputError(f"--weights-dtype: {requested!r} is not one of {', '.join(WEIGHT_DTYPES)}")
    checkpoint = card.quantization
    method = checkpoint.method if checkpoint else None
    if requested == "auto" or requested == method or (checkpoint is None and _FORMATS[requested] is None):
        detail = checkpoint.detail if checkpoint else card.dtype
        special = bool(checkpoint and checkpoint.expert_bytes_per_param)
        return WeightPlan(requested, method, detail, card.weight_bytes, card.expert_weight_bytes, False, False,
                          special, card.weight_detail if card.weight_source == "safetensors" else "")
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

    The first loader of doctor/model/quantization.py's QUANTIZATION_LOADERS table (the one lint checks against) that the
    catalog's choices accept; an unquantized 16-bit load needs none.
    """
    if weights.method is None or weights.special:
        return None
    from doctor.model.quantization import QUANTIZATION_LOADERS

    key = None if weights.online else weights.method
    loaders = QUANTIZATION_LOADERS.get(key, ())
    choices = catalog.choices("quantization") or ()
    return next((name for name in loaders if name in choices), None)


# -- the served checkpoint's weights -------------------------------------------------------------------------
def name_format(name: str | None) -> str | None:
    """The quantization a repo or directory name announces (``-NVFP4``, ``-AWQ``, ``-GPTQ-Int8``), or None."""
    if not name:
        return None
    from doctor.model.names import tokens

    words = set(tokens(name))
    return next((fmt for token, fmt in NAME_FORMATS if token in words), None)


def hf_quant_format(hf_quant: dict[str, Any] | None) -> str | None:
    """ModelOpt's hf_quant_config.json (``{"quantization": {"quant_algo": "NVFP4"}}``) → the served format."""
    algo = str(((hf_quant or {}).get("quantization") or {}).get("quant_algo") or "").upper()
    return "nvfp4" if "FP4" in algo else "fp8" if "FP8" in algo else None


def with_checkpoint(card: ModelCard, weights: CheckpointWeights) -> ModelCard:
    """The card with its weights as the checkpoint stores them (exact: every tensor as stored, less the MTP
    layers the engine loads only as a speculative-decoding draft)."""
    detail = weights.source
    if card.mtp_layers:
        weights, mtp = weights.without_layers(card.layers.total, card.mtp_layers)
        if mtp:
            detail += (f"; the {card.mtp_layers} MTP layer(s) ({mtp / 2**30:.1f} GiB) left out: the main model "
                       "does not load them")
    return replace(card, weight_bytes=weights.total_bytes, expert_weight_bytes=weights.expert_bytes,
                   weight_source="safetensors", weight_detail=detail)


def mtp_draft_bytes(card: ModelCard) -> tuple[int, int]:
    """(bytes, routed-expert bytes) of the MTP layers an engine loads as a speculative-decoding draft, estimated
    from the main model's own shapes at its weights' format: per MTP layer one full-attention layer (the main
    model's attention layers' mean), one MoE layer (its MoE layers' mean; a dense model's MLP layer otherwise) and
    the 16-bit projection that joins the token's embedding to the hidden state (2h x h). The draft shares the
    target's embedding and lm_head (vllm 0.33.0 v1/spec_decode/llm_base_proposer.py:1466-1473, :1548-1551), so
    neither is counted. (0, 0) for a model without MTP layers or attention layers."""
    layers, parts = card.layers, card.param_parts
    attention_layers = layers.total - layers.linear - layers.no_attention
    if not card.mtp_layers or attention_layers <= 0:
        return 0, 0
    one = {"attention": parts.get("attention", 0) // attention_layers,
           "router": 2 * card.hidden_size * card.hidden_size}  # the joining projection, priced as 16-bit
    if card.moe is not None and card.moe.layers:
        for part in ("experts", "shared_experts"):
            one[part] = parts.get(part, 0) // card.moe.layers
        one["router"] += parts.get("router", 0) // card.moe.layers
    else:
        one["dense_mlp"] = parts.get("dense_mlp", 0) // layers.total
    priced = part_bytes(ParamEstimate({k: v * card.mtp_layers for k, v in one.items()}, 0, 0), card.quantization)
    return sum(priced.values()), priced.get("experts", 0)


def with_served_format(card: ModelCard, fmt: str, why: str) -> ModelCard:
    """The card priced at the served checkpoint's format when the config is a base model's: the layer shapes
    are the same, the bytes per parameter are the served repo's. The assumption is part of the source."""
    quant = _SERVED[fmt]
    parts = part_bytes(ParamEstimate(card.param_parts, card.active_params, card.vision_params), quant)
    total = sum(parts.values()) + card.vision_params * 2
    detail = (f"estimate: layer shapes of {card.source} priced at {quant.detail} (doctor/model/params.py "
              f"part_bytes); assumed: the served checkpoint is {fmt.upper()} ({why}), the config is not its own")
    return replace(card, weight_bytes=total, expert_weight_bytes=parts.get("experts", 0), weight_detail=detail)


def served_format(*, config_method: str | None, served_name: str | None, launch_quantization: str | None,
                  hf_quant: dict[str, Any] | None) -> tuple[str, str] | None:
    """The served checkpoint's format and what says so, when it is not the config's own: hf_quant_config.json
    beside the weights, then --quantization, then the name (the name first where the flag names only a family,
    CHECKPOINT_DECIDES). None when nothing says it differs."""
    launch = (LAUNCH_FORMATS.get(str(launch_quantization or "").lower()), f"--quantization {launch_quantization}")
    name = (name_format(served_name), f"from the model name {served_name}")
    family = str(launch_quantization or "").lower() in CHECKPOINT_DECIDES
    # a family flag only stands in for a format nothing else gives: a config that declares its own keeps it
    candidates = ((hf_quant_format(hf_quant), "hf_quant_config.json"),
                  *((name, *((launch,) if config_method is None else ())) if family else (launch, name)))
    for fmt, why in candidates:
        if fmt is not None and fmt != config_method:
            return fmt, why
    return None


#: The formats ModelOpt declares in hf_quant_config.json (hf_quant_format): releases up to 0.29 wrote the
#: quantization there and not into config.json, and vLLM reads that file when config.json has no
#: quantization_config (vllm 0.33.0 transformers_utils/config.py:951-962).
MODELOPT_SIDE_FORMATS = ("nvfp4", "fp8")


def _modelopt_side_format(name: str | None, launch_quantization: str | None) -> tuple[str, str] | None:
    """The served format of a checkpoint whose own config.json declares no quantization, where its folder (and so
    a ModelOpt hf_quant_config.json) was not at hand: what --quantization or the checkpoint's name announces, when
    that is a format ModelOpt declares beside the config (MODELOPT_SIDE_FORMATS); None otherwise."""
    found = served_format(config_method=None, served_name=name, launch_quantization=launch_quantization,
                          hf_quant=None)
    if found is None or found[0] not in MODELOPT_SIDE_FORMATS:
        return None
    return found[0], (f"{found[1]}; the config declares no quantization and its folder was not read, where a "
                      "ModelOpt export keeps it in hf_quant_config.json (vllm 0.33.0 "
                      "transformers_utils/config.py:951-962)")


def sized_card(card: ModelCard, *, checkpoint: CheckpointWeights | None, hf_quant: dict[str, Any] | None,
               same_checkpoint: bool = True, served_name: str | None = None,
               launch_quantization: str | None = None, hf_quant_unread: bool = False) -> ModelCard:
    """The one place a card's weights are settled (inspect, plan, lint and check all come here).

    The served checkpoint's own safetensors headers are exact. A config that is the checkpoint's own but says
    nothing of a quantization that ModelOpt's hf_quant_config.json declares is priced at that format. A config
    that is a base model's (not the served checkpoint's) is priced at what the served one announces —
    --quantization, or its name — and says it assumed so; its own safetensors (the base weights) are not used.
    ``hf_quant_unread``: the config came without its checkpoint folder, so whether a ModelOpt
    hf_quant_config.json sits beside it is unknown (_modelopt_side_format).
    """
    own = card.quantization.weight_format if card.quantization else None
    if same_checkpoint:
        served = served_format(config_method=own, served_name=None, launch_quantization=None, hf_quant=hf_quant)
        if served is None and own is None and hf_quant_unread:
            served = _modelopt_side_format(served_name or card.source, launch_quantization)
        if served is not None:
            sized = with_served_format(card, *served)
            card = replace(sized, quantization=_SERVED[served[0]], weight_detail=sized.weight_detail.replace(
                ", the config is not its own", ", although config.json has no quantization_config"))
        return with_checkpoint(card, checkpoint) if checkpoint is not None else card
    served = served_format(config_method=own, served_name=served_name, launch_quantization=launch_quantization,
                           hf_quant=None)
    if served is None:
        return replace(card, weight_detail=card.weight_detail + f"; assumed: the served checkpoint {served_name} "
                       "stores its weights as this config's does (nothing says otherwise)")
    # the served checkpoint's format is the model's quantization from here on (the error record's stratum, the
    # band, the findings that ask what the weights are), as when the config itself is the checkpoint's
    return replace(with_served_format(card, *served), quantization=_SERVED[served[0]])
