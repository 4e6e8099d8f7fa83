"""The GPU catalog: every spelling lands on the right entry, and the data agrees with real nvidia-smi readings."""

from __future__ import annotations

import pytest
from conftest import SHARED_FIXTURES, requires_shared, unavailable

from doctor.hardware.catalog import all_gpus, lookup_gpu, normalize
from doctor.probes.gpu import read_nvidia_smi

NVML = SHARED_FIXTURES / "nvml"

# Spellings people and nvidia-smi use (the task's list plus nvidia-smi's own product names).
SPELLINGS = {
    "H200": "H200", "NVIDIA H200": "H200", "H200 NVL": "H200 NVL", "NVIDIA H200 NVL": "H200 NVL",
    "NVIDIA H100 80GB HBM3": "H100", "H100 PCIe": "H100 PCIe", "NVIDIA H100 NVL": "H100 NVL",
    "RTX PRO 6000 Blackwell Server Edition": "RTX PRO 6000 Server",
    "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "RTX PRO 6000",
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": "RTX PRO 6000 Max-Q",
    "A800": "A800", "L40": "L40", "L40S": "L40S", "GB200": "GB200", "GB300": "GB300",
    "NVIDIA GeForce RTX 4090": "RTX 4090", "NVIDIA A100-SXM4-80GB": "A100 80GB",
    "NVIDIA A100-SXM4-40GB": "A100 40GB", "NVIDIA A100-PCIE-40GB": "A100 40GB PCIe", "A10": "A10", "L4": "L4",
    "NVIDIA GeForce RTX 3090": "RTX 3090", "NVIDIA GeForce RTX 5090": "RTX 5090", "H800": "H800", "H20": "H20",
    "NVIDIA B200": "B200", "NVIDIA B300 SXM6 AC": "B300", "DGX Spark": "GB10", "NVIDIA GB10": "GB10",
    "NVIDIA GeForce RTX 4080 SUPER": "RTX 4080 SUPER", "NVIDIA RTX 4000 SFF Ada Generation": "RTX 4000 SFF Ada",
    "AMD Instinct MI300X": "MI300X", "MI325X": "MI325X", "mi355x": "MI355X",
    # family + memory picks the variant; a bare family name its default
    "A100": "A100 80GB", "a100 40gb": "A100 40GB", "A100-40G": "A100 40GB", "H100 94GB": "H100 NVL",
    "h100 80gb": "H100", "H200 141GB": "H200",
    # nvidia-smi's default table truncates long names
    "NVIDIA RTX PRO 6000 Blackwell Ser...": "RTX PRO 6000 Server",
}


@pytest.mark.parametrize("spelling,expected", sorted(SPELLINGS.items()))
def test_spellings_resolve(spelling: str, expected: str) -> None:
    model = lookup_gpu(spelling)
    assert model is not None and model.name == expected


@pytest.mark.parametrize("spelling", ["H2000", "", "  ", "RTX 9090", "NVIDIA RTX PRO 6000 Blac...", "H100 50GB"])
def test_unknown_or_ambiguous_is_none(spelling: str) -> None:
    assert lookup_gpu(spelling) is None


def test_normalize_ignores_vendor_case_hyphens_and_memory_spelling() -> None:
    assert normalize("NVIDIA  A100-SXM4-80GB") == normalize("a100 sxm4 80 GiB") == "a100 sxm4 80gb"


def test_every_entry_cites_a_source_and_names_are_unique() -> None:
    names = [g.name for g in all_gpus()]
    assert len(names) == len(set(names))
    for gpu in all_gpus():
        assert gpu.sources and all(s.startswith("https://") for s in gpu.sources), gpu.name


def test_required_coverage() -> None:
    required = {"A100 40GB", "A100 80GB", "A100 40GB PCIe", "A100 80GB PCIe", "A800", "A10", "L4", "L40", "L40S",
                "RTX 3090", "RTX 4090", "RTX 5090", "RTX PRO 6000", "RTX PRO 6000 Server", "RTX PRO 6000 Max-Q",
                "H100", "H100 PCIe", "H100 NVL", "H800", "H20", "H200", "H200 NVL", "B200", "B300", "GB200",
                "GB300", "GB10", "RTX 4080 SUPER", "RTX 4000 SFF Ada", "MI300X", "MI325X", "MI355X"}
    assert required <= {g.name for g in all_gpus()}


def test_native_formats_follow_the_compute_capability() -> None:
    """FP8 tensor cores from sm_89 (Ada, not only Hopper: a seed slip); FP4 on sm_100/103 and sm_120/121."""
    for gpu in all_gpus():
        if gpu.vendor != "nvidia":
            continue
        assert gpu.fp8 == (gpu.sm >= 89), gpu.name
        assert gpu.nvfp4 == (gpu.sm in (100, 103, 120, 121)), gpu.name
        assert gpu.mxfp4 == gpu.nvfp4, gpu.name
        if gpu.sm in (100, 103):
            assert gpu.gpu_class == "datacenter", gpu.name
        if gpu.sm in (120, 121):
            assert gpu.gpu_class == "workstation", gpu.name


def test_seed_slips_on_blackwell_numbers() -> None:
    """sm_103 is B300/GB300, sm_121 is GB10, sm_120 is RTX 50xx / RTX PRO (the seed lists only 100 and 120)."""
    by_sm: dict[int, set[str]] = {}
    for gpu in all_gpus():
        if gpu.sm is not None:
            by_sm.setdefault(gpu.sm, set()).add(gpu.name)
    assert by_sm[103] == {"B300", "GB300"}
    assert by_sm[121] == {"GB10"}
    assert {"RTX 5090", "RTX PRO 6000"} <= by_sm[120]
    assert by_sm[100] == {"B200", "GB200"}


def test_amd_entries_carry_gfx_not_sm() -> None:
    amd = [g for g in all_gpus() if g.vendor == "amd"]
    assert {g.name for g in amd} == {"MI100", "MI210", "MI250", "MI250X", "MI300A", "MI300X", "MI325X", "MI350X",
                                     "MI355X", "Radeon PRO W7900"}
    for gpu in amd:
        assert gpu.sm is None and gpu.gfx in ("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1100")
        assert any("must be checked" in note for note in gpu.notes)


def _readings(name: str) -> list:
    path = NVML / name
    if not path.is_file():
        unavailable(f"real reading {path} not available")
    return read_nvidia_smi(path.read_text(encoding="utf-8", errors="replace"), name)


@requires_shared
@pytest.mark.parametrize("fixture", [
    "nvidia_gpu_exporter__linux-x86_64__nvidia-h200__590.48.01.txt",
    "nvidia_gpu_exporter__linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt",
    "nvidia_gpu_exporter__linux-x86_64__nvidia-l40s__595.80.txt",
    "nvidia_gpu_exporter__linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.txt",
    "b200x8_nvidia-smi_and_topo-m.txt",
    "telegraf__a100-sxm4-v12.xml",
    "telegraf__rtx-3090-v12.xml",
    "telegraf__rtx-4000-sff-ada-v13.xml",
])
def test_catalog_memory_and_sm_match_real_readings(fixture: str) -> None:
    """The catalog's nvidia-smi memory is the real reading (143771 MiB for H200, …) and its sm the reported one."""
    for reading in _readings(fixture):
        model = lookup_gpu(reading.name)
        assert model is not None, reading.name
        assert model.memory_bytes == reading.memory_total, (model.name, reading.memory_total)
        assert model.memory_basis.startswith("nvidia-smi")
        if reading.sm is not None:
            assert model.sm == reading.sm


def test_docs_list_every_known_gpu() -> None:
    """docs/hardware.md's table (generated by `llmdoctor gpus --format markdown`) names every catalog entry."""
    from conftest import ROOT

    rows = {line.split("|")[1].strip() for line in (ROOT / "docs" / "hardware.md").read_text().splitlines()
            if line.startswith("| ") and line.count("|") > 10}
    assert {g.name for g in all_gpus()} <= rows


def test_an_unknown_gpu_named_as_amds_is_amd() -> None:
    """A GPU the catalog lacks still runs the ROCm stack when its name is AMD's (Radeon, Instinct, MIxxx, RX nnnn,
    gfx target): gpu.vendor is set, so amd-stack-unverified can say so; an unknown NVIDIA-looking name stays
    unknown."""
    from doctor.hardware.spec import vendor_from_name

    for name in ("Radeon RX 9070 XT", "AMD Instinct MI60", "RX 7900", "gfx1201 card"):
        assert vendor_from_name(name, "--gpu")[0] == "amd", name
    for name in ("RTX 9999", "Tesla K80", "Mi Notebook"):
        assert vendor_from_name(name, "--gpu") is None, name
