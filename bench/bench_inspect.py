"""Time ``llmdoctor inspect`` over every real fixture config, in one process and as separate processes.

    python bench/bench_inspect.py [--repeat 3] [--configs DIR]

In-process: resolve (doctor/model/resolve.py, local only) + analyze + KV layout + JSON report + text card per config (the work itself).
Separate processes: the real console script, cold start included — the number an on-call engineer
feels. Subprocesses run with bytecode caching on (as a pip-installed package has it: pip compiles
.pyc files at install time); one warm-up run writes the caches first. For reference the script also
times ``python3 -c pass`` and ``llmdoctor --help`` (the CLI's floor, before any model code), and
lists the slowest imports on the inspect path from ``python -X importtime``.
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
DEFAULT_CONFIGS = ROOT / "fixtures" / "configs"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    return env


def _cli() -> list[str]:
    script = shutil.which("llmdoctor")
    return [script] if script else [sys.executable, "-m", "doctor"]


def in_process(configs: list[str], repeat: int) -> list[float]:
    sys.path.insert(0, str(ROOT))
    from doctor.commands.inspect import build_report
    from doctor.model.resolve import model_card
    from doctor.render.inspect import render_text

    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        for spec in configs:
            card = model_card(spec, offline=True).card
            render_text(card, build_report(card))
        times.append(time.perf_counter() - start)
    return times


def per_process(cmd: list[str], runs: int) -> list[float]:
    env = _env()
    subprocess.run(cmd, capture_output=True, env=env, check=False)  # warm-up: writes .pyc caches
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env, check=False)
        times.append(time.perf_counter() - start)
    return times


def slowest_imports(config: str, top: int = 8) -> list[tuple[int, str]]:
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", "inspect", config],
                         capture_output=True, text=True, env=_env(), cwd=ROOT).stderr
    rows = []
    for line in err.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        if m and len(m.group(2)) <= 3:  # top-level imports only
            rows.append((int(m.group(1)), m.group(3)))
    return sorted(rows, reverse=True)[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--configs", type=Path, default=DEFAULT_CONFIGS)
    args = parser.parse_args()
    if args.configs.is_dir():
        configs = sorted(str(p) for p in args.configs.glob("*.json"))
    else:
        print(f"{args.configs} not found: using the bundled examples instead")
        configs = [f"example:{p.stem}" for p in sorted((ROOT / "doctor" / "examples").glob("*.json"))]

    ms = lambda seconds: f"{seconds * 1000:7.1f} ms"  # noqa: E731
    batch = in_process(configs, args.repeat)
    print(f"in one process, {len(configs)} configs: best {ms(min(batch))} "
          f"({ms(min(batch) / len(configs))} per config)")

    cli = _cli()
    floor = per_process([sys.executable, "-c", "pass"], 10)
    helps = per_process([*cli, "--help"], 10)
    print(f"python -c pass:          median {ms(statistics.median(floor))}")
    print(f"llmdoctor --help:        median {ms(statistics.median(helps))}")
    per_config = []
    for spec in configs:
        runs = per_process([*cli, "inspect", spec], args.repeat)
        per_config.append((statistics.median(runs), Path(spec).stem))
    values = [t for t, _ in per_config]
    print(f"llmdoctor inspect, one process per config ({len(configs)} configs × {args.repeat}): "
          f"median {ms(statistics.median(values))}, max {ms(max(values))} ({max(per_config)[1]})")
    print("slowest top-level imports on the inspect path (cumulative):")
    for micros, name in slowest_imports(configs[0]):
        print(f"  {micros / 1000:7.1f} ms  {name}")


if __name__ == "__main__":
    main()
