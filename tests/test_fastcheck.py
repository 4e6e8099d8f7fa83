"""`check` without click (doctor/cli/fastcheck.py): the command lines it reads build exactly what click builds from
them, the ones it cannot read go to click, and a real run over loopback answers the same either way."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT, run_cli
from hypothesis import given, settings
from hypothesis import strategies as st
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor.cli import fastcheck
from doctor.cli.argtable import CHECK
from doctor.cli.check_cmd import check

SCENARIOS = ROOT / "fixtures" / "scenarios"

#: what a user types after `check`: every option the table reads (valid and invalid values), options it leaves
#: to click (converted values, paths), help, the end-of-options marker, unknown and malformed options
_TOKENS = [*CHECK["options"], "--timeout", "--sample", "--pid", "--snapshot", "--targets", "--metrics", "--users",
           "--context", "--temperature", "--playbooks", "--manifest", "--no-such-flag", "--help", "-h", "--", "-",
           "-vv", "-v=1", "--format=json", "--format=yaml", "--fail-on=never", "--endpoint=", "--active=1"]
_VALUES = ["localhost:8000", "json", "text", "markdown", "critical", "never", "bogus", "3", "0.5", "-1",
           "tools-ignored", "/tmp/x.log", "--help", "hf_SECRETvalue"]
argv = st.lists(st.sampled_from(_TOKENS + _VALUES), max_size=8)


def _click_params(args: list[str]) -> dict | None:
    """What click hands the command for ``args``, or None where click refuses the line."""
    import click

    try:
        return check.make_context("check", list(args)).params
    except (click.exceptions.ClickException, click.exceptions.Exit):
        return None


@settings(max_examples=400, deadline=None)
@given(argv)
def test_a_line_the_fast_path_reads_is_read_as_click_reads_it(args: list[str]) -> None:
    fast = fastcheck.parse(args)
    if fast is None:
        return  # left to click, which reads it (or says what is wrong with it) as before
    assert fast == _click_params(args), args


@pytest.mark.parametrize("args", [
    ["--endpoint", "localhost:8000"], ["localhost:8000", "--format", "json", "-v"],
    ["--endpoint=127.0.0.1:30000", "--symptom", "tools-ignored", "--symptom", "hung", "--fail-on", "never"],
    ["--log", "-", "--offline", "--config", "Qwen/Qwen3-8B", "--gpu", "H100:8", "--active", "--model", "m"],
    [],
], ids=" ".join)
def test_the_runbook_lines_take_the_fast_path_and_build_the_same_objects(args: list[str]) -> None:
    fast = fastcheck.parse(args)
    assert fast is not None and fast == _click_params(args)
    built = fastcheck.build(fast)
    assert set(built) == {"live", "active", "scope", "given", "workload", "playbooks", "output"}
    assert built["output"].fmt == fast["fmt"] and built["playbooks"].symptoms == fast["symptoms"]


@pytest.mark.parametrize("args", [
    ["--timeout", "5"], ["--snapshot", "s.json"], ["--help"], ["--format", "yaml"], ["a", "b"], ["--endpoint"],
    ["--", "x"], ["-vv"], ["--no-such-flag"], ["--verbose=1"], ["--endpoint", "--help"],
], ids=" ".join)
def test_what_the_table_cannot_read_is_left_to_click(args: list[str]) -> None:
    assert fastcheck.parse(args) is None


def test_every_flag_check_has_is_in_the_table_or_left_to_click() -> None:
    """The table is click's definition (tools/gen_help.py, checked by test_startup): every flag click knows is
    either read here or absent on purpose, because click converts or checks its value."""
    import click

    converted = {opt for p in check.params if isinstance(p, click.Option) for opt in p.opts} - set(CHECK["options"])
    assert converted == {"--timeout", "--sample", "--pid", "--snapshot", "--targets", "--command-file", "--metrics",
                         "--server-info", "--nvidia-smi", "--client-output", "--manifest", "--context", "--users",
                         "--temperature", "--playbooks"}


def _routes() -> dict[str, Response]:
    return {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
            "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
            "/metrics": Response(file=SCENARIOS / "sglang_dp2_tp4_metrics.prom", content_type=PROM)}


def _imports(*args: str) -> set[str]:
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", *args], capture_output=True, text=True,
                         cwd=ROOT, env={**os.environ, "NO_COLOR": "1"}, timeout=60).stderr
    return {m.group(1).split(".")[0] for m in re.finditer(r"^import time:.*\|\s*(\S+)\s*$", err, re.M)}


def _without_timings(doc: dict) -> dict:
    """The document less what differs between two runs: timings, and the process tree the server shares with the
    test (it lists llmdoctor's own process)."""
    doc.pop("elapsed_ms", None)
    for probe in doc.get("probes", []):
        probe.pop("elapsed_ms", None)
    doc["facts"].pop("process.tree", None)
    return doc


def test_a_live_check_runs_without_click_and_answers_as_click_does() -> None:
    """Over loopback against a replayed SGLang: the fast path imports no click (nor typing); the same line with a flag
    only click reads (``--timeout 2``, the default) gives the same document and exit code."""
    with LocalServer(_routes()) as srv:
        fast_imports = _imports("check", "--endpoint", srv.endpoint, "--offline")
        assert "click" not in fast_imports
        # typing is ~13 M instructions: the modules a check imports name its types only under TYPE_CHECKING
        assert "typing" not in fast_imports | _imports("check", "--endpoint", srv.endpoint, "--offline", "--format",
                                                       "json")
        assert "click" in _imports("check", "--endpoint", srv.endpoint, "--offline", "--timeout", "2")
        fast = run_cli("check", "--endpoint", srv.endpoint, "--offline", "--format", "json")
        slow = run_cli("check", "--endpoint", srv.endpoint, "--offline", "--format", "json", "--timeout", "2")
    assert fast.returncode == slow.returncode and fast.returncode in (0, 1)
    assert _without_timings(json.loads(fast.stdout)) == _without_timings(json.loads(slow.stdout))


def test_an_unreachable_endpoint_on_the_fast_path_is_one_line_and_exit_3() -> None:
    with LocalServer({}) as srv:
        port = srv.port  # closed once the server is gone
    result = run_cli("check", "--endpoint", f"127.0.0.1:{port}")
    assert result.returncode == 3
    assert [line for line in result.stderr.splitlines() if line.startswith("llmdoctor:")] == [
        f"llmdoctor: http://127.0.0.1:{port}: could not be examined: "
        + result.stderr.split("could not be examined: ", 1)[1].splitlines()[0]]
    assert "Traceback" not in result.stderr


def test_bad_input_on_the_fast_path_is_one_line_and_exit_2() -> None:
    result = run_cli("check")  # nothing to check: the same InputError click's path raises
    assert result.returncode == 2 and result.stderr.startswith("llmdoctor: nothing to check")


def test_an_ascii_terminal_gets_utf8_not_a_crash() -> None:
    """PYTHONIOENCODING=ascii: what llmdoctor prints has '·' and '—'; written as UTF-8 with replacement (as click's
    echo does), not an internal error."""
    with LocalServer(_routes()) as srv:
        result = subprocess.run([sys.executable, "-m", "doctor", "check", "--endpoint", srv.endpoint, "--offline"],
                                capture_output=True, cwd=ROOT, timeout=60,
                                env={**os.environ, "PYTHONIOENCODING": "ascii", "NO_COLOR": "1"})
    assert result.returncode in (0, 1), result.stderr
    assert "llmdoctor check ·".encode() in result.stdout and b"\x1b[" not in result.stdout
