"""``--gpu NAME[:COUNT]``: the GPU a user names, parsed forgivingly, and the ``gpu.*`` facts it implies.

Shared by ``plan``, ``lint`` and ``check``: people write "8x H200", "H200:8", "h100 80gb", "NVIDIA
A100-SXM4-80GB" or paste nvidia-smi's name, and all of them must land on the same catalog entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.hardware.catalog import GpuModel, lookup_gpu, normalize, suggestions
from doctor.hardware.gating import kernel_rules, kernel_support

_PREFIX_COUNT = re.compile(r"^\s*(\d+)\s*[x×*]\s*(?=\S)", re.IGNORECASE)
_SUFFIX_COUNT = re.compile(r"(?:\s*:\s*|\s+[x×*]\s*)(\d+)\s*$", re.IGNORECASE)
_MAX_COUNT = 100_000  # more GPUs than any deployment: a typo, not a cluster


@dataclass(frozen=True)
class GpuSpec:
    """A resolved ``--gpu``: the catalog entry, how many, and what the user actually typed."""

    gpu: GpuModel
    count: int
    text: str


def parse_gpu_spec(text: str, *, field: str = "--gpu") -> GpuSpec:
    """Resolve ``8x H200`` / ``H200:8`` / ``h100 80gb`` to a :class:`GpuSpec` (count defaults to 1).

    Raises InputError naming ``field`` for an unknown GPU (with "did you mean"), a zero or absurd
    count, or two different counts.
    """
    raw = text or ""
    rest, counts = raw, []
    prefix = _PREFIX_COUNT.match(rest)
    if prefix:
        counts.append(int(prefix.group(1)))
        rest = rest[prefix.end():]
    suffix = _SUFFIX_COUNT.search(rest)
    if suffix:
        counts.append(int(suffix.group(1)))
        rest = rest[: suffix.start()]
    if len(set(counts)) > 1:
        raise InputError(f"{field}: {raw!r}: two different GPU counts ({counts[0]} and {counts[1]})")
    count = counts[0] if counts else 1
    if not 1 <= count <= _MAX_COUNT:
        raise InputError(f"{field}: {raw!r}: GPU count must be between 1 and {_MAX_COUNT}")
    if not normalize(rest):
        raise InputError(f"{field}: empty GPU name (expected e.g. H200, 8x H200 or H200:8)")
    gpu = lookup_gpu(rest)
    if gpu is None:
        near = suggestions(rest)
        hint = f"did you mean {', '.join(near)}? " if near else ""
        raise InputError(f"{field}: unknown GPU {rest.strip()!r}; {hint}"
                         "the known GPUs are listed in docs/hardware.md")
    return GpuSpec(gpu=gpu, count=count, text=raw.strip())


def gpu_facts(spec: GpuSpec, source: str) -> Facts:
    """The ``gpu.*`` facts of a named GPU (docs/facts.md), catalog values cited as ``gpu catalog <name>``.

    ``source`` says where the spec came from (``--gpu 8x H200``) and is the source of ``gpu.count``.
    """
    facts = catalog_facts(spec.gpu)
    facts.set("gpu.count", spec.count, source)
    return facts


def catalog_facts(gpu: GpuModel) -> Facts:
    """What the catalog says about one model; the GPU probe reuses this for what NVML cannot tell."""
    facts = Facts()
    cited = f"gpu catalog {gpu.name}"
    facts.set("gpu.name", gpu.name, cited)
    facts.set("gpu.vendor", gpu.vendor, cited)
    facts.set("gpu.known", True, cited)
    facts.set("gpu.memory_bytes", gpu.memory_bytes, f"{cited} ({gpu.memory_basis})")
    for key in ("fp8", "nvfp4", "mxfp4"):
        facts.set(f"gpu.{key}", getattr(gpu, key), cited)
    facts.set("gpu.class", gpu.gpu_class, cited)
    facts.set("gpu.interconnect", gpu.interconnect, cited)
    if gpu.nvlink_domain is not None:
        facts.set("gpu.nvlink_domain", gpu.nvlink_domain, cited)
    if gpu.sm is None:
        facts.set("gpu.gfx", gpu.gfx, cited)
        why = (f"{gpu.name} is an {gpu.vendor.upper()} {gpu.gfx} GPU: NVIDIA compute-capability gating does "
               "not apply; whether the engine's ROCm stack supports this model must be checked")
        for key in ("gpu.sm", *(f"gpu.{kernel}" for kernel in kernel_rules())):
            facts.error(key, why)
        return facts
    facts.set("gpu.sm", gpu.sm, cited)
    for key, value in kernel_support(gpu).items():
        facts.set(f"gpu.{key}", value, f"{cited} sm_{gpu.sm} + doctor/hardware/kernels.yaml")
    return facts
