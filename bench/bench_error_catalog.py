"""The error catalogs' cost: size on disk, load time (first run: gzip + JSON + word index; later runs: the
marshal copy doctor.datacache keeps), and matching speed over a real vLLM 0.32.0 start-up log.

    python bench/bench_error_catalog.py [--runs 5]

Each load is a fresh process (``python -c``), so nothing is shared between runs but the datacache directory.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "fixtures" / "live" / "vllm-0.32.0-cpu" / "plain-after" / "server.log"
LOAD = ("import time; t=time.perf_counter(); from doctor.logs import catalog as c; "
        "[c.load(n) for n in c.ENGINES]; print(time.perf_counter()-t)")
SCAN = ("import time, sys; from doctor.logs import catalog as c; [c.load(n) for n in c.ENGINES]; "
        "lines=open(sys.argv[1], errors='replace').read().splitlines()*20; t=time.perf_counter(); "
        "c.scan(lines, 'vllm', '0.32.0'); print((time.perf_counter()-t)/len(lines)*1e6)")


def _run(code: str, env: dict[str, str], *args: str) -> float:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                         check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    from doctor.logs.catalog import CATALOG_DIR, ENGINES

    for name in ENGINES:
        path = CATALOG_DIR / f"{name}.json.gz"
        print(f"{name:7s} {path.stat().st_size / 1e6:6.2f} MB  {path.relative_to(ROOT)}")
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "LLMDOCTOR_CACHE_DIR": cache}
        cold = [_run(LOAD, {**env, "LLMDOCTOR_CACHE_DIR": ""}) for _ in range(args.runs)]
        _run(LOAD, env)  # writes the marshal copy
        warm = [_run(LOAD, env) for _ in range(args.runs)]
        per_line = [_run(SCAN, env, str(LOG)) for _ in range(max(1, args.runs // 2))]
    print(f"load, all three, no datacache: median {statistics.median(cold) * 1000:.0f} ms")
    print(f"load, all three, from datacache: median {statistics.median(warm) * 1000:.0f} ms")
    print(f"scan of a real vLLM 0.32.0 start-up log: {statistics.median(per_line):.1f} µs per line")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
