"""`llmdoctor check --log` of a very large server log: wall time and peak memory (target: 1 GB within 2 s and
100 MiB).

    python bench/bench_log.py [--size-mb 1024] [--runs 3] [--keep PATH]

The log is built from real vLLM 0.32.0 lines (fixtures/live/vllm-0.32.0-cpu): the
start-up of `plain-after/server.log` as the head, its request lines and engine statistics repeated as the
middle, and the engine death of `headdim16-crash-before/server.log` as the tail — a server that ran for a
long time and then died. The middle is written as one 1 MiB block over and over (the file system, not Python,
sets the generation time). Each run is a fresh `python -m doctor check --log FILE --format json` process;
its peak RSS comes from wait4(). `--log -` (the log piped on standard input, streamed through) is measured
too: it must read every byte, so it is bounded by the pipe's throughput.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIVE = ROOT / "fixtures" / "live" / "vllm-0.32.0-cpu"
BLOCK = 1 << 20


def build_log(path: Path, size: int) -> None:
    healthy = (LIVE / "plain-after" / "server.log").read_bytes()
    dying = (LIVE / "headdim16-crash-before" / "server.log").read_bytes()
    cut = healthy.index(b"Application startup complete.")
    head = healthy[:healthy.index(b"\n", cut) + 1]
    runtime = b"".join(line + b"\n" for line in healthy[len(head):].splitlines()
                       if b"loggers.py" in line or b"HTTP/1.1" in line)
    tail = dying[dying.index(b"Traceback") - 200:]
    tail = tail[tail.index(b"\n") + 1:]
    block = (runtime * (BLOCK // len(runtime) + 1))[:BLOCK]
    block = block[:block.rindex(b"\n") + 1]
    with path.open("wb") as fh:
        fh.write(head)
        written = len(head)
        while written + len(block) + len(tail) <= size:
            fh.write(block)
            written += len(block)
        fh.write(tail)


def run_once(args: list[str], stdin_path: Path | None = None) -> tuple[float, int, dict]:
    """Wall seconds, peak RSS (bytes) and the JSON document of one check process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            (stdin_path.open("rb") if stdin_path else open(os.devnull, "rb")) as stdin:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "doctor", *args], cwd=ROOT, stdin=stdin, stdout=out,
                                stderr=err)
        _pid, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(f"check failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        out.seek(0)
        return elapsed, usage.ru_maxrss * 1024, json.loads(out.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the log here and keep it")
    opts = parser.parse_args()
    if not LIVE.is_dir():
        raise SystemExit(f"{LIVE}: the real vLLM logs are needed to build the bench log")
    folder = tempfile.TemporaryDirectory()
    path = opts.keep or Path(folder.name) / "server.log"
    started = time.perf_counter()
    build_log(path, opts.size_mb << 20)
    built = time.perf_counter() - started
    size = path.stat().st_size
    print(f"log: {size / 2**30:.2f} GiB ({size:,} bytes), written in {built:.2f} s")
    for label, args, stdin in (("--log FILE", ["check", "--log", str(path), "--format", "json"], None),
                               ("--log - (pipe)", ["check", "--log", "-", "--format", "json"], path)):
        times, peaks = [], []
        for _ in range(opts.runs):
            elapsed, peak, doc = run_once(args, stdin)
            times.append(elapsed)
            peaks.append(peak)
        facts = doc["facts"]
        print(f"{label:16} median {statistics.median(times):.2f} s (min {min(times):.2f}), peak RSS "
              f"{max(peaks) / 2**20:.0f} MiB; log.engine={facts['log.engine']['value']}, "
              f"log.kv_cache_tokens={facts['log.kv_cache_tokens']['value']}, "
              f"log.causes={facts['log.causes']['value']}, skipped {facts['log.skipped_bytes']['value']:,} bytes")
    folder.cleanup()


if __name__ == "__main__":
    main()
