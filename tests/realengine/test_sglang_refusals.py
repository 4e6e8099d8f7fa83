"""Start-up refusals of a REAL SGLang 0.5.23: start the engine with the command, assert that it refuses and how,
then hand `llmdoctor lint` the exact command the engine ran and assert that it names the cause at critical.

SGLang parses its command line with argparse (sglang/srt/server_args.py:679-696 prepare_server_args, parse_args):
a flag it does not have (here vLLM's --max-model-len) and a parser name outside the registered choices
(server_args.py:367-385, choices=["auto"] + the registry) end it with exit status 2 before any model loads.
A context length above the model's is refused later, while the model config is read
(sglang/srt/configs/model_config.py:1291-1316): a ValueError, exit 1. Each refusal costs 20-40 s on 2 cores.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from conftest import SHARED_FIXTURES

from doctor.engines.sglang_maxlen import sglang_context_len
from realengine.conftest import EngineHarness, unavailable
from realengine.sglang_server import SGLANG, VERSION, exec_command
from realengine.vllm_engine import findings, llmdoctor

pytestmark = pytest.mark.realengine

# (flags added to the working CPU command, exit status, what SGLang prints, the cause lint must name)
REFUSALS = {
    "vllm-flag": (["--max-model-len", "512"], 2, "sglang serve: error: unrecognized arguments: --max-model-len 512",
                  "flag-from-other-engine"),
    "unknown-tool-parser": (["--tool-call-parser", "qwen_tools_v9"], 2,
                            "sglang serve: error: argument --tool-call-parser: invalid choice: 'qwen_tools_v9'",
                            "invalid-flag-value"),
    "unknown-reasoning-parser": (["--reasoning-parser", "nope_v9"], 2,
                                 "sglang serve: error: argument --reasoning-parser: invalid choice: 'nope_v9'",
                                 "invalid-flag-value"),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_sglang_refuses_and_lint_names_the_cause(engines: EngineHarness, case: str) -> None:
    flags, status, message, cause = REFUSALS[case]
    refusal = engines.refusal(SGLANG, flags, timeout=120)
    assert refusal.returncode == status, refusal.log[-3000:]
    assert message in refusal.log, refusal.log[-3000:]
    _lint_names(refusal.log, flags, cause)


def test_context_above_the_model_is_starting_then_refused(engines: EngineHarness) -> None:
    """Past argparse, while the model config is read: ~30 s of "starting" (check says so), then a ValueError."""
    flags = ["--context-length", "16384"]  # the tiny model's max_position_embeddings is 8192
    server = engines.launch(SGLANG, flags)
    deadline = time.monotonic() + 30
    while "sglang_serve.sh: exec" not in server.log and time.monotonic() < deadline:  # the engine's argv is set
        time.sleep(0.2)
    early = llmdoctor("check", "--endpoint", server.endpoint)
    status = server.wait_exit(120)
    assert early.returncode == 3, early.stdout + early.stderr
    assert f"the server is starting: process {server.pid}" in early.stderr, early.stderr
    assert status == 1, server.tail()
    assert ("ValueError: Warning: User-specified context_length (16384) is greater than the derived context_length "
            "(8192).") in server.log, server.tail()
    _lint_names(server.log, flags, "context-length-over-model-limit")
    # the engine's own log, handed over after the fact
    logged = llmdoctor("check", "--log", str(server.log_path), "--format", "json")
    named = findings(json.loads(logged.stdout))
    assert named["context-length-over-model-limit"]["severity"] == "critical", sorted(named)
    assert named["context-length-over-model-limit"]["confidence"] == "high"


def _lint_names(log: str, flags: list[str], cause: str) -> None:
    assert "Uvicorn running" not in log and "fired up" not in log
    argv = exec_command(log)
    assert argv[1:3] == ["-m", "sglang.launch_server"] and argv[-len(flags):] == flags
    result = llmdoctor("lint", "--format", "json", "--engine-version", VERSION, "--", *argv)
    assert result.returncode == 1, result.stderr
    found = findings(json.loads(result.stdout))
    assert cause in found, sorted(found)
    assert found[cause]["severity"] == "critical"
    assert found[cause]["symptom"] == "launch-failure"
    # what lint quotes is what the engine refused
    assert flags[0] in json.dumps(found[cause]["evidence"])


CONTEXT_LEN_PROBE = """
import glob, json, logging, os, sys, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from transformers import PretrainedConfig
from sglang.srt.utils.hf_transformers.common import get_context_length
out = {}
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    raw = json.load(open(path))
    if not isinstance(raw, dict):
        continue
    config = PretrainedConfig.from_dict(raw)
    text = getattr(config, "text_config", None)
    text = PretrainedConfig.from_dict(text) if isinstance(text, dict) else text
    out[os.path.basename(path)] = get_context_length(text or config)
print(json.dumps(out))
"""


def test_the_context_length_rule_is_sglangs_own() -> None:
    """doctor/engines/sglang_maxlen.py against SGLang's get_context_length itself, on every real config.json in
    fixtures/configs (the text config of a multimodal model, as SGLang's hf_text_config)."""
    configs = SHARED_FIXTURES / "configs"
    if not configs.is_dir():
        unavailable(f"real configs not found at {configs}")
    python = SGLANG.require() / "bin" / "python"
    done = subprocess.run([str(python), "-c", CONTEXT_LEN_PROBE, str(configs)], capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    engine = json.loads(done.stdout)
    assert len(engine) >= 20
    ours = {name: sglang_context_len(json.loads((configs / name).read_text()))[0] for name in engine}
    assert ours == engine
