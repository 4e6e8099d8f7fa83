"""Start-up cost of the CLI, side by side with the interpreter's own, and what the fast paths import.

    python bench/bench_startup.py [--runs 15]

Each command runs as a fresh process, ``--runs`` times after one warm-up, and the median wall time is shown next
to ``python3 -c pass`` (the floor no Python CLI can beat). Bytecode caching is on, as a pip install has it
(pip compiles .pyc files at install time): this environment sets PYTHONDONTWRITEBYTECODE=1, which the script
removes for the children, and the warm-up writes the caches. Then ``python -X importtime`` over the check,
inspect and lint paths: the slowest top-level imports, and whether any heavy module is loaded (none may be:
tests/test_startup.py asserts it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METRICS = ROOT / "fixtures" / "metrics" / "vllm_1.prom"
SCENARIO_METRICS = ROOT / "fixtures" / "scenarios" / "sglang_dp2_tp4_metrics.prom"
LINT = "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --enable-prefix-caching --max-model-len 32768"
#: Never on the inspect/lint/check paths: each costs 50-500 ms to import and none is needed there.
HEAVY = ("pandas", "numpy", "matplotlib", "prometheus_api_client", "requests", "jsonschema", "prometheus_client",
         "urllib3", "scipy", "huggingface_hub")


def env() -> dict[str, str]:
    """HF_HUB_OFFLINE=1: LINT's model is a repo id, and what is timed here is the local path (the model unknown
    when it is not in the HF cache); resolution from the Hub is bench/bench_resolve.py's."""
    out = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out["NO_COLOR"] = "1"
    out["HF_HUB_OFFLINE"] = "1"
    return out


def cli() -> list[str]:
    script = shutil.which("llmdoctor") or str(Path(sys.executable).parent / "llmdoctor")
    return [script] if Path(script).exists() else [sys.executable, "-m", "doctor"]


def median_ms(cmd: list[str], runs: int) -> float:
    subprocess.run(cmd, capture_output=True, env=env(), cwd=ROOT, check=False)  # warm-up: writes .pyc caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env(), cwd=ROOT, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def import_profile(args: list[str]) -> tuple[list[tuple[float, str]], list[str], int]:
    """(slowest top-level imports in ms, heavy modules imported, number of modules imported)."""
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", *args], capture_output=True,
                         text=True, env=env(), cwd=ROOT, check=False).stderr
    rows, names = [], []
    for line in err.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|( *)(\S+)", line)
        if match:
            names.append(match.group(3))
            if len(match.group(2)) == 1:  # imported by the program itself, not by another module
                rows.append((int(match.group(1)) / 1000, match.group(3)))
    heavy = sorted({n.split(".")[0] for n in names} & set(HEAVY))
    return sorted(rows, reverse=True)[:8], heavy, len(names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    metrics = METRICS if METRICS.is_file() else SCENARIO_METRICS
    floor = median_ms([sys.executable, "-c", "pass"], args.runs)
    rows = [("python3 -c pass", floor)]
    commands = {"llmdoctor --version": ["--version"],
                "llmdoctor inspect example:seed-gqa-27b": ["inspect", "example:seed-gqa-27b"],
                f'llmdoctor lint "{LINT[:28]}…"': ["lint", LINT],
                f"llmdoctor check --metrics {metrics.name}": ["check", "--metrics", str(metrics)]}
    for label, cmd in commands.items():
        rows.append((label, median_ms([*cli(), *cmd], args.runs)))
    print(f"median of {args.runs} fresh processes, bytecode cached (PYTHONDONTWRITEBYTECODE unset), "
          f"python {sys.version.split()[0]}")
    for label, ms in rows:
        print(f"  {label:48s} {ms:7.1f} ms  ({ms / floor:4.1f}x python -c pass, +{ms - floor:6.1f} ms)")
    for label, cmd in (("check --metrics", commands[f"llmdoctor check --metrics {metrics.name}"]),
                       ("inspect", ["inspect", "example:seed-gqa-27b"]), ("lint", ["lint", LINT])):
        slowest, heavy, count = import_profile(cmd)
        print(f"\nimports on the {label} path: {count} modules; heavy ones loaded: {', '.join(heavy) or 'none'}")
        for ms, name in slowest:
            print(f"  {ms:6.1f} ms  {name}")


if __name__ == "__main__":
    main()
