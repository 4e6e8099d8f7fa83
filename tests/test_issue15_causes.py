"""The capacity, scheduling, speculative-decoding, hybrid-cache and GPU-balance causes of issue 15, on real
scrapes, configs and nvidia-smi readings (fixtures) wherever one exists; where none
does, the scenario is built here from the engine's own line format and labelled so."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import (
    SHARED_FIXTURES,
    WHEEL_DIR,
    find_wheel_file,
    requires_shared,
    run_cli,
    shared_config,
    unavailable,
)

from doctor.derive import derive_all
from doctor.facts import Facts
from doctor.playbook.engine import diagnose
from doctor.playbook.loader import load_playbooks

METRICS = SHARED_FIXTURES / "metrics"
NVML = SHARED_FIXTURES / "nvml"
LIVE_VLLM = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu"
PUBLIC_SMI = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi" / "public"


def _check(*args: str) -> dict:
    result = run_cli("check", *args, "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


def _findings(doc: dict) -> dict[str, dict]:
    return {f["id"]: f for f in doc["findings"]}


# ------------------------------------------------------------------------------------------ measured capacity
@requires_shared
def test_real_exhaustion_names_the_hand_set_block_count() -> None:
    """vllm_1.prom (vLLM 0.28, L4, --num-gpu-blocks-override 1024): KV full, 53,366 preemptions."""
    found = _findings(_check("--metrics", str(METRICS / "vllm_1.prom")))
    assert {"kv-cache-exhausted", "kv-size-set-by-hand"} <= set(found)
    finding = found["kv-size-set-by-hand"]
    assert finding["confidence"] == "high" and 'num_gpu_blocks_override="1024"' in finding["what"]
    assert any(e["fact"] == "capacity.kv_override" and "cache_config_info" in e["source"] for e in finding["evidence"])
    assert "--num-gpu-blocks-override" in finding["fix"]


@requires_shared
def test_no_override_no_blame() -> None:
    for name in ("vllm_2.prom", "vllm_3.prom", "sglang_1.prom"):
        assert "kv-size-set-by-hand" not in _findings(_check("--metrics", str(METRICS / name))), name


@requires_shared
def test_the_logs_kv_size_is_the_measured_capacity() -> None:
    """The real log's "CPU KV cache size: 1,048,576 tokens" becomes capacity.measured_tokens; the computed
    capacity here is a scenario number (the tiny model's config is not in the fixtures)."""
    from doctor.logs.source import read_log_input

    facts = read_log_input(str(LIVE_VLLM / "plain-after" / "server.log")).facts
    facts.set("fit.kv_tokens_per_group", 700_000, "scenario: computed capacity")
    derive_all(facts)
    assert facts.get("capacity.measured_tokens") == 1_048_576
    assert "KV cache size" in facts.fact("capacity.measured_tokens").source
    diagnosis = diagnose(load_playbooks(), facts, ["memory-filling-fast"])
    [off] = [f for f in diagnosis.findings if f.id == "capacity-estimate-off"]
    assert "1048576 KV tokens" in off.what and "Trust the measured" in off.what


# ------------------------------------------------------------------------------------------ SGLang queueing
@requires_shared
def test_sglang_queue_below_its_cap_is_the_schedule_conservativeness_case() -> None:
    """sglang_1.prom (real, SGLang ~0.4): 162 running, 2,826 queued, token usage 0.28; the cap comes from the
    command the user hands over."""
    doc = _check("--metrics", str(METRICS / "sglang_1.prom"), "--command",
                 "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
                 "--max-running-requests 1024")
    found = _findings(doc)
    assert "sglang-schedule-conservative" in found and "max-num-seqs-limit" not in found
    assert "--schedule-conservativeness" in found["sglang-schedule-conservative"]["fix"]
    assert "--max-num-seqs" not in found["sglang-schedule-conservative"]["fix"]


@requires_shared
def test_sglang_queue_at_its_cap_is_the_cap_with_sglangs_flag() -> None:
    doc = _check("--metrics", str(METRICS / "sglang_1.prom"), "--command",
                 "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct "
                 "--max-running-requests 162")
    found = _findings(doc)
    assert "max-num-seqs-limit" in found and "sglang-schedule-conservative" not in found
    assert "--max-running-requests" in found["max-num-seqs-limit"]["fix"]
    assert "--max-num-seqs" not in found["max-num-seqs-limit"]["fix"]


@requires_shared
def test_vllm_queue_keeps_the_vllm_cap_and_fix() -> None:
    found = _findings(_check("--metrics", str(METRICS / "vllm_2.prom"), "--command", "vllm serve facebook/opt-125m"))
    assert "max-num-seqs-limit" in found and "sglang-schedule-conservative" not in found
    assert "--max-num-seqs" in found["max-num-seqs-limit"]["fix"]


# ------------------------------------------------------------------------------------------ hybrid prefix cache
@requires_shared
def test_hybrid_model_with_no_prefix_hits_is_told_the_block_size() -> None:
    """Qwen3-Next's real config (vLLM hybrid block 544) with the real vllm_2 scrape, whose prefix-cache
    counters give a 0 % hit rate."""
    config = shared_config("Qwen__Qwen3-Next-80B-A3B-Thinking.json")
    doc = _check("--config", str(config), "--command", "vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking",
                 "--metrics", str(METRICS / "vllm_2.prom"))
    assert doc["facts"]["engine.block_size"]["value"] == 544
    finding = _findings(doc)["hybrid-prefix-below-block"]
    assert "544 tokens" in finding["what"] and finding["confidence"] == "high"


@requires_shared
def test_a_full_attention_model_is_not_blamed_on_block_size() -> None:
    doc = _check("--config", str(shared_config("Qwen__Qwen3-8B.json")), "--command", "vllm serve Qwen/Qwen3-8B",
                 "--metrics", str(METRICS / "vllm_2.prom"))
    assert "hybrid-prefix-below-block" not in _findings(doc)


# ------------------------------------------------------------------------------------------ speculative decoding
def test_spec_decode_acceptance_from_the_engines_log_line(tmp_path: Path) -> None:
    """Scenario: one line in vLLM 0.32.0's SpecDecoding format (vllm/v1/spec_decode/metrics.py:121), with
    invented numbers (no real log of a speculating server is in the fixtures)."""
    line = ("(APIServer pid=1) INFO 12-01 12:00:00 [metrics.py:121] SpecDecoding metrics: Mean acceptance length: "
            "1.22, Accepted throughput: 3.10 tokens/s, Drafted throughput: 14.00 tokens/s, Accepted: 310 tokens, "
            "Drafted: 1400 tokens, Per-position acceptance rate: 0.180, 0.040, Avg Draft acceptance rate: 22.1%\n")
    path = tmp_path / "spec.log"
    path.write_text(line)
    doc = _check("--log", str(path))
    assert doc["facts"]["metrics.spec_accept_rate"]["value"] == round(310 / 1400, 4)
    finding = _findings(doc)["spec-decode-low-acceptance"]
    assert "22%" in finding["what"] and "--speculative-config" in finding["fix"]


def test_spec_metric_names_are_the_engines_own() -> None:
    """The names the acceptance rate is read from (doctor/probes/metric_names.yaml): SGLang's are in its
    catalog; vLLM declares its counters in a tuple list the catalog generator does not see, so they are checked
    against the real 0.33.0 wheel (vllm/v1/spec_decode/metrics.py:230-231) that tools/fetch_test_wheels.sh
    fetches."""
    import re
    import zipfile

    from doctor.engines.catalog import load_catalog

    names = (Path(__file__).resolve().parents[1] / "doctor" / "probes" / "metric_names.yaml").read_text()
    assert '"vllm:spec_decode_num_draft_tokens"' in names and '"sglang:spec_accept_rate"' in names
    sglang = {m["name"] for m in load_catalog("sglang").metrics}
    assert {"sglang:spec_accept_rate", "sglang:spec_accept_length"} <= sglang
    wheel = find_wheel_file("vllm", "0.33.0")
    if wheel is None:
        unavailable(f"vllm-0.33.0-*.whl not in {WHEEL_DIR} (set LLMDOCTOR_WHEEL_DIR; tools/fetch_test_wheels.sh)")
    source = zipfile.ZipFile(wheel).read("vllm/v1/spec_decode/metrics.py").decode()
    declared = set(re.findall(r'"(vllm:spec_decode_[a-z_]+)"', source))
    assert {"vllm:spec_decode_num_draft_tokens", "vllm:spec_decode_num_accepted_tokens"} <= declared


# ------------------------------------------------------------------------------------------ GPU balance
def _csv(tmp_path: Path, utils: list[int]) -> Path:
    """Scenario: `nvidia-smi --query-gpu=index,name,memory.total,memory.used,utilization.gpu --format=csv`
    output for eight H200s with the issue's 97 % / 18 % split (no real skewed reading is in the fixtures)."""
    rows = ["index, name, memory.total [MiB], memory.used [MiB], utilization.gpu [%]"]
    rows += [f"{i}, NVIDIA H200, 143771 MiB, 120000 MiB, {u} %" for i, u in enumerate(utils)]
    path = tmp_path / "smi.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_gpu_skew_is_a_finding_without_a_launch_command(tmp_path: Path) -> None:
    doc = _check("--nvidia-smi", str(_csv(tmp_path, [97, 18, 18, 18, 18, 18, 18, 18])))
    finding = _findings(doc)["gpu-util-skew"]
    assert finding["severity"] == "warning" and finding["confidence"] == "high"
    assert "97" in finding["what"]


def test_real_skewed_table_is_a_finding_without_a_launch_command() -> None:
    """A real nvidia-smi table (fixtures/nvidia-smi/public, cited in its SOURCES.md): three RTX 3090s at 0 %,
    0 % and 100 %, read by the default-table parser. No launch command, no endpoint: still a finding, never
    "healthy"."""
    doc = _check("--nvidia-smi", str(PUBLIC_SMI / "rtx3090x3-one-gpu-busy.txt"))
    assert doc["facts"]["gpu.util"]["value"] == [0.0, 0.0, 1.0]
    assert doc["facts"]["gpu.util_skew"]["value"] == 3.0 and doc["facts"]["gpu.util_max"]["value"] == 1.0
    found = _findings(doc)
    assert set(found) == {"gpu-util-skew"}, sorted(found)
    assert found["gpu-util-skew"]["confidence"] == "high"
    assert "0%, 0%, 100%" in found["gpu-util-skew"]["what"]


def test_real_skewed_table_is_cited() -> None:
    sources = (PUBLIC_SMI / "SOURCES.md").read_text()
    for path in PUBLIC_SMI.glob("*.txt"):
        row = next(line for line in sources.splitlines() if line.startswith(f"| {path.name} "))
        assert "https://github.com/" in row and "gpu-util-skew" in row


def test_even_load_is_no_skew(tmp_path: Path) -> None:
    assert "gpu-util-skew" not in _findings(_check("--nvidia-smi", str(_csv(tmp_path, [95, 93, 97, 94, 96, 92, 95, 94]))))


@requires_shared
def test_real_idle_b200s_are_not_skewed() -> None:
    doc = _check("--nvidia-smi", str(NVML / "b200x8_nvidia-smi_and_topo-m.txt"))
    assert "gpu-util-skew" not in _findings(doc)


def test_report_diagnoses_the_skew_too() -> None:
    """`report` runs derive_all and diagnose on each instance's facts (doctor/report/analysis.py); GPU
    exporters give utilization as 0..1 ratios per GPU. Scenario values."""
    facts = Facts()
    facts.set("gpu.util", [0.97, 0.18, 0.18, 0.18, 0.18, 0.18, 0.18, 0.18], "scenario: nvidia_smi_utilization_gpu_ratio",
              observed=True)
    facts.set("metrics.kv_usage", 0.3, "scenario", observed=True)
    derive_all(facts)
    found = {f.id for f in diagnose(load_playbooks(), facts, unreachable=("active",)).findings}
    assert "gpu-util-skew" in found


def test_ep_skew_stays_expert_imbalance() -> None:
    facts = Facts()
    facts.set("gpu.util", [97, 18, 18, 18, 18, 18, 18, 18], "scenario", observed=True)
    facts.set("launch.expert_parallel", True, "scenario")
    derive_all(facts)
    found = {f.id for f in diagnose(load_playbooks(), facts).findings}
    assert "expert-load-imbalance" in found and "gpu-util-skew" not in found
