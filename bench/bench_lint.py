"""Benchmark: the whole `lint` pipeline (parse, facts, derived facts, every playbook, flag explanations) for
1,000 launch commands in one process, with and without a model config and GPU.

Run: ``python bench/bench_lint.py``. The commands are the scenario variations of bench_command.py; the aim
(issue: lint) is under 2 ms per command after start-up for the command alone.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    t0 = time.perf_counter()
    from bench_command import variants

    from doctor.commands.lint import lint
    from doctor.sources.offline import OfflineInputs

    commands = variants(1000)
    lint(OfflineInputs(command=commands[0][0], engine_version=commands[0][1]))  # warm: catalogs, playbooks
    t1 = time.perf_counter()
    for text, version in commands:
        lint(OfflineInputs(command=text, engine_version=version))
    t2 = time.perf_counter()
    per = (t2 - t1) / len(commands) * 1000
    with_model = [OfflineInputs(command=text, engine_version=version, config="example:seed-mla-moe", gpu="H200:8")
                  for text, version in commands[:200]]
    t3 = time.perf_counter()
    for inputs in with_model:
        lint(inputs)
    per_model = (time.perf_counter() - t3) / len(with_model) * 1000
    print(f"start-up (imports + first lint): {(t1 - t0) * 1000:.0f} ms")
    print(f"{len(commands)} commands, command only: {(t2 - t1):.2f} s, {per:.2f} ms per command (aim < 2 ms)")
    print(f"{len(with_model)} commands with --config and --gpu: {per_model:.2f} ms per command")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
