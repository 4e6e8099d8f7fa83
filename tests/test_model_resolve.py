"""Model resolution (a local path → the HF cache → the Hub) and exact weights from safetensors headers.

The Hub is a local stand-in on 127.0.0.1 (tests/support/hubserver.py) speaking the routes huggingface_hub
really calls; the first tests prove that with huggingface_hub's own client. Configs are the real ones in
fixtures/configs; the safetensors files are *scenarios*: real headers (the format's
8-byte length + JSON) describing tensors of the config's shapes, with no data behind them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT, run_cli, shared_config
from support.hubserver import (
    HubFile,
    HubRepo,
    HubServer,
    config_repo,
    dense_tensors,
    safetensors_header,
    sharded,
    tensor_bytes,
)

from doctor.errors import InputError
from doctor.model.checkpoint import local_weights, read_header
from doctor.model.weights import name_format

TOKEN = "hf_standin_token"  # the stand-in's one valid token (never printed by llmdoctor)
NVFP4_QUANT = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "NVFP4", "group_size": 16}}


@pytest.fixture(scope="module")
def qwen_config() -> dict:
    return json.loads(shared_config("Qwen__Qwen3-8B.json").read_text())


@pytest.fixture(scope="module")
def hub(qwen_config: dict) -> Iterator[HubServer]:
    qwen = shared_config("Qwen__Qwen3-8B.json")
    bf16 = sharded(dense_tensors(qwen_config, "BF16"), 5)
    nvfp4_head, nvfp4_size = safetensors_header(dense_tensors(qwen_config, "NVFP4"))
    repos = {
        "Qwen/Qwen3-8B": config_repo(qwen, extra={
            **bf16, "generation_config.json": HubFile(data=b'{"do_sample": true, "temperature": 0.6}'),
            "tokenizer_config.json": HubFile(data=b'{"chat_template": "{% for m in messages %}{% endfor %}"}')}),
        "scenario/Qwen3-8B-NVFP4": config_repo(qwen, extra={
            "model.safetensors": HubFile(data=nvfp4_head, size=nvfp4_size),
            "hf_quant_config.json": HubFile(data=json.dumps(NVFP4_QUANT).encode())}),
        "meta-llama/Llama-3.3-70B-Instruct": config_repo(shared_config("meta-llama__Llama-3.3-70B-Instruct.json"),
                                                         gated=True),
        "zai-org/GLM-5.1": config_repo(shared_config("zai-org__GLM-5.1.json")),
        "scenario/broken": HubRepo({"config.json": HubFile(data=b'{"architectures": ["X"],')}),
    }
    with HubServer(repos, token=TOKEN) as server:
        yield server


def hub_env(hub: HubServer, cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN")}
    return {**env, "HF_ENDPOINT": hub.endpoint, "HF_HUB_CACHE": str(cache), "HF_HOME": str(cache / "home"),
            **extra}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, cwd=ROOT,
                          env={**env, "NO_COLOR": "1"}, timeout=120)


# ------------------------------------------------------------------------------------------ the stand-in itself
def test_the_stand_in_speaks_huggingface_hubs_protocol(hub: HubServer, tmp_path: Path, qwen_config: dict,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import HfApi, constants, errors, hf_hub_download

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # conftest's HF_HUB_OFFLINE=1 froze it at import

    path = hf_hub_download("Qwen/Qwen3-8B", "config.json", endpoint=hub.endpoint, cache_dir=tmp_path, token=False)
    assert Path(path).read_bytes() == shared_config("Qwen__Qwen3-8B.json").read_bytes()
    api = HfApi(endpoint=hub.endpoint, token=False)
    meta = api.get_safetensors_metadata("Qwen/Qwen3-8B")
    assert meta.sharded and len(meta.files_metadata) == 5
    tensors = dense_tensors(qwen_config, "BF16")
    assert sum(t.parameter_count for f in meta.files_metadata.values() for t in f.tensors.values()) == \
        sum(tensor_bytes([t]) // 2 for t in tensors)
    single = api.get_safetensors_metadata("scenario/Qwen3-8B-NVFP4")
    assert not single.sharded and {t.dtype for t in single.files_metadata["model.safetensors"].tensors.values()} \
        == {"BF16", "U8", "F8_E4M3", "F32"}
    with pytest.raises(errors.GatedRepoError):
        hf_hub_download("meta-llama/Llama-3.3-70B-Instruct", "config.json", endpoint=hub.endpoint,
                        cache_dir=tmp_path, token=False)
    assert hf_hub_download("meta-llama/Llama-3.3-70B-Instruct", "config.json", endpoint=hub.endpoint,
                           cache_dir=tmp_path, token=TOKEN)
    with pytest.raises(errors.RepositoryNotFoundError):
        hf_hub_download("nobody/nothing", "config.json", endpoint=hub.endpoint, cache_dir=tmp_path, token=False)
    with pytest.raises(errors.EntryNotFoundError):
        hf_hub_download("Qwen/Qwen3-8B", "nope.json", endpoint=hub.endpoint, cache_dir=tmp_path, token=False)
    # The headers came by range requests; no request ever asked for tensor data.
    assert any(r.headers.get("range") == "bytes=0-100000" for r in hub.requests)
    # the NVFP4 scenario's header is past 100 kB: the client asked for the rest by a second range
    assert any(r.headers.get("range", "").startswith("bytes=8-") for r in hub.requests)
    assert not hub.weight_downloads()


# ------------------------------------------------------------------------------------------ safetensors headers
def test_local_shards_are_summed_exactly(tmp_path: Path, qwen_config: dict) -> None:
    for fmt in ("BF16", "FP8", "NVFP4"):
        folder = tmp_path / fmt
        folder.mkdir()
        tensors = dense_tensors(qwen_config, fmt)
        for name, item in sharded(tensors, 3).items():
            (folder / name).write_bytes(item.head())  # the header alone: the data is never read
        weights, why = local_weights(folder)
        assert weights is not None, why
        assert weights.total_bytes == tensor_bytes(tensors) and weights.files == 3
        assert weights.tensors == len(tensors) and weights.expert_bytes == 0
    fp8 = local_weights(tmp_path / "FP8")[0]
    assert fp8 is not None and set(fp8.by_dtype) == {"BF16", "F8_E4M3", "F32"}


def test_a_missing_shard_or_a_broken_header_falls_back_with_the_reason(tmp_path: Path, qwen_config: dict) -> None:
    files = sharded(dense_tensors(qwen_config, "BF16"), 3)
    for name, item in list(files.items())[1:]:
        (tmp_path / name).write_bytes(item.head())
    weights, why = local_weights(tmp_path)
    assert weights is None and "1 of 3 safetensors shards are not in" in why
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.safetensors").write_bytes((2**40).to_bytes(8, "little") + b"{}")
    weights, why = local_weights(broken)
    assert weights is None and "not a safetensors header" in why
    header = b'{"a": {"dtype": "F16", "shape": [2]}}'
    (broken / "model.safetensors").write_bytes(len(header).to_bytes(8, "little") + header)
    with pytest.raises(ValueError, match="no valid data_offsets"):
        read_header(broken / "model.safetensors")


def test_exact_weights_agree_with_the_shape_estimate(tmp_path: Path, qwen_config: dict) -> None:
    """The two ways to size Qwen3-8B (its real config) meet within 0.1 %: the estimate leaves norms out."""
    from doctor.model.resolve import model_card

    folder = tmp_path / "Qwen3-8B"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(qwen_config))
    estimate = model_card(str(folder)).card
    assert estimate.weight_source == "estimate"
    for name, item in sharded(dense_tensors(qwen_config, "BF16"), 2).items():
        (folder / name).write_bytes(item.head())
    exact = model_card(str(folder)).card
    assert exact.weight_source == "safetensors" and "safetensors headers: " in exact.weight_detail
    assert abs(exact.weight_bytes - estimate.weight_bytes) / exact.weight_bytes < 0.001


# ------------------------------------------------------------------------------------------ resolution, end to end
def test_inspect_resolves_a_repo_from_the_hub_then_from_the_cache(hub: HubServer, tmp_path: Path,
                                                                 qwen_config: dict) -> None:
    env = hub_env(hub, tmp_path)
    result = cli(env, "inspect", "Qwen/Qwen3-8B", "--format", "json")
    assert result.returncode == 0 and result.stderr == "", result.stderr  # no progress bars, no warnings
    report = json.loads(result.stdout)
    assert report["resolution"]["origin"] == "Hub" and report["resolution"]["chat_template"] is True
    assert report["model"]["weight_source"] == "safetensors"
    assert report["model"]["weight_bytes"] == tensor_bytes(dense_tensors(qwen_config, "BF16"))
    assert report["model"]["architectures"] == qwen_config["architectures"]
    assert not hub.weight_downloads()
    # What was fetched is in the user's HF cache, and the headers' sum in llmdoctor's (doctor/model/hubmemo.py):
    # offline, the next run finds both there, without importing the Hub client.
    asked = len(hub.requests)
    again = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", "inspect", "Qwen/Qwen3-8B", "--format",
                            "json"], capture_output=True, text=True, cwd=ROOT, env={**env, "HF_HUB_OFFLINE": "1"},
                           timeout=120)
    assert again.returncode == 0, again.stderr
    assert "huggingface_hub" not in again.stderr
    cached = json.loads(again.stdout)
    assert cached["resolution"]["origin"] == "HF cache" and cached["model"]["weight_source"] == "safetensors"
    assert cached["model"]["weight_bytes"] == report["model"]["weight_bytes"] and len(hub.requests) == asked
    # with the memo off, the cache alone gives the config and an estimate
    bare = cli(env | {"HF_HUB_OFFLINE": "1", "LLMDOCTOR_CACHE_DIR": ""}, "inspect", "Qwen/Qwen3-8B", "--format", "json")
    assert json.loads(bare.stdout)["model"]["weight_source"] == "estimate"


def test_a_quantized_checkpoint_is_sized_as_stored(hub: HubServer, tmp_path: Path, qwen_config: dict) -> None:
    result = cli(hub_env(hub, tmp_path), "inspect", "scenario/Qwen3-8B-NVFP4", "--format", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    nvfp4 = tensor_bytes(dense_tensors(qwen_config, "NVFP4"))
    assert report["model"]["weight_bytes"] == nvfp4 < tensor_bytes(dense_tensors(qwen_config, "BF16")) / 2
    # hf_quant_config.json names the format that config.json (the base model's, here) does not
    assert report["quantization"] == "nvfp4"


@pytest.mark.parametrize(("repo", "extra", "rc", "line"), [
    ("meta-llama/Llama-3.3-70B-Instruct", {}, 2, "gated on the Hub .*set HF_TOKEN"),
    ("meta-llama/Llama-3.3-70B-Instruct", {"HF_TOKEN": "hf_wrong_token_123"}, 2, "HF_TOKEN has no access"),
    ("meta-llama/Llama-3.3-70B-Instruct", {"HF_TOKEN": TOKEN}, 0, ""),
    ("nobody/nothing", {}, 2, "no such model on the Hub"),
    ("scenario/broken", {}, 2, "scenario/broken config.json \\(Hub\\): invalid JSON at line 1"),
    ("zai-org/GLM-5.1", {}, 0, ""),
    ("Qwen/Qwen3-8B", {"HF_HUB_OFFLINE": "1"}, 2, "offline \\(HF_HUB_OFFLINE\\), so the Hub was not asked"),
], ids=["gated", "gated-wrong-token", "gated-with-token", "missing", "broken-config", "no-safetensors",
        "offline-env"])
def test_inspect_failures_are_one_line_and_exit_2(hub: HubServer, tmp_path: Path, repo: str, extra: dict,
                                                  rc: int, line: str) -> None:
    result = cli(hub_env(hub, tmp_path, **extra), "inspect", repo)
    assert result.returncode == rc, result.stderr
    if rc:
        assert len(result.stderr.strip().splitlines()) == 1 and re.search(line, result.stderr), result.stderr
        assert "Traceback" not in result.stderr
    for token in (TOKEN, "hf_wrong_token_123"):
        assert token not in result.stdout + result.stderr


def test_offline_flag_and_an_unreachable_hub(hub: HubServer, tmp_path: Path) -> None:
    asked = len(hub.requests)
    offline = cli(hub_env(hub, tmp_path), "inspect", "Qwen/Qwen3-8B", "--offline")
    assert offline.returncode == 2 and "offline (--offline)" in offline.stderr
    assert len(hub.requests) == asked  # not one request
    with HubServer({}) as closed:
        endpoint = closed.endpoint  # a port nothing listens on once this block ends
    start = time.monotonic()
    with_password = endpoint.replace("http://", "http://mirror-user:s3cr3t-pass@")
    down = cli(hub_env(hub, tmp_path, HF_ENDPOINT=with_password), "inspect", "Qwen/Qwen3-8B")
    assert down.returncode == 2 and "is unreachable" in down.stderr and "--offline" in down.stderr, down.stderr
    assert len(down.stderr.strip().splitlines()) == 1 and "s3cr3t-pass" not in down.stderr
    assert time.monotonic() - start < 30


def test_lint_resolves_the_launch_commands_model(hub: HubServer, tmp_path: Path, qwen_config: dict) -> None:
    result = cli(hub_env(hub, tmp_path), "lint", "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2",
                 "--gpu", "H100:2", "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    text = cli(hub_env(hub, tmp_path), "lint", "vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2", "-v",
               "--fail-on", "never").stdout
    assert "model.resolved_from = HF cache" in text or "model.resolved_from = Hub" in text, text
    gib = tensor_bytes(dense_tensors(qwen_config, "BF16")) / 2**30
    assert f"weights: {gib:.1f} GiB (exact, safetensors headers)" in text
    assert "model.chat_template = True" in text or "model.chat_template =" in text


def test_lint_carries_on_when_the_model_is_gated(hub: HubServer, tmp_path: Path) -> None:
    result = cli(hub_env(hub, tmp_path), "lint", "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4",
                 "--format", "json", "--fail-on", "never")
    assert result.returncode == 0, result.stderr
    unchecked = json.loads(result.stdout)["unchecked"]
    assert any("gated on the Hub" in u["reason"] and "HF_TOKEN" in u["reason"] for u in unchecked), unchecked


# ------------------------------------------------------------------------------------------ base config, other checkpoint
def test_glm_5_1_nvfp4_with_the_base_config_is_sized_as_nvfp4_and_fits() -> None:
    """The issue's incident: the base GLM-5.1 config beside `nvidia/GLM-5.1-NVFP4 --quantization modelopt_fp4`
    at TP8. Sized as bf16 it is ~173 GiB per GPU and a critical model-does-not-fit; the NVFP4 checkpoint fits."""
    config = str(shared_config("zai-org__GLM-5.1.json"))
    command = "vllm serve nvidia/GLM-5.1-NVFP4 --quantization modelopt_fp4 -tp 8"
    result = run_cli("lint", "--config", config, "--gpu", "RTX PRO 6000:8", "--format", "json", "--fail-on",
                     "never", command)
    assert result.returncode == 0, result.stderr
    findings = json.loads(result.stdout)["findings"]
    assert not any(f["id"] == "model-does-not-fit" and f["severity"] == "critical" for f in findings), findings
    verbose = run_cli("lint", "--config", config, "--gpu", "RTX PRO 6000:8", "-v", "--fail-on", "never", command)
    assert "assumed: the served checkpoint is NVFP4 (--quantization modelopt_fp4)" in verbose.stdout
    weights = re.search(r"model\.weight_bytes = (\d+)", verbose.stdout)
    assert weights and int(weights[1]) / 8 < 60 * 2**30  # per GPU at TP8, against ~173 GiB as bf16
    check = run_cli("check", "--command", command, "--config", config, "--gpu", "RTX PRO 6000:8", "--format",
                    "json", "--fail-on", "never")
    assert check.returncode == 0, check.stderr
    assert not any(f["id"] == "model-does-not-fit" for f in json.loads(check.stdout)["findings"])
    # the same, named only by the repo suffix
    by_name = run_cli("lint", "--config", config, "--gpu", "RTX PRO 6000:8", "-v", "--fail-on", "never",
                      "vllm serve nvidia/GLM-5.1-NVFP4 -tp 8")
    assert "(from the model name nvidia/GLM-5.1-NVFP4)" in by_name.stdout


def test_quantization_modelopt_leaves_the_format_to_the_checkpoint() -> None:
    """vLLM's `--quantization modelopt` names the ModelOpt family: an NVFP4 checkpoint's quant_algo turns it into
    modelopt_fp4 (vllm 0.33.0 config/model.py:1383-1450, quantization/modelopt.py:776-782), so the served name's
    NVFP4 wins over the flag; with a name that says nothing, the flag still means ModelOpt FP8."""
    from doctor.model.weights import served_format

    assert served_format(config_method=None, served_name="nvidia/GLM-5.1-NVFP4", launch_quantization="modelopt",
                         hf_quant=None) == ("nvfp4", "from the model name nvidia/GLM-5.1-NVFP4")
    assert served_format(config_method=None, served_name="zai-org/GLM-5.1", launch_quantization="modelopt",
                         hf_quant=None) == ("fp8", "--quantization modelopt")
    # a flag that names the format still goes before the name
    assert served_format(config_method=None, served_name="org/model-FP8", launch_quantization="modelopt_fp4",
                         hf_quant=None) == ("nvfp4", "--quantization modelopt_fp4")
    # a config that declares its own format keeps it: the family flag is not a format (the autokernel5090 export,
    # config.json quant_algo NVFP4, served with --quantization modelopt under a name that also says NVFP4)
    for name in ("gemma-4-26B-A4B-it-NVFP4-modelopt", "local/export"):
        assert served_format(config_method="nvfp4", served_name=name, launch_quantization="modelopt",
                             hf_quant=None) is None


def test_a_mismatched_config_that_still_does_not_fit_is_a_warning() -> None:
    config = str(shared_config("zai-org__GLM-5.1.json"))
    result = run_cli("lint", "--config", config, "--gpu", "RTX PRO 6000:2", "--format", "json", "--fail-on",
                     "never", "vllm serve nvidia/GLM-5.1-NVFP4 --quantization modelopt_fp4 -tp 2")
    fits = [f for f in json.loads(result.stdout)["findings"] if f["id"] == "model-does-not-fit"]
    assert fits and all(f["severity"] == "warning" for f in fits), fits


@pytest.mark.parametrize(("name", "fmt"), [
    ("nvidia/GLM-5.1-NVFP4", "nvfp4"), ("Qwen/Qwen3-8B-AWQ", "int4"), ("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", "int8"),
    ("Qwen/Qwen3-30B-A3B-GPTQ-Int4", "int4"), ("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic", "fp8"),
    ("openai/gpt-oss-120b-MXFP4", "mxfp4"), ("Qwen/Qwen3-8B", None), ("meta-llama/Llama-3.2-11B-Vision-Instruct", None),
])
def test_quantization_from_the_name(name: str, fmt: str | None) -> None:
    assert name_format(name) == fmt


# ------------------------------------------------------------------------------------------ the name alone
def test_with_no_config_the_name_says_family_multimodality_and_quantization() -> None:
    vision = run_cli("lint", "vllm serve meta-llama/Llama-3.2-11B-Vision-Instruct", "-v", "--fail-on", "never")
    assert re.search(r"model\.multimodal = .*from the model name .*'vision'.*low confidence", vision.stdout), \
        vision.stdout
    assert re.search(r"model\.family = llama-3 +\(from the model name", vision.stdout)
    assert "offline (HF_HUB_OFFLINE), so the Hub was not asked" in vision.stdout
    awq = run_cli("lint", "vllm serve Qwen/Qwen3-8B-AWQ", "-v", "--fail-on", "never")
    assert re.search(r"model\.quantization = awq +\(from the model name .*'awq' suffix", awq.stdout), awq.stdout
    plain = run_cli("lint", "vllm serve Qwen/Qwen3-8B", "-v", "--fail-on", "never")
    assert "model.multimodal =" not in plain.stdout and "model.quantization =" not in plain.stdout


def test_plan_and_check_resolve_too(hub: HubServer, tmp_path: Path, qwen_config: dict) -> None:
    env = hub_env(hub, tmp_path)
    plan = cli(env, "plan", "Qwen/Qwen3-8B", "--gpu", "H100:1", "--engine", "vllm", "--format", "json",
               "--fail-on", "never")
    assert plan.returncode == 0, plan.stderr
    weights = json.loads(plan.stdout)["weights"]
    assert weights["total_bytes"] == tensor_bytes(dense_tensors(qwen_config, "BF16"))
    assert weights["source"].startswith("safetensors headers: ")
    check = cli(env, "check", "--command", "vllm serve nobody/nothing", "--gpu", "H100:1", "--fail-on", "never",
                "--format", "json")
    assert check.returncode == 0, check.stderr
    assert "no such model on the Hub" in check.stdout
    gone = cli(env, "plan", "nobody/nothing", "--gpu", "H100:1")
    assert gone.returncode == 2 and "no such model on the Hub" in gone.stderr


def test_resolve_raises_an_input_error_offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from doctor.model.resolve import ModelNotResolved, resolve_model

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ModelNotResolved, match="offline") as caught:
        resolve_model("acme/tiny", offline=True)
    assert isinstance(caught.value, InputError)


def test_a_local_config_never_imports_huggingface_hub(tmp_path: Path) -> None:
    """Online (no HF_HUB_OFFLINE) but local: the Hub client is not imported — inspect's start-up stays cheap."""
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    err = subprocess.run([sys.executable, "-X", "importtime", "-m", "doctor", "inspect",
                          str(shared_config("Qwen__Qwen3-8B.json"))], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=60).stderr
    assert "doctor.model.resolve" in err and "huggingface_hub" not in err


def test_mtp_layers_are_left_out_of_the_exact_weights() -> None:
    """DeepSeek-V3 (real config: 61 layers + 1 MTP layer): the checkpoint stores layer 61, vLLM's main model
    skips it (vllm 0.33.0 models/utils.py:589-600, deepseek_v2.py:1653-1655). Scenario tensors, real header."""
    from doctor.model.checkpoint import Tensor, summarize
    from doctor.model.resolve import model_card
    from doctor.model.weights import with_checkpoint

    card = model_card(str(shared_config("deepseek-ai__DeepSeek-V3.json"))).card
    assert (card.layers.total, card.mtp_layers) == (61, 1)
    tensors = [Tensor("model.embed_tokens.weight", "BF16", 1000)]
    for i in range(62):
        tensors += [Tensor(f"model.layers.{i}.self_attn.kv_a_proj_with_mqa.weight", "F8_E4M3", 100),
                    Tensor(f"model.layers.{i}.mlp.experts.7.down_proj.weight", "F8_E4M3", 10),
                    Tensor(f"model.layers.{i}.mlp.shared_experts.down_proj.weight", "F8_E4M3", 1)]
    sized = with_checkpoint(card, summarize(tensors, files=1, where="scenario"))
    assert sized.weight_bytes == 1000 + 61 * 111 and sized.expert_weight_bytes == 61 * 10
    assert "1 MTP layer(s)" in sized.weight_detail and sized.weight_source == "safetensors"


def test_plan_sizes_a_base_config_at_the_served_repos_format() -> None:
    """`plan` with the base GLM-5.1 config and `--model-path nvidia/GLM-5.1-NVFP4`: priced as NVFP4, and says so."""
    config = str(shared_config("zai-org__GLM-5.1.json"))
    base = run_cli("plan", config, "--gpu", "B200:8", "--engine", "vllm", "--format", "json", "--fail-on", "never")
    served = run_cli("plan", config, "--gpu", "B200:8", "--engine", "vllm", "--format", "json", "--fail-on", "never",
                     "--model-path", "nvidia/GLM-5.1-NVFP4")
    assert base.returncode == served.returncode == 0, base.stderr + served.stderr
    bf16, nvfp4 = json.loads(base.stdout)["weights"], json.loads(served.stdout)["weights"]
    assert nvfp4["method"] == "nvfp4" and nvfp4["other_checkpoint"] and nvfp4["requested"] == "auto"
    assert "assumed: the served checkpoint nvidia/GLM-5.1-NVFP4 is NVFP4, from its name" in nvfp4["source"]
    assert nvfp4["total_bytes"] < bf16["total_bytes"] / 3


def test_a_finding_resting_on_the_name_alone_is_low_confidence() -> None:
    result = run_cli("lint", "vllm serve nvidia/Llama-3.3-70B-Instruct-NVFP4 -tp 2", "--gpu", "H100:2",
                     "--format", "json", "--fail-on", "never")
    found = {f["id"]: f for f in json.loads(result.stdout)["findings"]}
    nvfp4 = found["nvfp4-needs-blackwell"]
    assert nvfp4["confidence"] == "low"
    assert any("from the model name" in e["source"] for e in nvfp4["evidence"])


def test_a_config_repo_found_nowhere_lets_lint_carry_on_but_a_bad_path_is_exit_2(tmp_path: Path) -> None:
    command = "vllm serve meta-llama/Llama-3.3-70B-Instruct -tp 4"
    gone = run_cli("lint", "--config", "meta-llama/Llama-3.3-70B-Instruct", "--format", "json", "--fail-on",
                   "never", command, env={"HF_HUB_CACHE": str(tmp_path)})
    assert gone.returncode == 0, gone.stderr
    assert any("offline (HF_HUB_OFFLINE)" in u["reason"] for u in json.loads(gone.stdout)["unchecked"])
    typo = run_cli("lint", "--config", str(tmp_path / "nope" / "config.json"), command)
    assert typo.returncode == 2 and "no such file or directory" in typo.stderr


def test_a_cached_checkpoint_is_exact_offline(tmp_path: Path, qwen_config: dict) -> None:
    """A GPU host's HF cache (snapshot + refs/main, as huggingface_hub lays it out) with the shards: exact weights,
    no network (offline), its generation_config.json read for the sampling defaults."""
    repo = tmp_path / "models--Qwen--Qwen3-8B"
    snapshot = repo / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    (snapshot / "config.json").write_text(json.dumps(qwen_config))
    (snapshot / "generation_config.json").write_text('{"temperature": 0.6, "do_sample": true}')
    tensors = dense_tensors(qwen_config, "BF16")
    for name, item in sharded(tensors, 4).items():
        (snapshot / name).write_bytes(item.head())
    result = run_cli("inspect", "Qwen/Qwen3-8B", "--offline", "--format", "json", env={"HF_HUB_CACHE": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["resolution"]["origin"] == "HF cache"
    assert report["model"]["weight_source"] == "safetensors" and report["model"]["weight_bytes"] == tensor_bytes(tensors)
    lint = run_cli("lint", "vllm serve Qwen/Qwen3-8B", "-v", "--fail-on", "never", env={"HF_HUB_CACHE": str(tmp_path)})
    assert re.search(r"model\.default_temperature = 0\.6 +\(.*generation_config\.json:temperature\)", lint.stdout), \
        lint.stdout


def test_an_unreachable_hub_is_asked_once_per_run(tmp_path: Path) -> None:
    """A fleet check resolves many models in one process: after the Hub failed to answer, the next model is
    refused at once, naming the first failure, instead of costing another timeout. (A fresh interpreter:
    huggingface_hub freezes HF_HUB_OFFLINE, which the test session sets, at its first import.)"""
    with HubServer({}) as closed:
        endpoint = closed.endpoint  # nothing listens here once the block ends
    script = """
import sys
from doctor.model import resolve
from doctor.errors import InputError
for repo in ("Qwen/Qwen3-8B", "Qwen/Qwen3-32B"):
    try:
        resolve.resolve_model(repo)
    except InputError as exc:
        print(exc)
    resolve._hub = None  # the second model must not reach the client at all
"""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env.update(HF_ENDPOINT=endpoint, HF_HUB_CACHE=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=60)
    first, second = result.stdout.strip().splitlines()
    assert "is unreachable within" in first, result.stdout + result.stderr
    assert "did not answer earlier in this run" in second, result.stdout + result.stderr
    # the next run, within the hour, neither imports the Hub client nor waits on it (doctor/model/hubmemo.py)
    again = subprocess.run([sys.executable, "-X", "importtime", "-c", script.replace("resolve._hub = None", "pass")],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert "huggingface_hub" not in again.stderr
    assert all("did not answer in a run less than 1 h ago" in line for line in again.stdout.strip().splitlines())


def test_a_model_is_resolved_once_per_run(hub: HubServer, tmp_path: Path) -> None:
    """One run resolves its model in several gathers; the second lookup answers from memory and sends the
    Hub nothing (no second round of safetensors header requests)."""
    script = """
from doctor.model.resolve import resolve_model
first = resolve_model("Qwen/Qwen3-8B")
print("ready", flush=True)
input()
second = resolve_model("Qwen/Qwen3-8B")
print(second is first, second.weights is not None)
"""
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=hub_env(hub, tmp_path),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "ready"
    asked = len(hub.requests)
    out, err = proc.communicate("\n", timeout=60)
    assert out.split() == ["True", "True"], out + err
    assert len(hub.requests) == asked
