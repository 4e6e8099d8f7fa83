"""Values the engine's own start-up check refuses reach `lint` as a critical finding citing that check
(issue 23, Numbers): vLLM --gpu-memory-utilization 1.5, SGLang --mem-fraction-static 1.7, a tensor-parallel
size that does not split the model's 32 attention heads / 8 KV heads. The cited wheel lines are read back from
the real wheels: each must hold the check the finding describes."""

from __future__ import annotations

import json
import re
import zipfile

import pytest
from conftest import find_wheel_file, run_cli, unavailable

from doctor.engines.refusals import rules

CONFIG = "example:seed-gqa-27b"  # 32 attention heads, 8 KV heads


def _finding(command: str) -> dict | None:
    done = run_cli("lint", "--offline", "--config", CONFIG, command, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return next((f for f in json.loads(done.stdout)["findings"] if f["id"] == "engine-refuses-value"), None)


@pytest.mark.parametrize("command, flag, cites", [
    ("vllm serve /m --gpu-memory-utilization 1.5", "--gpu-memory-utilization 1.5", "vllm/config/cache.py:215"),
    ("python -m sglang.launch_server --model-path /m --mem-fraction-static 1.7", "--mem-fraction-static 1.7",
     "kv_cache_configurator.py:3007"),
    ("vllm serve /m --tensor-parallel-size 3", "--tensor-parallel-size 3", "vllm/config/model.py:1559"),
    ("python -m sglang.launch_server --model-path /m --tp 3", "--tp-size 3", "sglang/srt/layers/linear.py:1139"),
])
def test_refused_values_are_critical_and_cite_the_check(command, flag, cites):
    finding = _finding(command)
    assert finding is not None
    assert finding["severity"] == "critical"
    assert flag in finding["what"]
    assert cites in json.dumps(finding["evidence"]) + finding["why"]


@pytest.mark.parametrize("command", ["vllm serve /m --gpu-memory-utilization 0.9 --tensor-parallel-size 4",
                                     "vllm serve /m --tensor-parallel-size 16",  # 8 KV heads replicated twice
                                     "python -m sglang.launch_server --model-path /m --mem-fraction-static 0.8"])
def test_accepted_values_are_not_flagged(command):
    assert _finding(command) is None


#: What each cited line must contain (the check itself, not its neighbourhood).
_CHECKS = {
    "vllm/config/cache.py:215": r"gpu_memory_utilization: float = Field\(.*gt=0, le=1\)",
    "vllm/config/model.py:1559": r"total_num_attention_heads % tensor_parallel_size != 0",
    "vllm/model_executor/layers/linear.py:1065": r"divide\(self\.total_num_heads, tp_size\)",
    "vllm/distributed/utils.py:53": r"assert numerator % denominator == 0",
    "sglang/srt/layers/linear.py:1139": r"divide\(self\.total_num_heads, tp_size\)",
    "sglang/srt/layers/linear.py:1144": r"divide\(self\.total_num_kv_heads, kv_tp_size\)",
    "sglang/srt/distributed/utils.py:70": r"assert numerator % denominator == 0",
    "sglang/srt/mem_cache/kv_cache_configurator.py:3007": r"\(1 - get_schedule\(\)\.mem_fraction_static\)",
    "sglang/srt/arg_groups/fields/schedule.py:27": r"mem_fraction_static: A\[",
}


@pytest.mark.parametrize("site, pattern", sorted(_CHECKS.items()))
def test_cited_lines_hold_the_check(site, pattern):
    path, line = site.rsplit(":", 1)
    engine, version = ("vllm", "0.33.0") if path.startswith("vllm/") else ("sglang", "0.5.23")
    found = find_wheel_file(engine, version)
    if found is None:
        unavailable(f"{engine} {version} wheel not in LLMDOCTOR_WHEEL_DIR (tools/fetch_test_wheels.sh)")
    with zipfile.ZipFile(found) as whl:
        text = whl.read(path).decode().splitlines()
    assert re.search(pattern, text[int(line) - 1]), text[int(line) - 1]
    # and the rules cite it: a file:line or file:first-last range that covers the line
    spans = re.findall(re.escape(path.rsplit("/", 1)[-1]) + r":(\d+)(?:-(\d+))?", json.dumps(rules()))
    assert any(int(first) <= int(line) <= int(last or first) for first, last in spans), (site, spans)
