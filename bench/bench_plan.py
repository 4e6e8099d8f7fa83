"""Time ``llmdoctor plan`` for every real fixture config on four GPU setups, in one process; then one cold start.

    python bench/bench_plan.py [--configs DIR] [--repeat 1]

In-process: the whole plan (config, capacity over candidate layouts, flags, both engines' commands, the
playbooks over each command) plus its JSON and text rendering, for every config × setup. The cold start is
the console script once (bytecode cached after a warm-up), the number an engineer feels at the prompt.
Also prints how the plans came out (runs / runs degraded / does not run) so a regression shows in the counts.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIGS = ROOT / "fixtures" / "configs"
SETUPS = (("2x RTX 4090", None), ("8x H200", 100), ("8x B300", 100), ("4x A100 80GB", 16))


def in_process(configs: list[str], repeat: int) -> tuple[list[float], Counter[str], list[str]]:
    sys.path.insert(0, str(ROOT))
    from doctor.errors import InputError
    from doctor.plan.planner import make_plan
    from doctor.plan.request import PlanRequest
    from doctor.render.plan import plan_text

    times: list[float] = []
    outcomes: Counter[str] = Counter()
    refused: list[str] = []
    for _ in range(repeat):
        outcomes.clear()
        refused.clear()
        start = time.perf_counter()
        for spec in configs:
            for gpu, users in SETUPS:
                try:
                    plan = make_plan(PlanRequest(config=spec, gpu=gpu, users=users))
                except InputError as exc:  # e.g. an SGLang-only gap in the KV layouts: counted, not hidden
                    outcomes["input error"] += 1
                    refused.append(f"{Path(spec).name} on {gpu}: {exc}")
                    continue
                json.dumps(plan.to_dict(), default=str)
                plan_text(plan)
                outcomes[plan.status] += 1
        times.append(time.perf_counter() - start)
    return times, outcomes, refused


def cold_start(config: str) -> float:
    script = shutil.which("llmdoctor")
    cmd = ([script] if script else [sys.executable, "-m", "doctor"]) + ["plan", config, "--gpu", "8xH200",
                                                                       "--users", "100", "--format", "json"]
    env = {**os.environ, "NO_COLOR": "1"}
    subprocess.run(cmd, capture_output=True, env=env, check=False)  # warm-up: .pyc caches
    start = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=env, check=False)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default=str(DEFAULT_CONFIGS))
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    configs = sorted(str(p) for p in Path(args.configs).glob("*.json"))
    if not configs:
        sys.exit(f"no configs in {args.configs}")
    times, outcomes, refused = in_process(configs, args.repeat)
    plans = len(configs) * len(SETUPS)
    best = min(times)
    print(f"{plans} plans ({len(configs)} configs × {len(SETUPS)} GPU setups, both engines): {best:.2f} s in one "
          f"process, {best / plans * 1000:.1f} ms per plan")
    print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    for line in refused:
        print(f"  input error: {line}")
    print(f"cold start (llmdoctor plan … --format json): {cold_start(configs[0]):.2f} s")


if __name__ == "__main__":
    main()
