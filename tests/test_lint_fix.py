"""`lint --fix` as a user runs it: the real CLI in a subprocess, real configs from fixtures/configs.

Every cause whose file carries ``edits`` has a command here that makes lint name it; the fix is applied and
the fixed command is linted again: a safe fix must leave no finding of its cause, a needs-value fix must
leave its marked placeholder. The commands are scenarios written for these tests (a flag list a user could
paste), not captures; the model configs are real.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, run_cli

from doctor.playbook.loader import load_playbooks

C = str(SHARED_FIXTURES / "configs")
QWEN3 = ["--config", f"{C}/Qwen__Qwen3-8B.json"]
V3_2_ON_H200 = ["--config", f"{C}/deepseek-ai__DeepSeek-V3.2.json", "--gpu", "H200:8"]

#: cause → (command, lint options) that make lint name it
TRIGGERS: dict[str, tuple[str, list[str]]] = {
    "unknown-flag": ("vllm serve m --tensor-paralel-size 2", []),
    "flag-from-other-engine": ("vllm serve m --tp-size 2", []),
    "abbreviated-flag": ("vllm serve m --max-model 4096", ["--engine-version", "0.9.2"]),
    "deprecated-flag": ("vllm serve m --cuda-graph-sizes 8", ["--engine-version", "0.11.1"]),
    "renamed-flag": ("vllm serve m --cuda-graph-sizes 8", ["--engine-version", "0.33.0"]),
    "removed-flag": ("vllm serve m --use-v2-block-manager", ["--engine-version", "0.33.0"]),
    "metrics-disabled": ("python -m sglang.launch_server --model-path m", []),
    "quantization-mismatch": ("vllm serve deepseek-ai/DeepSeek-V3 -tp 8 --enable-expert-parallel --quantization awq",
                              ["--config", f"{C}/deepseek-ai__DeepSeek-V3.json"]),
    "attention-backend-unsupported-gpu": ("python -m sglang.launch_server --model-path m --enable-metrics "
                                          "--attention-backend fa3", [*QWEN3, "--gpu", "T4"]),
    "dsa-kv-dtype-forced": ("python -m sglang.launch_server --model-path m --tp-size 8 --ep-size 8 --enable-metrics "
                            "--kv-cache-dtype fp8_e4m3", V3_2_ON_H200),
    "dsa-attention-backend-forced": ("python -m sglang.launch_server --model-path m --tp-size 8 --ep-size 8 "
                                     "--enable-metrics --attention-backend flashinfer", V3_2_ON_H200),
    "mamba-block-size-misaligned": ("vllm serve m --block-size 16",
                                    ["--config", f"{C}/Qwen__Qwen3-Next-80B-A3B-Thinking.json"]),
    "tool-parser-missing": ("vllm serve m", QWEN3),
    "tool-parser-wrong": ("vllm serve m --enable-auto-tool-choice --tool-call-parser mistral", QWEN3),
    "auto-tool-choice-missing": ("vllm serve m --tool-call-parser hermes", QWEN3),
    "reasoning-parser-missing": ("vllm serve m", QWEN3),
    "reasoning-parser-wrong": ("vllm serve m --reasoning-parser deepseek_r1", QWEN3),
    "auto-tool-choice-without-parser": ("vllm serve m --enable-auto-tool-choice", QWEN3),
    "tool-parser-unregistered": ("vllm serve m --enable-auto-tool-choice --tool-call-parser nosuchparser", QWEN3),
    "reasoning-parser-unregistered": ("vllm serve m --reasoning-parser nosuchparser", QWEN3),
    "moe-without-ep": ("vllm serve m -tp 4", ["--config", f"{C}/Qwen__Qwen3-30B-A3B.json", "--gpu", "H100:4"]),
    "max-model-len-over-model-limit": ("vllm serve m --max-model-len 1000000", QWEN3),
    "context-length-over-model-limit": ("python -m sglang.launch_server --model-path m --enable-metrics "
                                        "--context-length 1000000", QWEN3),
    "prefix-caching-disabled": ("vllm serve m --no-enable-prefix-caching", QWEN3),
    "secret-in-command": ("vllm serve m --api-key abcdefgh1234", []),
    "upgrade-refuses-command": ("vllm serve m --cuda-graph-sizes 8",
                                ["--engine-version", "0.9.2", "--target-version", "0.33.0"]),
    "upgrade-parser-deprecated": ("python -m sglang.launch_server --model-path m --enable-metrics "
                                  "--tool-call-parser qwen25", ["--engine-version", "0.5.2", "--target-version", "0.5.23"]),
}
#: causes with edits that no command alone can make lint name, and why (their edits are exercised by the
#: argument-level tests below and by check, which has the input)
NOT_FROM_A_COMMAND = {
    "tool-parser-tokenizer-mismatch": "decided from the model's tokenizer files, which a config alone lacks",
    "kv-size-set-by-hand": "decided from /metrics (vllm:cache_config_info), which lint does not read",
}


#: triggers whose fix stays print-only, and the words that say why
PRINT_ONLY_HERE = {
    # a typo has a nearest flag but no known equivalent: a guess is not applied (ruff's unsafe fixes are opt-in)
    "unknown-flag": "no replacement is known",
    # where the secret goes instead (env, a Secret) is the operator's decision
    "secret-in-command": "environment",
}


def _lint(command: str, options: list[str], *extra: str) -> dict:
    proc = run_cli("lint", "--offline", "--format", "json", *options, *extra, command)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def test_every_cause_with_edits_is_tested() -> None:
    with_edits = {cid for cid, cause in load_playbooks().causes.items() if cause.edits}
    assert with_edits == set(TRIGGERS) | set(NOT_FROM_A_COMMAND)
    assert not set(TRIGGERS) & set(NOT_FROM_A_COMMAND)


@pytest.mark.parametrize("cause", sorted(TRIGGERS))
def test_fix_then_lint_again(cause: str) -> None:
    command, options = TRIGGERS[cause]
    before = _lint(command, options)
    assert cause in [f["id"] for f in before["findings"]], before["findings"]
    fixed = _lint(command, options, "--fix")
    fix = next(f for f in fixed["fix"]["fixes"] if f["cause"] == cause)
    after = [f["id"] for f in fixed["after_fix"]["findings"]]
    if fix["class"] == "safe":
        assert fixed["fix"]["changed"], fixed["fix"]
        assert cause not in after, (fixed["fix"]["fixed"], after)
        # the fixed command is itself what lint reads next: the same verdict from the text printed
        again = _lint(fixed["fix"]["fixed"], options)
        assert cause not in [f["id"] for f in again["findings"]]
    elif fix["class"] == "needs-value":
        assert "?>" in fixed["fix"]["fixed"]
    else:
        assert fix["class"] == "print-only" and cause in PRINT_ONLY_HERE, fix
        assert PRINT_ONLY_HERE[cause] in " ".join(fix["left_out"]) + fix["fix"]


def test_needs_a_value_is_marked_when_the_family_is_unknown() -> None:
    """No config: the model family's parser is unknown, so the parser fix carries the placeholder."""
    fixed = _lint("vllm serve /models/x --enable-auto-tool-choice", ["--engine-version", "0.33.0"], "--fix")
    fix = next(f for f in fixed["fix"]["fixes"] if f["cause"] == "auto-tool-choice-without-parser")
    assert fix["class"] == "needs-value"
    assert "--tool-call-parser '<expect.tool_parser?>'" in fixed["fix"]["fixed"]


def test_shell_layout_and_the_rest_of_a_script_are_kept(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/sh\nset -e\nexport VLLM_LOGGING_LEVEL=INFO\n"
                      "vllm serve Qwen/Qwen3-8B \\\n    --max-model-len 32768 \\\n    --tensor-paralel-size 2 \\\n"
                      "    --tp-size 2   # from the SGLang recipe\necho started\n")
    proc = run_cli("lint", "--offline", "--fix", *QWEN3, "--file", str(script), "-o", str(tmp_path / "fixed.sh"))
    assert proc.returncode == 1, proc.stderr
    fixed = (tmp_path / "fixed.sh").read_text()
    assert fixed.startswith("#!/bin/sh\nset -e\nexport VLLM_LOGGING_LEVEL=INFO\nvllm serve Qwen/Qwen3-8B \\\n"
                            "    --max-model-len 32768 \\\n    --tensor-paralel-size 2 \\\n"
                            "    --tensor-parallel-size 2")
    assert fixed.endswith("--reasoning-parser qwen3   # from the SGLang recipe\necho started\n") or \
        "# from the SGLang recipe\necho started\n" in fixed
    assert "Fixed command (written to" in proc.stdout


def test_docker_options_are_kept() -> None:
    command = ("docker run --gpus all --ipc=host -p 8000:8000 vllm/vllm-openai:v0.9.2 --model Qwen/Qwen3-30B-A3B "
               "-tp 4 --reasoning-parser deepseek_r1")
    fixed = _lint(command, ["--config", f"{C}/Qwen__Qwen3-30B-A3B.json"], "--fix")["fix"]["fixed"]
    assert fixed.startswith("docker run --gpus all --ipc=host -p 8000:8000 vllm/vllm-openai:v0.9.2 --model "
                            "Qwen/Qwen3-30B-A3B -tp 4 --reasoning-parser qwen3 ")
    assert "--enable-expert-parallel" in fixed


MANIFEST = """\
# the team's model server
apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm   # keep this name
spec:
  template:
    spec:
      containers:
        - name: proxy
          image: nginx:1.27
          args: ["-g", "daemon off;"]
        - name: vllm
          image: vllm/vllm-openai:v0.9.2
          args:
            - "--model"
            - Qwen/Qwen3-30B-A3B   # the MoE one
            - --tensor-parallel-size
            - '4'
            - --reasoning-parser
            - deepseek_r1
          resources:
            limits: {nvidia.com/gpu: 4}
"""


def test_manifest_patch_changes_only_the_engine_args(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text(MANIFEST)
    proc = run_cli("lint", "--offline", "--fix", "--manifest", str(path), "--config", f"{C}/Qwen__Qwen3-30B-A3B.json")
    assert proc.returncode == 0, proc.stderr   # nothing left after the fix
    patched = proc.stdout
    original_lines = MANIFEST.splitlines()
    patched_lines = patched.splitlines()
    # every line of the original is still there, in order: the fix only changed and added argument lines
    changed = [line for line in original_lines if line not in patched_lines]
    assert changed == ["            - deepseek_r1"], changed
    assert "            - qwen3" in patched_lines
    assert "            - --enable-expert-parallel" in patched_lines
    assert patched_lines.index("            - --enable-expert-parallel") < patched_lines.index("          resources:")
    assert "Fixes" in proc.stderr and "moe-without-ep [applied]" in proc.stderr
    import yaml

    container = yaml.safe_load(patched)["spec"]["template"]["spec"]["containers"][1]
    assert container["args"][:4] == ["--model", "Qwen/Qwen3-30B-A3B", "--tensor-parallel-size", "4"]


def test_a_kubernetes_args_list_alone(tmp_path: Path) -> None:
    block = "- --model\n- Qwen/Qwen3-30B-A3B\n- -tp\n- \"4\"\n"
    (tmp_path / "args.yaml").write_text(block)
    proc = run_cli("lint", "--offline", "--format", "json", "--fix", "--config", f"{C}/Qwen__Qwen3-30B-A3B.json",
                   "--engine-version", "0.33.0", "--file", str(tmp_path / "args.yaml"))
    fixed = json.loads(proc.stdout)["fix"]["fixed"]
    assert fixed.startswith(block)
    assert "\n- --enable-expert-parallel" in fixed


def test_secrets_never_leave(tmp_path: Path) -> None:
    command = "HF_TOKEN=hf_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa vllm serve m --api-key topsecretvalue -tp 2"
    out = tmp_path / "fixed.sh"
    proc = run_cli("lint", "--offline", "--fix", "-o", str(out), command)
    for text in (proc.stdout, proc.stderr, out.read_text()):
        assert "topsecretvalue" not in text and "hf_aaaa" not in text


def test_output_needs_fix() -> None:
    proc = run_cli("lint", "-o", "/tmp/x", "vllm serve m")
    assert proc.returncode == 2 and "give it with --fix" in proc.stderr
