"""`llmdoctor check --endpoint` against a local replay server, side by side with a minimal stdlib script that
fetches the same URLs — the least any tool must spend to look at a server.

    python bench/bench_check.py [--runs 15] [--engine vllm|sglang]

The server is what `check` meets on an engine's host: a process started as the engine is
(``/usr/bin/python3 …/vllm serve /models/Qwen3-32B -tp 2 …`` in /proc/PID/cmdline, through a script named
``vllm``; tests/support/fake_launch.py), listening on the port and replaying a real /metrics scrape
(fixtures/metrics; the scenario scrape when that folder is absent) and the scenario
/v1/models, /version, /server_info bodies (fixtures/scenarios). So the process probe finds it and the launch
command is parsed and linted, as on a real host. The served model is resolved, as on a real host: vLLM's from
a local checkpoint folder, SGLang's (a repo id) from a private Hugging Face cache, both holding the real
config.json of fixtures/configs; the Hub is a refused local port (never the internet), so a run that would
ask it learns at once it is down (and the next run remembers: doctor/model/hubmemo.py). Both sides run as fresh
processes with bytecode caches warm (PYTHONDONTWRITEBYTECODE removed, as a pip install has them), interleaved
run by run. Reported: min / median / max of each, of the per-run ratio (target: at most 1.5x the stdlib
fetch), whether huggingface_hub was imported, and where llmdoctor's own time goes (one in-process run, split by
phase).

``--model`` picks where the served model is found: ``local`` (vLLM's default: a checkpoint folder), ``cache``
(SGLang's default: a repo id in the HF cache), ``hub`` (a repo id in no cache, on a loopback stand-in Hub holding
its real config.json, tests/support/hubserver.py: the warm-up run fetches it, so the timed runs find it as a user's
second run does; add ``--cold`` to empty the HF cache and llmdoctor's memo before every run, so each one asks the
Hub), or ``stall`` (the stand-in accepts and never answers: each run answers within its budget). A second
reference, the stdlib fetch of /metrics alone, is printed beside the one of every URL `check` reads.
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
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
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
#: ``{model}``: vLLM's local checkpoint folder (made by the bench); SGLang's repo id, in the bench's HF cache.
LAUNCH = {"vllm": ["serve", "{model}", "--served-model-name", "qwen3-32b", "--tensor-parallel-size", "2",
                   "--max-model-len", "32768", "--gpu-memory-utilization", "0.9", "--host", "127.0.0.1"],
          "sglang": ["serve", "--model-path", "{model}", "--tp-size", "8", "--dp-size", "8",
                     "--enable-dp-attention", "--ep-size", "8", "--enable-metrics", "--host", "127.0.0.1"]}
#: The served model's real config.json (fixtures/configs) and where the bench puts it.
MODELS = {"vllm": ("Qwen__Qwen3-32B.json", None), "sglang": ("deepseek-ai__DeepSeek-V3.json", "deepseek-ai/DeepSeek-V3")}
#: The repo id of each model, when it is served by repo id (vLLM's default is a local folder).
REPO_IDS = {"vllm": "Qwen/Qwen3-32B", "sglang": "deepseek-ai/DeepSeek-V3"}


def model_home(engine: str, tmp: Path, where: str | None = None) -> tuple[str, dict[str, str]]:
    """The model argument of the launch, and the environment that makes it resolvable (without the network);
    ``where`` (see --model) defaults to the engine's own: local for vLLM, cache for SGLang."""
    config, served = MODELS[engine]
    where = where or ("local" if served is None else "cache")
    repo = served or REPO_IDS[engine]
    text = (ROOT / "fixtures" / "configs" / config).read_text()
    env = {"HF_HUB_CACHE": str(tmp / "hf"), "HF_ENDPOINT": "http://127.0.0.1:9", "LLMDOCTOR_CACHE_DIR": str(tmp / "ld")}
    if where in ("hub", "stall"):
        return repo, env  # HF_ENDPOINT: set by main() to the stand-in
    if where == "local":
        folder = tmp / "models" / repo.split("/")[-1]
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(text)
        return str(folder), env
    snapshot = tmp / "hf" / ("models--" + repo.replace("/", "--")) / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(text)
    return repo, env


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


def served_as(table: dict[str, list[str]], model: str, tmp: Path) -> dict[str, list[str]]:
    """The /v1/models body with its ``root`` the launch's model, as a real vLLM writes it (the model path)."""
    body = json.loads(Path(table["/v1/models"][1]).read_text())
    for card in body.get("data", []):
        card["root"] = model
    path = tmp / "v1_models.json"
    path.write_text(json.dumps(body))
    return {**table, "/v1/models": [table["/v1/models"][0], str(path)]}


@contextmanager
def engine_process(engine: str, model: str) -> Iterator[str]:
    """Start the engine-shaped replay server, launched with ``model``; yield its endpoint (127.0.0.1:PORT)."""
    with tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp) / "routes.json"
        table.write_text(json.dumps(served_as(routes(engine), model, Path(tmp))))
        script = Path(tmp) / engine  # a console script, as pip writes it: its name is the engine's
        script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
                          "from support.fake_launch import main\nmain(sys.argv[1:])\n")
        script.chmod(0o755)
        argv = [a.replace("{model}", model) for a in LAUNCH[engine]]
        child = subprocess.Popen([str(script), *argv, "--port", "0"], stdout=subprocess.PIPE, text=True,
                                 env={**os.environ, "FAKE_LAUNCH_ROUTES": str(table)})
        try:
            line = child.stdout.readline() if child.stdout else ""
            if not line.startswith("LISTENING "):
                raise SystemExit(f"the replay server did not start: {line!r}")
            yield f"127.0.0.1:{line.split()[1]}"
        finally:
            child.terminate()
            child.wait(timeout=10)


def child_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "HF_HUB_OFFLINE")}
    return {**env, "NO_COLOR": "1", **extra}


def interleaved(cmds: dict[str, list[str]], runs: int, env: dict[str, str],
                before: Callable[[], None] | None = None) -> dict[str, list[float]]:
    """Seconds of each command per run, the commands taking turns (one warm-up each first); ``before`` runs before
    each timed run (untimed)."""
    for cmd in cmds.values():
        subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=False)
    times: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            if before is not None:
                before()
            start = time.perf_counter()
            subprocess.run(cmd, capture_output=True, env=env, cwd=ROOT, check=False)
            times[name].append(time.perf_counter() - start)
    return times


def instructions(argv: list[str], env: dict[str, str]) -> int | None:
    """Instructions one run of ``argv`` executes, under valgrind's callgrind (None without valgrind): a count that
    the machine's load does not move. Child threads count, child processes do not."""
    import re

    if shutil.which("valgrind") is None:
        return None
    err = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
                         capture_output=True, text=True, env=env, cwd=env.get("PYTHONPATH", ROOT), check=False).stderr
    found = re.search(r"refs:\s+([\d,]+)", err)
    return int(found.group(1).replace(",", "")) if found else None


def spread(values: list[float], scale: float = 1.0, fmt: str = ".1f") -> str:
    return f"{min(values) * scale:{fmt}} / {statistics.median(values) * scale:{fmt}} / {max(values) * scale:{fmt}}"


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


def stand_in_hub(stack: ExitStack, engine: str, where: str) -> str:
    """A loopback Hub holding the served repo's real config.json (``stall``: never answering); its endpoint."""
    from support.hubserver import HubServer, config_repo

    config, _ = MODELS[engine]
    repos = {REPO_IDS[engine]: config_repo(ROOT / "fixtures" / "configs" / config)}
    return stack.enter_context(HubServer(repos, stall_s=3600 if where == "stall" else 0)).endpoint


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--engine", choices=sorted(PATHS), default="vllm")
    parser.add_argument("--model", choices=("local", "cache", "hub", "stall"), default=None,
                        help="where the served model is found (default: local for vLLM, cache for SGLang)")
    parser.add_argument("--cold", action="store_true", help="empty the HF cache and the memo before every run")
    parser.add_argument("--callgrind", action="store_true",
                        help="also count each side's instructions under valgrind (one run each; load does not move "
                             "them; the client's own, not the server's)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        model, extra = model_home(args.engine, Path(tmp), args.model)
        if args.model in ("hub", "stall"):
            extra["HF_ENDPOINT"] = stand_in_hub(stack, args.engine, args.model)
        env = child_env(extra)
        os.environ.update(extra)  # the in-process phases resolve the same way

        def forget() -> None:
            for name in ("hf", "ld"):
                shutil.rmtree(Path(tmp) / name, ignore_errors=True)

        with engine_process(args.engine, model) as endpoint:
            cli = [str(Path(sys.executable).parent / "llmdoctor")]
            if not Path(cli[0]).exists():
                cli = [sys.executable, "-m", "doctor"]
            fetch = [sys.executable, "-c", STDLIB_FETCH, f"http://{endpoint}"]
            times = interleaved({"stdlib": [*fetch, *PATHS[args.engine]], "stdlib-metrics": [*fetch, "/metrics"],
                                 "text": [*cli, "check", "--endpoint", endpoint],
                                 "json": [*cli, "check", "--endpoint", endpoint, "--format", "json"]}, args.runs, env,
                                before=forget if args.cold else None)
            if args.cold:
                forget()
            doc = json.loads(subprocess.run([*cli, "check", "--endpoint", endpoint, "--format", "json"],
                                            capture_output=True, text=True, env=env, cwd=ROOT).stdout)
            if args.cold:
                forget()
            imports = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", "check", "--endpoint",
                                      endpoint], capture_output=True, text=True, env=env, cwd=ROOT).stderr
            split = phases(endpoint)
            counts = {name: instructions(cmd, env) for name, cmd in
                      (("stdlib", [*fetch, *PATHS[args.engine]]), ("stdlib-metrics", [*fetch, "/metrics"]),
                       ("text", [*cli, "check", "--endpoint", endpoint]),
                       ("json", [*cli, "check", "--endpoint", endpoint, "--format", "json"]))} \
                if args.callgrind else {}
    resolved = doc.get("facts", {}).get("model.resolved_from", {})
    print(f"{args.engine} replay server (an engine-shaped process), {args.runs} interleaved runs of fresh processes "
          f"(bytecode cached{', HF cache and memo emptied before each' if args.cold else ''}); min / median / max")
    print(f"  model: {model} -> resolved from {resolved.get('value')} ({resolved.get('source')}) "
          f"{doc.get('errors', {}).get('model', '')}; huggingface_hub imported: "
          f"{'yes' if 'huggingface_hub' in imports else 'no'}")
    print(f"  stdlib fetch of {', '.join(PATHS[args.engine])}: {spread(times['stdlib'], 1000)} ms")
    print(f"  stdlib fetch of /metrics alone: {spread(times['stdlib-metrics'], 1000)} ms")
    for name, label in (("text", "check --endpoint"), ("json", "check --endpoint --format json")):
        ratios = [ours / ref for ours, ref in zip(times[name], times["stdlib"], strict=True)]
        alone = [ours / ref for ours, ref in zip(times[name], times["stdlib-metrics"], strict=True)]
        print(f"  llmdoctor {label:32s} {spread(times[name], 1000)} ms, ÷ stdlib {spread(ratios, fmt='.2f')}, "
              f"÷ /metrics alone {spread(alone, fmt='.2f')}")
    if counts and all(counts.values()):
        print(f"  instructions: stdlib fetch {counts['stdlib'] / 1e6:.0f} M, of /metrics alone "
              f"{counts['stdlib-metrics'] / 1e6:.0f} M; check --endpoint {counts['text'] / 1e6:.0f} M "
              f"(÷ stdlib {counts['text'] / counts['stdlib']:.2f}, ÷ /metrics alone "
              f"{counts['text'] / counts['stdlib-metrics']:.2f}), --format json {counts['json'] / 1e6:.0f} M "
              f"(÷ {counts['json'] / counts['stdlib']:.2f} / {counts['json'] / counts['stdlib-metrics']:.2f})")
    print("  where llmdoctor's time goes (in-process, after imports):")
    for name, seconds in split:
        print(f"    {name:24s} {seconds * 1000:7.1f} ms")


if __name__ == "__main__":
    main()
