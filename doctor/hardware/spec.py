"""``--gpu NAME[:COUNT]``: the GPU a user names, parsed forgivingly, and the ``gpu.*`` facts it implies.

Shared by ``plan``, ``lint`` and ``check``: people write "8x H200", "H200:8", "h100 80gb", "NVIDIA
A100-SXM4-80GB" or paste nvidia-smi's name, and all of them must land on the same catalog entry.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.hardware.catalog import GpuModel, normalize, resolve_gpu, suggestions
from doctor.hardware.gating import kernel_rules, kernel_support

_PREFIX_COUNT = re.compile(r"^\s*(\d+)\s*[x×*]\s*(?=\S)", re.IGNORECASE)
_SUFFIX_COUNT = re.compile(r"(?:\s*:\s*|\s+[x×*]\s*)(\d+)\s*$", re.IGNORECASE)
#: ``8 H100`` and ``H100x8``: read as counts only when what is left is a GPU name (``3090 Ti`` and ``4090 D``
#: are names, not three thousand GPUs).
_BARE_PREFIX_COUNT = re.compile(r"^\s*(\d+)\s+(?=\S)")
_ATTACHED_SUFFIX_COUNT = re.compile(r"(?<=[a-z0-9])[x×*](\d+)\s*$", re.IGNORECASE)
_MAX_COUNT = 100_000  # more GPUs than any deployment: a typo, not a cluster
#: Where a pip user finds the catalog: the command that prints it, not a file of the source tree.
LIST_HINT = "`llmdoctor gpus` lists the known GPUs"


@dataclass(frozen=True)
class GpuSpec:
    """A resolved ``--gpu``: the catalog entry, how many, and what the user actually typed.

    ``assumed`` says which variant an ambiguous name was taken as. ``known`` is False when the name is not in
    the catalog and ``--gpu-mem`` stood in: ``gpu`` then carries only that memory (see ``unknown_gpu``).
    """

    gpu: GpuModel
    count: int
    text: str
    assumed: str | None = None
    known: bool = True


class UnknownGpu(InputError):
    """A ``--gpu`` name the catalog does not have (lint/check carry on without GPU facts; plan needs --gpu-mem)."""

    def __init__(self, message: str, name: str, count: int, near: list[str]) -> None:
        super().__init__(message)
        self.name = name
        self.count = count
        self.near = near


def parse_gpu_spec(text: str, *, field: str = "--gpu", gpu_mem: int | None = None,
                   gpu_mem_text: str | None = None) -> GpuSpec:
    """Resolve ``8x H200`` / ``H200:8`` / ``8 H100`` / ``H100x8`` / ``h100 80gb`` to a :class:`GpuSpec` (count
    defaults to 1). ``gpu_mem`` (bytes, from ``--gpu-mem``) overrides the catalog's memory — a 48 GB RTX 4090 —
    and stands in for an unknown GPU's.

    Raises InputError naming ``field`` for a zero or absurd count or two different counts, and UnknownGpu (an
    InputError, with "did you mean") for a name the catalog lacks when no ``gpu_mem`` was given.
    """
    raw = text or ""
    candidates = list(_splits(raw))
    name, counts = candidates[-1]
    resolution = None
    for rest, found in candidates:
        resolution = resolve_gpu(rest) if normalize(rest) else None
        if resolution is not None:
            name, counts = rest, found
            break
    if len(set(counts)) > 1:
        raise InputError(f"{field}: {raw!r}: two different GPU counts ({counts[0]} and {counts[1]})")
    count = counts[0] if counts else 1
    if not 1 <= count <= _MAX_COUNT:
        raise InputError(f"{field}: {raw!r}: GPU count must be between 1 and {_MAX_COUNT}")
    if not normalize(name):
        raise InputError(f"{field}: empty GPU name (expected e.g. H200, 8x H200 or H200:8)")
    mem_source = f"--gpu-mem {gpu_mem_text or gpu_mem}"
    if resolution is None:
        if gpu_mem is not None:
            return GpuSpec(gpu=unknown_gpu(name.strip(), gpu_mem, mem_source), count=count, text=raw.strip(),
                           known=False)
        near = suggestions(name)
        hint = f"did you mean {', '.join(near)}? " if near else ""
        raise UnknownGpu(f"{field}: unknown GPU {name.strip()!r}; {hint}{LIST_HINT}, or pass --gpu-mem SIZE "
                         "(e.g. --gpu-mem 48G) to size memory without the catalog", name.strip(), count, near)
    gpu = resolution.gpu
    assumed = resolution.assumed
    if gpu_mem is not None:
        gpu = replace(gpu, memory_bytes=gpu_mem, memory_basis=mem_source)
        if assumed:  # --gpu-mem given: the variants differ in memory, which is the user's now; not "pass --gpu-mem"
            arch = f"sm_{gpu.sm}" if gpu.sm is not None else gpu.gfx
            assumed = f"{name.strip()!r} taken as {gpu.name} ({arch}) with the memory of {mem_source}"
    return GpuSpec(gpu=gpu, count=count, text=raw.strip(), assumed=assumed)


def _splits(raw: str) -> Iterator[tuple[str, list[int]]]:
    """Ways to read ``raw`` as NAME plus counts, most literal first; the last is the most stripped."""
    yield raw, []
    rest, counts = raw, []
    prefix = _PREFIX_COUNT.match(rest)
    if prefix:
        counts.append(int(prefix.group(1)))
        rest = rest[prefix.end():]
    suffix = _SUFFIX_COUNT.search(rest)
    if suffix:
        counts.append(int(suffix.group(1)))
        rest = rest[: suffix.start()]
    if counts:
        yield rest, counts
    bare = None if prefix else _BARE_PREFIX_COUNT.match(rest)
    if bare:
        yield rest[bare.end():], [*counts, int(bare.group(1))]
    attached = None if suffix else _ATTACHED_SUFFIX_COUNT.search(rest)
    if attached:
        yield rest[: attached.start()], [*counts, int(attached.group(1))]


#: AMD's product names and ISA targets (Radeon, Instinct, MI300X, RX 7900, gfx1100): a GPU the catalog lacks but whose
#: name says it is AMD's still runs the ROCm stack, which is what the vendor decides (amd-stack-unverified)
_AMD_NAME = re.compile(r"(?i)\b(?:radeon|instinct|amd)\b|\bMI\d{2,3}[A-Z]?\b|\bgfx\d{3,4}[a-z]?\b|\bRX ?\d{4}\b")


def vendor_from_name(name: str, source: str) -> tuple[str, str] | None:
    """(vendor, source) for a GPU the catalog lacks whose name is AMD's; None otherwise (NVIDIA's names say too
    little: an unknown one may be any generation, and its vendor decides nothing the catalog would not)."""
    m = _AMD_NAME.search(name)
    return ("amd", f"{source}: {m.group(0)!r} in the name is AMD's (the GPU is not in the catalog)") if m else None


def unknown_gpu(name: str, memory_bytes: int, memory_basis: str) -> GpuModel:
    """A stand-in entry for a GPU the catalog lacks: the memory the user gave, nothing else claimed.

    Kernel gating, FP8/FP4 support and the interconnect stay unknown (``gpu_facts`` says so); a planner that must
    pick something takes PCIe between GPUs, the slower case.
    """
    return GpuModel(
        name=name, full_name=name, vendor="unknown", arch="unknown", sm=None, gfx=None,
        memory_gb=round(memory_bytes / 2**30, 1), memory_bytes=memory_bytes, memory_basis=memory_basis,
        bandwidth_gbps=0, bf16_tflops=None, fp8_tflops=None, fp8=False, nvfp4=False, mxfp4=False,
        gpu_class="unknown", interconnect="pcie", nvlink_domain=None, family=None, default=False, aliases=(),
        sources=(memory_basis,), notes=(f"{name!r} is not in the GPU catalog: only the memory given by "
                                        f"{memory_basis} is known",))


def gpu_facts(spec: GpuSpec, source: str) -> Facts:
    """The ``gpu.*`` facts of a named GPU (docs/facts.md), catalog values cited as ``gpu catalog <name>``.

    ``source`` says where the spec came from (``--gpu 8x H200``) and is the source of ``gpu.count``.
    """
    if not spec.known:
        facts = Facts()
        facts.set("gpu.name", spec.gpu.name, source)
        facts.set("gpu.known", False, f"{source}: not in the GPU catalog")
        facts.set("gpu.memory_bytes", spec.gpu.memory_bytes, spec.gpu.memory_basis)
        why = (f"{spec.gpu.name!r} is not in the GPU catalog ({LIST_HINT}): compute capability, FP8/FP4 support, "
               "class and interconnect are unknown; name a catalog GPU for those checks")
        vendor = vendor_from_name(spec.gpu.name, source)
        for key in ("gpu.vendor", "gpu.sm", "gpu.fp8", "gpu.nvfp4", "gpu.mxfp4", "gpu.class", "gpu.interconnect",
                    *(f"gpu.{kernel}" for kernel in kernel_rules())):
            if key == "gpu.vendor" and vendor:
                facts.set(key, *vendor)
            else:
                facts.error(key, why)
    else:
        facts = catalog_facts(spec.gpu)
    if spec.assumed:
        facts.set("gpu.assumed", spec.assumed, source)
    facts.set("gpu.count", spec.count, source)
    return facts


def catalog_facts(gpu: GpuModel) -> Facts:
    """What the catalog says about one model; the GPU probe reuses this for what NVML cannot tell."""
    facts = Facts()
    cited = f"gpu catalog {gpu.name}"
    facts.set("gpu.name", gpu.name, cited)
    facts.set("gpu.vendor", gpu.vendor, cited)
    facts.set("gpu.known", True, cited)
    given = gpu.memory_basis.startswith("--gpu-mem")  # the user's number, not the catalog's
    facts.set("gpu.memory_bytes", gpu.memory_bytes, gpu.memory_basis if given else f"{cited} ({gpu.memory_basis})")
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
