"""The GPU catalog as a table: what `llmdoctor gpus` prints and what docs/hardware.md carries (generated), and
how one resolved name reads.

A pip user has no docs/ folder, so the unknown-GPU error points at `llmdoctor gpus`; the docs table is the same
rendering (tests/test_gpus_cli.py keeps the two identical).
"""

from __future__ import annotations

from doctor.hardware.catalog import GpuModel, all_gpus

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HEADER = ("| name | sm / gfx | memory | memory used for planning | BW GB/s | dense BF16 / FP8 TFLOPS | FP8 | NVFP4 "
          "| MXFP4 | class | interconnect (NVLink domain) |")
#: The lines around the generated table in docs/hardware.md.
BEGIN = "<!-- BEGIN generated: llmdoctor gpus --format markdown -->"
END = "<!-- END generated -->"


def _tflops(value: float | None, supported: bool) -> str:
    return f"{value:g}" if value is not None else ("?" if supported else "n/a")


def row(gpu: GpuModel) -> dict[str, Any]:
    """One entry as the table and `llmdoctor gpus --format json` show it."""
    return {
        "name": gpu.name, "full_name": gpu.full_name, "vendor": gpu.vendor, "arch": gpu.arch,
        "target": f"sm_{gpu.sm}" if gpu.sm is not None else gpu.gfx, "memory_gb": gpu.memory_gb,
        "memory_basis": gpu.memory_basis, "bandwidth_gbps": gpu.bandwidth_gbps,
        "bf16_tflops": gpu.bf16_tflops, "fp8_tflops": gpu.fp8_tflops, "fp8": gpu.fp8, "nvfp4": gpu.nvfp4,
        "mxfp4": gpu.mxfp4, "class": gpu.gpu_class, "interconnect": gpu.interconnect,
        "nvlink_domain": gpu.nvlink_domain, "aliases": list(gpu.aliases), "sources": list(gpu.sources),
    }


def markdown_table() -> str:
    lines = [HEADER, "|---|---|---|---|---|---|---|---|---|---|---|"]
    yes = {True: "yes", False: "no"}
    for gpu in all_gpus():
        bf16_ok = gpu.sm is None or gpu.sm >= 80  # Volta and Turing have no bfloat16
        link = gpu.interconnect + (f" ({gpu.nvlink_domain})" if gpu.nvlink_domain else "")
        lines.append(f"| {gpu.name} | {row(gpu)['target']} | {gpu.memory_gb:g} GB | {gpu.memory_basis} | "
                     f"{gpu.bandwidth_gbps:g} | {_tflops(gpu.bf16_tflops, bf16_ok)} / "
                     f"{_tflops(gpu.fp8_tflops, gpu.fp8)} | {yes[gpu.fp8]} | {yes[gpu.nvfp4]} | {yes[gpu.mxfp4]} | "
                     f"{gpu.gpu_class} | {link} |")
    return "\n".join(lines)


def text_table() -> str:
    """A terminal listing: name, target, memory, and the spellings that resolve to it."""
    out = []
    for gpu in all_gpus():
        target = row(gpu)["target"]
        out.append(f"{gpu.name:<22} {target:<8} {gpu.memory_gb:>6g} GB  {gpu.full_name}")
        if gpu.aliases:
            out.append(f"{'':<22} also: {', '.join(gpu.aliases)}")
    return "\n".join(out)


def resolved_text(spec: Any) -> str:
    """One name resolved as --gpu reads it (a ``doctor.hardware.spec`` GpuSpec): count, model, target, memory."""
    gpu = spec.gpu
    line = (f"{spec.text!r} → {spec.count}× {gpu.name} ({gpu.full_name}), {row(gpu)['target']}, "
            f"{gpu.memory_gb:g} GB ({gpu.memory_bytes} bytes: {gpu.memory_basis})")
    return line + (f"\nnote: {spec.assumed}" if spec.assumed else "")
