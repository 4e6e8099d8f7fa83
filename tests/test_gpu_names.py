"""GPUs as people and tools name them (issue 14 point 4): nvidia-smi names, counts, ambiguous names, --gpu-mem,
unknown GPUs in lint/check/plan, and the generated docs table."""

from __future__ import annotations

import json
import re

import pytest
from conftest import ROOT, requires_shared, run_cli

from doctor.errors import InputError
from doctor.hardware.catalog import all_gpus, lookup_gpu, resolve_gpu
from doctor.hardware.spec import UnknownGpu, gpu_facts, parse_gpu_spec
from doctor.model.units import parse_bytes
from doctor.render.gpus import BEGIN, END, markdown_table

# Names exactly as nvidia-smi / NVML / torch print them (the first three are quoted in issue 14; the rest are the
# Product Name strings of those cards).
SMI_NAMES = {
    "Tesla T4": "T4", "NVIDIA A100-SXM4-40GB": "A100 40GB", "NVIDIA RTX 6000 Ada Generation": "RTX 6000 Ada",
    "Tesla V100-SXM2-16GB": "V100 16GB", "Tesla V100-SXM2-32GB": "V100 32GB", "Tesla V100-PCIE-32GB": "V100 PCIe 32GB",
    "NVIDIA A10G": "A10G", "NVIDIA A10": "A10", "NVIDIA A16": "A16", "NVIDIA A30": "A30", "NVIDIA A40": "A40",
    "NVIDIA A100-PCIE-40GB": "A100 40GB PCIe", "NVIDIA A800-SXM4-80GB": "A800", "NVIDIA H800": "H800",
    "NVIDIA H20": "H20", "NVIDIA GH200 480GB": "GH200", "NVIDIA GH200 144G HBM3e": "GH200 144GB",
    "NVIDIA L4": "L4", "NVIDIA L20": "L20", "NVIDIA L40": "L40", "NVIDIA L40S": "L40S",
    "NVIDIA RTX A4000": "RTX A4000", "NVIDIA RTX A5000": "RTX A5000", "NVIDIA RTX A6000": "RTX A6000",
    "NVIDIA RTX 4000 Ada Generation": "RTX 4000 Ada", "NVIDIA RTX 5000 Ada Generation": "RTX 5000 Ada",
    "NVIDIA GeForce RTX 3090": "RTX 3090", "NVIDIA GeForce RTX 4090": "RTX 4090", "NVIDIA GeForce RTX 5090": "RTX 5090",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "RTX PRO 6000 Server",
    "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition": "RTX PRO 6000 Max-Q",
    "NVIDIA B200": "B200", "NVIDIA B300 SXM6 AC": "B300", "Quadro RTX 8000": "Quadro RTX 8000",
    "AMD Instinct MI210": "MI210", "AMD Instinct MI250X": "MI250X", "AMD Instinct MI300X": "MI300X",
    "AMD Instinct MI355X": "MI355X",
}


@pytest.mark.parametrize("name,expected", sorted(SMI_NAMES.items()))
def test_tool_names_resolve(name: str, expected: str) -> None:
    gpu = lookup_gpu(name)
    assert gpu is not None and gpu.name == expected


@pytest.mark.parametrize("name,expected,sm", [
    ("V100", "V100 16GB", 70), ("T4", "T4", 75), ("A10G", "A10G", 86), ("RTX A6000", "RTX A6000", 86),
    ("GH200", "GH200", 90), ("a30", "A30", 80), ("l20", "L20", 89), ("rtx 6000 ada", "RTX 6000 Ada", 89),
    ("RTX PRO 5000", "RTX PRO 5000", 120), ("4090D", "RTX 4090 D", 89), ("v100 32gb", "V100 32GB", 70),
    ("mi250x", "MI250X", None), ("B300", "B300", 103), ("GB300", "GB300", 103), ("GB200", "GB200", 100),
])
def test_incident_names_resolve(name: str, expected: str, sm: int | None) -> None:
    """The names the incidents of issue 14 used (RTX A6000, T4, A10G, V100, GH200 all exited 2 before)."""
    gpu = lookup_gpu(name)
    assert gpu is not None and (gpu.name, gpu.sm) == (expected, sm)


@pytest.mark.parametrize("text", ["8xH100", "H100x8", "8 H100", "H100:8", "8 x H100", "8× H100", "H100 x 8"])
def test_count_spellings(text: str) -> None:
    spec = parse_gpu_spec(text)
    assert (spec.gpu.name, spec.count) == ("H100", 8)


@pytest.mark.parametrize("text,name,count", [
    ("3090 Ti", "RTX 3090 Ti", 1), ("2 3090 Ti", "RTX 3090 Ti", 2), ("4090 D", "RTX 4090 D", 1),
    ("5090", "RTX 5090", 1), ("2 RTX 4090", "RTX 4090", 2), ("T4x4", "T4", 4),
])
def test_a_leading_number_is_a_count_only_when_the_rest_is_a_gpu(text: str, name: str, count: int) -> None:
    spec = parse_gpu_spec(text)
    assert (spec.gpu.name, spec.count) == (name, count)


@pytest.mark.parametrize("text,assumed", [
    ("a100", "A100 80GB"), ("H100", "H100"), ("V100", "V100 16GB"), ("RTX 6000", "RTX 6000 Ada"),
    ("GH200", "GH200"), ("V100 SXM2", "V100 16GB"), ("A100 PCIe", "A100 80GB PCIe"), ("4060 Ti", "RTX 4060 Ti"),
    ("RTX PRO 5000", "RTX PRO 5000"),
])
def test_ambiguous_names_say_what_they_assumed(text: str, assumed: str) -> None:
    spec = parse_gpu_spec(text)
    assert spec.gpu.name == assumed
    assert spec.assumed and f"assumed {assumed}" in spec.assumed and "ambiguous" in spec.assumed
    assert gpu_facts(spec, "--gpu").get("gpu.assumed") == spec.assumed


@pytest.mark.parametrize("text", ["A100 40GB", "NVIDIA A100-SXM4-80GB", "H100 SXM", "Tesla T4", "RTX A6000"])
def test_specific_names_assume_nothing(text: str) -> None:
    assert parse_gpu_spec(text).assumed is None


def test_every_ambiguous_candidate_is_an_entry() -> None:
    resolution = resolve_gpu("RTX 6000")
    assert resolution is not None and resolution.assumed is not None
    for other in ("Quadro RTX 6000", "RTX A6000", "RTX PRO 6000"):
        assert other in resolution.assumed


def test_every_entry_cites_a_source_and_volta_on_is_covered() -> None:
    gpus = all_gpus()
    assert all(g.sources and all(s.startswith(("http", "[")) for s in g.sources) for g in gpus)
    sms = {g.sm for g in gpus if g.sm is not None}
    assert {70, 75, 80, 86, 89, 90, 100, 103, 120, 121} <= sms
    assert min(sms) == 70
    assert all(g.gfx for g in gpus if g.vendor == "amd")
    amd = {g.name for g in gpus if g.vendor == "amd"}
    assert {"MI210", "MI250", "MI250X", "MI300X", "MI300A", "MI325X", "MI350X", "MI355X"} <= amd


def test_gpu_mem_overrides_the_catalog() -> None:
    spec = parse_gpu_spec("2x RTX 4090", gpu_mem=48 * 2**30, gpu_mem_text="48G")
    facts = gpu_facts(spec, "--gpu 2x RTX 4090")
    assert facts.get("gpu.memory_bytes") == 48 * 2**30
    assert facts.fact("gpu.memory_bytes").source == "--gpu-mem 48G"
    assert facts.get("gpu.sm") == 89  # the rest of the catalog entry stays


def test_unknown_gpu_with_gpu_mem_keeps_only_the_memory() -> None:
    spec = parse_gpu_spec("4x Foo 9000", gpu_mem=64 * 2**30, gpu_mem_text="64G")
    facts = gpu_facts(spec, "--gpu 4x Foo 9000")
    assert not spec.known and facts.get("gpu.known") is False and facts.get("gpu.count") == 4
    assert facts.get("gpu.memory_bytes") == 64 * 2**30
    assert "gpu.sm" not in facts and "not in the GPU catalog" in (facts.unknown_reason("gpu.sm") or "")


def test_unknown_gpu_without_memory_is_an_unknown_gpu_error() -> None:
    with pytest.raises(UnknownGpu) as err:
        parse_gpu_spec("8x Foo 9000")
    assert isinstance(err.value, InputError) and err.value.count == 8


def _run(*args: str) -> tuple[int, str]:
    result = run_cli(*args)
    return result.returncode, result.stdout + result.stderr


def test_lint_carries_on_with_an_unknown_gpu_and_says_what_to_pass() -> None:
    code, out = _run("lint", "--gpu", "8x Foo 9000", "--format", "json",
                     "vllm serve example/model --tensor-parallel-size 8")
    assert code in (0, 1)
    doc = json.loads(out)
    notes = " ".join(doc["notes"])
    assert "unknown GPU 'Foo 9000'" in notes and "--gpu-mem" in notes and "llmdoctor gpus" in notes


def test_lint_says_which_variant_an_ambiguous_name_assumed() -> None:
    code, out = _run("lint", "--gpu", "a100:2", "vllm serve example/model -tp 2")
    assert code in (0, 1)
    assert "'a100' is ambiguous: assumed A100 80GB" in out


def test_check_offline_carries_on_with_an_unknown_gpu() -> None:
    code, out = _run("check", "--command", "vllm serve example/model", "--gpu", "Foo 9000", "--format", "json")
    assert code in (0, 1)
    doc = json.loads(out)
    assert any("unknown GPU 'Foo 9000'" in n for n in doc["notes"])
    assert doc["facts"]["gpu.known"]["value"] is False


def test_plan_needs_gpu_mem_for_an_unknown_gpu() -> None:
    code, out = _run("plan", "example:seed-gqa-27b", "--gpu", "2x Foo 9000")
    assert code == 2
    assert "--gpu-mem" in out and "plan needs each GPU's memory" in out


def test_plan_runs_on_gpu_mem_for_an_unknown_gpu() -> None:
    code, out = _run("plan", "example:seed-gqa-27b", "--gpu", "2x Foo 9000", "--gpu-mem", "96G", "--format", "json")
    assert code in (0, 1)
    doc = json.loads(out)
    assert doc["gpu"]["known"] is False and doc["gpu"]["memory_bytes"] == parse_bytes("96G")


def test_plan_with_gpu_mem_changes_the_fit() -> None:
    """The 48 GB RTX 4090: the same plan with --gpu-mem 48G has more KV per GPU than the catalog's 24 GB."""
    def kv(*extra: str) -> int:
        code, out = _run("plan", "example:seed-gqa-27b", "--gpu", "2x RTX 4090", "--engine", "vllm",
                         "--format", "json", *extra)
        assert code in (0, 1), out
        doc = json.loads(out)
        return doc["fit"]["vllm"]["kv_budget_per_gpu_bytes"] if "kv_budget_per_gpu_bytes" in doc["fit"]["vllm"] \
            else json.dumps(doc["fit"]["vllm"])
    assert kv("--gpu-mem", "48G") != kv()


def test_gpus_command_lists_and_resolves() -> None:
    code, out = _run("gpus")
    assert code == 0 and "T4" in out and "Tesla T4" in out
    code, out = _run("gpus", "NVIDIA RTX 6000 Ada Generation")
    assert code == 0 and "RTX 6000 Ada" in out and "sm_89" in out
    code, out = _run("gpus", "--format", "json")
    assert code == 0 and len(json.loads(out)["gpus"]) == len(all_gpus())


def test_docs_table_is_the_generated_one() -> None:
    text = (ROOT / "docs" / "hardware.md").read_text()
    body = re.search(re.escape(BEGIN) + r"\n(.*?)\n" + re.escape(END), text, re.S)
    assert body is not None and body.group(1) == markdown_table(), \
        "regenerate docs/hardware.md's table: python -m doctor gpus --format markdown"


@requires_shared
def test_real_nvml_names_resolve() -> None:
    """Every GPU name in the real nvidia-smi captures under fixtures/nvml resolves to a catalog entry."""
    from conftest import SHARED_FIXTURES

    from doctor.probes.gpu import read_nvidia_smi

    names = set()
    for path in sorted((SHARED_FIXTURES / "nvml").iterdir()):
        if path.suffix in (".txt", ".xml") and "mig" not in path.name:
            readings = read_nvidia_smi(path.read_text(encoding="utf-8", errors="replace"), path.name)
            names |= {r.name for r in readings}
    assert len(names) >= 6, names
    for name in names:
        assert lookup_gpu(name) is not None, name
