"""Regenerate the bundled demo snapshot: ``python tools/make_demo_snapshot.py``.

The snapshot (doctor/examples/snapshots/vllm-kv-full.json) is a SCENARIO, not a capture of a real deployment:
this script serves scenario bodies written here (vLLM 0.33.0 shapes: /version, /v1/models, and a /metrics
exposition using the metric names of the vLLM 0.33.0 catalog) on 127.0.0.1, runs llmdoctor's own server and
metrics probes against it, and records the result with offline inputs (a launch command and the bundled
`seed-mla-moe` scenario config) exactly as `llmdoctor snapshot` would. It lets a newcomer run
`llmdoctor check --snapshot example:vllm-kv-full` with no server, no GPU and no network.

Deterministic: the server's ephemeral port, the recording time and the measured timings are pinned to the
scenario's own values (:func:`pin`), so running it twice writes the same bytes and a diff of the committed file
shows only real changes (tests/test_demo_snapshot.py runs it twice). ``--output PATH`` writes elsewhere.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

OUT = ROOT / "doctor" / "examples" / "snapshots" / "vllm-kv-full.json"
NOTE = ("Scenario, not a real capture: recorded by tools/make_demo_snapshot.py from scenario bodies (vLLM 0.33.0 "
        "shapes) served on 127.0.0.1 — a DeepSeek-V3-class model on 8×H200 at TP8 without expert parallelism, "
        "its KV cache full and requests preempted.")
COMMAND = ("vllm serve deepseek-ai/DeepSeek-V3 --tensor-parallel-size 8 --max-model-len 32768 "
           "--enable-auto-tool-choice --tool-call-parser deepseek_v3")
LABELS = 'engine="0",model_name="deepseek-ai/DeepSeek-V3"'
#: The scenario's address, recording time and timings (ms), in place of whatever this run measured.
PORT = 36355
CREATED = "2026-11-30T01:47:53+00:00"
TIMINGS_MS = {"server": 46.756, "metrics": 79.833, "/v1/models": 13.564, "/version": 24.4,
              "/server_info?config_format=json": 8.243, "/metrics": 79.5}
DEFAULT_MS = 10.0


def _histogram(name: str, buckets: list[tuple[str, int]], total: float) -> str:
    lines = [f"# TYPE {name} histogram"]
    lines += [f'{name}_bucket{{{LABELS},le="{le}"}} {n}' for le, n in buckets]
    lines += [f"{name}_count{{{LABELS}}} {buckets[-1][1]}", f"{name}_sum{{{LABELS}}} {total}"]
    return "\n".join(lines)


METRICS = "\n".join([
    "# TYPE vllm:kv_cache_usage_perc gauge", f"vllm:kv_cache_usage_perc{{{LABELS}}} 0.987",
    "# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{{{LABELS}}} 41",
    "# TYPE vllm:num_requests_waiting gauge", f"vllm:num_requests_waiting{{{LABELS}}} 58",
    "# TYPE vllm:num_preemptions_total counter", f"vllm:num_preemptions_total{{{LABELS}}} 1873",
    "# TYPE vllm:prefix_cache_queries_total counter", f"vllm:prefix_cache_queries_total{{{LABELS}}} 5.2e+07",
    "# TYPE vllm:prefix_cache_hits_total counter", f"vllm:prefix_cache_hits_total{{{LABELS}}} 1.9e+07",
    "# TYPE vllm:prompt_tokens_total counter", f"vllm:prompt_tokens_total{{{LABELS}}} 5.2e+07",
    "# TYPE vllm:generation_tokens_total counter", f"vllm:generation_tokens_total{{{LABELS}}} 9.1e+06",
    "# TYPE vllm:cache_config_info gauge",
    'vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",'
    'gpu_memory_utilization="0.92",num_gpu_blocks="29384",num_cpu_blocks="0"} 1.0',
    _histogram("vllm:time_to_first_token_seconds",
               [("0.1", 120), ("0.5", 900), ("1.0", 1400), ("5.0", 2600), ("20.0", 3100), ("+Inf", 3120)], 9800.0),
    _histogram("vllm:inter_token_latency_seconds",
               [("0.01", 1000), ("0.025", 70000), ("0.05", 160000), ("0.1", 181000), ("+Inf", 182000)], 6100.0),
]) + "\n"
VERSION = {"version": "0.33.0"}
MODELS = {"object": "list", "data": [{"id": "deepseek-ai/DeepSeek-V3", "object": "model", "created": 1790000000,
                                      "owned_by": "vllm", "root": "deepseek-ai/DeepSeek-V3", "parent": None,
                                      "max_model_len": 32768, "permission": []}]}


def pin(snap: dict[str, Any], port: int) -> dict[str, Any]:
    """The snapshot with this run's port, time and timings replaced by the scenario's (see the module doc)."""
    text = re.sub(rf"127\.0\.0\.1:{port}\b", f"127.0.0.1:{PORT}", json.dumps(snap))
    pinned = json.loads(text)
    pinned["created"] = CREATED
    pinned["target"]["port"] = PORT

    def timings(node: Any, name: str) -> None:
        if isinstance(node, dict):
            if "elapsed_ms" in node:
                node["elapsed_ms"] = TIMINGS_MS.get(name, DEFAULT_MS)
            if "at_s" in node:  # one scrape, taken at once
                node["at_s"] = 0.0
            for key, value in node.items():
                timings(value, key if isinstance(value, dict) else name)
        elif isinstance(node, list):
            for item in node:
                timings(item, name)

    for name, probe in pinned["probes"].items():
        timings(probe, name)
    return pinned


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the bundled demo snapshot (a scenario).")
    parser.add_argument("--output", type=Path, default=OUT, help=f"where to write it (default: {OUT.relative_to(ROOT)})")
    out = parser.parse_args(argv).output

    from support.httpserver import JSON, PROM, LocalServer, Response

    from doctor.commands.check import snapshot_inputs
    from doctor.probes.base import ProbeOptions, Target
    from doctor.probes.runner import run_probes
    from doctor.sources.offline import OfflineInputs
    from doctor.sources.snapshot import build_snapshot, write_snapshot

    routes = {"/version": Response(body=json.dumps(VERSION), content_type=JSON),
              "/v1/models": Response(body=json.dumps(MODELS), content_type=JSON),
              "/metrics": Response(body=METRICS, content_type=PROM)}
    with LocalServer(routes) as srv:
        target = Target.parse(srv.endpoint)
        results = run_probes(target, ProbeOptions(timeout_s=5.0), names=["server", "metrics"])
    inputs = snapshot_inputs(OfflineInputs(command=COMMAND, config="example:seed-mla-moe", gpu="H200:8"))
    out.parent.mkdir(parents=True, exist_ok=True)
    write_snapshot(out, pin(build_snapshot(target, results, {"inputs": inputs, "_scenario": NOTE}), target.port))
    print(f"wrote {out} ({', '.join(f'{r.name} ok' if r.ok else r.name for r in results)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
