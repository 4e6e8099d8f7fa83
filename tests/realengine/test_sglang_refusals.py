"""Start-up refusals of a REAL SGLang 0.5.23: start the engine with the command, assert that it refuses and how,
then hand `llmdoctor lint` the exact command the engine ran and assert that it names the cause at critical.

SGLang parses its command line with argparse (sglang/srt/server_args.py:679-696 prepare_server_args, parse_args):
a flag it does not have (here vLLM's --max-model-len) and a parser name outside the registered choices
(server_args.py:367-385, choices=["auto"] + the registry) end it with exit status 2 before any model loads.
Each refusal costs ~20 s on 2 cores (SGLang's imports).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from realengine.conftest import EngineHarness
from realengine.sglang_server import SGLANG, VERSION, exec_command
from realengine.vllm_engine import findings, llmdoctor

pytestmark = pytest.mark.realengine

# (flags added to the working CPU command, what SGLang prints, the cause lint must name)
REFUSALS = {
    "vllm-flag": (["--max-model-len", "512"], "error: unrecognized arguments: --max-model-len 512",
                  "flag-from-other-engine"),
    "unknown-tool-parser": (["--tool-call-parser", "qwen_tools_v9"],
                            "error: argument --tool-call-parser: invalid choice: 'qwen_tools_v9'",
                            "invalid-flag-value"),
    "unknown-reasoning-parser": (["--reasoning-parser", "nope_v9"],
                                 "error: argument --reasoning-parser: invalid choice: 'nope_v9'",
                                 "invalid-flag-value"),
}


@pytest.fixture(scope="module", autouse=True)
def _wall_time(request: pytest.FixtureRequest) -> Iterator[None]:
    start = time.monotonic()
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"real SGLang {VERSION} ({request.module.__name__}): {time.monotonic() - start:.0f} s")


@pytest.mark.parametrize("case", list(REFUSALS))
def test_sglang_refuses_and_lint_names_the_cause(engines: EngineHarness, case: str) -> None:
    flags, message, cause = REFUSALS[case]
    refusal = engines.refusal(SGLANG, flags, timeout=120)
    assert refusal.returncode == 2, refusal.log[-3000:]
    assert "sglang serve: " + message in refusal.log, refusal.log[-3000:]
    assert "Uvicorn running" not in refusal.log and "fired up" not in refusal.log

    argv = exec_command(refusal.log)
    assert argv[1:3] == ["-m", "sglang.launch_server"] and argv[-len(flags):] == flags
    result = llmdoctor("lint", "--format", "json", "--engine-version", VERSION, "--", *argv)
    assert result.returncode == 1, result.stderr
    found = findings(json.loads(result.stdout))
    assert cause in found, sorted(found)
    assert found[cause]["severity"] == "critical"
    assert found[cause]["symptom"] == "launch-failure"
    # what lint quotes is what the engine refused
    assert flags[0] in json.dumps(found[cause]["evidence"])
