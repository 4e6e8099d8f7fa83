"""Every number a user hands over is checked against one table (doctor/bounds.py) on every input path — flags,
snapshots, targets files, manifests, MCP arguments — and an implausible one (1e300, NaN, -5, twenty digits) is
one line naming where it came from, exit 2: never an OverflowError (exit 4), never "817124146124115389972480
PiB" (issue 23, Numbers). Property tests run the real CLI entry point in-process over hostile values."""

from __future__ import annotations

import contextlib
import io
import json
import math
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doctor.bounds import BOUNDS, problem

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
SNAPSHOT = ROOT / "doctor" / "examples" / "snapshots" / "vllm-kv-full.json"

#: Values around every edge: huge, tiny, negative, non-finite, twenty-digit integers, and plain ones.
HOSTILE = st.one_of(
    st.sampled_from([1e300, 1e308, -5, 0, -0.0, float("nan"), float("inf"), 10**20, 99999999999999999999, 1e30,
                     0.5, 1, 7, 32768, 65535, 65536, 1e-300]),
    st.integers(min_value=-10**25, max_value=10**25),
    st.floats(allow_nan=True, allow_infinity=True),
)


def cli(*args: str) -> tuple[int, str, str]:
    """`llmdoctor ARGS` through the real entry point (doctor.cli.main.run), in this process."""
    from doctor.cli.main import run

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["llmdoctor", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = run()
    finally:
        sys.argv = argv
    return rc, out.getvalue(), err.getvalue()


def refused_or_accepted(kind: str, value: object, rc: int, err: str, names: str) -> None:
    """The property: exit 2 with one line naming the input when the value is implausible; otherwise never exit 4
    and never a refusal of the number itself."""
    assert rc != 4 and "Traceback" not in err and "internal error" not in err, err
    if problem(kind, value) is not None:
        assert rc == 2, (kind, value, rc, err)
        assert err.count("\n") == 1 and names in err, err
    else:
        assert "out of range" not in err and "finite" not in err, err


def _text(value: object) -> str:
    return repr(value) if isinstance(value, float) else str(value)


@pytest.mark.parametrize("flag, kind", [("--users", "users"), ("--rps", "rps"), ("--context", "context")])
@SETTINGS
@given(value=HOSTILE)
def test_plan_flags(flag, kind, value):
    if flag == "--context" and not (isinstance(value, int) and value > 0):
        return  # --context reads a token count (32k); other spellings are refused by its parser
    rc, _out, err = cli("plan", "example:seed-gqa-27b", "--gpu", "H100:1", flag, _text(value), "--format", "json")
    if rc == 2 and "cannot read" in err:  # a spelling click's float/int or the token parser refuses: fine
        return
    if kind == "rps" and not problem("rps", value):  # Little's law: the users it implies are bounded too
        from doctor.plan.rules import rules

        users = max(1, math.ceil(value * rules()["request_seconds"]))
        if problem("users", users):
            assert rc == 2 and "concurrent requests" in err and err.count("\n") == 1, err
            return
    refused_or_accepted(kind, value, rc, err, flag)


@SETTINGS
@given(value=HOSTILE)
def test_plan_request_seconds(value):
    rc, _out, err = cli("plan", "example:seed-gqa-27b", "--gpu", "H100:1", "--rps", "1", "--request-seconds",
                        _text(value), "--format", "json")
    if not problem("request_seconds", value) and problem("users", max(1, math.ceil(value))):
        assert rc == 2 and "concurrent requests" in err, err
        return
    refused_or_accepted("request_seconds", value, rc, err, "--request-seconds")


@pytest.mark.parametrize("flag, kind", [("--users", "users"), ("--temperature", "temperature")])
@SETTINGS
@given(value=HOSTILE)
def test_lint_flags(flag, kind, value):
    if kind == "users" and isinstance(value, float):
        return  # an integer option: click refuses 1.5 as "not a valid integer"
    rc, _out, err = cli("lint", "--offline", flag, _text(value), "vllm serve /models/m", "--format", "json")
    refused_or_accepted(kind, value, rc, err, flag)


@pytest.mark.parametrize("command", [("plan", "example:seed-gqa-27b", "--gpu", "H100:1"),
                                     ("inspect", "example:seed-gqa-27b"), ("check", "--gpu", "H100")])
@SETTINGS
@given(value=st.floats(min_value=1e-3, allow_nan=False, allow_infinity=False) | st.sampled_from([1e300, 1e30, 1e4]))
def test_gpu_mem_flag(command, value):
    rc, _out, err = cli(*command, "--gpu-mem", f"{value!r}GB", "--format", "json")
    assert rc != 4 and "internal error" not in err, err
    size = value * 1e9
    if not BOUNDS["gpu_mem"].low <= size <= BOUNDS["gpu_mem"].high:
        assert rc == 2 and err.count("\n") == 1 and "--gpu-mem" in err, err
    else:
        assert "not a GPU's memory" not in err


@pytest.mark.parametrize("flag, kind", [("--timeout", "timeout"), ("--until", "unix_time")])
@SETTINGS
@given(value=HOSTILE)
def test_report_flags(flag, kind, value):
    """`report --until 1e300` overflowed the clock (exit 4), `--timeout nan` was taken: checked before Prometheus
    is asked (nothing listens on the port: a plausible value gets as far as "cannot reach", exit 3)."""
    rc, _out, err = cli("report", "--prometheus", "http://127.0.0.1:9", flag, _text(value), "--format", "json")
    refused_or_accepted(kind, value, rc, err, flag)
    if problem(kind, value) is None:
        assert rc == 3, err


#: Every flag read as a Prometheus duration (doctor/report/promql.py parse_duration), with a command that reads it.
DURATIONS = [("report", "--prometheus", "http://127.0.0.1:9", "--since"),
             ("report", "--prometheus", "http://127.0.0.1:9", "--trend"),
             ("rules", "--for"), ("rules", "--range"), ("rules", "--report", "--every")]


@pytest.mark.parametrize("command", DURATIONS, ids=lambda c: " ".join((c[0], c[-1])))
@SETTINGS
@given(count=st.integers(min_value=1, max_value=10**25) | st.sampled_from([1, 10**8, 10**20]),
       unit=st.sampled_from(["ms", "s", "m", "h", "d", "w", "y"]))
def test_duration_flags(command, count, unit):
    """A window of 10^20 days overflowed the clock (exit 4); one past the bound is refused naming its flag."""
    from doctor.report.promql import _UNITS

    rc, _out, err = cli(*command, f"{count}{unit}")
    if command[-1] == "--trend" and rc == 2 and "two --step" in err:
        return  # a trend shorter than two steps: refused by its own rule, not this one
    refused_or_accepted("duration", count * _UNITS[unit], rc, err, command[-1])


def test_serve_timeout_is_bounded_too():
    """click's FloatRange lets NaN through (every comparison with it is false): serve ran with --timeout nan."""
    from conftest import run_cli  # a child with a deadline: a serve that takes the value listens until killed

    done = run_cli("serve", "--listen", "127.0.0.1:0", "--out-dir", "/nonexistent", "--timeout", "nan", timeout=30)
    assert done.returncode == 2 and done.stderr == "llmdoctor: --timeout: expected a finite number, got nan\n"
    done = run_cli("serve", "--listen", "127.0.0.1:0", "--out-dir", "/nonexistent", "--dedup-window",
                   "99999999999999999999d", timeout=30)
    assert done.returncode == 2 and "--dedup-window: 8.64e+24 is out of range" in done.stderr, done.stderr


def _snapshot(tmp_path: Path, change) -> Path:
    doc = json.loads(SNAPSHOT.read_text())
    change(doc)
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(doc))  # NaN and Infinity as Python's json writes them, and reads them back
    return path


@pytest.mark.parametrize("key, kind, change", [
    ("extra.inputs.workload.context", "context", lambda d, v: d["extra"]["inputs"]["workload"].update(context=v)),
    ("extra.inputs.workload.users", "users", lambda d, v: d["extra"]["inputs"]["workload"].update(users=v)),
    ("extra.inputs.workload.temperature", "temperature",
     lambda d, v: d["extra"]["inputs"]["workload"].update(temperature=v)),
    ("target.port", "port", lambda d, v: d["target"].update(port=v)),
    ("probes.server.elapsed_ms", "elapsed_ms", lambda d, v: d["probes"]["server"].update(elapsed_ms=v)),
])
@SETTINGS
@given(value=HOSTILE)
def test_snapshot_numbers(tmp_path_factory, key, kind, change, value):
    if kind in ("context", "users", "port") and isinstance(value, float) and not problem(kind, value):
        return  # a whole float (7.0) the type check refuses as "expected a number" of its own: not this property
    path = _snapshot(tmp_path_factory.mktemp("s"), lambda d: change(d, value))
    rc, out, err = cli("check", "--snapshot", str(path), "--format", "json")
    refused_or_accepted(kind, value, rc, err, key)
    if rc in (0, 1):
        json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))


@SETTINGS
@given(count=st.integers(min_value=-10**22, max_value=10**22) | st.sampled_from([1, 8, 100_000, 100_001, 10**20]),
       memory=st.floats(min_value=1e-3, allow_nan=False, allow_infinity=False) | st.sampled_from([1e300, 1e30, 80]))
def test_snapshot_gpu(tmp_path_factory, count, memory):
    """A snapshot's recorded --gpu and --gpu-mem are read as the flags are, the refusal naming the snapshot's key."""
    def change(doc):
        doc["extra"]["inputs"].update(gpu=f"H100:{count}", gpu_mem=f"{memory!r}GB")

    path = _snapshot(tmp_path_factory.mktemp("g"), change)
    rc, out, err = cli("check", "--snapshot", str(path), "--format", "json")
    assert rc != 4 and "internal error" not in err, err
    if not BOUNDS["gpu_mem"].low <= memory * 1e9 <= BOUNDS["gpu_mem"].high:
        assert rc == 2 and err.count("\n") == 1 and "extra.inputs.gpu_mem" in err, err
    elif count >= 0 and problem("gpu_count", count):  # "H100:-1" reads as a GPU name the catalog lacks
        assert rc == 2 and err.count("\n") == 1 and "extra.inputs.gpu" in err, err
    elif count > 0:
        assert rc in (0, 1), err


@pytest.mark.parametrize("key", ["measured", "expected", "tp"])
@SETTINGS
@given(value=HOSTILE)
def test_calibration_file_numbers(tmp_path_factory, monkeypatch, key, value):
    """The user's calibration file (doctor/model/calibration.py) is read by plan, lint and check: an edited or
    damaged entry (expected 0 divided by zero, exit 4; 10^23 printed a ±10^20 % band) is one line naming the
    file and the entry's key, exit 2."""
    folder = tmp_path_factory.mktemp("cal")
    run = {"models": ["seed-gqa-27b"], "gpu": "H100 80GB", "engine": "vllm", "version": "0.11.0", "tp": 1,
           "measured": 200000, "expected": 198000}
    run[key] = value
    (folder / "calibration.json").write_text(json.dumps({"schema": "llmdoctor.calibration/1", "runs": [run]}))
    monkeypatch.setenv("LLMDOCTOR_DATA_DIR", str(folder))
    kind = "gpu_count" if key == "tp" else "kv_tokens"
    for args in (("calibrate", "show"), ("plan", "example:seed-gqa-27b", "--gpu", "H100 80GB:1", "--format", "json")):
        rc, _out, err = cli(*args)
        assert rc != 4 and "Traceback" not in err and "internal error" not in err, err
        ratio_ok = key == "tp" or 1 / 4 <= (value / 198000 if key == "measured" else 200000 / value) <= 4 \
            if isinstance(value, (int, float)) and not problem(kind, value) else True
        if problem(kind, value) is not None or not ratio_ok:
            assert rc == 2 and err.count("\n") == 1 and f"runs[0].{key}" in err and str(folder) in err, err
        else:
            assert rc in (0, 1), err


@pytest.mark.parametrize("where", ["endpoint", "gpu"])
@SETTINGS
@given(value=st.integers(min_value=-10**22, max_value=10**22) | st.sampled_from([0, 1, 8, 65535, 65536, 10**20]))
def test_targets_file_numbers(tmp_path_factory, where, value):
    path = tmp_path_factory.mktemp("t") / "fleet.yaml"
    entry = f"endpoint: 127.0.0.1:{value}" if where == "endpoint" else f"endpoint: 127.0.0.1:9\n    gpu: H100:{value}"
    path.write_text(f"targets:\n  - {entry}\n")
    rc, _out, err = cli("check", "--targets", str(path), "--timeout", "0.2")
    assert rc != 4 and "internal error" not in err, err
    kind = "port" if where == "endpoint" else "gpu_count"
    if where == "gpu" and value < 0:
        return  # "H100:-1" reads as a GPU name the catalog lacks ("did you mean H100"), not as a count
    if problem(kind, value):
        assert rc == 2 and err.count("\n") == 1 and f"targets[0]: {where}" in err, err
    else:
        assert rc == 3, err  # nothing listens on the port: checked, and unreachable


@SETTINGS
@given(value=st.integers(min_value=-10**22, max_value=10**22) | st.sampled_from([1, 8, 100_000, 100_001, 10**20]))
def test_manifest_gpu_count(tmp_path_factory, value):
    path = tmp_path_factory.mktemp("m") / "deploy.yaml"
    path.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  template:\n    spec:\n"
                    "      containers:\n        - name: vllm\n          image: vllm/vllm-openai:v0.11.0\n"
                    "          args: [--model, /models/m]\n"
                    f"          resources:\n            limits: {{nvidia.com/gpu: {value}}}\n")
    rc, _out, err = cli("lint", "--offline", "--manifest", str(path), "--format", "json")
    assert rc != 4 and "internal error" not in err, err
    if value >= 1 and problem("gpu_count", value):
        assert rc == 2 and err.count("\n") == 1 and "nvidia.com/gpu" in err, err


def test_mcp_arguments_reach_the_same_checks():
    """MCP tools pass their arguments to the CLI's flags: the same refusal comes back as the tool's error."""
    pytest.importorskip("mcp", reason="the mcp SDK is the [mcp] extra")
    from test_mcp import _is_error, _session

    _tools, results = _session([
        ("plan", {"config": "example:seed-gqa-27b", "gpu": "H100:1", "users": 99999999999999999999}),
        ("lint", {"command": "vllm serve /models/m", "users": 99999999999999999999}),
        ("inspect", {"config": "example:seed-gqa-27b", "context": "99999999999999999999"}),
        ("plan", {"config": "example:seed-gqa-27b", "gpu": "H100:1", "users": 8}),
    ])
    for result in results[:3]:
        assert _is_error(result)
        text = result.content[0].text
        assert "out of range" in text and ("--users" in text or "--context" in text), text
    assert not _is_error(results[3])


#: Every number an MCP tool takes (doctor/serve/mcp.py), with the rest of a call, the bound it reaches and the
#: names a refusal may give (the SDK's own validation names the argument; the CLI's names the flag).
MCP_NUMBERS = [
    ("plan", {"config": "example:seed-gqa-27b", "gpu": "H100:1"}, "users", "users", ("users", "--users")),
    ("plan", {"config": "example:seed-gqa-27b", "gpu": "H100:1"}, "context", "context", ("context", "--context")),
    ("inspect", {"config": "example:seed-gqa-27b"}, "context", "context", ("context", "--context")),
    ("lint", {"command": "vllm serve /models/m"}, "users", "users", ("users", "--users")),
    ("lint", {"command": "vllm serve /models/m"}, "context", "context", ("context", "--context")),
    ("check", {"snapshot": "example:vllm-kv-full"}, "timeout_s", "timeout", ("timeout_s", "--timeout")),
]


@pytest.mark.parametrize("tool, rest, name, kind, says", MCP_NUMBERS, ids=lambda v: v if isinstance(v, str) else "")
@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=HOSTILE)
def test_mcp_arguments(tool, rest, name, kind, says, value):
    """The MCP server's own call path (argument validation, then the CLI child): an implausible number is the
    tool's error naming the argument or its flag, never an internal error; the tighter ranges the tools declare
    (check's timeout_s 0.05-120 s, like the CLI's) refuse more, never less."""
    pytest.importorskip("mcp", reason="the mcp SDK is the [mcp] extra")
    import asyncio

    from doctor.serve.mcp import ToolError, server

    argument = str(value) if name == "context" and tool in ("plan", "inspect") else value
    try:
        asyncio.run(server.call_tool(tool, {**rest, name: argument}))
        error = None
    except ToolError as exc:
        error = str(exc)
    assert error is None or ("internal error" not in error and "Traceback" not in error), error
    if problem(kind, value) is not None:
        assert error is not None and any(word in error for word in says), (tool, name, value, error)
    elif error is not None:  # refused for another reason: the argument's own declared range or type, named
        assert any(word in error for word in says), (tool, name, value, error)


def test_the_bounds_table_is_sane():
    for kind, bound in BOUNDS.items():
        assert problem(kind, bound.high) is None and problem(kind, bound.high * 10) is not None, kind
        assert problem(kind, math.nan) is not None and problem(kind, -1) is not None, kind


def test_mcp_server_reports_its_version():
    pytest.importorskip("mcp", reason="the mcp SDK is the [mcp] extra")
    import asyncio

    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from doctor import __version__

    async def info() -> object:
        params = StdioServerParameters(command=sys.executable, args=["-m", "doctor", "mcp"], cwd=str(ROOT))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            result = await session.initialize()
            return getattr(result, "server_info", None) or result.serverInfo

    server_info = asyncio.run(asyncio.wait_for(info(), timeout=60))
    assert server_info.name == "llmdoctor" and server_info.version == __version__ and __version__


@pytest.mark.parametrize("args", [("inspect", "example:seed-gqa-27b", "--format", "json"),
                                  ("plan", "example:seed-gqa-27b", "--gpu", "H100:1"),
                                  ("check", "--snapshot", "example:vllm-kv-full")])
def test_a_full_disk_is_the_users_one_line_exit_2(args):
    """``> /dev/full``: the write fails with ENOSPC — where the output goes is full, not an internal error."""
    import subprocess

    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "doctor", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr == "llmdoctor: cannot write the output: No space left on device\n"
