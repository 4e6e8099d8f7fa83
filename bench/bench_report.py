"""Time ``llmdoctor report`` over a fleet: 24 h at 60 s steps for 100 instances (synthetic backfill).

    python bench/bench_report.py [--copies 20] [--hours 24] [--step 60] [--repeat 3] [--keep DIR]

The fleet is fixtures/prometheus/scenarios.py repeated ``--copies`` times on new hosts (5 deployments each:
SCENARIO data, not real captures), backfilled with ``promtool tsdb create-blocks-from openmetrics`` into a
cache directory (kept between runs: generating and backfilling 100 instances takes about a minute, and is not
what is measured), then served by a private Prometheus on 127.0.0.1. Measured: the whole report in-process
(queries, diagnosis, document, HTML) and the real console script as a subprocess (start-up included), with
the number of PromQL queries issued. Needs prometheus and promtool (Debian: apt-get install prometheus).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def prepare(cache: Path, copies: int, hours: float, step: int) -> int:
    """Backfilled TSDB for the fleet in ``cache`` (reused when its parameters match); returns its end time."""
    from support.prometheus import backfill, scenarios

    meta = cache / "meta.json"
    wanted = {"copies": copies, "hours": hours, "step": step}
    if meta.is_file():
        saved = json.loads(meta.read_text())
        if {k: saved.get(k) for k in wanted} == wanted and (cache / "data").is_dir():
            return int(saved["end"])
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    end = int(time.time()) // step * step - step
    started = time.perf_counter()
    text = scenarios().history(end, hours=hours, step=step, copies=copies)
    generated = time.perf_counter() - started
    backfill(text, cache)
    print(f"prepared {copies * len(scenarios().SCENARIOS)} instances, {len(text) / 1e6:.0f} MB of OpenMetrics: "
          f"generated in {generated:.1f} s, backfilled in {time.perf_counter() - started - generated:.1f} s")
    meta.write_text(json.dumps({**wanted, "end": end}))
    return end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=20, help="copies of the 5 scenarios (20 → 100 instances)")
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--step", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=Path(tempfile.gettempdir()) / "llmdoctor-bench-report")
    args = parser.parse_args()

    from support.prometheus import PrivatePrometheus

    from doctor.render.report_html import html_report
    from doctor.report.pipeline import ReportOptions, run

    end = prepare(args.keep, args.copies, args.hours, args.step)
    with tempfile.TemporaryDirectory() as work, PrivatePrometheus(Path(work), data=args.keep / "data") as prom:
        options = ReportOptions(prometheus=prom.url, since=f"{args.hours:g}h", step=f"{args.step}s", until=str(end))
        run(options)  # warm-up: Prometheus's first touch of the blocks pages them in
        times, doc = [], {}
        for _ in range(args.repeat):
            started = time.perf_counter()
            doc, _findings = run(options)
            html = html_report(doc)
            times.append(time.perf_counter() - started)
        cli = [sys.executable, "-m", "doctor", "report", "--prometheus", prom.url, "--since", f"{args.hours:g}h",
               "--step", f"{args.step}s", "--until", str(end), "-o", str(Path(work) / "report.html")]
        started = time.perf_counter()
        result = subprocess.run(cli, capture_output=True, text=True, cwd=ROOT)
        cli_s = time.perf_counter() - started
    q = doc["queries"]
    print(f"instances: {doc['summary']['instances']}  findings: {doc['summary']['findings']}")
    print(f"PromQL queries: {q['count']} ({q['failed']} failed), {q['seconds']:.2f} s of querying")
    print(f"in-process report + HTML: median {statistics.median(times):.2f} s, best {min(times):.2f} s "
          f"({len(html) / 1e6:.1f} MB HTML)")
    print(f"console script (cold start, -o report.html): {cli_s:.2f} s, exit {result.returncode}")
    slow = sorted(q["list"], key=lambda item: -item["seconds"])[:5]
    print("slowest queries: " + ", ".join(f"{item['label']} {item['seconds']:.2f} s" for item in slow))


if __name__ == "__main__":
    main()
