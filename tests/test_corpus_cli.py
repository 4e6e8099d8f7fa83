"""Every command that reads a file or text, over the corpus of nasty inputs (tests/corpus), as real subprocesses.

For each (command, input): exit 2 with one stderr line naming the input — or 0/1 where the input is legitimately
usable (tests/corpus/corpus.yaml says which) — no traceback, no internal error (exit 4), and the child's wall
time and peak memory (its own rusage, via tests/support/measure.py) under fixed bounds. The big inputs (100 MB, 100k nesting,
high cardinality) are generated at test time; sizes are capped before parsing, so they fail in milliseconds.
Children run with bytecode caching on (as an installed llmdoctor does) and a few at a time, to stay fast.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml
from conftest import ROOT
from support.httpserver import JSON, PROM, LocalServer, Response
from support.measure import Run, run_measured

CORPUS = ROOT / "tests" / "corpus"
MANIFEST = {name: spec for name, spec in yaml.safe_load((CORPUS / "corpus.yaml").read_text(encoding="utf-8")).items()
            if not name.startswith("_")}
SCENARIOS = ROOT / "fixtures" / "scenarios"
#: Bounds per child: generous for a loaded 2-core CI box (a typical run is ~0.3 s and 30-60 MB).
TIME_LIMIT_S = 20.0
MEMORY_LIMIT_KB = 200 * 1024
MAX_ARG_BYTES = 100_000  # one argv word (Linux caps a single argument at 128 KiB)
LINT_COMMAND = "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2"


# ------------------------------------------------------------------------------------------ generated inputs
def _generate(directory: Path) -> dict[str, Path]:
    made = {}
    made["deep.json"] = directory / "deep.json"
    made["deep.json"].write_text("[" * 100_000)
    made["big.prom"] = directory / "big.prom"
    line = b'vllm:num_requests_running{engine="0",model_name="m"} 1\n'
    with made["big.prom"].open("wb") as fh:
        chunk = line * ((1 << 20) // len(line) + 1)
        while fh.tell() < 100 * 10**6:
            fh.write(chunk)
    made["high-cardinality.prom"] = directory / "high-cardinality.prom"
    made["high-cardinality.prom"].write_text("".join(
        f'vllm:num_requests_running{{engine="{i}",model_name="m"}} 1\n' for i in range(50_000)))
    made["huge-label-set.prom"] = directory / "huge-label-set.prom"
    labels = ",".join(f'l{i}="v{i}"' for i in range(50_000))
    made["huge-label-set.prom"].write_text(f"vllm:num_requests_running{{{labels}}} 1\nvllm:kv_cache_usage_perc 0.5\n")
    made["snapshot-huge-raw.json"] = directory / "snapshot-huge-raw.json"
    import json

    info = json.loads((SCENARIOS / "sglang_server_info.json").read_text())
    info["launch_command"] = "python3 -m sglang.launch_server --model-path m " + "--enable-metrics " * 1_200_000
    snap = {"schema": "llmdoctor.snapshot/1", "target": {"scheme": "http", "host": "127.0.0.1", "port": 30000},
            "probes": {"server": {"ok": True, "error": None, "elapsed_ms": 1.0, "raw": {
                "endpoint": "http://127.0.0.1:30000",
                "requests": {"/server_info": {"url": "x", "status": 200, "content_type": JSON, "json": info}}}}},
            "extra": {}}
    made["snapshot-huge-raw.json"].write_text(json.dumps(snap))
    return made


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    generated = _generate(tmp_path_factory.mktemp("generated"))
    paths = {}
    for name, spec in MANIFEST.items():
        paths[name] = generated[name] if spec.get("generated") else CORPUS / name
        assert paths[name].is_file(), name
    return paths


@pytest.fixture(scope="module")
def endpoint() -> str:
    """A scenario SGLang server for `snapshot` to record (its file inputs are what is under test)."""
    routes = {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
              "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
              "/model_info": Response(file=SCENARIOS / "sglang_model_info.json", content_type=JSON),
              "/metrics": Response(file=SCENARIOS / "sglang_dp2_tp4_metrics.prom", content_type=PROM)}
    with LocalServer(routes) as srv:
        yield srv.endpoint


# ------------------------------------------------------------------------------------------ commands
Build = Callable[[Path, Path, str], tuple[list, Path | None] | None]


def _as_arg(path: Path) -> bytes | None:
    data = path.read_bytes() if path.stat().st_size <= MAX_ARG_BYTES else b""
    return data if data and b"\x00" not in data else None


def _arg(make: Callable[[bytes], list]) -> Build:
    def build(path: Path, _tmp: Path, _ep: str) -> tuple[list, Path | None] | None:
        data = _as_arg(path)
        return None if data is None else (make(data), None)
    return build


def _playbook_dir(path: Path, tmp: Path, _ep: str) -> tuple[list, Path | None]:
    directory = tmp / "playbooks"
    directory.mkdir()
    (directory / "x.yaml").symlink_to(path)
    return ["playbook", "validate", str(directory)], None


#: command id -> (argv builder, substrings one of which the one-line error must contain besides the file name)
COMMANDS: dict[str, tuple[Build, tuple[str, ...]]] = {
    "inspect": (lambda p, t, e: (["inspect", str(p)], None), ()),
    "plan": (lambda p, t, e: (["plan", str(p), "--gpu", "H200:8"], None), ()),
    "lint-arg": (_arg(lambda d: ["lint", d]), ("launch command",)),
    "lint-file": (lambda p, t, e: (["lint", "--file", str(p)], None), ("launch command",)),
    "lint-stdin": (lambda p, t, e: (["lint"], p), ("standard input", "launch command", "no command")),
    "lint-config": (lambda p, t, e: (["lint", LINT_COMMAND, "--config", str(p)], None), ()),
    "check-command": (_arg(lambda d: ["check", "--command", d]), ("launch command",)),
    "check-command-file": (lambda p, t, e: (["check", "--command-file", str(p)], None), ("launch command",)),
    "check-config": (lambda p, t, e: (["check", "--config", str(p)], None), ()),
    "check-metrics": (lambda p, t, e: (["check", "--metrics", str(p)], None), ()),
    "check-server-info": (lambda p, t, e: (["check", "--server-info", str(p)], None), ()),
    "check-nvidia-smi": (lambda p, t, e: (["check", "--nvidia-smi", str(p)], None), ()),
    "check-snapshot": (lambda p, t, e: (["check", "--snapshot", str(p)], None), ()),
    "check-targets": (lambda p, t, e: (["check", "--targets", str(p), "--timeout", "0.5"], None), ()),
    "lint-manifest": (lambda p, t, e: (["lint", "--manifest", str(p)], None), ()),
    "check-manifest": (lambda p, t, e: (["check", "--manifest", str(p)], None), ()),
    "playbook-validate": (_playbook_dir, ()),
    "snapshot-config": (lambda p, t, e: (["snapshot", "--endpoint", e, "--config", str(p), "-o", str(t / "s.json"),
                                          "--timeout", "2"], None), ()),
    "snapshot-command-file": (lambda p, t, e: (["snapshot", "--endpoint", e, "--command-file", str(p), "-o",
                                                str(t / "s.json"), "--timeout", "2"], None), ("launch command",)),
}


def _cases(command: str) -> list[str]:
    return [name for name, spec in MANIFEST.items() if spec["commands"] == "all" or command in spec["commands"]]


def _check(command: str, name: str, path: Path, run: Run) -> list[str]:
    """What is wrong with one run (empty: nothing)."""
    problems = []
    fine = command in MANIFEST[name].get("fine_for", ())
    if run.timed_out or run.elapsed_s > TIME_LIMIT_S:
        problems.append(f"took {run.elapsed_s:.1f}s (limit {TIME_LIMIT_S}s)")
    if run.max_rss_kb > MEMORY_LIMIT_KB:
        problems.append(f"peak memory {run.max_rss_kb // 1024} MB (limit {MEMORY_LIMIT_KB // 1024} MB)")
    if "Traceback" in run.stderr + run.stdout or run.rc == 4:
        problems.append("crashed")
    if fine:
        if run.rc not in (0, 1) or not run.stdout.strip():
            problems.append(f"a usable input gave exit {run.rc}")
        return problems
    if run.rc != 2:
        problems.append(f"bad input gave exit {run.rc}, not 2")
    lines = run.stderr.strip().splitlines()
    if command == "playbook-validate":  # one problem per line, each naming the file, then the count
        if not lines or not lines[-1].endswith("problem(s)") or not all("x.yaml" in ln for ln in lines[:-1]):
            problems.append("validate's problems must each name the file")
    elif len(lines) != 1 or not lines[0].startswith("llmdoctor: "):
        problems.append("the error is not exactly one 'llmdoctor: ' line")
    elif not any(word in lines[0] for word in (path.name, "standard input", *COMMANDS[command][1])):
        problems.append("the error does not name the input")
    return problems


@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_over_the_corpus(command: str, inputs: dict[str, Path], endpoint: str,
                                 tmp_path: Path) -> None:
    build = COMMANDS[command][0]
    jobs = []
    for index, name in enumerate(_cases(command)):
        workdir = tmp_path / str(index)
        workdir.mkdir()
        built = build(inputs[name], workdir, endpoint)
        if built is not None:
            jobs.append((name, built))
    assert jobs, f"nothing in the corpus exercises {command}"
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda job: run_measured(job[1][0], stdin=job[1][1], timeout=TIME_LIMIT_S), jobs))
    failures = []
    for (name, _built), run in zip(jobs, runs, strict=True):
        problems = _check(command, name, inputs[name], run)
        known = MANIFEST[name].get("known", {}).get(command)
        if known and not problems:
            failures.append(f"{name}: the known defect is fixed: remove it from corpus.yaml ({known})")
        elif problems and not known:
            failures.append(f"{name}: {'; '.join(problems)}\n  {run.describe()}")
    assert not failures, "\n".join(failures)


def test_every_corpus_file_is_listed_and_every_listing_exists() -> None:
    committed = {p.name for p in CORPUS.iterdir() if p.name not in ("corpus.yaml", "README.md", ".gitattributes")}
    listed = {name for name, spec in MANIFEST.items() if not spec.get("generated")}
    assert committed == listed
    assert all(spec["commands"] == "all" or set(spec["commands"]) <= set(COMMANDS) for spec in MANIFEST.values())
    assert all(set(spec.get("fine_for", ())) <= set(COMMANDS) for spec in MANIFEST.values())
    assert sum(p.stat().st_size for p in CORPUS.iterdir()) < 64 * 1024  # small files only: big ones are generated


def test_check_command_file_stdin_is_capped_before_reading(inputs: dict[str, Path]) -> None:
    run = run_measured(["check", "--command-file", "-"], stdin=inputs["big.prom"])
    assert run.rc == 2 and "standard input" in run.stderr, run.describe()
    assert run.max_rss_kb < 100 * 1024, run.describe()


def test_lint_stdin_is_capped_before_reading(inputs: dict[str, Path]) -> None:
    run = run_measured(["lint"], stdin=inputs["big.prom"])
    assert run.rc == 2 and "standard input: larger than the 1 MiB limit" in run.stderr, run.describe()
    assert run.max_rss_kb < 100 * 1024, run.describe()


def test_dev_zero_and_a_pipe_are_capped(tmp_path: Path) -> None:
    """No size to stat: /dev/zero never ends and a FIFO's writer decides; both stop at the cap."""
    zero = run_measured(["check", "--metrics", "/dev/zero"])
    assert zero.rc == 2 and "/dev/zero: a character device, not a file" in zero.stderr, zero.describe()
    fifo = tmp_path / "scrape.prom"
    os.mkfifo(fifo)
    text = (SCENARIOS / "sglang_dp2_tp4_metrics.prom").read_bytes()

    def write() -> None:
        with open(fifo, "wb") as fh:
            fh.write(text)

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(write)
        piped = run_measured(["check", "--metrics", str(fifo), "--format", "json"])
    assert piped.rc in (0, 1) and '"metrics.engine"' in piped.stdout, piped.describe()


def test_bytecode_caches_stay_out_of_git() -> None:
    """The children above write __pycache__ (as an installed package has): it must be ignored."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    ignored = subprocess.run(["git", "check-ignore", "-q", "doctor/__pycache__/x.pyc"], cwd=ROOT)
    assert ignored.returncode == 0
