"""Is any command slower than in another checkout (the session's base)? Every command a user runs, on both trees,
as fresh processes taking turns run by run.

    python bench/bench_vs_base.py /work/wt/base [--runs 7] [--only check-endpoint-vllm,lint] [--callgrind]
                                               [--cold] [--no-report]

Both trees run under this interpreter, each with its own PYTHONPATH and bytecode cache (PYTHONPYCACHEPREFIX
under a temporary folder, warmed by one run each, so neither tree is written to), on the same inputs: this
tree's real fixtures (fixtures/metrics, fixtures/configs, fixtures/live), the engine-shaped replay server of
bench/bench_check.py (a real /metrics scrape; the served model resolved from a local checkpoint or the HF cache;
the Hub a refused local port, remembered as down after the first run), and for ``report`` a private Prometheus
over one copy of the scenario fleet (fixtures/prometheus/scenarios.py, backfilled; skipped without prometheus
and promtool). Reported per command: min / median / max wall milliseconds of each tree and of the per-run
ratio this tree ÷ the other (above 1: slower here). On a shared machine wall time is noisy; ``--callgrind`` adds
each offline command's instruction count under valgrind (one run per tree), which load does not move, and
each ``check --endpoint``'s and ``snapshot``'s (the client's own: the replay server is another process).
``--cold`` counts them once more with an empty cache directory of each tree's own (``LLMDOCTOR_CACHE_DIR``):
the first run after an install or an upgrade, before doctor/datacache.py holds anything. ``serve-start`` is
``llmdoctor serve`` from its start until it logs that it listens (then stopped with SIGTERM).
``--lint-loop N`` also runs each tree's own bench/bench_lint.py N times in turn (1,000 lints in one process, the
per-lint cost after start-up) and compares its ms per command. ``--lint-loop-callgrind`` counts that cost in
instructions instead: each tree lints the first 50 and then the first 250 commands of bench_command.variants in one
process under callgrind (alone, and with ``--config example:seed-mla-moe --gpu H200:8``); the difference over 200
is what one more lint costs a long-running process (MCP, ``serve``), every catalog already loaded by the first 50.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tests")]

FIXTURES = ROOT / "fixtures"
LINT = "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --enable-prefix-caching --max-model-len 32768"
LOG = FIXTURES / "live" / "vllm-0.32.0-cpu" / "devmode" / "server.log"
#: Commands that touch no server: their instruction counts are deterministic (``--callgrind``; the endpoint checks
#: are counted too, the client's side only).
OFFLINE = ("version", "help", "check-help", "lint", "lint-config-gpu", "plan", "inspect", "check-command", "check-log",
           "check-metrics", "check-snapshot", "serve-start")
#: Commands with a server on the other side whose client-side count is still the same run to run.
CLIENT = ("snapshot",)


def commands(endpoints: dict[str, str], work: Path, report: list[str] | None) -> dict[str, list[str]]:
    """label -> argv after ``python -m doctor``."""
    out = {
        "version": ["--version"],
        "help": ["--help"],
        "check-help": ["check", "--help"],
        "lint": ["lint", LINT, "--fail-on", "never"],
        "lint-config-gpu": ["lint", LINT, "--config", "example:seed-gqa-27b", "--gpu", "H200:8", "--fail-on", "never"],
        "plan": ["plan", "example:seed-gqa-27b", "--gpu", "H100:1", "--fail-on", "never"],
        "inspect": ["inspect", "example:seed-gqa-27b"],
        "check-command": ["check", "--command", LINT, "--config", "example:seed-gqa-27b", "--gpu", "H200:8",
                          "--fail-on", "never"],
        "check-log": ["check", "--log", str(LOG), "--fail-on", "never"],
        "check-metrics": ["check", "--metrics", str(FIXTURES / "metrics" / "vllm_1.prom"), "--fail-on", "never"],
        "check-snapshot": ["check", "--snapshot", "example:vllm-kv-full", "--fail-on", "never"],
        "serve-start": ["serve", "--listen", "127.0.0.1:0", "--timeout", "1"],
    }
    for engine, endpoint in endpoints.items():
        out[f"check-endpoint-{engine}"] = ["check", "--endpoint", endpoint, "--fail-on", "never"]
        out[f"check-endpoint-{engine}-json"] = ["check", "--endpoint", endpoint, "--format", "json",
                                                 "--fail-on", "never"]
    if "vllm" in endpoints:
        out["snapshot"] = ["snapshot", "--endpoint", endpoints["vllm"], "-o", str(work / "snapshot.json")]
    if report is not None:
        out["report"] = ["report", *report, "--fail-on", "never", "-o", str(work / "report.html")]
    return out


def tree_env(tree: Path, cache: Path, base: dict[str, str]) -> dict[str, str]:
    """The environment of a run of ``tree``; runs start in the tree itself (``python -m doctor`` puts the current
    directory first on sys.path, before PYTHONPATH)."""
    env = {k: v for k, v in base.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    return {**env, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": str(cache), "NO_COLOR": "1"}


def timed(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    if "serve" in argv:
        until_listening(argv, env)
    else:
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=env["PYTHONPATH"],
                       check=False)
    return time.perf_counter() - start


def until_listening(argv: list[str], env: dict[str, str]) -> str:
    """Run ``llmdoctor serve`` until it logs that it listens, then stop it (SIGTERM: its own clean exit); its
    stderr."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=env["PYTHONPATH"])
    assert proc.stderr is not None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if "listening on http" in line:
            proc.send_signal(signal.SIGTERM)
            break
    lines.append(proc.communicate(timeout=120)[1])
    return "".join(lines)


def counted(argv: list[str], env: dict[str, str]) -> int | None:
    """Instructions of one run (bench_check.instructions; ``serve`` until it listens)."""
    from bench_check import instructions

    if "serve" not in argv:
        return instructions(argv, env)
    if shutil.which("valgrind") is None:
        return None
    found = re.search(r"refs:\s+([\d,]+)",
                      until_listening(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv], env))
    return int(found.group(1).replace(",", "")) if found else None


def spread(values: list[float], scale: float = 1.0, fmt: str = ".1f") -> str:
    return f"{min(values) * scale:{fmt}} / {statistics.median(values) * scale:{fmt}} / {max(values) * scale:{fmt}}"


def report_args(stack: ExitStack, work: Path) -> list[str] | None:
    """Arguments of `report` over a private Prometheus holding one copy of the scenario fleet (or None)."""
    if not (shutil.which("prometheus") and shutil.which("promtool")):
        return None
    from bench_report import prepare
    from support.tsdb import PrivatePrometheus

    keep = Path(tempfile.gettempdir()) / "llmdoctor-bench-vs-base-report"
    end = prepare(keep, copies=1, hours=1, step=60)
    (work / "prom").mkdir()
    prom = stack.enter_context(PrivatePrometheus(work / "prom", data=keep / "data"))
    return ["--prometheus", prom.url, "--since", "1h", "--step", "60s", "--until", str(end)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", type=Path, help="the other checkout (e.g. /work/wt/base)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", default="", help="comma-separated labels (default: all)")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions of the offline commands")
    parser.add_argument("--cold", action="store_true",
                        help="with --callgrind: count them also with an empty cache directory (a first run)")
    parser.add_argument("--no-report", action="store_true", help="leave out `report` (needs prometheus)")
    parser.add_argument("--lint-loop", type=int, default=0, metavar="N",
                        help="also run each tree's bench/bench_lint.py N times in turn")
    parser.add_argument("--lint-loop-callgrind", action="store_true",
                        help="also count each tree's instructions per lint in one process (250 vs 50 lints)")
    args = parser.parse_args()
    from bench_check import child_env, engine_process, model_home

    trees = {"here": ROOT, "base": args.base.resolve()}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        work = Path(tmp)
        endpoints, extra = {}, {}
        for engine in ("vllm", "sglang"):
            (work / engine).mkdir()
            model, env_extra = model_home(engine, work / engine)
            extra.update(env_extra if engine == "sglang" else {})  # one HF cache: the SGLang model's
            endpoints[engine] = stack.enter_context(engine_process(engine, model))
        report = None if args.no_report else report_args(stack, work)
        table = commands(endpoints, work, report)
        if args.only:
            table = {k: v for k, v in table.items() if k in args.only.split(",")}
        envs = {name: tree_env(tree, work / f"pyc-{name}", child_env(extra)) for name, tree in trees.items()}
        argv = {label: [sys.executable, "-m", "doctor", *rest] for label, rest in table.items()}
        for label in argv:  # warm-up: bytecode caches, the Hub-down memo, Prometheus' pages
            for name in trees:
                timed(argv[label], envs[name])
        times: dict[str, dict[str, list[float]]] = {label: {n: [] for n in trees} for label in argv}
        for _ in range(args.runs):
            for label in argv:
                for name in trees:
                    times[label][name].append(timed(argv[label], envs[name]))
        loops = lint_loops(trees, envs, args.lint_loop) if args.lint_loop else {}
        per_lint = lint_instructions(trees, envs) if args.lint_loop_callgrind else {}
        counts, cold = {}, {}
        countable = [label for label in argv if label in OFFLINE + CLIENT or label.startswith("check-endpoint")]
        if args.callgrind:
            counts = {label: {n: counted(argv[label], envs[n]) for n in trees} for label in countable}
        if args.callgrind and args.cold:
            for label in countable:
                cold[label] = {}
                for n in trees:
                    empty = work / f"cold-{n}-{label}"
                    cold[label][n] = counted(argv[label], {**envs[n], "LLMDOCTOR_CACHE_DIR": str(empty)})
    print(f"this tree {ROOT} vs {trees['base']}: {args.runs} interleaved runs of fresh processes, "
          f"python {sys.version.split()[0]}; min / median / max")
    print(f"{'command':28s} {'here ms':>22s} {'base ms':>22s} {'here ÷ base':>20s}")
    for label, per in times.items():
        ratios = [h / b for h, b in zip(per["here"], per["base"], strict=True)]
        line = f"{label:28s} {spread(per['here'], 1000):>22s} {spread(per['base'], 1000):>22s} " \
               f"{spread(ratios, fmt='.2f'):>20s}"
        for what, table_ in (("instructions", counts), ("cold", cold)):
            count = table_.get(label)
            if count and count["here"] and count["base"]:
                line += f"   {what} {count['here'] / 1e6:.0f} M vs {count['base'] / 1e6:.0f} M " \
                        f"({count['here'] / count['base']:.3f})"
        print(line)
    for what, per in loops.items():
        ratios = [h / b for h, b in zip(per["here"], per["base"], strict=True)]
        print(f"bench_lint {what:17s} {spread(per['here'], fmt='.2f'):>22s} {spread(per['base'], fmt='.2f'):>22s} "
              f"{spread(ratios, fmt='.2f'):>20s}  (ms per command, in one process)")
    for what, per in per_lint.items():
        if per["here"] and per["base"]:
            print(f"lint in one process, {what}: {per['here'] / 1e6:.2f} M vs {per['base'] / 1e6:.2f} M instructions "
                  f"per lint ({per['here'] / per['base']:.3f})")


def lint_loops(trees: dict[str, Path], envs: dict[str, dict[str, str]], rounds: int
               ) -> dict[str, dict[str, list[float]]]:
    """Each tree's bench/bench_lint.py, ``rounds`` times in turn: ms per command, alone and with --config --gpu."""
    out: dict[str, dict[str, list[float]]] = {"command only": {n: [] for n in trees},
                                              "with config+gpu": {n: [] for n in trees}}
    for _ in range(rounds):
        for name, tree in trees.items():
            text = subprocess.run([sys.executable, str(tree / "bench" / "bench_lint.py")], capture_output=True,
                                  text=True, env=envs[name], cwd=tree, check=False).stdout
            alone = re.search(r"command only: .*?, ([\d.]+) ms per command", text)
            model = re.search(r"with --config and --gpu: ([\d.]+) ms per command", text)
            if alone and model:
                out["command only"][name].append(float(alone.group(1)))
                out["with config+gpu"][name].append(float(model.group(1)))
    return {k: v for k, v in out.items() if all(v.values())}


#: One process linting the first N commands of bench_command.variants (argv: N, tree, "model" or "alone"); the import
#: falls back to the layout before doctor/commands/ so an older base runs it too.
LOOP = """
import sys
sys.path[:0] = [sys.argv[2], sys.argv[2] + "/bench"]
from bench_command import variants
try:
    from doctor.commands.lint import lint
    from doctor.sources.offline import OfflineInputs
except ImportError:
    from doctor.lint import lint
    from doctor.sources import OfflineInputs
extra = {"config": "example:seed-mla-moe", "gpu": "H200:8"} if sys.argv[3] == "model" else {}
for text, version in variants(int(sys.argv[1])):
    lint(OfflineInputs(command=text, engine_version=version, **extra))
"""


def lint_instructions(trees: dict[str, Path], envs: dict[str, dict[str, str]]) -> dict[str, dict[str, int | None]]:
    """Instructions one more lint costs each tree's long-running process: (250 lints - 50 lints) / 200, after one
    uncounted run of each (the data cache filled)."""
    from bench_check import instructions

    out: dict[str, dict[str, int | None]] = {}
    for what in ("alone", "model"):
        out[what] = {}
        for name, tree in trees.items():
            argv = [sys.executable, "-c", LOOP]
            subprocess.run([*argv, "50", str(tree), what], env=envs[name], cwd=tree, capture_output=True, check=False)
            counts = [instructions([*argv, str(n), str(tree), what], envs[name]) for n in (50, 250)]
            out[what][name] = (counts[1] - counts[0]) // 200 if None not in counts else None  # type: ignore[operator]
    return out


if __name__ == "__main__":
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    main()
