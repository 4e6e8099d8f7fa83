"""Time model resolution from the Hub, separately from `inspect` on a local config (bench/bench_inspect.py).

    python bench/bench_resolve.py [--runs 5] [--shards 5]

Starts the local Hub stand-in (tests/support/hubserver.py: the routes huggingface_hub calls, on 127.0.0.1)
with the real Qwen3-8B config from fixtures/configs and header-only safetensors shards (a scenario),
then runs `llmdoctor inspect Qwen/Qwen3-8B` as separate processes: cold (an empty HF cache each run: config,
side files and every shard header fetched), warm (config in the HF cache, headers fetched again), offline
(the HF cache only), and the same config as a local file. Loopback has no latency: on the real Hub add
the round trips (about 8 requests + 2 per shard, the shard headers in parallel).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.hubserver import HubFile, HubServer, config_repo, dense_tensors, sharded  # noqa: E402

CONFIG = ROOT / "fixtures" / "configs" / "Qwen__Qwen3-8B.json"


def run(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, env=env,
                            cwd=ROOT)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {result.returncode}: {result.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--shards", type=int, default=5)
    opts = parser.parse_args()
    config = json.loads(CONFIG.read_text())
    repo = config_repo(CONFIG, extra={**sharded(dense_tensors(config, "BF16"), opts.shards),
                                      "generation_config.json": HubFile(data=b'{"temperature": 0.6}'),
                                      "tokenizer_config.json": HubFile(data=b'{"chat_template": "x"}')})
    base = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_TOKEN", "PYTHONDONTWRITEBYTECODE")}
    with HubServer({"Qwen/Qwen3-8B": repo}) as hub, tempfile.TemporaryDirectory() as tmp:
        env = {**base, "NO_COLOR": "1", "HF_ENDPOINT": hub.endpoint, "HF_HOME": f"{tmp}/home"}
        rows: dict[str, list[float]] = {}
        run(["inspect", str(CONFIG)], env)  # warm-up: bytecode caches
        for i in range(opts.runs):
            cache = f"{tmp}/cache{i}"
            before = len(hub.requests)
            rows.setdefault("Hub, cold (empty HF cache)", []).append(run(["inspect", "Qwen/Qwen3-8B"],
                                                                         {**env, "HF_HUB_CACHE": cache}))
            requests = len(hub.requests) - before
            rows.setdefault("Hub, config cached, headers fetched", []).append(
                run(["inspect", "Qwen/Qwen3-8B"], {**env, "HF_HUB_CACHE": cache}))
            rows.setdefault("HF cache only (--offline)", []).append(
                run(["inspect", "Qwen/Qwen3-8B", "--offline"], {**env, "HF_HUB_CACHE": cache}))
            rows.setdefault("local config.json (no resolution)", []).append(run(["inspect", str(CONFIG)], env))
        assert not hub.weight_downloads()
    print(f"llmdoctor inspect Qwen/Qwen3-8B against the local Hub stand-in ({opts.shards} shards, "
          f"{requests} requests cold), {opts.runs} runs each:")
    for label, times in rows.items():
        print(f"  {label:<40} median {statistics.median(times) * 1000:7.1f} ms   min {min(times) * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
