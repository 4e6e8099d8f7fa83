"""Benchmark: ``check --targets`` over many local endpoints (default 10,000, a tenth of which hang), as a ratio
against a plain stdlib fetch of the same fleet in the same session.

Run: ``python bench/bench_fleet.py [--targets 10000] [--dead 0.1] [--timeout 2] [--repeat 5]``.

The endpoints (tests/support/multiport.py, in a process of its own so it does not share the measured
interpreter) serve scenario /version and /v1/models bodies (fixtures/scenarios) and the real vLLM /metrics
scrape of fixtures/metrics/vllm_1.prom; the hung ones accept connections and never answer. Per run,
interleaved:

* the **reference**: every endpoint's /metrics fetched by ``urllib`` from as many threads as the check uses
  in all (64 per worker process), with the same timeout: what the fleet costs to read at all;
* the **check**: the console script ``check --targets FILE --format json`` (stdout to a file), its
  wall time and the peak of the summed PSS of its whole process tree (the worker processes included, sampled
  every 50 ms from /proc; proportional set size, so a page a forked worker shares with its parent counts
  once), and its CPU time (kernel rusage of the child and its reaped workers).

Printed: min / median / max of each over the runs, and check ÷ reference.
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
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

_SERVER = r"""
import json, sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/tests"]
from support.multiport import MultiPortServer
root = Path(sys.argv[1])
scenarios = root / "fixtures" / "scenarios"
routes = {"/version": ("application/json", (scenarios / "vllm_version.json").read_bytes()),
          "/v1/models": ("application/json", (scenarios / "vllm_v1_models.json").read_bytes()),
          "/metrics": ("text/plain; version=0.0.4", (root / "fixtures" / "metrics" / "vllm_1.prom").read_bytes())}
with MultiPortServer(routes, healthy=int(sys.argv[2]), dead=int(sys.argv[3])) as srv:
    Path(sys.argv[4]).write_text(json.dumps({"healthy": srv.healthy_endpoints, "dead": srv.dead_endpoints}))
    sys.stdin.read()  # serve until the bench closes our stdin
"""


def tree_rss_kb(pid: int) -> int:
    """Summed PSS of ``pid`` and all its descendants: forked workers share their parent's pages, which a sum
    of RSS would count once per process (PSS splits each shared page between its sharers)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            rollup = Path(f"/proc/{p}/smaps_rollup").read_text()
            total += next(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
            for task in Path(f"/proc/{p}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, StopIteration):
            continue
    return total


def measured_check(targets: Path, timeout: float, out: Path) -> dict[str, float]:
    """The console script, its wall time, the peak PSS of its process tree and its CPU seconds."""
    started = time.perf_counter()
    before = os.times()
    with out.open("wb") as sink:
        child = subprocess.Popen([sys.executable, "-m", "doctor", "check", "--targets", str(targets), "--timeout",
                                  f"{timeout:g}", "--format", "json"], stdout=sink, stderr=subprocess.DEVNULL,
                                 cwd=ROOT)
        peak = 0
        while child.poll() is None:
            peak = max(peak, tree_rss_kb(child.pid))
            time.sleep(0.05)
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return {"wall": time.perf_counter() - started, "rss": peak / 1024, "cpu": cpu, "rc": child.returncode}


def reference(endpoints: list[str], timeout: float, threads: int) -> float:
    """Every endpoint's /metrics by urllib, ``threads`` at a time, each bounded by ``timeout``."""
    def fetch(endpoint: str) -> int:
        try:
            with urllib.request.urlopen(endpoint.rstrip("/") + "/metrics", timeout=timeout) as answer:
                return len(answer.read())
        except OSError:
            return 0

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        sum(pool.map(fetch, endpoints))
    return time.perf_counter() - started


def spread(values: list[float], fmt: str = ".1f") -> str:
    return f"{min(values):{fmt}} / {statistics.median(values):{fmt}} / {max(values):{fmt}}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=10_000)
    parser.add_argument("--dead", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    from doctor.commands.fleet import MAX_WORKERS, PROCESS_FROM

    dead = int(args.targets * args.dead)
    processes = len(os.sched_getaffinity(0)) if args.targets >= PROCESS_FROM else 1
    with tempfile.TemporaryDirectory() as tmp:
        ready = Path(tmp) / "endpoints.json"
        server = subprocess.Popen([sys.executable, "-c", _SERVER, str(ROOT), str(args.targets - dead), str(dead),
                                   str(ready)], stdin=subprocess.PIPE)
        try:
            while not ready.is_file() or not ready.read_text():
                if server.poll() is not None:
                    raise SystemExit("the endpoint server did not start")
                time.sleep(0.2)
            time.sleep(0.5)
            listed = json.loads(ready.read_text())
            endpoints = listed["healthy"] + listed["dead"]
            targets = Path(tmp) / "fleet.yaml"
            targets.write_text("".join(f"- {ep}\n" for ep in endpoints))
            rows = []
            for _ in range(args.repeat):
                ref = reference([f"http://{ep}" for ep in endpoints], args.timeout, MAX_WORKERS * processes)
                run = measured_check(targets, args.timeout, Path(tmp) / "fleet.json")
                assert run["rc"] in (0, 1), run
                rows.append({**run, "ref": ref})
            doc = json.loads((Path(tmp) / "fleet.json").read_text())
        finally:
            server.stdin.close()
            server.wait(timeout=30)
    col = {k: [r[k] for r in rows] for k in ("ref", "wall", "rss", "cpu")}
    print(f"{args.targets} targets ({dead} hung), timeout {args.timeout:g} s, {processes} worker process(es) × "
          f"{MAX_WORKERS} threads; {doc['summary']['reachable']} reachable; {len(rows)} runs, min / median / max:")
    print(f"  reference (urllib /metrics of every target, {MAX_WORKERS * processes} threads): {spread(col['ref'])} s")
    print(f"  check --targets (console script):  {spread(col['wall'])} s wall, {spread(col['rss'], '.0f')} MiB "
          f"peak PSS of the process tree, {spread(col['cpu'])} CPU-s")
    print(f"  check ÷ reference:                 {spread([r['wall'] / r['ref'] for r in rows], '.2f')}")
    print(f"  CPU per target: {1000 * statistics.median(col['cpu']) / args.targets:.2f} ms "
          f"(on {processes} core(s) at once)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
