"""`llmdoctor check --endpoint` against a local replay server, side by side with a minimal stdlib script that
fetches the same URLs — the least any tool must spend to look at a server.

    python bench/bench_check.py [--runs 15] [--engine vllm|sglang]

The server is what `check` meets on an engine's host: a process started as the engine is
(``/usr/bin/python3 …/vllm serve /models/Qwen3-32B -tp 2 …`` in /proc/PID/cmdline, through a script named
``vllm``; tests/support/fake_launch.py), listening on the port and replaying a real /metrics scrape
(fixtures/metrics; the scenario scrape when that folder is absent) and the scenario
/v1/models, /version, /server_info bodies (fixtures/scenarios). So the process probe finds it and the launch
command is parsed and linted, as on a real host. Both sides run as fresh processes with bytecode caches warm
(PYTHONDONTWRITEBYTECODE removed, as a pip install has them). Reported: the median wall time of each, the
ratio (target: at most 2x the stdlib fetch, and under 400 ms), and where llmdoctor's own time goes (one
in-process run, split by phase).
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
SCENARIOS = ROOT / "fixtures" / "scenarios"
REAL_METRICS = ROOT / "fixtures" / "metrics"

#: The URLs `check` reads for each engine (doctor/probes/server.py fetch order, then /metrics). vLLM's
#: /server_info answers only in dev mode: a 404 here, as from most real servers, but a request all the same.
PATHS = {"vllm": ["/v1/models", "/version", "/server_info?config_format=json", "/metrics"],
         "sglang": ["/v1/models", "/server_info", "/model_info", "/metrics"]}

STDLIB_FETCH = r"""
import sys, urllib.error, urllib.request
from concurrent.futures import ThreadPoolExecutor
base, paths = sys.argv[1], sys.argv[2:]
def get(path):
    try:
        with urllib.request.urlopen(base + path, timeout=2) as r:
            return len(r.read())
    except urllib.error.HTTPError as e:
        return len(e.read())
with ThreadPoolExecutor(len(paths)) as pool:
    print(sum(pool.map(get, paths)))
"""


#: How each engine is started on the bench's host (argv after the script named for the engine).
LAUNCH = {"vllm": ["serve", "/models/Qwen3-32B", "--served-model-name", "qwen3-32b", "--tensor-parallel-size", "2",
                   "--max-model-len", "32768", "--gpu-memory-utilization", "0.9", "--host", "127.0.0.1"],
          "sglang": ["serve", "--model-path", "deepseek-ai/DeepSeek-V3", "--tp-size", "8", "--dp-size", "8",
                     "--enable-dp-attention", "--ep-size", "8", "--enable-metrics", "--host", "127.0.0.1"]}


def routes(engine: str) -> dict[str, list[str]]:
    """path -> [content type, file], as tests/support/fake_launch.py reads FAKE_LAUNCH_ROUTES."""
    json_type, prom_type = "application/json", "text/plain; version=0.0.4; charset=utf-8"
    real = REAL_METRICS / ("vllm_1.prom" if engine == "vllm" else "sglang_1.prom")
    metrics = real if real.is_file() else SCENARIOS / "sglang_dp2_tp4_metrics.prom"
    bodies = {"vllm": {"/v1/models": "vllm_v1_models.json", "/version": "vllm_version.json"},
              "sglang": {"/v1/models": "sglang_v1_models.json", "/server_info": "sglang_server_info.json",
                         "/model_info": "sglang_model_info.json"}}[engine]
    table = {path: [json_type, str(SCENARIOS / name)] for path, name in bodies.items()}
    table["/metrics"] = [prom_type, str(metrics)]
    return table


@contextmanager
def engine_process(engine: str) -> Iterator[str]:
    """Start the engine-shaped replay server; yield its endpoint (127.0.0.1:PORT)."""
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "routes.json"
        table.write_text(json.dumps(routes(engine)))
        script = Path(tmp) / engine  # a console script, as pip writes it: its name is the engine's
        script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
                          "from support.fake_launch import main\nmain(sys.argv[1:])\n")
        script.chmod(0o755)
        child = subprocess.Popen([str(script), *LAUNCH[engine], "--port", "0"], stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "FAKE_LAUNCH_ROUTES": str(table)})
        try:
            line = child.stdout.readline() if child.stdout else ""
            if not line.startswith("LISTENING "):
                raise SystemExit(f"the replay server did not start: {line!r}")
            yield f"127.0.0.1:{line.split()[1]}"
        finally:
            child.terminate()
            child.wait(timeout=10)


def median_ms(cmd: list[str], runs: int) -> float:
    return spread_ms(cmd, runs)[1]


def spread_ms(cmd: list[str], runs: int) -> tuple[float, float, float]:
    """(min, median, max) wall milliseconds of ``runs`` fresh processes of ``cmd`` (after one warm-up run)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=False)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=False)
        times.append(time.perf_counter() - start)
    return min(times) * 1000, statistics.median(times) * 1000, max(times) * 1000


def phases(endpoint: str) -> list[tuple[str, float]]:
    """One in-process run of the check pipeline, timed by phase (imports already paid by then)."""
    from doctor.derive import derive_all
    from doctor.facts import Facts
    from doctor.playbook.engine import diagnose
    from doctor.playbook.loader import load_playbooks
    from doctor.probes.base import ProbeOptions, Target
    from doctor.probes.runner import run_probes
    from doctor.render.check import check_text  # noqa: F401 - imported as the CLI does
    from doctor.sources.offline import OfflineInputs, gather

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

    with engine_process(args.engine) as endpoint:
        stdlib = median_ms([sys.executable, "-c", STDLIB_FETCH, f"http://{endpoint}", *PATHS[args.engine]], args.runs)
        cli = [str(Path(sys.executable).parent / "llmdoctor")]
        if not Path(cli[0]).exists():
            cli = [sys.executable, "-m", "doctor"]
        low, ours, high = spread_ms([*cli, "check", "--endpoint", endpoint], args.runs)
        ours_json = median_ms([*cli, "check", "--endpoint", endpoint, "--format", "json"], args.runs)
        split = phases(endpoint)
    print(f"{args.engine} replay server (an engine-shaped process), median of {args.runs} fresh processes (bytecode cached)")
    print(f"  stdlib fetch of {', '.join(PATHS[args.engine])}: {stdlib:7.1f} ms")
    print(f"  llmdoctor check --endpoint:                    {ours:7.1f} ms  ({ours / stdlib:.2f}x; "
          f"min {low:.1f}, max {high:.1f})")
    print(f"  llmdoctor check --endpoint --format json:      {ours_json:7.1f} ms  ({ours_json / stdlib:.2f}x)")
    print("  where llmdoctor's time goes (in-process, after imports):")
    for name, seconds in split:
        print(f"    {name:24s} {seconds * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
