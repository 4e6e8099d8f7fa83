"""The GPU catalog: load doctor/hardware/gpus.yaml and find an entry from any spelling of a GPU's name.

Names arrive from people ("h100 80gb", "RTX-PRO-6000"), from nvidia-smi ("NVIDIA H100 80GB HBM3",
"NVIDIA A100-SXM4-80GB") and from NVML, so matching ignores case, hyphens, the vendor prefix and how a
memory size is written. A bare family name ("A100") resolves to the family's default variant — and says
so (``resolve_gpu``'s ``assumed``), since the other variants differ in memory — and a family name with a
memory size ("A100 40GB", "H100 94GB") to the variant with that memory. Names that several product lines
share ("RTX 6000": Turing, Ampere, Ada and Blackwell cards) are listed in the catalog's ``ambiguous``
section with the variant assumed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

CATALOG_PATH = Path(__file__).with_name("gpus.yaml")

_VENDOR_WORDS = re.compile(r"^(?:(?:nvidia|amd|geforce|tesla|instinct)\s+)+")
_MEMORY = re.compile(r"\b(\d+)\s*(?:gb|gib|g)\b")
_SEPARATORS = re.compile(r"[\s_\-/,()]+")
_TRUNCATED = re.compile(r"\s*(?:\.\.\.|…)\s*$")

#: Fields a catalog entry must have, with their types (checked at load: a broken data file is a bug
#: we want to hear about at once, not a KeyError in the middle of a plan).
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "name": str, "full_name": str, "vendor": str, "arch": str, "memory_gb": (int, float),
    "bandwidth_gbps": (int, float), "fp8": bool, "nvfp4": bool, "mxfp4": bool, "class": str,
    "interconnect": str, "aliases": list, "sources": list,
}
_CLASSES = ("datacenter", "workstation")
_INTERCONNECTS = ("nvlink", "pcie", "xgmi", "none")


#: memory_basis of an entry sized by the total CUDA reports (gpus.yaml cuda_memory_mib), not nvidia-smi's
CUDA_BASIS = "CUDA total"


@dataclass(frozen=True)
class GpuModel:
    """One catalog entry. ``memory_bytes`` is what the planner sizes with (see ``memory_basis``)."""

    @property
    def memory_is_cuda_total(self) -> bool:
        """The memory is CUDA's own total (a unified-memory part NVML reports nothing for), so the share
        nvidia-smi counts and CUDA does not hand out is already off it (memory.CUDA_UNREPORTED_BYTES)."""
        return self.memory_basis.startswith(CUDA_BASIS)

    name: str
    full_name: str
    vendor: str
    arch: str
    sm: int | None
    gfx: str | None
    memory_gb: float
    memory_bytes: int
    memory_basis: str
    bandwidth_gbps: float
    bf16_tflops: float | None
    fp8_tflops: float | None
    fp8: bool
    nvfp4: bool
    mxfp4: bool
    gpu_class: str
    interconnect: str
    nvlink_domain: int | None
    family: str | None
    default: bool
    aliases: tuple[str, ...]
    sources: tuple[str, ...]
    notes: tuple[str, ...]


def normalize(text: str) -> str:
    """The matching key of a GPU name: lower case, no vendor prefix, one space between words, "80gb" sizes."""
    key = _SEPARATORS.sub(" ", text.lower()).strip()
    key = _VENDOR_WORDS.sub("", key)
    key = _MEMORY.sub(lambda m: f"{m.group(1)}gb", key)
    return " ".join(key.split())


def _entry(raw: dict[str, Any], where: str) -> GpuModel:
    for field, kind in _REQUIRED.items():
        value = raw.get(field)
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise InputError(f"{CATALOG_PATH.name}: {where}: field {field!r} missing or not {kind}")
    if not all(isinstance(a, str) for a in raw["aliases"]):
        raise InputError(f"{CATALOG_PATH.name}: {where}: aliases must be strings (quote numbers)")
    if raw["class"] not in _CLASSES or raw["interconnect"] not in _INTERCONNECTS:
        raise InputError(f"{CATALOG_PATH.name}: {where}: class/interconnect outside {_CLASSES}/{_INTERCONNECTS}")
    if (raw["vendor"] == "nvidia") != isinstance(raw.get("sm"), int):
        raise InputError(f"{CATALOG_PATH.name}: {where}: NVIDIA entries need an integer sm, others none")
    smi_mib = raw.get("smi_memory_mib")
    if smi_mib is not None and not raw.get("smi_source"):
        raise InputError(f"{CATALOG_PATH.name}: {where}: smi_memory_mib without smi_source")
    cuda_mib = raw.get("cuda_memory_mib")
    if cuda_mib is not None and not raw.get("cuda_source"):
        raise InputError(f"{CATALOG_PATH.name}: {where}: cuda_memory_mib without cuda_source")
    return GpuModel(
        name=raw["name"], full_name=raw["full_name"], vendor=raw["vendor"], arch=raw["arch"],
        sm=raw.get("sm"), gfx=raw.get("gfx"), memory_gb=raw["memory_gb"],
        memory_bytes=int(cuda_mib or smi_mib or 0) * 2**20 or int(raw["memory_gb"] * 2**30),
        memory_basis=(f"{CUDA_BASIS} {cuda_mib} MiB" if cuda_mib else f"nvidia-smi {smi_mib} MiB" if smi_mib
                      else f"marketed {raw['memory_gb']} GB"),
        bandwidth_gbps=raw["bandwidth_gbps"], bf16_tflops=raw.get("bf16_tflops"),
        fp8_tflops=raw.get("fp8_tflops"), fp8=raw["fp8"], nvfp4=raw["nvfp4"], mxfp4=raw["mxfp4"],
        gpu_class=raw["class"], interconnect=raw["interconnect"], nvlink_domain=raw.get("nvlink_domain"),
        family=raw.get("family"), default=bool(raw.get("default")), aliases=tuple(raw["aliases"]),
        sources=tuple(raw["sources"]), notes=tuple(raw.get("notes") or ()),
    )


@lru_cache(maxsize=1)
def _document() -> dict[str, Any]:
    """gpus.yaml, parsed once per process (lazy: only the commands that name a GPU pay for the YAML parser)."""
    from doctor.yamlsafe import load_packaged

    return load_packaged(CATALOG_PATH)


@lru_cache(maxsize=1)
def _load() -> tuple[tuple[GpuModel, ...], dict[str, GpuModel]]:
    data = _document()
    models = tuple(_entry(raw, f"gpus[{i}]") for i, raw in enumerate(data["gpus"]))
    index: dict[str, GpuModel] = {}
    for model in models:
        for spelling in (model.name, model.full_name, *model.aliases):
            key = normalize(spelling)
            if index.get(key, model) is not model:
                raise InputError(f"{CATALOG_PATH.name}: {spelling!r} names both {index[key].name} and {model.name}")
            index[key] = model
    return models, index


def all_gpus() -> tuple[GpuModel, ...]:
    """Every catalog entry, in file order."""
    return _load()[0]


@dataclass(frozen=True)
class Resolution:
    """A name resolved to one entry; ``assumed`` says which variant an ambiguous name was taken as, and why."""

    gpu: GpuModel
    assumed: str | None = None


@lru_cache(maxsize=1)
def _ambiguous() -> dict[str, tuple[str, tuple[str, ...]]]:
    """normalized name -> (entry assumed, the entries it may mean): the catalog's ``ambiguous`` section plus every
    family name (``A100``, ``H100``, ``V100``) whose variants differ in what sizing reads: memory or compute
    capability (H200 and H200 NVL differ only in interconnect and clocks, so ``H200`` needs no assumption)."""
    models, index = _load()
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for family in {m.family for m in models if m.family}:
        variants = [m for m in models if m.family == family]
        members = tuple(m.name for m in variants)
        default = next((m for m in variants if m.default), None)
        if default is not None and len({(m.memory_gb, m.sm, m.gfx) for m in variants}) > 1:
            out[normalize(family)] = (default.name, members)
    for i, raw in enumerate(_document().get("ambiguous") or ()):
        names = (raw.get("assume"), *(raw.get("candidates") or ()))
        if not isinstance(raw.get("name"), str) or not all(isinstance(n, str) and normalize(n) in index for n in names):
            raise InputError(f"{CATALOG_PATH.name}: ambiguous[{i}]: name, assume and candidates must name entries")
        out[normalize(raw["name"])] = (index[normalize(raw["assume"])].name, tuple(raw["candidates"]))
    return out


def resolve_gpu(name: str) -> Resolution | None:
    """Like ``lookup_gpu``, and says which variant an ambiguous name (``A100``, ``RTX 6000``) was taken as."""
    key = normalize(name)
    choice = _ambiguous().get(key) if key else None
    if choice is not None:
        assumed, candidates = choice
        gpu = lookup_gpu(assumed)
        assert gpu is not None
        others = ", ".join(c for c in candidates if c != gpu.name)
        arch = f"sm_{gpu.sm}" if gpu.sm is not None else gpu.gfx
        return Resolution(gpu, f"{name.strip()!r} is ambiguous: assumed {gpu.name} ({gpu.memory_gb:g} GB, {arch})" + (f"; the others are {others} — name one, or pass --gpu-mem SIZE"
                                                  if others else ""))
    gpu = lookup_gpu(name)
    return Resolution(gpu) if gpu is not None else None


def lookup_gpu(name: str) -> GpuModel | None:
    """The catalog entry for any spelling of a GPU name, or None when nothing matches."""
    models, index = _load()
    key = normalize(name)
    if not key:
        return None
    if key in index:
        return index[key]
    ambiguous = _ambiguous().get(key)
    if ambiguous is not None:
        return index[normalize(ambiguous[0])]
    truncated = _TRUNCATED.sub("", name)
    if truncated != name:
        return _by_prefix(normalize(truncated), index)
    return _by_family(key, models, index)


def _by_prefix(prefix: str, index: dict[str, GpuModel]) -> GpuModel | None:
    """nvidia-smi's table cuts long names (``NVIDIA RTX PRO 6000 Blac...``): accept a unique completion."""
    hits = {model.name: model for key, model in index.items() if prefix and key.startswith(prefix)}
    return next(iter(hits.values())) if len(hits) == 1 else None


def _by_family(key: str, models: tuple[GpuModel, ...], index: dict[str, GpuModel]) -> GpuModel | None:
    """``a100 40gb`` / ``h100 94gb`` / ``h200 141gb``: a known base name plus a memory size picks the variant."""
    memory = _MEMORY.search(key)
    if memory is None:
        return None
    base = " ".join(_MEMORY.sub(" ", key).split())
    anchor = index.get(base)
    if anchor is None:
        return None
    family = [m for m in models if m.family is not None and m.family == anchor.family] or [anchor]
    wanted = int(memory.group(1))
    sized = [m for m in family if round(m.memory_gb) == wanted]
    if not sized:
        return None
    return next((m for m in sized if m.default), sized[0])


def suggestions(name: str, limit: int = 3) -> list[str]:
    """Canonical names that look like ``name`` (for "did you mean")."""
    import difflib

    index = _load()[1]
    key = normalize(name)
    close = difflib.get_close_matches(key, list(index), n=limit * 3, cutoff=0.5)
    out: list[str] = []
    for match in close:
        canonical = index[match].name
        if canonical not in out:
            out.append(canonical)
    return out[:limit]
