"""Placeholders in pasted launch commands (issue 14 point 5): unknown values, never invalid ones.

The commands are scenarios written for these tests, in the shapes the incidents of issue 14 came in (a shell
script with ${PORT}, a Helm template, a README with <model>); the engine catalogs they are read against are real.
"""

from __future__ import annotations

import json

import pytest
from conftest import run_cli

from doctor.engines.command import parse_command
from doctor.engines.launch_facts import launch_facts
from doctor.engines.placeholders import expand, holes


@pytest.mark.parametrize("word,value,kind", [
    ("${PORT}", None, "shell"), ("$PORT", None, "shell"), ("${PORT:-8000}", "8000", "shell"),
    ("${PORT-8000}", "8000", "shell"), ("${PORT:=8000}", "8000", "shell"), ("/m/${NAME:-qwen}/x", "/m/qwen/x", "shell"),
    ("{{ .Values.port }}", None, "helm"), ("{{- .Values.port | default 8000 -}}", "8000", "helm"),
    ('{{ .Values.model | default "Qwen/Qwen3-8B" }}', "Qwen/Qwen3-8B", "helm"), ("<model>", None, "readme"),
    ("$(cat /etc/model)", None, "substitution"), ("$1", None, "shell"), ("${2}", None, "shell"),
    ("${1:-0}", "0", "shell"), ("$@", None, "shell"),
])
def test_placeholder_forms(word: str, value: str | None, kind: str) -> None:
    expanded, found = expand(word)
    assert expanded == value and found and found[0].kind == kind


@pytest.mark.parametrize("word", ["8000", "Qwen/Qwen3-8B", "a<b", "{json: 1}", "--port", "100$"])
def test_ordinary_words_are_no_placeholders(word: str) -> None:
    assert holes(word) == [] and expand(word) == (word, [])


def test_port_placeholder_is_unknown_not_invalid() -> None:
    """`--port ${PORT}` was an invalid-flag-value finding; the shell replaces it before vLLM sees it."""
    cmd = parse_command("vllm serve Qwen/Qwen3-8B --port ${PORT}")
    assert not cmd.problems_of("invalid_value")
    facts = launch_facts(cmd)
    assert "launch.flags.port" not in facts and "placeholder" in facts.unknown_reason("launch.flags.port")
    assert facts.get("launch.placeholders") == [{"flag": "--port", "dest": "port", "word": "${PORT}", "default": None}]


def test_a_scripts_positional_parameter_is_unknown_not_invalid() -> None:
    """A launch script run once per node passes its rank as `--node-rank $1` (sgl-project/sglang#6296,
    bench/incidents/i206-sglang-6296.yaml): the shell puts a number there, so the value is unknown, not refused."""
    cmd = parse_command("python -m sglang.launch_server --model-path /m --nnodes 2 --node-rank $1 --tp-size 16")
    assert not cmd.problems_of("invalid_value")
    assert launch_facts(cmd).get("launch.placeholders")[0]["word"] == "$1"


def test_a_default_is_used() -> None:
    cmd = parse_command("vllm serve Qwen/Qwen3-8B --max-model-len ${MAX_LEN:-32768} --gpu-memory-utilization "
                        "{{ .Values.util | default 0.85 }}")
    facts = launch_facts(cmd)
    assert facts.get("launch.max_model_len") == 32768 and facts.get("launch.mem_fraction") == 0.85
    assert [p["default"] for p in cmd.placeholders] == ["32768", "0.85"]


def test_model_placeholder_says_why_the_model_checks_stop() -> None:
    cmd = parse_command("python3 -m sglang.launch_server --model-path ${model_path} --quantization fp8 --tp 2")
    facts = launch_facts(cmd)
    assert cmd.model is None and "launch.model" not in facts
    assert "${model_path}" in (facts.unknown_reason("launch.model") or "")


def test_a_placeholder_tp_leaves_the_layout_unknown() -> None:
    facts = launch_facts(parse_command("vllm serve m --tensor-parallel-size {{ .Values.tp }}"))
    assert "launch.tp" not in facts and "{{ .Values.tp }}" in (facts.unknown_reason("launch.tp") or "")


def test_positional_placeholders() -> None:
    cmd = parse_command("vllm serve $MODEL $EXTRA_ARGS --port 8000")
    assert cmd.model is None and not cmd.problems_of("unexpected_positional")
    assert [p["word"] for p in cmd.placeholders] == ["$MODEL", "$EXTRA_ARGS"]
    assert cmd.get("port") == 8000


def test_helm_template_with_a_pipe_is_one_word() -> None:
    cmd = parse_command('vllm serve {{ .Values.model | quote }} --port {{ .Values.port }} --max-num-seqs 64')
    assert [p["word"] for p in cmd.placeholders] == ["{{ .Values.model | quote }}", "{{ .Values.port }}"]
    assert cmd.get("max_num_seqs") == 64 and not cmd.problems


def test_kubernetes_args_with_templates() -> None:
    manifest = """
containers:
  - name: vllm
    image: vllm/vllm-openai:v0.11.0
    args: ["--model", "{{ .Values.model }}", "--port", "{{ .Values.port | default 8000 }}"]
"""
    cmd = parse_command(manifest)
    assert cmd.get("port") == 8000 and cmd.model is None
    assert cmd.placeholders[0]["word"] == "{{ .Values.model }}"


def test_secret_placeholder_stays_masked() -> None:
    cmd = parse_command("vllm serve m --api-key ${API_KEY}")
    assert all("API_KEY" not in json.dumps(p) for p in cmd.placeholders)


def test_lint_output_names_the_placeholders() -> None:
    result = run_cli("lint", "--format", "json",
                     "vllm serve ${MODEL} --port ${PORT} --max-model-len ${MAX_LEN:-8192}")
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    assert not any(f["id"] == "invalid-flag-value" for f in doc["findings"])
    notes = " ".join(doc["notes"])
    assert "--port ${PORT}" in notes and "${MODEL}" in notes and "${MAX_LEN:-8192} → 8192" in notes
    text = run_cli("lint", "vllm serve ${MODEL} --port ${PORT}").stdout
    assert "placeholders (values unknown" in text


def test_env_placeholders() -> None:
    """`VLLM_USE_V1=$USE_V1 vllm serve …`: the env value is unknown (or its default), never read as written."""
    cmd = parse_command("VLLM_ATTENTION_BACKEND=$BACKEND HF_TOKEN=$HF_TOKEN VLLM_USE_V1=${V1:-1} vllm serve m")
    facts = launch_facts(cmd)
    assert "launch.env.VLLM_ATTENTION_BACKEND" not in facts
    assert "placeholder" in (facts.unknown_reason("launch.env.VLLM_ATTENTION_BACKEND") or "")
    assert facts.get("launch.env.VLLM_USE_V1") == "1"
    assert not cmd.problems_of("secret_flag")  # $HF_TOKEN is a reference, not a secret on the command line
    assert all("HF_TOKEN" not in str(p["word"]) for p in cmd.placeholders if p["flag"] == "env HF_TOKEN")


def test_an_observed_argv_is_taken_literally() -> None:
    """A running process that received `${PORT}` got exactly that (no shell expanded it): invalid, not unknown."""
    pasted = parse_command(["vllm", "serve", "m", "--port", "${PORT}"])
    observed = parse_command(["vllm", "serve", "m", "--port", "${PORT}"], placeholders=False)
    assert pasted.placeholders and not pasted.problems_of("invalid_value")
    assert not observed.placeholders and observed.problems_of("invalid_value")
