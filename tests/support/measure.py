"""Run the real CLI as a child process and measure it: exit code, output, wall time, and its own peak memory.

Why a spawner: on Linux a child's ``ru_maxrss`` starts from its parent's RSS at fork (the kernel keeps the
pre-exec high-water mark), so a child forked from a 100 MB pytest process "peaks" at 100 MB however little it
uses. A tiny ``python -I -S`` spawner (~10 MB) forks and execs the CLI, waits for it with ``wait4`` and writes
that child's rusage to a file: the kernel's own accounting, with a floor of the spawner's size. It also enforces
the time limit itself (SIGKILL), so no grandchild outlives a test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_SPAWNER = r"""
import json, os, signal, sys
out, limit, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
pid = os.fork()
if pid == 0:
    os.execv(argv[0], argv)
killed = []
def expire(*_):
    killed.append(True)
    os.kill(pid, signal.SIGKILL)
signal.signal(signal.SIGALRM, expire)
signal.setitimer(signal.ITIMER_REAL, limit)
_, status, usage = os.wait4(pid, 0)
signal.setitimer(signal.ITIMER_REAL, 0)
with open(out, "w") as fh:
    json.dump({"rc": os.waitstatus_to_exitcode(status), "max_rss_kb": usage.ru_maxrss, "timed_out": bool(killed),
               "cpu_s": usage.ru_utime + usage.ru_stime}, fh)
"""


@dataclass
class Run:
    args: list[str | bytes]
    rc: int
    stdout: str
    stderr: str
    elapsed_s: float
    max_rss_kb: int
    timed_out: bool
    cpu_s: float = 0.0  # the child's user + system CPU time

    def describe(self) -> str:
        shown = [a if isinstance(a, str) else f"<{len(a)} bytes>" for a in self.args]
        return (f"llmdoctor {' '.join(shown)[:160]} -> rc={self.rc} {self.elapsed_s:.1f}s {self.max_rss_kb // 1024} MB"
                f"\n  stderr: {self.stderr[:300]!r}")


def cli_env(**extra: str) -> dict[str, str]:
    """The environment a user's shell gives: no colour, and bytecode caching on (as an installed package has)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def run_measured(args: list[str | bytes], *, stdin: Path | None = None, timeout: float = 20.0,
                 env: dict[str, str] | None = None) -> Run:
    """``python -m doctor ARGS``, its stdin from ``stdin`` (else /dev/null), killed after ``timeout`` seconds."""
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            open(stdin if stdin is not None else os.devnull, "rb") as feed:
        report = Path(tmp) / "rusage.json"
        start = time.monotonic()
        subprocess.run([sys.executable, "-I", "-S", "-c", _SPAWNER, str(report), str(timeout), sys.executable,
                        "-m", "doctor", *args], stdin=feed, stdout=out, stderr=err, cwd=ROOT,
                       env=env if env is not None else cli_env(), check=False, timeout=timeout + 30)
        elapsed = time.monotonic() - start
        usage = json.loads(report.read_text())
        out.seek(0)
        err.seek(0)
        return Run(args, usage["rc"], out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace"),
                   elapsed, usage["max_rss_kb"], usage["timed_out"], usage["cpu_s"])
