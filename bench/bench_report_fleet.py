"""``llmdoctor report`` over a fleet of 1,000 instances × 24 h at 60 s from a real Prometheus (target ≤ 30 s, ≤ 500 MiB).

    python bench/bench_report_fleet.py [--instances 1000] [--hours 24] [--step 60] [--keep DIR] [--repeat 2]

The history (SCENARIO data: bench/fleet_history.py) is backfilled once into ``--keep`` and reused while its
parameters match; a private Prometheus (Debian's package) serves it on 127.0.0.1 and is given time to finish
compacting the blocks before anything is measured. Measured: the console script as a child process (start-up
included), its wall time and its own peak RSS (kernel rusage of the child, tests/support/measure.py), and
whether each deployment kind got the cause the scenario was written for.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]


def prepare(keep: Path, instances: int, hours: float, step: int) -> int:
    from fleet_history import build

    meta = keep / "meta.json"
    wanted = {"instances": instances, "hours": hours, "step": step}
    if meta.is_file():
        saved = json.loads(meta.read_text())
        if {k: saved.get(k) for k in wanted} == wanted and (keep / "data").is_dir():
            print(f"reusing {keep} (history ends {time.ctime(saved['end'])})")
            return int(saved["end"])
    promtool = shutil.which("promtool")
    assert promtool, "promtool not installed (Debian: apt-get install prometheus)"
    info = build(keep, instances, hours, step, promtool)
    print(f"prepared {info['instances']} instances, {info['series']:,} series, {info['samples']:,} samples: "
          f"{info['bytes'] / 1e9:.1f} GB of OpenMetrics in {info['windows']} windows (one on disk at a time), "
          f"generated in {info['generate_s']:.0f} s, all backfilled by {info['total_s']:.0f} s")
    meta.write_text(json.dumps({**wanted, "end": info["end"]}))
    return int(info["end"])


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
    print(f"blocks after compaction: {len(last)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--step", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", type=Path, default=Path(tempfile.gettempdir()) / "llmdoctor-fleet-1000")
    args = parser.parse_args()

    from fleet_history import EXPECT
    from support.measure import run_measured
    from support.tsdb import PrivatePrometheus

    end = prepare(args.keep, args.instances, args.hours, args.step)
    with tempfile.TemporaryDirectory() as work, PrivatePrometheus(Path(work), data=args.keep / "data") as prom:
        _settle(args.keep / "data")
        runs, prom_cpu = [], []
        for _ in range(args.repeat):
            out = Path(work) / "report.json"
            before = _cpu_s(prom.process.pid)
            runs.append(run_measured(["report", "--prometheus", prom.url, "--since", f"{args.hours:g}h", "--step",
                                      f"{args.step}s", "--until", str(end), "-o", str(out)], timeout=300))
            prom_cpu.append(_cpu_s(prom.process.pid) - before)
            assert runs[-1].rc in (0, 1), runs[-1].describe()
        doc = json.loads(out.read_text())
    named: dict[str, Counter[str]] = {}
    for item in doc.get("instances", []):
        kind = _kind(item.get("instance", ""))
        named.setdefault(kind, Counter()).update(set(item.get("findings", [])))
    print(f"instances: {doc['summary']['instances']}  findings: {doc['summary']['findings']}  "
          f"PromQL queries: {doc['queries']['count']} ({doc['queries']['failed']} failed, "
          f"{doc['queries']['seconds']:.1f} s of querying)")
    for run, prom_s in zip(runs, prom_cpu, strict=True):
        print(f"report (console script, cold start, -o report.json): {run.elapsed_s:.1f} s wall, "
              f"peak RSS {run.max_rss_kb / 1024:.0f} MiB, exit {run.rc}; CPU: report {run.cpu_s:.1f} s + "
              f"Prometheus {prom_s:.1f} s = {run.cpu_s + prom_s:.1f} CPU-s (what a shared machine cannot hide)")
    for kind, expected in EXPECT.items():
        got = named.get(kind, Counter())
        total = args.instances // len(EXPECT)
        print(f"  {kind:13} expected {', '.join(expected) or 'nothing critical'}: "
              + (", ".join(f"{c} ×{got[c]}" for c in expected) if expected else
                 f"{sum(got.values())} findings") + f" (of {total})")


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (/proc/PID/stat fields 14 and 15)."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _kind(instance: str) -> str:
    from fleet_history import KINDS

    try:
        return KINDS[int(instance.split(":")[0].rsplit(".", 1)[1]) - 1]
    except (IndexError, ValueError):
        return "?"


if __name__ == "__main__":
    main()
