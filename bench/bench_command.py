"""Benchmark: parse + launch facts for 1,000 launch commands in one process.

Run: ``python bench/bench_command.py`` (prints start-up and per-command times; the aim is under
2 ms per command after start-up). The commands are scenario variations built here from a few
seed-style launches (flag order, quoting, ``=`` vs space, continuations, env prefixes, versions),
not captures of real deployments.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

BASES = [
    ("sglang", ["python3 -m sglang.launch_server"],
     [["--model-path", "Qwen/Qwen3.6-27B"], ["--tp-size", "2"], ["--quantization", "fp8"],
      ["--kv-cache-dtype", "fp8_e5m2"], ["--chunked-prefill-size", "4096"], ["--enable-metrics"],
      ["--mem-fraction-static", "0.8"], ["--tool-call-parser", "qwen25"]]),
    ("vllm", ["vllm serve deepseek-ai/DeepSeek-V3"],
     [["--tensor-parallel-size", "8"], ["--dtype", "fp8"], ["--kv-cache-dtype", "fp8"],
      ["--max-model-len", "131072"], ["--gpu-memory-utilization", "0.92"], ["--enable-expert-parallel"],
      ["--speculative-config", '{"method":"qwen3_next_mtp","num_speculative_tokens":1}'], ["--tp-size", "4"]]),
]
VERSIONS = {"sglang": [None, "0.4.10", "0.5.4", "0.5.23"], "vllm": [None, "0.10.0", "0.13.0", "0.33.0"]}


def variants(n: int, seed: int = 7) -> list[tuple[str, str | None]]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        engine, head, flags = BASES[i % len(BASES)]
        flags = flags[:]
        rng.shuffle(flags)
        words = []
        for group in flags:
            if len(group) == 2 and rng.random() < 0.5:
                words.append(f"{group[0]}='{group[1]}'")
            else:
                words.append(" ".join([group[0]] + [f"'{w}'" if "{" in w else w for w in group[1:]]))
        sep = " \\\n  " if rng.random() < 0.5 else " "
        env = "VLLM_BATCH_INVARIANT=1 " if rng.random() < 0.3 else ""
        out.append((env + head[0] + sep + sep.join(words), rng.choice(VERSIONS[engine])))
    return out


def main() -> int:
    t0 = time.perf_counter()
    from doctor.engines.command import parse_command
    from doctor.engines.launch_facts import launch_facts

    commands = variants(1000)
    parse_command(commands[0][0], engine_version=commands[0][1])  # warm: catalogs, semantics
    t1 = time.perf_counter()
    for text, version in commands:
        launch_facts(parse_command(text, engine_version=version))
    t2 = time.perf_counter()
    per = (t2 - t1) / len(commands) * 1000
    print(f"start-up (imports + first parse): {(t1 - t0) * 1000:.0f} ms")
    print(f"{len(commands)} commands: {(t2 - t1):.2f} s, {per:.2f} ms per command (aim < 2 ms)")
    return 0 if per < 2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
