"""Log wordings of whole classes of start-up failures, read on the reporters' own log lines (the benchmark's worked
cases, bench/incidents/<id>.yaml, each with its thread's URL), and the healthy real engines' logs that must not
name them.

Each class is one signature in its cause's file (playbooks/causes/<id>.yaml, `seen:` says where the wording comes
from); the cases below are examples of the class, not the rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from doctor.logs.source import read_log_input

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "bench" / "incidents"
LIVE = ROOT / "fixtures" / "live"
#: only worked batches are read here (a blind batch is never run before it is measured)
WORKED = {1, 2, 3}


def _case_log(case_id: str, tmp_path: Path) -> Path:
    data = yaml.safe_load((CASES / f"{case_id}.yaml").read_text(encoding="utf-8"))
    assert int(data["batch"]) in WORKED
    path = tmp_path / f"{case_id}.log"
    path.write_text(data["evidence"]["log"], encoding="utf-8")
    return path


def _causes(path: Path) -> list[str]:
    facts = {f.key: f.value for f in read_log_input(str(path)).facts}
    return facts.get("log.causes", [])


@pytest.mark.parametrize("case_id, why", [
    ("i311-sglang-7942", "a traceback cut inside module-level imports (the exception line past the cut)"),
    ("i335-sparkrun-127", "the same, inside vllm/entrypoints/cli/__init__.py's imports"),
    ("i312-sglang-5002", "a shared library not on the loader's path (libnvrtc.so.12)"),
    ("i318-sglang-2552", "`cannot import name` behind Xinference's [address=…, pid=…] prefix"),
    ("i309-sglang-4985", "SGLang's 'X is not installed. Please install it' (torch_memory_saver_adapter.py:21)"),
    ("i065-flashinfer-794", "flashinfer's 'with minimum required version … is not installed. Please uninstall'"),
])
def test_import_time_failures_name_the_missing_dependency(case_id: str, why: str, tmp_path: Path) -> None:
    assert "engine-dependency-missing" in _causes(_case_log(case_id, tmp_path)), why


@pytest.mark.parametrize("case_id, cause", [
    ("i096-dgx-spark-playbooks-63", "tp-exceeds-visible-gpus"),  # vllm/v1/executor/ray_utils.py:331's warning
    ("i230-mineru-3416", "gpu-arch-unsupported"),  # SGLang's sm75 minimum, as a launcher re-spaced it
    ("i183-vllm-51964", "gpu-arch-unsupported"),  # a ROCm kernel built for gfx950 only, on gfx942
    ("i325-vllm-10990", "engine-too-old"),  # the registry's refusal, the excerpt cut inside "for now"
    ("i307-unsloth-1380", "quantization-not-detected"),  # a bitsandbytes quant-state tensor no layer takes
])
def test_start_up_refusals_in_other_wordings(case_id: str, cause: str, tmp_path: Path) -> None:
    assert cause in _causes(_case_log(case_id, tmp_path))


def test_a_vllm_warning_about_its_own_extension_is_not_a_missing_dependency(tmp_path: Path) -> None:
    """i013: vLLM 0.5 logs `Failed to import from vllm._C with ImportError('libcudart.so.12: cannot open shared
    object file …')` as a warning and starts; the server then failed on bf16 (the case's settled cause)."""
    assert "engine-dependency-missing" not in _causes(_case_log("i013-glm-4-510", tmp_path))


@pytest.mark.parametrize("name", ["sglang-0.5.23-cpu/server.log", "vllm-0.32.0-cpu/plain-after/server.log"])
def test_healthy_real_starts_name_no_missing_dependency(name: str) -> None:
    """The real CPU engines' healthy logs: SGLang's "Ignore import error when loading sglang.srt.models.…: cannot
    import name …" lines are model modules a healthy server skips, not a missing dependency."""
    path = LIVE / name
    text = path.read_text(encoding="utf-8")
    if name.startswith("sglang"):
        assert "Ignore import error when loading" in text and "cannot import name" in text
    assert "engine-dependency-missing" not in _causes(path)
