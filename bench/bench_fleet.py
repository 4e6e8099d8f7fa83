"""Benchmark: `check --targets` over 200 local endpoints, 10% of which never answer.

Run: ``python bench/bench_fleet.py [--targets 200] [--dead 0.1] [--timeout 2]``. The healthy endpoints serve
scenario /version and /v1/models bodies (fixtures/scenarios) and, from fixtures/, the real vLLM
/metrics scrape (read in place); the dead ones accept connections and never answer. The aim (issue: fleet) is
about one timeout plus a second, not one timeout per dead endpoint.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", type=int, default=200)
    parser.add_argument("--dead", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args()

    from support.multiport import MultiPortServer

    from doctor.commands.fleet import load_targets, run_fleet

    scenarios = ROOT / "fixtures" / "scenarios"
    metrics = ROOT / "fixtures" / "metrics" / "vllm_1.prom"
    routes = {"/version": ("application/json", (scenarios / "vllm_version.json").read_bytes()),
              "/v1/models": ("application/json", (scenarios / "vllm_v1_models.json").read_bytes())}
    if metrics.is_file():
        routes["/metrics"] = ("text/plain; version=0.0.4", metrics.read_bytes())
    dead = int(args.targets * args.dead)
    with MultiPortServer(routes, healthy=args.targets - dead, dead=dead) as srv, \
            tempfile.TemporaryDirectory() as tmp:
        targets = Path(tmp) / "fleet.yaml"
        targets.write_text("".join(f"- {ep}\n" for ep in srv.healthy_endpoints + srv.dead_endpoints))
        fds = len(os.listdir("/proc/self/fd"))
        start = time.perf_counter()
        fleet = run_fleet(load_targets(str(targets)), timeout_s=args.timeout)
        elapsed = time.perf_counter() - start
        fds_after = len(os.listdir("/proc/self/fd"))
    reachable = sum(r.reachable for r in fleet.results)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{args.targets} targets ({dead} dead), timeout {args.timeout} s: {elapsed:.2f} s, "
          f"{reachable} reachable, max RSS {rss:.0f} MiB, fds {fds} -> {fds_after}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
