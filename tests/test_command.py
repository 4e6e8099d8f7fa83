"""Parsing launch commands: every command the seed prints, every shape people paste, every problem.

The seed's commands are copied here as test data (our own seed, fixtures/seed/serving-playbook.txt);
the docker, Kubernetes and argv variants are scenarios written for these tests, not captures.
Expected problems are checked against the generated catalogs, which tests/test_catalog.py ties to
the engines' source.
"""

from __future__ import annotations

import pytest
from conftest import SEED, unavailable
from seed_commands import (
    SEED_DSV3,
    SEED_DSV3_EP,
    SEED_GLM_DSA,
    SEED_GLM_HANDOVER,
    SEED_GQA,
    SEED_QWEN35,
    SEED_QWEN35_MM,
)

from doctor.engines.catalog import flag_history, version_key
from doctor.engines.command import parse_command
from doctor.errors import InputError

SEED_SAME_GLM = """--tensor-parallel-size 8 --enable-moe-ep
  --tool-call-parser glm47 --reasoning-parser glm45
  --chunked-prefill-size 16384 --mem-fraction-static 0.80"""


def kinds(cmd) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for p in cmd.problems:
        out.setdefault(p.kind, []).append(p.flag)
    return out


def problem(cmd, kind: str, flag: str):
    return next(p for p in cmd.problems if p.kind == kind and p.flag == flag)


def test_seed_commands_are_the_ones_in_the_seed() -> None:
    if not SEED.is_file():
        unavailable(f"seed not found at {SEED}")
    seed = SEED.read_text()
    for text in (SEED_GLM_HANDOVER, SEED_GQA, SEED_DSV3, SEED_DSV3_EP, SEED_GLM_DSA, SEED_QWEN35_MM, SEED_QWEN35):
        assert text in seed


# ---------------------------------------------------------------------------------------------
# The seed, flag by flag
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", ["0.4.10", "0.5.4", "0.5.23"])
def test_seed_glm_handover_sglang(version: str) -> None:
    cmd = parse_command(SEED_GLM_HANDOVER, engine_version=version)
    assert cmd.engine == "sglang" and cmd.catalog.version == version
    assert cmd.model == "nvidia/GLM-5.2-NVFP4"
    by = cmd.by_dest()
    assert by["tp_size"].value == 8 and by["tp_size"].option == "--tensor-parallel-size"
    assert by["quantization"].value == "modelopt_fp4"
    assert by["chunked_prefill_size"].value == 16384
    assert by["mem_fraction_static"].value == 0.8 and by["mem_fraction_static"].raw == ["0.80"]
    assert by["reasoning_parser"].value == "glm45"
    found = kinds(cmd)
    if version == "0.5.23":
        assert found == {}
    else:  # glm47 arrived after 0.5.4 (sglang/srt/function_call/parser_names.py in 0.5.23)
        assert found == {"invalid_value": ["--tool-call-parser"]}
        assert problem(cmd, "invalid_value", "--tool-call-parser").detail["value"] == "glm47"


def test_seed_gqa_sglang() -> None:
    cmd = parse_command(SEED_GQA, engine_version="0.5.4")
    assert cmd.model == "Qwen/Qwen3.6-27B"
    assert {d: f.value for d, f in cmd.by_dest().items()} == {
        "model_path": "Qwen/Qwen3.6-27B", "tp_size": 2, "quantization": "fp8", "kv_cache_dtype": "fp8_e5m2",
        "chunked_prefill_size": 4096, "enable_metrics": True}
    assert cmd.problems == []


@pytest.mark.parametrize("version", ["0.10.0", "0.13.0", "0.33.0"])
def test_seed_dsv3_vllm_dtype_fp8_is_invalid(version: str) -> None:
    cmd = parse_command(SEED_DSV3, engine_version=version)
    assert cmd.engine == "vllm" and cmd.model == "deepseek-ai/DeepSeek-V3" and cmd.model_source == "positional"
    assert kinds(cmd) == {"invalid_value": ["--dtype"]}
    bad = problem(cmd, "invalid_value", "--dtype").detail
    assert bad["value"] == "fp8" and "fp8" not in bad["choices"] and bad["enforced"] == "argparse"
    by = cmd.by_dest()
    assert by["tensor_parallel_size"].value == 8 and by["kv_cache_dtype"].value == "fp8"
    assert by["max_model_len"].value == 131072 and by["gpu_memory_utilization"].value == 0.92


def test_seed_dsv3_ep_vllm() -> None:
    cmd = parse_command(SEED_DSV3_EP, engine_version="0.13.0")
    by = cmd.by_dest()
    assert by["data_parallel_size"].value == 8 and by["data_parallel_size"].option == "-dp"
    assert by["enable_expert_parallel"].value is True
    assert kinds(cmd) == {"invalid_value": ["--dtype"]}


def test_seed_glm_dsa_trust_remote_code() -> None:
    cmd = parse_command(SEED_GLM_DSA, engine_version="0.5.23")
    assert cmd.get("trust_remote_code") is True and cmd.problems == []


def test_seed_qwen35_multimodal_flags_too_new_for_010() -> None:
    cmd = parse_command(SEED_QWEN35_MM, engine_version="0.13.0")
    assert cmd.problems == []
    assert cmd.get("mm_encoder_tp_mode") == "data" and cmd.get("mm_processor_cache_type") == "shm"
    assert cmd.get("enable_prefix_caching") is True and cmd.get("reasoning_parser") == "qwen3"
    old = parse_command(SEED_QWEN35_MM, engine_version="0.10.0")
    assert kinds(old) == {"too_new_flag": ["--mm-encoder-tp-mode", "--mm-processor-cache-type"]}
    # every release is read now: --mm-encoder-tp-mode arrived in 0.10.2, --mm-processor-cache-type in 0.11.0
    assert problem(old, "too_new_flag", "--mm-encoder-tp-mode").detail["since"] == "0.10.2"
    assert problem(old, "too_new_flag", "--mm-processor-cache-type").detail["since"] == "0.11.0"
    assert old.get("reasoning_parser") == "qwen3"  # the walk carries on after a too-new flag


def test_seed_qwen35_language_model_only() -> None:
    new = parse_command(SEED_QWEN35, engine_version="0.33.0")
    assert new.problems == [] and new.get("language_model_only") is True
    old = parse_command(SEED_QWEN35, engine_version="0.10.0")
    assert kinds(old) == {"too_new_flag": ["--language-model-only"]}


def test_seed_enable_moe_ep_is_not_an_sglang_flag() -> None:
    cmd = parse_command(SEED_SAME_GLM, engine="sglang", engine_version="0.5.23")
    assert kinds(cmd) == {"unknown_flag": ["--enable-moe-ep"]}
    detail = problem(cmd, "unknown_flag", "--enable-moe-ep").detail
    assert detail["equivalent"] == "--ep-size" and "no SGLang version" in detail["note"]
    assert cmd.get("tp_size") == 8 and cmd.get("tool_call_parser") == "glm47"
    guessed = parse_command(SEED_SAME_GLM)  # no launcher, no engine: guessed from the flags
    assert guessed.engine == "sglang" and any("guessed" in n for n in guessed.notes)


def test_seed_reasoning_parser_typo() -> None:
    # the seed writes "--reasoning-parser-glm45" once (DSA chapter)
    cmd = parse_command("python3 -m sglang.launch_server --model-path m --reasoning-parser-glm45",
                        engine_version="0.5.23")
    assert kinds(cmd) == {"unknown_flag": ["--reasoning-parser-glm45"]}
    assert problem(cmd, "unknown_flag", "--reasoning-parser-glm45").detail["nearest"] == "--reasoning-parser"


def test_seed_minimum_configuration_mixes_engines() -> None:
    # "--max-model-len 8192 --mem-fraction-static 0.7": a vLLM flag next to an SGLang one
    s = parse_command("python3 -m sglang.launch_server --model-path m --max-model-len 8192 --mem-fraction-static 0.7",
                      engine_version="0.5.23")
    assert kinds(s) == {"other_engine_flag": ["--max-model-len"]}
    assert problem(s, "other_engine_flag", "--max-model-len").detail == {"engine": "vllm",
                                                                          "equivalent": "--context-length"}
    assert s.get("mem_fraction_static") == 0.7 and s.positionals == []  # 8192 was the unknown flag's value
    v = parse_command("vllm serve m --max-model-len 8192 --mem-fraction-static 0.7", engine_version="0.13.0")
    assert problem(v, "other_engine_flag", "--mem-fraction-static").detail["equivalent"] == "--gpu-memory-utilization"


def test_seed_sglang_tensor_parallel_size_is_tp_size() -> None:
    cmd = parse_command("python3 -m sglang.launch_server --model m --tensor-parallel-size 8", engine_version="0.4.10")
    fv = cmd.by_dest()["tp_size"]
    assert fv.value == 8 and fv.option == "--tensor-parallel-size" and not fv.abbreviated


# ---------------------------------------------------------------------------------------------
# Engine-specific resolution
# ---------------------------------------------------------------------------------------------
def test_sglang_tp_abbreviation_vs_vllm() -> None:
    s = parse_command("python3 -m sglang.launch_server --model-path m --tp 8", engine_version="0.5.23")
    fv = s.by_dest()["tp_size"]
    assert fv.value == 8 and fv.abbreviated and fv.token == "--tp" and fv.option == "--tp-size"
    assert kinds(s) == {"abbreviated_flag": ["--tp"]}
    v = parse_command("vllm serve m --tp 8", engine_version="0.13.0")
    assert kinds(v) == {"unknown_flag": ["--tp"]} and not v.has("tensor_parallel_size")
    assert v.positionals == []  # "8" was taken as the unknown flag's value, not as a positional


def test_ep_is_boolean_in_vllm_and_integer_in_sglang() -> None:
    v = parse_command("vllm serve m -ep -tp 4", engine_version="0.33.0")
    assert v.get("enable_expert_parallel") is True and v.get("tensor_parallel_size") == 4
    s = parse_command("python3 -m sglang.launch_server --model-path m --ep 8", engine_version="0.5.23")
    assert s.get("ep_size") == 8
    bad = parse_command("python3 -m sglang.launch_server --model-path m --ep", engine_version="0.5.23")
    assert kinds(bad) == {"missing_value": ["--ep"]}


def test_other_engine_flags_with_equivalents() -> None:
    s = parse_command("python3 -m sglang.launch_server --model-path m --enable-expert-parallel",
                      engine_version="0.5.23")
    detail = problem(s, "other_engine_flag", "--enable-expert-parallel").detail
    assert detail["engine"] == "vllm" and detail["equivalent"] == "--ep-size" and "--ep-size N" in detail["note"]
    v = parse_command("vllm serve m --tp-size 8", engine_version="0.13.0")
    assert problem(v, "other_engine_flag", "--tp-size").detail["equivalent"] == "--tensor-parallel-size"


def test_invalid_values() -> None:
    s = parse_command("python3 -m sglang.launch_server --model-path m --kv-cache-dtype fp8", engine_version="0.5.23")
    assert problem(s, "invalid_value", "--kv-cache-dtype").detail["value"] == "fp8"
    v10 = parse_command("vllm serve m --kv-cache-dtype bfloat16", engine_version="0.10.0")
    assert kinds(v10) == {"invalid_value": ["--kv-cache-dtype"]}
    assert parse_command("vllm serve m --kv-cache-dtype bfloat16", engine_version="0.11.0").problems == []
    bf16 = parse_command("vllm serve m --kv-cache-dtype bf16", engine_version="0.13.0")
    assert kinds(bf16) == {"invalid_value": ["--kv-cache-dtype"]}
    tp = parse_command("vllm serve m -tp eight", engine_version="0.13.0")
    assert problem(tp, "invalid_value", "-tp").detail["expected"] == "an integer"
    q = parse_command("vllm serve m --quantization fp9", engine_version="0.13.0")
    assert problem(q, "invalid_value", "--quantization").detail["enforced"] == "engine at startup"
    ab = parse_command("vllm serve m --attention-backend flashinfer", engine_version="0.13.0")
    assert ab.problems == []  # AttentionBackendEnum[value.upper()]
    switch = parse_command("vllm serve m --enable-expert-parallel=yes", engine_version="0.13.0")
    assert problem(switch, "invalid_value", "--enable-expert-parallel").detail["expected"] == "no value (a switch)"
    js = parse_command("vllm serve m --speculative-config '{\"method\": }'", engine_version="0.13.0")
    assert "valid JSON" in problem(js, "invalid_value", "--speculative-config").detail["expected"]


def test_deprecated_and_removed_flags() -> None:
    s = parse_command("python3 -m sglang.launch_server --model-path m --enable-ep-moe", engine_version="0.5.4")
    detail = problem(s, "deprecated_flag", "--enable-ep-moe").detail
    assert detail["replacement"] == "--ep-size" and detail["rejected"] is True
    gone = parse_command("python3 -m sglang.launch_server --model-path m --enable-ep-moe", engine_version="0.5.23")
    # the history: refused (DeprecatedAction) with new_flag --ep-size until its last release, then gone
    detail = problem(gone, "renamed_flag", "--enable-ep-moe").detail
    assert detail["replacement"] == "--ep-size" and detail["last"] == flag_history("sglang")["--enable-ep-moe"][1]
    assert version_key(detail["last"]) < version_key(detail["dropped_in"]) <= version_key("0.5.23")
    v = parse_command("vllm serve m --disable-log-requests", engine_version="0.13.0")
    assert kinds(v) == {"deprecated_flag": ["--disable-log-requests"]}


def test_vllm_spellings() -> None:
    cmd = parse_command("vllm serve m --max_model_len=32k --compilation-config.mode 3 -O3 "
                        "--no-enable-prefix-caching --hf-overrides '{\"a\": 1}'", engine_version="0.13.0")
    by = cmd.by_dest()
    assert by["max_model_len"].value == 32000 and by["max_model_len"].token == "--max_model_len"
    assert by["compilation_config"].value == {"mode": 3} and by["compilation_config"].subkey == "mode"
    assert by["enable_prefix_caching"].value is False
    assert by["hf_overrides"].value == {"a": 1}
    assert cmd.get("max_model_len") == 32000
    assert parse_command("vllm serve m --max-model-len 1K", engine_version="0.13.0").get("max_model_len") == 1024


def test_secrets_are_redacted_everywhere() -> None:
    secret = "sk-abcdefghijklmnopqrstuvwxyz012345"
    cmd = parse_command(f"HF_TOKEN=hf_abcdefghijklmnopqrstuvwx vllm serve m --api-key {secret} "
                        f"--api-key={secret} -tp 2", engine_version="0.13.0")
    assert kinds(cmd)["secret_flag"] == ["--api-key", "--api-key", "HF_TOKEN"]
    rendered = cmd.render()
    assert secret not in rendered and "hf_abcdefghijklmnopqrstuvwx" not in rendered
    assert secret not in repr(cmd.to_dict()) and "hf_abc" not in repr(cmd.to_dict())
    assert cmd.get("api_key") == "***" and cmd.env["HF_TOKEN"] == "***"


def test_duplicate_flags_last_wins() -> None:
    cmd = parse_command("vllm serve m -tp 2 --tensor-parallel-size 4", engine_version="0.13.0")
    assert cmd.get("tensor_parallel_size") == 4
    assert kinds(cmd) == {"duplicate_flag": ["--tensor-parallel-size"]}
    assert cmd.problems_of("duplicate_flag")[0].detail["first"] == "-tp"


# ---------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------
def test_docker_run_with_version_from_tag() -> None:
    text = ("docker run --runtime nvidia --gpus all -v ~/.cache/huggingface:/root/.cache/huggingface "
            "--env HF_TOKEN=hf_abcdefghijklmnopqrstuvwx -e VLLM_BATCH_INVARIANT=1 -p 8000:8000 --ipc=host "
            "vllm/vllm-openai:v0.13.0 --model Qwen/Qwen3-8B --tensor-parallel-size 2")
    cmd = parse_command(text)
    assert (cmd.engine, cmd.version, cmd.catalog.version, cmd.shape) == ("vllm", "0.13.0", "0.13.0", "docker")
    assert cmd.version_source == "image tag vllm/vllm-openai:v0.13.0"
    assert cmd.model == "Qwen/Qwen3-8B" and cmd.get("tensor_parallel_size") == 2
    assert cmd.env == {"HF_TOKEN": "***", "VLLM_BATCH_INVARIANT": "1"}
    assert cmd.render().startswith("docker run -e HF_TOKEN='***' -e VLLM_BATCH_INVARIANT=1 vllm/vllm-openai:v0.13.0")


def test_docker_sglang_image_with_command() -> None:
    cmd = parse_command("docker run --gpus all --shm-size 32g lmsysorg/sglang:v0.5.4.post1-cu126 "
                        "python3 -m sglang.launch_server --model-path m --tp 2")
    assert (cmd.engine, cmd.version, cmd.catalog.version) == ("sglang", "0.5.4.post1", "0.5.4.post1")  # read itself
    assert cmd.get("tp_size") == 2 and cmd.catalog.note == ""


def test_engine_version_argument_overrides_the_tag() -> None:
    cmd = parse_command("docker run vllm/vllm-openai:v0.13.0 --model m", engine_version="0.10.0")
    assert cmd.catalog.version == "0.10.0" and cmd.version_source == "given"


def test_kubernetes_manifest() -> None:
    manifest = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: glm}
spec:
  template:
    spec:
      containers:
        - name: sglang
          image: lmsysorg/sglang:v0.5.4
          command: ["python3", "-m", "sglang.launch_server"]
          args:
            - --model-path
            - zai-org/GLM-4.5-Air
            - --tp
            - "4"
            - --enable-metrics
          env:
            - {name: HF_TOKEN, valueFrom: {secretKeyRef: {name: hf, key: token}}}
            - {name: SGLANG_ENABLE_DETERMINISTIC_INFERENCE, value: "1"}
"""
    cmd = parse_command(manifest)
    assert (cmd.engine, cmd.version, cmd.shape) == ("sglang", "0.5.4", "kubernetes")
    assert cmd.get("tp_size") == 4 and cmd.get("enable_metrics") is True and cmd.model == "zai-org/GLM-4.5-Air"
    assert "secret_flag" not in kinds(cmd)  # a secretKeyRef is the right way to pass a token
    assert cmd.env["SGLANG_ENABLE_DETERMINISTIC_INFERENCE"] == "1"


def test_kubernetes_args_list_and_shell_wrapper() -> None:
    args_only = "- --model\n- Qwen/Qwen3-8B\n- --tensor-parallel-size\n- '2'\n- --enable-auto-tool-choice\n"
    cmd = parse_command(args_only)
    assert cmd.engine == "vllm" and cmd.get("tensor_parallel_size") == 2 and cmd.shape == "kubernetes"
    wrapped = """
containers:
  - image: vllm/vllm-openai:v0.11.0
    command: ["/bin/sh", "-c"]
    args: ["VLLM_BATCH_INVARIANT=1 vllm serve Qwen/Qwen3-8B -tp 2"]
"""
    cmd = parse_command(wrapped)
    assert cmd.catalog.version == "0.11.0" and cmd.env == {"VLLM_BATCH_INVARIANT": "1"}
    assert cmd.model == "Qwen/Qwen3-8B" and cmd.get("tensor_parallel_size") == 2


def test_other_launchers() -> None:
    old = parse_command("python -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 2",
                        engine_version="0.10.0")
    assert old.engine == "vllm" and old.model == "m" and old.model_source == "--model"
    serve = parse_command("sglang serve Qwen/Qwen3-8B --tp 2", engine_version="0.5.23")
    assert serve.model == "Qwen/Qwen3-8B" and serve.get("tp_size") == 2
    argv = parse_command(["vllm", "serve", "m", "--dtype=bfloat16"], engine_version="0.13.0")
    assert argv.get("dtype") == "bfloat16" and argv.shape == "argv"
    uv = parse_command("CUDA_VISIBLE_DEVICES=0,1 uv run vllm serve m -tp 2")
    assert uv.get("tensor_parallel_size") == 2 and uv.env == {"CUDA_VISIBLE_DEVICES": "0,1"}


def test_process_argv_through_the_console_script_shebang() -> None:
    """/proc/PID/cmdline of `vllm serve` is the interpreter, the script's path, then its arguments."""
    vllm = parse_command(["/usr/bin/python3", "/usr/local/bin/vllm", "serve", "Qwen/Qwen3-8B", "-tp", "2"],
                         engine_version="0.13.0")
    assert (vllm.engine, vllm.entry, vllm.model) == ("vllm", "vllm serve", "Qwen/Qwen3-8B")
    assert vllm.get("tensor_parallel_size") == 2 and not vllm.positionals and not vllm.problems
    sglang = parse_command(["/opt/venv/bin/python3.12", "-u", "/opt/venv/bin/sglang", "serve", "--model-path", "m"],
                           engine_version="0.5.23")
    assert (sglang.engine, sglang.model, sglang.problems) == ("sglang", "m", [])


def test_process_argv_of_an_unknown_launcher_reads_only_its_flags() -> None:
    """A launcher of the operator's own: its program, script or module is not an engine argument."""
    cmd = parse_command(["/usr/bin/python3", "-m", "mycorp.serve", "--model-path", "m", "--tp-size", "2"],
                        engine="sglang", engine_version="0.5.23")
    assert cmd.get("tp_size") == 2 and not cmd.positionals and not cmd.problems
    assert any("`python3 -m mycorp.serve`, a launcher llmdoctor does not know" in note for note in cmd.notes)


@pytest.mark.parametrize("argv", [["/usr/bin/python3", "/srv/proxy.py"], ["envoy"], ["python3", "-m", "http.server"]])
def test_process_argv_without_engine_flags_is_no_launch(argv: list[str]) -> None:
    """A proxy or any other program on the port is not a launch to lint (its path is no stray engine argument)."""
    with pytest.raises(InputError, match="is not a vLLM or SGLang launch"):
        parse_command(argv, engine="vllm")


def test_exports_comments_fences_and_lost_backslashes() -> None:
    text = """```bash
export VLLM_BATCH_INVARIANT=1   # reproducible evals
$ vllm serve Qwen/Qwen3-8B \\
    --max-model-len 8192   # short context first
    --gpu-memory-utilization 0.85
```"""
    cmd = parse_command(text, engine_version="0.13.0")
    assert cmd.env == {"VLLM_BATCH_INVARIANT": "1"}
    assert cmd.get("max_model_len") == 8192 and cmd.get("gpu_memory_utilization") == 0.85
    assert cmd.problems == []


def test_render_is_one_flag_per_line() -> None:
    cmd = parse_command(SEED_DSV3, engine_version="0.13.0")
    assert cmd.render() == (
        "vllm serve deepseek-ai/DeepSeek-V3 \\\n  --tensor-parallel-size 8 \\\n  --dtype fp8 \\\n"
        "  --kv-cache-dtype fp8 \\\n  --max-model-len 131072 \\\n  --gpu-memory-utilization 0.92")
    again = parse_command(cmd.render(), engine_version="0.13.0")
    assert again.by_dest() == cmd.by_dest()


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("   \n\t  ", "empty"),
    ("vllm serve m --speculative-config '{\"a\": 1}", "unbalanced ' quote"),
    ('python3 -m sglang.launch_server --model-path "m', 'unbalanced " quote'),
    ("ls -la /tmp && echo done", "no vLLM or SGLang launch found"),
    ("\x00\x01\x02binary\x03\x04", "binary data"),
    ("apiVersion: v1\nkind: Pod\nspec: [unclosed", "invalid YAML"),
    ("docker run --rm", "without an image"),
])
def test_garbage_is_one_line_input_error(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_command(text)
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith("launch command:")


def test_bad_engine_or_version_arguments() -> None:
    with pytest.raises(InputError, match="engine version: 'banana'"):
        parse_command("vllm serve m", engine_version="banana")
    with pytest.raises(InputError, match="engine: 'tgi'"):
        parse_command("--foo 1", engine="tgi")


def test_version_unknown_reads_an_older_releases_exact_flag_with_its_meaning() -> None:
    """SGLang 0.3.5-0.5.19 read --cuda-graph-max-bs (catalog sglang.json: server_args.py:690, from 0.5.14 an alias
    of --cuda-graph-max-bs-decode); 0.5.20 on has only the -decode/-prefill pair, of which it is an ambiguous
    prefix that argparse refuses. With the version unknown the command ran, so it was for a release that read
    the flag: its value is kept with the last such release's meaning (the renamed problem says which releases),
    where a known 0.5.23 still calls it ambiguous and reads no value."""
    text = "python -m sglang.launch_server --model-path m --cuda-graph-max-bs 32"
    unknown = parse_command(text)
    flags = {f.dest: f.value for f in unknown.flags}
    assert flags.get("cuda_graph_max_bs_decode") == 32
    assert [p.kind for p in unknown.problems if p.flag == "--cuda-graph-max-bs"] == ["renamed_flag"]
    known = parse_command(text, engine_version="0.5.23")
    assert not {"cuda_graph_max_bs", "cuda_graph_max_bs_decode"} & {f.dest for f in known.flags}
    assert [p.kind for p in known.problems if p.flag == "--cuda-graph-max-bs"] == ["ambiguous_flag"]
