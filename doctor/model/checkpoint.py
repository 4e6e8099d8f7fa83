"""The checkpoint's weights as stored: tensor sizes summed from safetensors headers, never from the data.

A safetensors file starts with an 8-byte little-endian header length and a JSON header giving each tensor's
dtype, shape and ``data_offsets`` (https://huggingface.co/docs/safetensors/index#format). Summing the offsets
is exact for what the engine loads — packed 4-bit blocks (stored as U8), FP8 weights, their scales
(``weight_scale``, ``weight_scale_inv``, ``*_scales``) and every part left in 16-bit — where the estimate
from layer shapes (doctor/model/params.py) has to assume a format per part. Headers come from local shards
here, or from the Hub through huggingface_hub's range requests (doctor/model/resolve.py).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

#: safetensors refuses headers larger than this (safetensors/src/tensor.rs MAX_HEADER_SIZE = 100_000_000).
MAX_HEADER_BYTES = 100_000_000
INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
#: The decoder-layer prefixes vLLM matches to find MTP layers' weights (vllm 0.33.0
#: vllm/model_executor/models/utils.py:589-600 get_spec_layer_idx_from_weight_name).
_LAYER = re.compile(r"^(?:model\.|model\.language_model\.)?layers\.(\d+)\.")


@dataclass(frozen=True)
class Tensor:
    """One tensor of a checkpoint's safetensors header: its name, dtype and size in bytes."""

    name: str
    dtype: str
    nbytes: int

    @property
    def expert(self) -> bool:
        """A routed expert's tensor (``mlp.experts.3.w1``, gpt-oss's fused ``mlp.experts.gate_up_proj_blocks``);
        shared experts (``shared_experts.``, ``shared_expert.``) are not routed and are sharded by TP."""
        return ".experts." in self.name


@dataclass(frozen=True)
class CheckpointWeights:
    """What the safetensors headers of one checkpoint add up to."""

    total_bytes: int
    expert_bytes: int
    tensors: int
    files: int
    where: str  # "3 local shards in /models/x", "Hub repo acme/x@1a2b3c4, 163 shard headers"
    by_dtype: dict[str, int] = field(default_factory=dict)
    #: decoder layer index → (bytes, routed-expert bytes), to leave out the MTP layers the engine skips
    by_layer: dict[int, tuple[int, int]] = field(default_factory=dict)

    def without_layers(self, first: int, count: int) -> tuple[CheckpointWeights, int]:
        """These weights minus decoder layers ``first`` … ``first + count - 1`` (MTP layers, which vLLM's main
        model loader skips: vllm 0.33.0 vllm/model_executor/models/deepseek_v2.py:1653-1655), and the bytes
        left out."""
        dropped = [self.by_layer.get(i, (0, 0)) for i in range(first, first + count)]
        size, experts = sum(d[0] for d in dropped), sum(d[1] for d in dropped)
        if not size:
            return self, 0
        kept = {i: v for i, v in self.by_layer.items() if not first <= i < first + count}
        return CheckpointWeights(self.total_bytes - size, self.expert_bytes - experts, self.tensors, self.files,
                                 self.where, self.by_dtype, kept), size

    @property
    def source(self) -> str:
        dtypes = ", ".join(f"{k} {v / 2**30:.1f} GiB" for k, v in sorted(self.by_dtype.items(),
                                                                          key=lambda kv: -kv[1]))
        return f"safetensors headers: {self.tensors} tensors in {self.where} ({dtypes})"


def summarize(tensors: Iterable[Tensor], *, files: int, where: str) -> CheckpointWeights:
    total = experts = count = 0
    by_dtype: dict[str, int] = {}
    by_layer: dict[int, tuple[int, int]] = {}
    for t in tensors:
        expert = t.nbytes if t.expert else 0
        total += t.nbytes
        count += 1
        experts += expert
        by_dtype[t.dtype] = by_dtype.get(t.dtype, 0) + t.nbytes
        layer = _LAYER.match(t.name)
        if layer is not None:
            index = int(layer[1])
            size, routed = by_layer.get(index, (0, 0))
            by_layer[index] = (size + t.nbytes, routed + expert)
    return CheckpointWeights(total, experts, count, files, where, by_dtype, by_layer)


class HeaderError(ValueError):
    """A file that is not a readable safetensors header (the caller falls back to the estimate and says why)."""


def parse_header(data: bytes, source: str) -> list[Tensor]:
    """The tensors of a safetensors header (the JSON after the 8-byte length); ``__metadata__`` is skipped."""
    try:
        header = json.loads(data)
    except (ValueError, RecursionError):
        raise HeaderError(f"{source}: safetensors header is not JSON") from None
    if not isinstance(header, dict):
        raise HeaderError(f"{source}: safetensors header is not a JSON object")
    out = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)
                and 0 <= offsets[0] <= offsets[1]):
            raise HeaderError(f"{source}: tensor {name!r}: no valid data_offsets")
        out.append(Tensor(name, str(info.get("dtype")), offsets[1] - offsets[0]))
    return out


def read_header(path: Path) -> list[Tensor]:
    """The tensors of a local safetensors file, reading only its header."""
    try:
        with path.open("rb") as f:
            prefix = f.read(8)
            if len(prefix) != 8:
                raise HeaderError(f"{path}: shorter than a safetensors header")
            (size,) = struct.unpack("<Q", prefix)
            if size > MAX_HEADER_BYTES:
                raise HeaderError(f"{path}: header length {size} is not a safetensors header")
            data = f.read(size)
    except OSError as exc:
        raise HeaderError(f"{path}: {exc.strerror or exc}") from None
    if len(data) != size:
        raise HeaderError(f"{path}: header truncated ({len(data)} of {size} bytes)")
    return parse_header(data, str(path))


def shard_names(directory: Path) -> list[str] | None:
    """The checkpoint's safetensors files in ``directory``: the index's shards, or the single file, or
    every ``*.safetensors`` (None: no safetensors checkpoint here)."""
    index = directory / INDEX_FILE
    if index.is_file():
        try:
            weight_map = json.loads(index.read_text(encoding="utf-8")).get("weight_map")
        except (OSError, ValueError, AttributeError):
            return None
        return sorted(set(weight_map.values())) if isinstance(weight_map, dict) else None
    if (directory / SINGLE_FILE).is_file():
        return [SINGLE_FILE]
    found = sorted(p.name for p in directory.glob("*.safetensors"))
    return found or None


def local_weights(directory: Path) -> tuple[CheckpointWeights | None, str]:
    """Exact weights from the shards in ``directory``, or None and why not (no shards, some missing, unreadable)."""
    names = shard_names(directory)
    if not names:
        return None, f"no safetensors files in {directory}"
    missing = [n for n in names if not (directory / n).is_file()]
    if missing:
        return None, f"{len(missing)} of {len(names)} safetensors shards are not in {directory}"
    tensors: list[Tensor] = []
    try:
        for name in names:
            tensors += read_header(directory / name)
    except HeaderError as exc:
        return None, str(exc)
    plural = "s" if len(names) > 1 else ""
    return summarize(tensors, files=len(names), where=f"{len(names)} local file{plural} in {directory}"), ""
