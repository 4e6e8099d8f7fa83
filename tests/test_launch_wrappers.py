"""The engine launch inside the wrappers people start it with, and a command llmdoctor cannot read beside other
inputs (issue 21: a wrapper command must never stop the log, metrics or config from being read).

The commands are the reporters' own, from the public threads the benchmark cites (bench/incidents/<id>.yaml:
url); the log lines are theirs too.
"""

from __future__ import annotations

import json

import pytest

from doctor.engines.command import parse_command
from doctor.errors import InputError
from tests.conftest import run_cli


def test_uvx_runner_options_are_not_engine_arguments() -> None:
    """unslothai/unsloth#1380 (i307): uv's tool runner with its own --with options before `vllm serve`."""
    cmd = parse_command("uvx --with bitsandbytes --with setuptools vllm serve unsloth/QwQ-32B-Preview-unsloth-bnb-4bit",
                        engine_version="0.6.4")
    assert (cmd.engine, cmd.entry, cmd.model) == ("vllm", "vllm serve", "unsloth/QwQ-32B-Preview-unsloth-bnb-4bit")
    assert not cmd.problems and not cmd.positionals
    assert any("started through `uvx --with bitsandbytes --with setuptools`" in n for n in cmd.notes)


def test_a_source_checkout_script_is_its_module() -> None:
    """sgl-project/sglang#4985 (i309): `python python/sglang/launch_server.py` from a clone is
    `python -m sglang.launch_server`, with the env prefix stripped."""
    cmd = parse_command("PYTHONPATH=python python python/sglang/launch_server.py --model ../DeepSeek-R1-Distill-Qwen-32B/"
                        " --trust-remote-code --tensor-parallel-size 4 --dtype bfloat16", engine_version="0.4.4")
    assert (cmd.engine, cmd.entry) == ("sglang", "python -m sglang.launch_server")
    assert cmd.get("tp_size") == 4 and cmd.env == {"PYTHONPATH": "python"}
    assert [(p.kind, p.flag) for p in cmd.problems] == [("abbreviated_flag", "--model")]  # argparse's prefix match
    assert any("is the module sglang.launch_server" in n for n in cmd.notes)


@pytest.mark.parametrize("text", [
    "bash -c 'vllm serve Qwen/Qwen3-8B --max-model-len 4096'",
    "conda run -n serve vllm serve Qwen/Qwen3-8B --max-model-len 4096",
    "docker run --gpus all my/image:1 pipx run vllm serve Qwen/Qwen3-8B --max-model-len 4096",
])
def test_the_launch_inside_other_runners(text: str) -> None:
    cmd = parse_command(text, engine_version="0.13.0")
    assert (cmd.engine, cmd.model, cmd.get("max_model_len")) == ("vllm", "Qwen/Qwen3-8B", 4096)
    assert not cmd.problems


@pytest.mark.parametrize("text", [
    # xorbitsai/inference#2836 (i182): Xinference starts vLLM itself; `--model-engine vllm` is its own option
    "xinference launch --model-engine vllm --model-name deepseek-r1-distil1-gwen --n-gpu 4 --max_model_len 4096",
    "sparkrun run @eugr/qwen3.5-35b-a3b-fp8",  # spark-arena/sparkrun#127 (i335): a recipe runner
    "vllm server --model m --port 40001",  # vllm-project/vllm#29849 (i180): no such vLLM command
])
def test_wrappers_that_hold_no_engine_argv_are_still_no_launch(text: str) -> None:
    with pytest.raises(InputError, match="no vLLM or SGLang launch found"):
        parse_command(text)


XINFERENCE = ("xinference launch --model-engine vllm --model-name deepseek-r1-distil1-gwen --n-gpu 4 "
              "--model-format pytorch --max_model_len 4096 --dtype half")


def test_check_reads_the_log_beside_a_command_it_cannot_read(tmp_path) -> None:
    """i182: the command is Xinference's, the log (the reporter's line) is NCCL's — the log decides, the note
    says the command was not read, and the exit is the finding's, not bad input."""
    log = tmp_path / "server.log"
    log.write_text("NCCLerror: unhandled system error (run withNCCL DEBUG=INFo for details)\n", encoding="utf-8")
    proc = run_cli("check", "--offline", "--format", "json", "--command", XINFERENCE, "--log", str(log),
                   "--symptom", "launch-failure")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["findings"][0]["id"] == "nccl-init-failed"
    assert any("no vLLM or SGLang launch found" in n and "the command was not read" in n for n in doc["notes"])
    assert "launch.model" not in doc["facts"]  # nothing of Xinference's options is read as an engine flag


def test_check_with_only_an_unreadable_command_is_still_bad_input() -> None:
    proc = run_cli("check", "--offline", "--command", XINFERENCE)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith("llmdoctor: launch command: no vLLM or SGLang launch found")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_malformed_command_beside_a_log_is_said_and_the_log_still_read(tmp_path) -> None:
    """A command cut in half (an unbalanced quote) is as unreadable as a wrapper: said, and the log decides."""
    log = tmp_path / "server.log"
    log.write_text("ModuleNotFoundError: No module named 'sgl_kernel'\n", encoding="utf-8")
    proc = run_cli("check", "--offline", "--format", "json", "--command", "vllm serve m --speculative-config '{",
                   "--log", str(log))
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert [f["id"] for f in doc["findings"]] == ["engine-dependency-missing"]
    assert any("unbalanced ' quote" in n for n in doc["notes"])


@pytest.mark.parametrize("text, why", [
    # vllm-project/vllm#27389 (i008): an image id says nothing of the engine, and `serve …` after it is no entry point
    ("docker run -d --name vllm-production --gpus all --ipc=host -p 8001:8000 -e CUDA_VISIBLE_DEVICES=0,1 "
     "ee2917e260bb serve /root/models/Qwen3-8B --tensor-parallel-size 2",
     "the image ee2917e260bb is not one llmdoctor can tell the engine of"),
    ("vllm server --model m --port 40001", "`vllm server` is not a command llmdoctor reads (`vllm serve` is)"),
])
def test_what_was_not_understood_is_said(text: str, why: str) -> None:
    with pytest.raises(InputError) as err:
        parse_command(text)
    assert why in str(err.value) and "\n" not in str(err.value)
