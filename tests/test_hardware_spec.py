"""``--gpu NAME[:COUNT]`` parsing, the gpu.* facts it yields, and the kernel gating data per engine release."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from doctor.errors import InputError
from doctor.hardware.catalog import lookup_gpu
from doctor.hardware.gating import kernel_rules, kernel_support
from doctor.hardware.spec import gpu_facts, parse_gpu_spec


@pytest.mark.parametrize("text,name,count", [
    ("H200", "H200", 1), ("8x H200", "H200", 8), ("8 x H200", "H200", 8), ("8×H200", "H200", 8),
    ("8X h200", "H200", 8), ("H200:8", "H200", 8), ("H200 : 8", "H200", 8), ("H100 x4", "H100", 4),
    ("8x B200", "B200", 8), ("2x RTX 4090", "RTX 4090", 2), ("NVIDIA H100 80GB HBM3:8", "H100", 8),
    ("h100 80gb", "H100", 1), ("A100-40G:2", "A100 40GB", 2), ("a100 80gb", "A100 80GB", 1),
    ("4x NVIDIA A100-SXM4-80GB", "A100 80GB", 4), ("72x GB200", "GB200", 72), ("8x H200:8", "H200", 8),
])
def test_forgiving_forms(text: str, name: str, count: int) -> None:
    spec = parse_gpu_spec(text)
    assert (spec.gpu.name, spec.count) == (name, count)


def test_unknown_gpu_says_did_you_mean() -> None:
    with pytest.raises(InputError) as err:
        parse_gpu_spec("8x H2000")
    message = str(err.value)
    assert message.startswith("--gpu: unknown GPU 'H2000'")
    # a pip user has no docs/ folder: the error names the command that lists GPUs, and --gpu-mem
    assert "did you mean H200" in message and "llmdoctor gpus" in message and "--gpu-mem" in message
    assert "docs/hardware.md" not in message


@pytest.mark.parametrize("text,needle", [
    ("0x H200", "between 1 and"), ("8x H200:4", "two different GPU counts"), ("", "empty GPU name"),
    (":8", "empty GPU name"), ("999999x H200", "between 1 and"),
])
def test_bad_specs_name_the_flag(text: str, needle: str) -> None:
    with pytest.raises(InputError, match=needle) as err:
        parse_gpu_spec(text, field="--gpu")
    assert str(err.value).startswith("--gpu:")


@given(st.text(max_size=40))
def test_any_text_is_a_spec_or_an_input_error(text: str) -> None:
    try:
        spec = parse_gpu_spec(text)
    except InputError as err:
        assert "\n" not in str(err)
    else:
        assert spec.count >= 1 and lookup_gpu(spec.gpu.name) is spec.gpu


def test_gpu_facts_follow_the_contract() -> None:
    facts = gpu_facts(parse_gpu_spec("8x H200"), "--gpu 8x H200")
    for key in ("gpu.name", "gpu.count", "gpu.vendor", "gpu.sm", "gpu.memory_bytes", "gpu.fp8", "gpu.nvfp4",
                "gpu.mxfp4", "gpu.class", "gpu.interconnect"):
        assert key in facts, key
    assert facts.get("gpu.count") == 8 and facts.fact("gpu.count").source == "--gpu 8x H200"
    assert facts.fact("gpu.sm").source == "gpu catalog H200"
    assert facts.get("gpu.memory_bytes") == 143771 * 2**20
    assert "nvidia-smi 143771 MiB" in facts.fact("gpu.memory_bytes").source
    assert (facts.get("gpu.fp8"), facts.get("gpu.nvfp4"), facts.get("gpu.class")) == (True, False, "datacenter")
    assert not any(f.observed for f in facts)


def test_amd_never_passes_nvidia_gating_silently() -> None:
    facts = gpu_facts(parse_gpu_spec("8x MI355X"), "--gpu")
    assert facts.get("gpu.vendor") == "amd" and facts.get("gpu.gfx") == "gfx950"
    for key in ("gpu.sm", "gpu.dsa_kernels", "gpu.fa3", "gpu.nvfp4_fallback"):
        assert key not in facts
        assert "must be checked" in facts.unknown_reason(key)


# --------------------------------------------------------------------------- gating data (kernels.yaml)
def _gpu(name: str):
    model = lookup_gpu(name)
    assert model is not None
    return model


@pytest.mark.parametrize("gpu,engine,version,expected", [
    ("RTX 4090", "vllm", None, False), ("RTX 4090", "sglang", None, False),   # seed: Ada is out
    ("A100 80GB", "vllm", None, False), ("RTX 3090", "sglang", None, False),
    ("H200", "vllm", "0.11.0", True), ("H200", "vllm", "0.10.0", False),      # DSA arrived in 0.11.0
    ("B300", "vllm", "0.11.0", False), ("B300", "vllm", "0.13.0", True),      # DeepGEMM: exact sm_100, then 10.x
    ("RTX PRO 6000", "vllm", "0.22.0", False), ("RTX PRO 6000", "vllm", "0.25.0", True),
    ("RTX 5090", "sglang", "0.5.16", False), ("RTX 5090", "sglang", "0.5.20", True),
    ("GB10", "vllm", "0.33.0", True), ("B200", "sglang", "0.5.6.post2", True),
])
def test_dsa_kernels_per_engine_release(gpu: str, engine: str, version: str | None, expected: bool) -> None:
    assert kernel_support(_gpu(gpu), engine, version)["dsa_kernels"] is expected


def test_engine_agnostic_kernel_facts_carry_the_first_release() -> None:
    facts = gpu_facts(parse_gpu_spec("2x RTX PRO 6000"), "--gpu")
    assert facts.get("gpu.dsa_kernels") is True
    assert facts.get("gpu.dsa_kernels_since.vllm") == "0.25.0"
    assert facts.get("gpu.dsa_kernels_since.sglang") == "0.5.20"
    ada = gpu_facts(parse_gpu_spec("2x RTX 4090"), "--gpu")
    assert ada.get("gpu.dsa_kernels") is False and ada.get("gpu.dsa_kernels_since.vllm") is None


def test_sglang_fa3_and_flashmla_boundaries() -> None:
    assert kernel_support(_gpu("A100 80GB"), "sglang")["fa3"] is True
    assert kernel_support(_gpu("A100 80GB"), "sglang")["fa3_mla"] is False     # MLA on fa3 needs sm_90
    assert kernel_support(_gpu("L40S"), "sglang")["fa3"] is True
    assert kernel_support(_gpu("B200"), "sglang")["fa3"] is False
    assert kernel_support(_gpu("H100"), "vllm")["flashmla"] is True
    assert kernel_support(_gpu("B200"), "vllm")["flashmla"] is False           # dense FlashMLA is Hopper-only


def test_fallbacks_for_formats_without_tensor_cores() -> None:
    h200, a100, l40s = _gpu("H200"), _gpu("A100 80GB"), _gpu("L40S")
    assert kernel_support(h200, "vllm", "0.13.0")["nvfp4_fallback"] is True     # Marlin weight-only FP4
    assert kernel_support(h200, "sglang", "0.5.12")["nvfp4_fallback"] is False  # min capability 100: refuses
    assert kernel_support(h200, "sglang", "0.5.16")["nvfp4_fallback"] is True
    assert kernel_support(a100, "vllm")["fp8_fallback"] is True                 # Marlin weight-only FP8
    assert kernel_support(a100, "sglang", "0.4.10")["fp8_fallback"] is False
    assert kernel_support(l40s, "vllm")["fp8_fallback"] is False                # native FP8: no fallback needed
    assert "fa3" not in kernel_support(h200, "vllm")                            # no such rule for vLLM


def test_every_rule_cites_engine_source() -> None:
    for kernel, per_engine in kernel_rules().items():
        assert per_engine, kernel
        for engine, rules in per_engine.items():
            for rule in rules:
                assert engine in rule.evidence or "same assertion" in rule.evidence, (kernel, engine, rule.since)
                assert ".py:" in rule.evidence or "same assertion" in rule.evidence


def test_unknown_engine_is_an_input_error() -> None:
    with pytest.raises(InputError, match="engine 'trtllm'"):
        kernel_support(_gpu("H200"), "trtllm")
