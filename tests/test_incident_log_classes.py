"""Log wordings of whole classes of start-up failures, read on the reporters' own log lines (the benchmark's worked
cases, bench/incidents/<id>.yaml, each with its thread's URL), and the healthy real engines' logs that must not
name them.

Each class is one signature in its cause's file (playbooks/causes/<id>.yaml, `seen:` says where the wording comes
from); the cases below are examples of the class, not the rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from doctor.logs.source import read_log_input

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "bench" / "incidents"
LIVE = ROOT / "fixtures" / "live"
#: only worked batches are read here (a blind batch is never run before it is measured; batch 7 measured at 79466ea)
WORKED = {1, 2, 3, 4, 5, 6, 7}


def _case_path(case_id: str) -> Path:
    """A case by its full id (i046-sglang-4048) or its number alone (i554)."""
    exact = CASES / f"{case_id}.yaml"
    return exact if exact.is_file() else next(CASES.glob(f"{case_id}-*.yaml"))


def _case_log(case_id: str, tmp_path: Path) -> Path:
    data = yaml.safe_load(_case_path(case_id).read_text(encoding="utf-8"))
    assert int(data["batch"]) in WORKED
    path = tmp_path / f"{case_id}.log"
    path.write_text(data["evidence"]["log"], encoding="utf-8")
    return path


def _line_log(line: str, tmp_path: Path) -> Path:
    """A log of one line (a reporter's line, or a variant of it a test rules out)."""
    path = tmp_path / "server.log"
    path.write_text(line + "\n", encoding="utf-8")
    return path


def _causes(path: Path) -> list[str]:
    facts = {f.key: f.value for f in read_log_input(str(path)).facts}
    return facts.get("log.causes", [])


@pytest.mark.parametrize("case_id, why", [
    ("i311-sglang-7942", "a traceback cut inside module-level imports (the exception line past the cut)"),
    ("i335-sparkrun-127", "the same, inside vllm/entrypoints/cli/__init__.py's imports"),
    ("i312-sglang-5002", "a shared library not on the loader's path (libnvrtc.so.12)"),
    ("i318-sglang-2552", "`cannot import name` behind Xinference's [address=…, pid=…] prefix"),
    ("i309-sglang-4985", "SGLang's 'X is not installed. Please install it' (torch_memory_saver_adapter.py:21)"),
    ("i065-flashinfer-794", "flashinfer's 'with minimum required version … is not installed. Please uninstall'"),
    ("i075-sglang-4253", "SGLang skipped its DeepSeek module because Triton's gcc build failed, then refused the arch"),
])
def test_import_time_failures_name_the_missing_dependency(case_id: str, why: str, tmp_path: Path) -> None:
    assert "engine-dependency-missing" in _causes(_case_log(case_id, tmp_path)), why


@pytest.mark.parametrize("case_id, cause", [
    ("i096-dgx-spark-playbooks-63", "tp-exceeds-visible-gpus"),  # vllm/v1/executor/ray_utils.py:331's warning
    ("i230-mineru-3416", "gpu-arch-unsupported"),  # SGLang's sm75 minimum, as a launcher re-spaced it
    ("i183-vllm-51964", "gpu-arch-unsupported"),  # a ROCm kernel built for gfx950 only, on gfx942
    ("i325-vllm-10990", "engine-too-old"),  # the registry's refusal, the excerpt cut inside "for now"
    ("i307-unsloth-1380", "quantization-not-detected"),  # a bitsandbytes quant-state tensor no layer takes
    ("i042-vllm-3676", "max-model-len-over-model-limit"),  # raised as ValueError: the refusal, not the warning
])
def test_start_up_refusals_in_other_wordings(case_id: str, cause: str, tmp_path: Path) -> None:
    assert cause in _causes(_case_log(case_id, tmp_path))


def test_a_vllm_warning_about_its_own_extension_is_not_a_missing_dependency(tmp_path: Path) -> None:
    """i013: vLLM 0.5 logs `Failed to import from vllm._C with ImportError('libcudart.so.12: cannot open shared
    object file …')` as a warning and starts; the server then failed on bf16 (the case's settled cause)."""
    assert "engine-dependency-missing" not in _causes(_case_log("i013-glm-4-510", tmp_path))


@pytest.mark.parametrize("name", ["sglang-0.5.23-cpu/server.log", "vllm-0.32.0-cpu/plain-after/server.log"])
def test_healthy_real_starts_name_no_missing_dependency(name: str) -> None:
    """The real CPU engines' healthy logs: SGLang's "Ignore import error when loading sglang.srt.models.…: cannot
    import name …" lines are model modules a healthy server skips, not a missing dependency."""
    path = LIVE / name
    text = path.read_text(encoding="utf-8")
    if name.startswith("sglang"):
        assert "Ignore import error when loading" in text and "cannot import name" in text
    assert "engine-dependency-missing" not in _causes(path)


def test_the_over_limit_warning_is_not_the_refusal(tmp_path: Path) -> None:
    """vLLM with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 logs the same words as a warning (vllm/config/model.py:2659-2660):
    the -allowed cause, not the refusal, even though both start "User-specified max_model_len"."""
    path = tmp_path / "warning.log"
    path.write_text("WARNING 03-01 10:00:00 config.py:1999] User-specified max_model_len (16384) is greater than the "
                    "derived max_model_len (max_position_embeddings=8192 or model_max_length=None in model's "
                    "config.json).\n", encoding="utf-8")
    causes = _causes(path)
    assert "max-model-len-over-model-limit-allowed" in causes and "max-model-len-over-model-limit" not in causes


def _check(*args: str) -> dict:
    import json

    from tests.conftest import run_cli

    proc = run_cli("check", "--offline", "--format", "json", *args, env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode in (0, 1, 5), proc.stderr
    return json.loads(proc.stdout)


def test_sglang_refusing_a_request_below_its_context_length_is_the_kv_pool(tmp_path: Path) -> None:
    """sgl-project/sglang#4048 (i046): `--context-length 163840`, and the scheduler refuses a 160k request at 59862
    tokens — min(context, pool) (managers/tp_worker.py:568-572) is the pool's. At a context length equal to the
    limit the same line is a request longer than the context, not a pool too small."""
    data = yaml.safe_load((CASES / "i046-sglang-4048.yaml").read_text(encoding="utf-8"))
    log = _case_log("i046-sglang-4048", tmp_path)
    config = str(ROOT / "fixtures" / "configs" / "deepseek-ai__DeepSeek-R1.json")
    doc = _check("--command", data["evidence"]["command"], "--config", config, "--log", str(log),
                 "--symptom", "launch-failure")
    [finding] = [f for f in doc["findings"] if f["id"] == "kv-cache-too-small-for-max-len"]
    assert "--context-length" in finding["fix"] and "59868" in finding["fix"]
    at_limit = data["evidence"]["command"].replace("--context-length 163840", "--context-length 59868")
    doc = _check("--command", at_limit, "--config", config, "--log", str(log), "--symptom", "launch-failure")
    assert "kv-cache-too-small-for-max-len" not in [f["id"] for f in doc["findings"]]


def test_the_v0_engine_start_line_names_vllm_and_its_release(tmp_path: Path) -> None:
    """vllm-project/vllm#5714 (i099): the V0 engine's "Initializing an LLM engine (v0.5.0.post1) with config:" line
    is vLLM's (vllm/engine/llm_engine.py; 0.3.3 prints it without the version)."""
    facts = {f.key: f.value for f in read_log_input(str(_case_log("i099-vllm-5714", tmp_path))).facts}
    assert (facts["log.engine"], facts["log.version"]) == ("vllm", "0.5.0.post1")


def test_a_launcher_passing_an_argument_of_a_later_release_is_the_engine_too_old(tmp_path: Path) -> None:
    """hiyouga/LLaMA-Factory#6654 (i221): LLaMA-Factory builds AsyncEngineArgs(limit_mm_per_prompt=…) and vLLM 0.5.0
    refuses the keyword; the flag catalogs' history has --limit-mm-per-prompt from 0.5.5, so the release is too old.
    On a release that has the argument the same words are no such finding (something else refused it)."""
    log = str(_case_log("i221-llamafactory-6654", tmp_path))
    doc = _check("--log", log, "--engine-version", "0.5.0", "--symptom", "launch-failure")
    assert doc["findings"][0]["id"] == "engine-too-old"
    assert doc["facts"]["launch.kwargs_too_new"]["value"] == [{"argument": "limit_mm_per_prompt", "since": "0.5.5"}]
    assert doc["facts"]["log.engine"]["value"] == "vllm"  # AsyncEngineArgs in the traceback
    doc = _check("--log", log, "--engine-version", "0.6.4", "--symptom", "launch-failure")
    assert "launch.kwargs_too_new" not in doc["facts"]
    assert "engine-too-old" not in [f["id"] for f in doc["findings"]]


def test_a_skipped_model_module_alone_is_no_missing_dependency(tmp_path: Path) -> None:
    """i075's own lines without the architecture refusal that follows them: SGLang skipped a model module (its Triton
    build failed), but nothing ties that module to a failure, so it names nothing (healthy builds skip modules too)."""
    text = _case_log("i075-sglang-4253", tmp_path).read_text(encoding="utf-8")
    assert "Model architectures" in text
    cut = tmp_path / "skipped-only.log"
    cut.write_text("".join(line for line in text.splitlines(keepends=True) if "Model architectures" not in line),
                   encoding="utf-8")
    assert "engine-dependency-missing" not in _causes(cut)


def test_a_log_that_ends_in_cuda_graph_capture_names_the_capture_at_low_confidence(tmp_path: Path) -> None:
    """vllm-project/vllm#11251 (i081): vLLM 0.6.4's log ends at "Capturing cudagraphs for decoding" (the V0 worker's
    wording) with no error line after it: the start died in the capture, named as a warning at low confidence.
    The same log with the V0 finish line, or with an error line after the capture, is no such finding."""
    log = _case_log("i081-vllm-11251", tmp_path)
    facts = {f.key: f.value for f in read_log_input(str(log)).facts}
    assert facts["log.cuda_graph"] == "capturing"
    doc = _check("--log", str(log), "--engine-version", "0.6.4.post1", "--symptom", "launch-failure")
    [finding] = [f for f in doc["findings"] if f["id"] == "cuda-graph-capture-oom"]
    assert finding["severity"] == "warning" and finding["confidence"] == "low"
    text = log.read_text(encoding="utf-8")
    done = tmp_path / "done.log"
    done.write_text(text + "INFO 12-20 20:25:59 model_runner.py:1527] Graph capturing finished in 10 secs.\n",
                    encoding="utf-8")
    assert {f.key: f.value for f in read_log_input(str(done)).facts}["log.cuda_graph"] == "captured"
    other = tmp_path / "other.log"
    other.write_text(text + "RuntimeError: CUDA error: an illegal memory access was encountered\n", encoding="utf-8")
    for path in (done, other):
        doc = _check("--log", str(path), "--engine-version", "0.6.4.post1", "--symptom", "launch-failure")
        assert "cuda-graph-capture-oom" not in [f["id"] for f in doc["findings"]]


@pytest.mark.parametrize("case_id, why", [
    ("i421-vllm-omni-2859", "vllm_omni/patch.py imports vllm.inputs.data, which vLLM 0.19.0 does not have"),
    ("i466-LMCache-1001", "vLLM 0.9.1's scheduler calls LMCache's adapter, which reads a field of a later release"),
])
def test_a_plugin_failing_on_the_engines_internals_is_a_version_mismatch(case_id: str, why: str,
                                                                         tmp_path: Path) -> None:
    assert "plugin-engine-version-mismatch" in _causes(_case_log(case_id, tmp_path)), why


def test_the_engines_own_missing_module_or_attribute_is_no_plugin(tmp_path: Path) -> None:
    """The same exceptions raised in the engine's own frames (a module the engine imports, an attribute of its own
    objects) are no plugin's doing; nor are the healthy real starts."""
    path = tmp_path / "own.log"
    path.write_text(
        'Traceback (most recent call last):\n'
        '  File "/usr/lib/python3.12/site-packages/vllm/entrypoints/cli/main.py", line 7, in <module>\n'
        '    from vllm.inputs.data import TokensPrompt\n'
        "ModuleNotFoundError: No module named 'vllm.inputs.data'\n"
        '  File "/usr/lib/python3.12/site-packages/vllm/v1/core/sched/scheduler.py", line 563, in schedule\n'
        '    meta = self.connector.build_connector_meta(scheduler_output)\n'
        '  File "/usr/lib/python3.12/site-packages/vllm/distributed/kv_transfer/base.py", line 9, in build\n'
        '    return x.req_ids\n'
        "AttributeError: 'list' object has no attribute 'req_ids'\n", encoding="utf-8")
    assert "plugin-engine-version-mismatch" not in _causes(path)
    for name in ("sglang-0.5.23-cpu/server.log", "vllm-0.32.0-cpu/plain-after/server.log"):
        assert "plugin-engine-version-mismatch" not in _causes(LIVE / name)


@pytest.mark.parametrize("case_id", ["i477-vllm-ascend-183", "i478-sglang-3075", "i479-sglang-577"])
def test_a_checkpoint_tensor_the_model_has_no_parameter_for(case_id: str, tmp_path: Path) -> None:
    """The weight loaders' `param = params_dict[name]` then KeyError (vLLM on Ascend and SGLang's EP MoE layer for
    block-FP8 scales, SGLang's tied Gemma head for lm_head.weight); a quantized checkpoint read as unquantized
    (`qweight`, i006) keeps its own cause."""
    assert "checkpoint-tensor-without-parameter" in _causes(_case_log(case_id, tmp_path))


def test_a_quantized_tensor_read_as_unquantized_keeps_its_cause(tmp_path: Path) -> None:
    path = tmp_path / "qweight.log"
    path.write_text('  File "/x/vllm/model_executor/models/llama.py", line 380, in load_weights\n'
                    "    param = params_dict[name]\n"
                    "KeyError: 'model.layers.0.mlp.down_proj.qweight'\n", encoding="utf-8")
    doc = _check("--log", str(path), "--engine-version", "0.3.3", "--symptom", "launch-failure")
    ids = [f["id"] for f in doc["findings"]]
    assert ids[0] == "quantization-not-detected" and "checkpoint-tensor-without-parameter" not in ids


@pytest.mark.parametrize("case_id, symptom, cause", [
    ("i018-langchain4j-3475", "tools-ignored", "auto-tool-choice-missing"),  # vLLM's HTTP 400 body
    ("i179-vllm-17977", "launch-failure", "chat-template-missing"),  # transformers' refusal, relayed as the 400
    ("i402-ogx-4534", "launch-failure", "context-shorter-than-requests"),  # inside openai's BadRequestError dict
])
def test_what_the_client_got_back_is_read_for_the_engines_message(case_id: str, symptom: str, cause: str,
                                                                  tmp_path: Path) -> None:
    """`check --client-output FILE`: the client's error quotes the engine's refusal of the request (a JSON or
    Python-dict error body's "message" is matched alone); the same text without the option is not read."""
    data = yaml.safe_load((CASES / f"{case_id}.yaml").read_text(encoding="utf-8"))
    path = tmp_path / "client.txt"
    path.write_text(str(data["evidence"]["client_output"]), encoding="utf-8")
    doc = _check("--client-output", str(path), "--symptom", symptom)
    assert cause in [f["id"] for f in doc["findings"]]
    assert doc["facts"]["log.causes"]["source"].startswith("log --client-output ")
    doc = _check("--symptom", symptom)
    assert cause not in [f["id"] for f in doc["findings"]]


def test_a_message_field_is_matched_inside_an_error_body() -> None:
    from doctor.logs import catalog as cat

    body = ("openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': \"This model's maximum context "
            "length is 6048 tokens. However, you requested 6616 tokens (568 in the messages, 6048 in the completion). "
            "Please reduce the length of the messages or completion.\", 'type': 'BadRequestError', 'code': 400}")
    match = cat.match_line(body, "vllm", "0.6.0")
    assert match is not None and match.ordered[0] == 6048 and match.cause == "context-shorter-than-requests"
    assert match.sites[0].file == "vllm/entrypoints/openai/serving_engine.py"
    assert cat.match_line("{'object': 'error', 'message': 'hello there', 'code': 400}", "vllm", None) is None


@pytest.mark.parametrize("case_id", ["i231-sglang-32105", "i308-sglang-4717"])
def test_a_capture_refused_by_the_stream_or_the_allocator_is_no_memory_fault(case_id: str, tmp_path: Path) -> None:
    """CUDA's capture errors (cudaErrorStreamCaptureUnsupported, sgl-project/sglang#32105) and PyTorch's allocator
    assert during capture (captures_underway, sgl-project/sglang#4717) name cuda-graph-capture-failed."""
    causes = _causes(_case_log(case_id, tmp_path))
    assert "cuda-graph-capture-failed" in causes and "cuda-graph-capture-oom" not in causes


def test_an_error_after_the_capture_began_is_a_capture_failure(tmp_path: Path) -> None:
    """sgl-project/sglang#24740 (i232): "Capture cuda graph begin", then Python's AttributeError from the custom
    all-reduce's capture(): the error ended the start in the capture. An out-of-memory there names its own cause."""
    log = _case_log("i232-sglang-24740", tmp_path)
    doc = _check("--log", str(log), "--symptom", "launch-failure")
    assert "cuda-graph-capture-failed" in [f["id"] for f in doc["findings"]][:3]
    oom = tmp_path / "oom.log"
    oom.write_text(log.read_text(encoding="utf-8").splitlines()[0] + "\nException: Capture cuda graph failed: CUDA "
                   "out of memory. Tried to allocate 2.00 GiB\n", encoding="utf-8")
    ids = [f["id"] for f in _check("--log", str(oom), "--symptom", "launch-failure")["findings"]]
    assert "cuda-graph-capture-oom" in ids and "cuda-graph-capture-failed" not in ids
    for name in ("sglang-0.5.23-cpu/server.log", "vllm-0.32.0-cpu/plain-after/server.log"):
        assert "cuda-graph-capture-failed" not in _causes(LIVE / name)


@pytest.mark.parametrize("case_id", ["i220-joycaption-45", "i424-glm-v-8"])
def test_a_transformers_processor_out_of_step_with_the_engine(case_id: str, tmp_path: Path) -> None:
    """The engine's placeholder merge refused (vllm/model_executor/models/utils.py:396-399, 0.8.5.post1) and a
    model's transformers processor refusing the engine's arguments (Glm4vProcessor.__init__); vLLM's own classes
    (no family in their name) are not read as transformers'."""
    assert "transformers-version-mismatch" in _causes(_case_log(case_id, tmp_path))
    path = tmp_path / "own.log"
    path.write_text("TypeError: Processor.__init__() got an unexpected keyword argument 'mm_registry'\n"
                    "TypeError: EngineArgs.__init__() got an unexpected keyword argument 'foo'\n", encoding="utf-8")
    assert "transformers-version-mismatch" not in _causes(path)


def test_what_failed_comes_before_the_stage_that_raised_it(tmp_path: Path) -> None:
    """llm-d/llm-d#352 (i247): the log names nccl-init-failed and, by the start-up stage its line was raised in,
    device-init-failed; both critical at high confidence. Among equals a stage cause (log_node.stage) comes after the
    causes that say what failed, whatever the ids' alphabet."""
    data = yaml.safe_load((CASES / "i247-llm-d-352.yaml").read_text(encoding="utf-8"))
    args = ["--log", str(_case_log("i247-llm-d-352", tmp_path)), "--symptom", "launch-failure"]
    if data.get("version"):
        args += ["--engine-version", str(data["version"])]
    ids = [f["id"] for f in _check(*args)["findings"]]
    assert ids.index("nccl-init-failed") < ids.index("device-init-failed")


def test_a_gpu_below_the_engines_minimum_is_the_fault_not_its_dtype(tmp_path: Path) -> None:
    """vllm-project/vllm#1284 (i015): a P100 logs both the bfloat16 refusal and "compute capability below 7.0 are
    not supported"; no dtype makes it run, so the arch refusal is the finding and the dtype's yields to it."""
    ids = [f["id"] for f in _check("--log", str(_case_log("i015-vllm-1284", tmp_path)), "--symptom",
                                   "launch-failure")["findings"]]
    assert ids[0] == "gpu-arch-unsupported" and "bf16-unsupported-gpu" not in ids


def test_an_engine_argument_the_release_dropped_is_a_removed_flag(tmp_path: Path) -> None:
    """hiyouga/LlamaFactory#9503 (i554): a launcher builds AsyncEngineArgs(disable_log_requests=…) against vLLM 0.11.0,
    whose flag catalog keeps --disable-log-requests only as a deprecated spelling (vllm/engine/arg_utils.py:1752,
    0.10.1-0.16.0) and whose argument class refused the keyword: removed-flag, and the TypeError is no longer an
    unplaced refusal. On 0.10.0, which has the argument, the same words name neither; vllm-project/vllm#9398 (i556):
    num_scheduler_steps on 0.6.3, which has it, is neither too new nor removed (a mixed installation refused it)."""
    log = str(_case_log("i554", tmp_path))
    doc = _check("--log", log, "--engine-version", "0.11.0", "--symptom", "launch-failure")
    assert [f["id"] for f in doc["findings"]] == ["removed-flag"]
    [removed] = doc["facts"]["launch.removed_flags"]["value"]
    assert removed["flag"] == "--disable-log-requests" and removed["dropped_in"] == "0.11.0"
    doc = _check("--log", log, "--engine-version", "0.10.0", "--symptom", "launch-failure")
    assert {"removed-flag", "engine-too-old"}.isdisjoint(f["id"] for f in doc["findings"])
    doc = _check("--log", str(_case_log("i556", tmp_path)), "--engine-version", "0.6.3", "--symptom", "launch-failure")
    ids = [f["id"] for f in doc["findings"]]
    assert "engine-error-unplaced" in ids and {"removed-flag", "engine-too-old"}.isdisjoint(ids)


@pytest.mark.parametrize("case_id", ["i497", "i574"])
def test_the_engine_package_itself_is_no_missing_dependency(case_id: str, tmp_path: Path) -> None:
    """vllm-project/vllm#475 (a script named vllm.py: "cannot import name 'LLM' from 'vllm'") and #2236 (a volume
    mounted over the image's package: "No module named 'vllm'"): Python not finding the engine, or finding a module of
    its name without its names, is not a dependency the engine lacks."""
    assert "engine-dependency-missing" not in _causes(_case_log(case_id, tmp_path))


@pytest.mark.parametrize("case_id, cause", [
    ("i524", "model-architecture-refused"),  # SGLang 0.3.0's "Unsupported architectures: …" (beside engine-too-old)
    ("i525", "model-architecture-refused"),  # "Model architectures […] are not supported for now"
    ("i573", "model-architecture-refused"),  # an architecture vLLM dropped (registry.py:1234, 0.33.0), cut short
    ("i564", "tool-parser-unregistered"),  # argparse's invalid choice for --tool-call-parser (cli_args.py:202, 0.10.0)
    ("i569", "trust-remote-code-missing"),  # transformers' "contains custom code which must be executed" (4.57.1)
    ("i551", "scheduler-config-rejected"),  # the encoder budget (encoder_cache_manager.py:366, 0.33.0)
    ("i542", "gpu-arch-unsupported"),  # FlashAttention's own sm_80 check (flash_api.cpp) on a pre-Ampere GPU
    ("i580", "driver-too-old"),  # a kernel library needing a driver API function libcuda lacks (cuGreenCtx…)
    ("i568", "model-load-failed"),  # a traceback cut inside a model's load_weights (the error past the cut)
])
def test_batch_5_classes(case_id: str, cause: str, tmp_path: Path) -> None:
    causes = _causes(_case_log(case_id, tmp_path))
    assert cause in causes
    assert "invalid-flag-value" not in causes


def test_remote_code_refused_although_the_command_allows_it_is_not_the_flag(tmp_path: Path) -> None:
    """i569's transformers refusal with a launch command that passes --trust-remote-code: the flag is not what is
    missing (vllm-project/vllm#38307: a quantization config's own reload dropped it), so the cause is not named."""
    log = str(_case_log("i569", tmp_path))
    with_flag = _check("--log", log, "--command", "vllm serve m --trust-remote-code", "--symptom", "launch-failure")
    without = _check("--log", log, "--command", "vllm serve m", "--symptom", "launch-failure")
    assert "trust-remote-code-missing" not in [f["id"] for f in with_flag["findings"]]
    assert "trust-remote-code-missing" in [f["id"] for f in without["findings"]]


def test_a_backend_without_softcapping_is_named_before_the_gpu(tmp_path: Path) -> None:
    """vllm-project/vllm#9922 (i151): Gemma-2 on a Turing GPU logs xFormers' soft-capping refusal and FlashAttention's
    sm_80 check; the backend finding (its fix) is the cause named, the GPU's minimum yields to it."""
    causes = _causes(_case_log("i151", tmp_path))
    assert "softcap-unsupported-backend" in causes
    doc = _check("--log", str(_case_log("i151", tmp_path)), "--engine-version", "0.6.3", "--symptom", "launch-failure")
    assert [f["id"] for f in doc["findings"]][0] == "softcap-unsupported-backend"


@pytest.mark.parametrize("case_id, cause", [
    # the engine package Python imports is not the built install: a volume over the image's package, a script named
    # vllm.py, the source tree as the working directory (no compiled vllm._C)
    ("i574", "engine-package-incomplete"),
    ("i497", "engine-package-incomplete"),
    ("i218", "engine-package-incomplete"),
    ("i416", "engine-package-incomplete"),  # an unbuilt source checkout (beside engine-dependency-missing)
    # SGLang's start-up warm-up answered by a proxy (Squid's 503 page, a 502) or refused by httpx for a malformed
    # proxy variable
    ("i526", "http-proxy-intercepts-warmup"),
    ("i465", "http-proxy-intercepts-warmup"),
    ("i527", "http-proxy-intercepts-warmup"),
    # transformers' refusal of a model type it does not know (configuration_auto.py:430, 5.19.0)
    ("i545", "transformers-too-old-for-architecture"),
    ("i546", "transformers-too-old-for-architecture"),
    ("i563", "transformers-too-old-for-architecture"),
])
def test_none_yet_classes_given_a_cause(case_id: str, cause: str, tmp_path: Path) -> None:
    assert cause in _causes(_case_log(case_id, tmp_path))


def test_a_transformers_refusal_keeps_engine_too_old_first(tmp_path: Path) -> None:
    """The same line names both: engine-too-old (a release without the architecture, i093's settled cause) stays
    first, transformers-too-old-for-architecture (i563's: the release had it, transformers did not) follows."""
    doc = _check("--log", str(_case_log("i093", tmp_path)), "--engine-version", "0.6.3", "--symptom", "launch-failure")
    named = [f["id"] for f in doc["findings"]]
    assert named[:2] == ["engine-too-old", "transformers-too-old-for-architecture"]


@pytest.mark.parametrize(("cause", "line"), [
    # the engine's own package, found and built: a version question, not an incomplete install
    ("engine-package-incomplete", "ModuleNotFoundError: No module named 'vllm.inputs.data'"),  # a submodule (i421)
    ("engine-package-incomplete", "ModuleNotFoundError: No module named 'vllm_ascend'"),
    ("engine-package-incomplete",
     "ImportError: cannot import name 'LLM' from 'vllm' (/usr/lib/python3/site-packages/vllm/__init__.py)"),
    ("engine-package-incomplete",
     "ImportError: cannot import name '_set_default_torch_dtype' from 'vllm.model_executor.model_loader'"),
    # a parameter that is no command-line flag (no dashes): not the flag class
    ("deprecated-flag", "FutureWarning: The parameter `token` is deprecated."),
    # a warm-up answered by the engine itself: no proxy in the way
    ("http-proxy-intercepts-warmup", "AssertionError: res=<Response [500]>, res.text='Internal Server Error'"),
    ("http-proxy-intercepts-warmup", "AssertionError: res=<Response [200]>"),
    ("http-proxy-intercepts-warmup",
     "INFO:     127.0.0.1:40000 - \"GET /model_info HTTP/1.1\" 503 Service Unavailable"),
])
def test_a_line_that_only_looks_like_the_class_does_not_name_it(cause: str, line: str, tmp_path: Path) -> None:
    path = _line_log(line, tmp_path)
    assert cause not in _causes(path)


@pytest.mark.parametrize("name", ["sglang-0.5.23-cpu/server.log", "vllm-0.32.0-cpu/plain-after/server.log"])
def test_healthy_real_starts_name_none_of_the_new_classes(name: str) -> None:
    causes = _causes(LIVE / name)
    for cause in ("engine-package-incomplete", "http-proxy-intercepts-warmup", "transformers-too-old-for-architecture",
                  "pooling-model-task-not-set"):
        assert cause not in causes


@pytest.mark.parametrize(("case_id", "gpu", "cause"), [
    # vLLM 0.8.5's compressed-tensors refusal raised as three strings (compressed_tensors.py:210-213): a tuple
    ("i600", "V100", "quant-unsupported-gpu"),
    # Triton's fp8e4nv on sm_86 (triton/language/core.py:587)
    ("i601", "RTX 3090:1", "fp8-unsupported-gpu"),
])
def test_a_refusal_for_this_gpu_answers_hardware_fit(case_id: str, gpu: str, cause: str, tmp_path: Path) -> None:
    """Asked "does it run on these GPUs?" (hardware-fit), the log's own refusal for the GPU is the answer, not
    only under launch-failure (log_node.also)."""
    doc = _check("--log", str(_case_log(case_id, tmp_path)), "--gpu", gpu, "--symptom", "hardware-fit")
    assert [f["id"] for f in doc["findings"]][:1] == [cause]


def test_a_deprecation_warning_naming_a_dashed_flag(tmp_path: Path) -> None:
    """vllm-project/vllm#17452 (i603): 'The parameter --enable-reasoning is deprecated.' names the flag."""
    assert "deprecated-flag" in _causes(_case_log("i603", tmp_path))


def test_a_name_missing_from_sglangs_own_module_is_a_package_out_of_step(tmp_path: Path) -> None:
    """sgl-project/sglang#23535 (i627): sglang-router imports a helper SGLang 0.5.10 moved; SGLang is the engine, not a
    dependency, so the mismatch is named and no missing dependency."""
    causes = _causes(_case_log("i627", tmp_path))
    assert "plugin-engine-version-mismatch" in causes and "engine-dependency-missing" not in causes


@pytest.mark.parametrize("case_id", ["i214", "i213"])
def test_sglang_importing_from_vllm_stays_a_dependency(case_id: str, tmp_path: Path) -> None:
    """Early SGLang imported vLLM as a dependency (sglang 0.1.3 sglang/srt/models/llama2.py:12-14): a name missing
    there is engine-dependency-missing, not the plugin class."""
    causes = _causes(_case_log(case_id, tmp_path))
    assert "engine-dependency-missing" in causes and "plugin-engine-version-mismatch" not in causes


def test_sglang_quoting_a_low_static_fraction_names_the_fraction(tmp_path: Path) -> None:
    """gpustack/gpustack#3831 (i366): SGLang's refusal quotes the fraction it ran under (sglang 0.5.23
    srt/model_executor/pool_configurator.py:95-99; that release's debug f-string form). Under half the GPU it is the
    lever, named first; the start-up out-of-memory stays named beside it."""
    log = _case_log("i366", tmp_path)
    facts = {f.key: f.value for f in read_log_input(str(log)).facts}
    assert facts["log.refused_mem_fraction"] == 0.2
    named = [f["id"] for f in _check("--log", str(log), "--symptom", "launch-failure")["findings"]]
    assert named[:2] == ["mem-fraction-low", "startup-out-of-memory"]


@pytest.mark.parametrize("line", [
    # the 0.5.23 wording at a fraction SGLang picks for itself on a large GPU: the weights, not the fraction
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: mem_fraction_static=0.85",
    # 0.4.3's wording quotes no fraction (model_runner.py:627-630)
    "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
])
def test_sglang_refusal_without_a_low_fraction_is_not_the_fraction(line: str, tmp_path: Path) -> None:
    path = _line_log(line, tmp_path)
    named = [f["id"] for f in _check("--log", str(path), "--symptom", "launch-failure")["findings"]]
    assert "mem-fraction-low" not in named and "startup-out-of-memory" in named


@pytest.mark.parametrize(("case_id", "why"), [
    ("i483", "vLLM's 'vllm._flashmla_C is not available' (vllm/v1/attention/ops/flashmla.py:37, 0.33.0)"),
    ("i628", "a source checkout as the working directory: its vllm has no compiled activation_ops, cuda_utils"),
])
def test_an_engine_package_without_its_compiled_modules(case_id: str, why: str, tmp_path: Path) -> None:
    named = [f["id"] for f in _check("--log", str(_case_log(case_id, tmp_path)), "--symptom", "launch-failure")["findings"]]
    assert named[:1] == ["engine-package-incomplete"], why
    assert "engine-dependency-missing" not in named, "the engine's own package is not a missing dependency"


def test_two_modelopt_variants_refused_as_a_mismatch_is_the_release(tmp_path: Path) -> None:
    """vllm-project/vllm#42181 (i086): "(modelopt_fp4) … (modelopt)" — vLLM 0.33.0 config/model.py:1394-1450 lets
    the checkpoint's ModelOpt variant replace the argument before comparing, so only an older release refuses the
    pair; a real mismatch (i085: fp8 against gguf) stays quantization-mismatch."""
    named = [f["id"] for f in _check("--log", str(_case_log("i086", tmp_path)), "--symptom", "launch-failure")["findings"]]
    assert named[:1] == ["engine-too-old"] and "quantization-mismatch" not in named
    assert "quantization-mismatch" in _causes(_case_log("i085", tmp_path))
    assert "engine-too-old" not in _causes(_case_log("i085", tmp_path))


def test_an_embedding_export_started_as_a_generator(tmp_path: Path) -> None:
    """gpustack/gpustack#2170 (i575): vLLM 0.8.5 picked the generate task for Qwen3-Embedding and its loader found a
    top-level 'embed_tokens' (vllm/model_executor/models/utils.py:442-448, 0.33.0)."""
    named = [f["id"] for f in _check("--log", str(_case_log("i575", tmp_path)), "--symptom", "launch-failure")["findings"]]
    assert named[:1] == ["pooling-model-task-not-set"]


@pytest.mark.parametrize("line", [
    # a name under the wrapper's own prefix, or the head: not a bare base-model export
    "ValueError: There is no module or parameter named 'model.layers.0.mlp.gate' in Qwen3ForCausalLM",
    "ValueError: There is no module or parameter named 'lm_head' in Qwen3ForCausalLM",
    # a base model's own class has top-level layers: the name is not missing there for that reason
    "ValueError: There is no module or parameter named 'layers' in Qwen3Model",
])
def test_a_missing_name_that_is_not_a_bare_base_model(line: str, tmp_path: Path) -> None:
    path = _line_log(line, tmp_path)
    assert "pooling-model-task-not-set" not in _causes(path)


def _case_text(case_id: str, key: str, tmp_path: Path) -> Path:
    """One evidence key of a worked case (client_output, log) as a file, as the benchmark's runner passes it."""
    data = yaml.safe_load(_case_path(case_id).read_text(encoding="utf-8"))
    assert int(data["batch"]) in WORKED
    path = tmp_path / f"{case_id}.{key}"
    path.write_text(str(data["evidence"][key]), encoding="utf-8")
    return path


@pytest.mark.parametrize(("case_id", "why"), [
    ("i652", "SGLang's piecewise CUDA graphs: 'Piecewise CUDA Graph failed with error:' (its context manager's log)"),
    ("i661", "CUDA's own text of cudaErrorStreamCaptureInvalidated (901), as torch prints it"),
])
def test_a_capture_error_in_words_is_the_capture(case_id: str, why: str, tmp_path: Path) -> None:
    """The capture failed (not memory): named, and ahead of the start-up stage the scheduler's exception is read as."""
    doc = _check("--log", str(_case_log(case_id, tmp_path)), "--symptom", "launch-failure")
    assert [f["id"] for f in doc["findings"]][:1] == ["cuda-graph-capture-failed"], why


@pytest.mark.parametrize("line", [
    "Piecewise CUDA Graph failed with error: CUDA out of memory. Tried to allocate 2.00 GiB",
    "CUDA error: an illegal memory access was encountered",
])
def test_a_capture_out_of_memory_or_another_cuda_error_is_not_the_capture_class(line: str, tmp_path: Path) -> None:
    path = _line_log(line, tmp_path)
    assert "cuda-graph-capture-failed" not in _causes(path)


def test_a_name_missing_from_transformers_is_its_version(tmp_path: Path) -> None:
    """huggingface/transformers#36246 (i669): vLLM 0.7.2 imports a processor class transformers 4.49 dropped; the
    module is there, so the package is installed: the pair of versions is the cause, not a missing dependency."""
    doc = _check("--log", str(_case_log("i669", tmp_path)), "--symptom", "launch-failure")
    assert [f["id"] for f in doc["findings"]][:1] == ["transformers-version-mismatch"]


def test_a_name_missing_from_another_package_stays_a_dependency(tmp_path: Path) -> None:
    """sgl-project/sglang#764 (i144): the name is missing from flashinfer, not transformers."""
    causes = _causes(_case_log("i144", tmp_path))
    assert "engine-dependency-missing" in causes and "transformers-version-mismatch" not in causes


def test_sglang_refusing_tools_without_a_parser_is_the_missing_parser(tmp_path: Path) -> None:
    """sgl-project/sglang#10184 (i651): what the client got, 'Unsupported tool_call_parser: None' (sglang
    function_call_parser.py:150 with no --tool-call-parser), answers tools-ignored; another name printed there is not
    a missing parser."""
    doc = _check("--client-output", str(_case_text("i651", "client_output", tmp_path)), "--symptom", "tools-ignored")
    assert [f["id"] for f in doc["findings"]][:1] == ["tool-parser-missing"]
    other = tmp_path / "other.txt"
    other.write_text("ValueError: Unsupported tool_call_parser: qwen99\n", encoding="utf-8")
    assert "tool-parser-missing" not in _causes(other)


def test_ray_serves_unknown_engine_argument_is_a_removed_flag(tmp_path: Path) -> None:
    """ray-project/ray#64466 (i659): Ray Serve LLM refuses an engine_kwargs key that is no field of vLLM's engine
    arguments; `task` was vLLM's --task until 0.12.0 (the flag catalogs' history), so on 0.22.0 it is removed-flag."""
    facts = {f.key: f.value for f in read_log_input(str(_case_log("i659", tmp_path))).facts}
    assert facts["log.engine_kwargs_unknown"] == ["task"]
    doc = _check("--log", str(_case_log("i659", tmp_path)), "--engine-version", "0.22.0", "--symptom", "launch-failure")
    assert [f["id"] for f in doc["findings"]][:1] == ["removed-flag"]
    # a release that still has --task: nothing removed
    doc = _check("--log", str(_case_log("i659", tmp_path)), "--engine-version", "0.10.0", "--symptom", "launch-failure")
    assert "removed-flag" not in [f["id"] for f in doc["findings"]]


def test_the_soft_cap_refusal_behind_a_wrappers_suffix(tmp_path: Path) -> None:
    """logikon-ai/cot-eval#56 (i658): vLLM 0.5.1-0.5.2's wording ('withlogits_soft_cap'), re-raised by pydantic
    with ' (type=value_error)' after it."""
    assert "softcap-unsupported-backend" in _causes(_case_log("i658", tmp_path))


def test_a_prompt_longer_than_the_maximum_model_length_is_the_context(tmp_path: Path) -> None:
    """vllm V1's input processor (i675, zai-org/Glyph#9): 'The decoder prompt (length 163840) is longer than the
    maximum model length of 131072', as the client got it."""
    assert "context-shorter-than-requests" in _causes(_case_text("i675", "client_output", tmp_path))


@pytest.mark.parametrize("line", [
    "ImportError: cannot import name 'x' from 'transformers_stream_generator' (/site-packages/x/__init__.py)",
    "Ignore import error when loading sglang.srt.models.foo: cannot import name 'A' from 'transformers'",
])
def test_not_transformers_or_a_skipped_module_is_not_its_version(line: str, tmp_path: Path) -> None:
    """Another package whose name starts with 'transformers', and a model module SGLang skipped on a server that goes
    on, are not the engine's transformers at another release."""
    path = _line_log(line, tmp_path)
    assert "transformers-version-mismatch" not in _causes(path)
