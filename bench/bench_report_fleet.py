"""``llmdoctor report`` over large fleets from a real Prometheus: wall time, peak RSS and CPU, as ratios against a
reference run in the same session, at one or more fleet sizes (cost per instance).

    python bench/bench_report_fleet.py --data /tmp/fleet-1000 [--data /tmp/fleet-10000 ...] [--repeat 5]
    python bench/bench_report_fleet.py --data /tmp/fleet-1000 --build 1000 --hours 24 --step 60
    python bench/bench_report_fleet.py --data /tmp/fleet-10000 --record     # with llmdoctor rules --report

Each ``--data`` directory holds a fleet's SCENARIO history as Prometheus TSDB blocks (``DIR/data``), written by
bench/fleet_history.py (``--build N`` writes it first when the directory is empty); its fleet size, window and
end are read back from the blocks themselves. A private Prometheus (Debian's package) serves each on
127.0.0.1 and is left to finish compacting before anything is measured.

Per run, interleaved: the **reference**, one stdlib HTTP request for the report's own most basic fleet-wide
query (``metrics.kv_usage``: every instance's 95th percentile of KV usage over the window) with its JSON
parsed, i.e. what the store costs to read one fact of the whole fleet, then the **report** as the console
script would run it (a child process, start-up included, ``-o report.json``), with its own peak RSS (kernel
rusage, tests/support/measure.py) and the CPU seconds of both the report and Prometheus. Printed: min /
median / max over the runs of each figure, the report ÷ reference ratio, and whether every deployment kind got
the cause its scenario was written for. Imports nothing of the test suite but the pytest-free helpers
(tests/support/tsdb.py, tests/support/measure.py): it runs from a plain install.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]


def history_of(keep: Path) -> tuple[int, float]:
    """(end, hours) of the blocks under ``keep/data``: the last sample's time and the span they cover."""
    metas = [json.loads((block / "meta.json").read_text()) for block in (keep / "data").iterdir()
             if (block / "meta.json").is_file()]
    if not metas:
        raise SystemExit(f"{keep}/data: no TSDB blocks (write them with --build N or bench/fleet_history.py)")
    end = (max(m["maxTime"] for m in metas) - 1) // 1000
    start = min(m["minTime"] for m in metas) // 1000
    return int(end), round((end - start) / 3600)


def _settle(data: Path, quiet_s: float = 20, limit_s: float = 900) -> None:
    """Wait until Prometheus stops compacting (the set of block directories is unchanged for ``quiet_s``)."""
    def blocks() -> frozenset[str]:
        return frozenset(p.name for p in data.iterdir() if p.is_dir() and len(p.name) == 26)

    last, since, deadline = blocks(), time.monotonic(), time.monotonic() + limit_s
    while time.monotonic() - since < quiet_s and time.monotonic() < deadline:
        time.sleep(2)
        now = blocks()
        if now != last:
            last, since = now, time.monotonic()


def reference(url: str, end: int, hours: float) -> float:
    """Seconds for one stdlib request of the report's metrics.kv_usage query over the whole fleet, parsed."""
    from doctor.report.promql import Params, load_catalog

    catalog = load_catalog()
    since = hours * 3600
    query = catalog.chain("metrics.kv_usage", Params(range=since, lookback=since, p95_over=since), catalog.inline)
    started = time.perf_counter()
    with urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": query, "time": end}),
                                timeout=300) as answer:
        assert len(json.loads(answer.read())["data"]["result"]) > 0
    return time.perf_counter() - started


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kind(instance: str) -> str:
    from fleet_history import KINDS

    try:
        return KINDS[int(instance.split(":")[0].rsplit(".", 1)[1]) - 1]
    except (IndexError, ValueError):
        return "?"


def spread(values: list[float], fmt: str = ".1f") -> str:
    return f"{min(values):{fmt}} / {statistics.median(values):{fmt}} / {max(values):{fmt}}"


def record(keep: Path, every: str = "10m") -> None:
    """Add to ``keep/data`` what ``llmdoctor rules --report`` would have recorded over the history's last half
    hour (``promtool tsdb create-blocks-from rules``): a store that has run the report's recording rules."""
    from support.tsdb import PrivatePrometheus, backfill_rules

    end, _ = history_of(keep)
    rules = keep / "llmdoctor-report-rules.yml"
    subprocess.run([sys.executable, "-m", "doctor", "rules", "--report", "--every", every, "-o", str(rules)],
                   check=True, cwd=ROOT)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work, PrivatePrometheus(Path(work), data=keep / "data") as prom:
        # up to the history's end (exclusive): the blocks' end stays the history's, which the runs read back
        blocks = backfill_rules(rules, prom.url, end - 1800, end, keep / "data", every)
    print(f"{keep}: {len(blocks)} blocks of recorded report facts in {time.perf_counter() - started:.0f} s")


def bench(keep: Path, repeat: int, timeout: float, extra: tuple[str, ...] = ()) -> dict[str, float]:
    from fleet_history import EXPECT
    from support.measure import run_measured
    from support.tsdb import PrivatePrometheus

    end, hours = history_of(keep)
    rows: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory() as work, PrivatePrometheus(Path(work), data=keep / "data") as prom:
        _settle(keep / "data")
        out = Path(work) / "report.json"
        for _ in range(repeat):
            load = os.getloadavg()[0]
            ref = reference(prom.url, end, hours)
            before = _cpu_s(prom.process.pid)
            run = run_measured(["report", "--prometheus", prom.url, "--since", f"{hours:g}h", "--until", str(end),
                                "--timeout", f"{timeout:g}", "-o", str(out), *extra], timeout=1800)
            assert run.rc in (0, 1), run.describe()
            rows.append({"ref": ref, "wall": run.elapsed_s, "rss": run.max_rss_kb / 1024, "cpu": run.cpu_s,
                         "prom_cpu": _cpu_s(prom.process.pid) - before, "load": (load + os.getloadavg()[0]) / 2})
        doc = json.loads(out.read_text())
        size = out.stat().st_size
    instances = doc["summary"]["instances"]
    named: dict[str, Counter[str]] = {}
    for item in doc["instances"]:
        named.setdefault(_kind(item["instance"]), Counter()).update(set(item["findings"]))
    col = {k: [r[k] for r in rows] for k in rows[0]}
    ratios = [r["wall"] / r["ref"] for r in rows]
    recorded = sum(1 for e in doc["queries"]["list"] if e["kind"] == "instant" and "llmdoctor:report:" in e["query"])
    print(f"\n{keep}: {instances} instances × {hours:g} h, {doc['queries']['count']} PromQL queries "
          f"({doc['queries']['failed']} failed; {recorded} read recorded series of llmdoctor rules --report), "
          f"report.json {size / 1e6:.1f} MB; {len(rows)} runs, min / median / max:")
    print(f"  reference (one fleet-wide fact, stdlib HTTP): {spread(col['ref'], '.2f')} s")
    print(f"  report (console script, -o report.json):     {spread(col['wall'])} s wall, "
          f"{spread(col['rss'], '.0f')} MiB peak RSS")
    print(f"  report ÷ reference:                          {spread(ratios)}")
    print(f"  CPU: report {spread(col['cpu'])} s, Prometheus {spread(col['prom_cpu'])} s")
    print(f"  load average (1 min, mean of each run's start and end): {spread(col['load'])}")
    print(f"  per 1,000 instances: {1000 * statistics.median(col['wall']) / instances:.1f} s wall, "
          f"{1000 * statistics.median(col['cpu']) / instances:.2f} s report CPU")
    for kind, expected in EXPECT.items():
        got = named.get(kind, Counter())
        print(f"  {kind:13} expected {', '.join(expected) or 'nothing'}: "
              + (", ".join(f"{c} ×{got[c]}" for c in expected) if expected else f"{sum(got.values())} findings")
              + f" (of {instances // len(EXPECT)})")
    return {"instances": instances, "wall": statistics.median(col["wall"]), "ratio": statistics.median(ratios),
            "cpu": statistics.median(col["cpu"]), "prom_cpu": statistics.median(col["prom_cpu"]),
            "ref": statistics.median(col["ref"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, action="append", required=True,
                        help="a fleet's directory (DIR/data: TSDB blocks); repeat for several sizes")
    parser.add_argument("--build", type=int, default=None, metavar="N",
                        help="write N instances into an empty --data first (bench/fleet_history.py)")
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--step", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=30, help="the report's --timeout (seconds per query)")
    parser.add_argument("--record", action="store_true",
                        help="first add the recordings of llmdoctor rules --report to each --data (promtool "
                             "tsdb create-blocks-from rules; minutes at 10,000 instances)")
    parser.add_argument("--no-recorded", action="store_true",
                        help="run the report with --no-recorded (ask every query, even where DIR/data holds the "
                             "recordings of llmdoctor rules --report)")
    args = parser.parse_args()
    if args.build is not None:
        from fleet_history import build

        if len(args.data) != 1:
            parser.error("--build writes one --data directory")
        promtool = shutil.which("promtool")
        if promtool is None:
            sys.exit("promtool not installed (Debian: apt-get install prometheus)")
        build(args.data[0], args.build, args.hours, args.step, promtool)
    if args.record:
        for keep in args.data:
            record(keep)
    extra = ("--no-recorded",) if args.no_recorded else ()
    sizes = [bench(keep, args.repeat, args.timeout, extra) for keep in args.data]
    if len(sizes) > 1:
        base = sizes[0]
        print("\ncost per instance against the first size (medians; 1.0 = linear, below 1 = better than linear):")

        def per(size: dict[str, float], key: str) -> float:
            return (size[key] / size["instances"]) / (base[key] / base["instances"])

        for size in sizes:
            print(f"  {size['instances']:6} instances: wall {size['wall']:.1f} s ({per(size, 'wall'):.2f}×), "
                  f"report CPU {size['cpu']:.1f} s ({per(size, 'cpu'):.2f}×), Prometheus CPU "
                  f"{size['prom_cpu']:.1f} s ({per(size, 'prom_cpu'):.2f}×), reference {size['ref']:.2f} s "
                  f"({per(size, 'ref'):.2f}×)")


if __name__ == "__main__":
    main()
