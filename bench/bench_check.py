"""`llmdoctor check --endpoint` against a local replay server, side by side with a minimal stdlib script that
fetches the same URLs — the least any tool must spend to look at a server.

    python bench/bench_check.py [--runs 15] [--engine vllm|sglang]

The server replays a real /metrics scrape (../shared/fixtures/metrics, read in place; the scenario scrape when
that folder is absent) and the scenario /v1/models, /version, /server_info bodies (fixtures/scenarios). Both
sides run as fresh processes with bytecode caches warm (PYTHONDONTWRITEBYTECODE removed, as a pip install has
them). Reported: the median wall time of each, the ratio (target: at most 2x the stdlib fetch, and under
400 ms), and where llmdoctor's own time goes (one in-process run, split by phase).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
SCENARIOS = ROOT / "fixtures" / "scenarios"
REAL_METRICS = ROOT.parent / "shared" / "fixtures" / "metrics"

#: The URLs `check` reads for each engine (doctor/probes/server.py fetch order, then /metrics).
PATHS = {"vllm": ["/v1/models", "/version", "/metrics"],
         "sglang": ["/v1/models", "/server_info", "/model_info", "/metrics"]}

STDLIB_FETCH = r"""
import sys, urllib.request
from concurrent.futures import ThreadPoolExecutor
base, paths = sys.argv[1], sys.argv[2:]
def get(path):
    with urllib.request.urlopen(base + path, timeout=2) as r:
        return len(r.read())
with ThreadPoolExecutor(len(paths)) as pool:
    print(sum(pool.map(get, paths)))
"""


def routes(engine: str) -> dict:
    from support.httpserver import JSON, PROM, Response

    real = REAL_METRICS / ("vllm_1.prom" if engine == "vllm" else "sglang_1.prom")
    metrics = real if real.is_file() else SCENARIOS / "sglang_dp2_tp4_metrics.prom"
    if engine == "vllm":
        return {"/v1/models": Response(file=SCENARIOS / "vllm_v1_models.json", content_type=JSON),
                "/version": Response(file=SCENARIOS / "vllm_version.json", content_type=JSON),
                "/metrics": Response(file=metrics, content_type=PROM)}
    return {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
            "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
            "/model_info": Response(file=SCENARIOS / "sglang_model_info.json", content_type=JSON),
            "/metrics": Response(file=metrics, content_type=PROM)}


def median_ms(cmd: list[str], runs: int) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=False)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def phases(endpoint: str) -> list[tuple[str, float]]:
    """One in-process run of the check pipeline, timed by phase (imports already paid by then)."""
    from doctor.derive import derive_all
    from doctor.facts import Facts
    from doctor.playbook.engine import diagnose
    from doctor.playbook.loader import load_playbooks
    from doctor.probes.base import ProbeOptions, Target
    from doctor.probes.runner import run_probes
    from doctor.render.check import check_text  # noqa: F401 - imported as the CLI does
    from doctor.sources import OfflineInputs, gather

    out = []
    start = time.perf_counter()
    pbset = load_playbooks(())
    out.append(("load playbooks", time.perf_counter() - start))
    start = time.perf_counter()
    results = run_probes(Target.parse(endpoint), ProbeOptions(timeout_s=2))
    out.append(("probes (concurrent)", time.perf_counter() - start))
    for result in results:
        out.append((f"  {result.name} probe", result.elapsed_ms / 1000))
    start = time.perf_counter()
    live = Facts()
    for result in results:
        live.update(result.facts)
    gathered = gather(OfflineInputs(), live=live)
    derive_all(gathered.facts)
    out.append(("gather + derive", time.perf_counter() - start))
    start = time.perf_counter()
    diagnose(pbset, gathered.facts, (), unreachable=("active",))
    out.append(("playbooks", time.perf_counter() - start))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--engine", choices=sorted(PATHS), default="vllm")
    args = parser.parse_args()
    from support.httpserver import LocalServer

    with LocalServer(routes(args.engine)) as srv:
        stdlib = median_ms([sys.executable, "-c", STDLIB_FETCH, srv.url(), *PATHS[args.engine]], args.runs)
        cli = [str(Path(sys.executable).parent / "llmdoctor")]
        if not Path(cli[0]).exists():
            cli = [sys.executable, "-m", "doctor"]
        ours = median_ms([*cli, "check", "--endpoint", srv.endpoint], args.runs)
        ours_json = median_ms([*cli, "check", "--endpoint", srv.endpoint, "--format", "json"], args.runs)
        split = phases(srv.endpoint)
    print(f"{args.engine} replay server, median of {args.runs} fresh processes (bytecode cached)")
    print(f"  stdlib fetch of {', '.join(PATHS[args.engine])}: {stdlib:7.1f} ms")
    print(f"  llmdoctor check --endpoint:                    {ours:7.1f} ms  ({ours / stdlib:.2f}x)")
    print(f"  llmdoctor check --endpoint --format json:      {ours_json:7.1f} ms  ({ours_json / stdlib:.2f}x)")
    print("  where llmdoctor's time goes (in-process, after imports):")
    for name, seconds in split:
        print(f"    {name:24s} {seconds * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
