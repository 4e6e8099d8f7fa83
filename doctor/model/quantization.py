"""The checkpoint's weight quantization from ``quantization_config``: method, element format, bytes
per parameter (scales included) and which parts stay in 16-bit.

Bytes per parameter, by storage format:
  fp8 with 128×128 blocks   1 + 4/16384   (one float32 scale per block, DeepSeek ``weight_scale_inv``)
  mxfp4                     0.5 + 1/32    (one UE8M0 byte per 32 values)
  nvfp4                     0.5 + 1/16    (one fp8 scale per 16 values; the per-tensor scale is noise)
  int4, group g             0.5 + 2/g     (one 16-bit scale per group; + 0.5/g for an asymmetric zero point)
"""

from __future__ import annotations

from doctor.model.card import Evidence, Quantization
from doctor.model.fields import MAX_INT, ConfigView

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FP8_BLOCK = 1 + 4 / (128 * 128)
MXFP4 = 0.5 + 1 / 32
NVFP4 = 0.5 + 1 / 16

#: Checkpoint quantization (model.quantization) → the --quantization values that load it. A value outside the
#: list is a mismatch; an unquantized checkpoint accepts the online methods (vLLM quantizes BF16 to FP8 at load).
QUANTIZATION_LOADERS: dict[str | None, tuple[str, ...]] = {
    "fp8": ("fp8", "fbgemm_fp8", "modelopt", "w8a8_fp8", "compressed-tensors"),
    "nvfp4": ("modelopt_fp4", "modelopt", "nvfp4", "compressed-tensors", "modelopt_mixed"),
    "mxfp4": ("mxfp4", "quark"),
    "awq": ("awq", "awq_marlin"),
    "gptq": ("gptq", "gptq_marlin"),
    "compressed-tensors": ("compressed-tensors",),
    "bitsandbytes": ("bitsandbytes",),
    "gguf": ("gguf",),
    None: ("fp8", "bitsandbytes", "experts_int8", "w8a8_int8", "torchao", "fp8_e4m3"),
}

#: Parts (see params.PARTS) that a pattern in an ignore list keeps unquantized: the first hint the pattern contains
#: decides. A linear-attention or SSM mixer's in-projections ("in_proj", as hybrid builds' ignore lists name them:
#: Qwen3.5/3.6 GDN in_proj_qkv/z/a/b, Mamba's in_proj) are its input side; the whole mixer is both parts.
_IGNORE_HINTS = (
    ("shared_expert", ("shared_experts",)),
    ("self_attn", ("attention",)), ("in_proj", ("linear_attention",)),
    ("linear_attn", ("linear_attention", "linear_attention_out")), ("attention", ("attention",)),
    ("mlp.(gate", ("dense_mlp",)), ("mlp\\.(gate", ("dense_mlp",)),
    ("router", ("router",)), ("lm_head", ("lm_head",)), ("embed", ("embed",)),
    ("vision", ("vision",)), ("visual", ("vision",)), ("mm_projector", ("vision",)),
)


def detect_quantization(v: ConfigView, evidence: list[Evidence]) -> Quantization | None:
    found = v.mapping("quantization_config")
    if found is None:
        return None
    qc: dict[str, Any] = found.value
    method = str(qc.get("quant_method", "")).lower()
    if not method:
        raise v.fail(f"{found.path}.quant_method", "missing")
    if method.startswith("modelopt") and isinstance(qc.get("quantization"), dict):
        # ModelOpt's hf_quant_config.json layout inside config.json: quant_algo and exclude_modules one level down,
        # where vLLM reads them (vllm 0.33.0 model_executor/layers/quantization/modelopt.py:298-305, :324-342)
        qc = {**qc, **qc["quantization"]}
    unquantized = _unquantized(qc)
    expert_bpp = None

    def number(key: str, *aliases: str, default: int) -> int:
        for name in (key, *aliases):
            value = qc.get(name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_INT:
                raise v.fail(f"{found.path}.{name}", f"expected a positive integer, got {value!r}")
            return value
        return default
    if method == "fp8":
        block = qc.get("weight_block_size")
        fmt = qc.get("fmt", "e4m3")
        detail = f"fp8 ({fmt})" + (f", {block[0]}×{block[1]} blocks" if isinstance(block, list) and len(block) == 2 else "")
        quant = Quantization("fp8", detail, "fp8", FP8_BLOCK if block else 1.0, unquantized)
        expert_dtype = v.find("expert_dtype")
        if expert_dtype is not None and str(expert_dtype.value).lower() in ("fp4", "mxfp4"):
            # DeepSeek V4 ships routed experts in FP4 and the rest in FP8.
            expert_bpp = MXFP4
            quant = Quantization("fp8", detail + ", routed experts fp4", "fp8", quant.bytes_per_param,
                                 unquantized, expert_bpp)
    elif method in ("mxfp4", "gpt_oss_mxfp4"):
        quant = Quantization("mxfp4", "mxfp4 (4-bit, UE8M0 scale per 32)", "mxfp4", MXFP4, unquantized)
    elif method in ("modelopt", "modelopt_fp4", "modelopt_fp8"):
        algo = str(qc.get("quant_algo", "NVFP4" if method == "modelopt_fp4" else "FP8")).upper()
        if "FP4" in algo:
            quant = Quantization("nvfp4", f"ModelOpt {algo} (fp4, fp8 scale per 16)", "nvfp4", NVFP4, unquantized)
        else:
            quant = Quantization("fp8", f"ModelOpt {algo}", "fp8", 1.0, unquantized)
    elif method == "compressed-tensors":
        quant = _compressed_tensors(v, found.path, qc, unquantized)
    elif method in ("awq", "gptq", "awq_marlin", "gptq_marlin"):
        bits = number("bits", "w_bit", default=4)
        group = number("group_size", "q_group_size", default=128)
        bpp = bits / 8 + (2 + bits / 8) / group
        quant = Quantization(method.removesuffix("_marlin"), f"{method} int{bits}, group {group}",
                             f"int{bits}", bpp, unquantized)
    elif method == "bitsandbytes":
        four = bool(qc.get("load_in_4bit"))
        quant = Quantization("bitsandbytes", "bitsandbytes " + ("4-bit" if four else "8-bit"),
                             "nf4" if four else "int8", 0.5 + 4 / 64 if four else 1.0, unquantized)
    else:
        quant = Quantization(method, method, method, 2.0, unquantized)
    evidence.append(Evidence(f"checkpoint quantization: {quant.detail}"
                             + (f"; kept in 16-bit: {', '.join(unquantized)}" if unquantized else ""),
                             {f"{found.path}.quant_method": qc.get("quant_method")}))
    return quant


def _compressed_tensors(v: ConfigView, path: str, qc: dict[str, Any], unquantized: tuple[str, ...]) -> Quantization:
    fmt = str(qc.get("format", ""))
    groups = qc.get("config_groups") or {}
    if not isinstance(groups, dict):
        raise v.fail(f"{path}.config_groups", "expected an object of quantization groups")
    weights: dict[str, Any] = {}
    for group in groups.values():
        if isinstance(group, dict) and isinstance(group.get("weights"), dict):
            weights = group["weights"]
            break
    bits = weights.get("num_bits") or 8
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 < bits <= 32:
        raise v.fail(f"{path}.config_groups.*.weights.num_bits", f"expected a positive integer, got {bits!r}")
    kind = str(weights.get("type") or "int")
    group_size = weights.get("group_size")
    if "mxfp4" in fmt:
        wf, bpp = "mxfp4", MXFP4
    elif "nvfp4" in fmt:
        wf, bpp = "nvfp4", NVFP4
    elif kind == "float" and bits == 8:
        wf, bpp = "fp8", 1.0
    elif isinstance(group_size, int) and group_size > 0:
        zero = 0 if weights.get("symmetric", True) else bits / 8 / group_size
        wf, bpp = f"{kind}{bits}", bits / 8 + 2 / group_size + zero
    else:
        wf, bpp = f"{kind}{bits}", bits / 8
    detail = f"compressed-tensors {fmt or wf}" + (f", group {group_size}" if group_size else "")
    return Quantization("compressed-tensors", detail, wf, bpp, unquantized)


def _unquantized(qc: dict[str, Any]) -> tuple[str, ...]:
    patterns: list[str] = []
    for key in ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules"):
        value = qc.get(key)
        if isinstance(value, list):
            patterns += [str(p).lower() for p in value]
    parts: list[str] = []
    for pattern in patterns:
        for hint, kept in _IGNORE_HINTS:
            if hint in pattern and any(part not in parts for part in kept):
                parts += [part for part in kept if part not in parts]
                break
        else:
            if (pattern == "gate" or pattern.endswith(".gate")) and "router" not in parts:
                parts.append("router")
    return tuple(parts)
