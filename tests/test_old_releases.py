"""Commands of 2023-2024 read as their release and their launcher read them (issue 22 point 5).

The history tables hold vLLM 0.2.0-0.5.5 and SGLang 0.1.3-0.3.6.post3, read from their wheels, and each vLLM
launcher's own parser (tools/catalog_gen/entrypoints.py). The commands and the engine output below are quoted
from public threads (tests/old_release_commands.py, each with its URL): the catalog must agree with what the
engine printed there, and the parser must refuse exactly what that release's launcher refused.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import requires_shared, run_cli, shared_config
from old_release_commands import (
    SGLANG_0117_FLASHINFER,
    SGLANG_LLAVA_2024,
    VLLM_020_CONV_TEMPLATE,
    VLLM_033_DEMO_API_KEY,
    VLLM_033_DEMO_USAGE,
    VLLM_051_NAMESPACE_DESTS,
    VLLM_051_OPENAI,
)

from doctor.engines.catalog import available, history_path, load_catalog
from doctor.engines.command import parse_command

DEMO = "vllm.entrypoints.api_server"
OPENAI = "vllm.entrypoints.openai.api_server"


def _kinds(cmd: object) -> list[tuple[str, str]]:
    return [(p.kind, p.flag) for p in cmd.problems if p.kind not in ("secret_flag", "abbreviated_flag")]


def test_the_releases_before_the_catalogs_were_read() -> None:
    vllm, sglang = available("vllm"), available("sglang")
    assert vllm[0] == "0.2.0" and {"0.2.1.post1", "0.3.3", "0.4.0.post1", "0.5.3.post1", "0.5.5", "0.6.0"} <= set(vllm)
    assert sglang[0] == "0.1.3" and {"0.1.17", "0.2.9.post1", "0.3.6.post3", "0.4.0"} <= set(sglang)
    # each one from its own wheel, with its sha256
    table = json.loads(history_path("vllm").read_text(encoding="utf-8"))
    first = table["releases"][0]
    assert first["wheel"].startswith("vllm-0.2.0-") and re.fullmatch(r"[0-9a-f]{64}", first["sha256"])


def test_the_demo_servers_parser_is_what_vllm_033_printed() -> None:
    """vllm-project/vllm#3651: every option and choice list of the usage vLLM 0.3.3's demo server printed."""
    demo = load_catalog("vllm", "0.3.3").for_launcher(DEMO)
    assert demo.launcher == DEMO and demo.parser["launchers"][DEMO]["entry"].startswith("vllm/entrypoints/api_server.py")
    usage = re.findall(r"\[(--[\w-]+)(?: \{([^}]*)\}| [A-Z_]+)?\]", VLLM_033_DEMO_USAGE)
    assert len(usage) == VLLM_033_DEMO_USAGE.count("[--")
    for option, choices in usage:
        spec = demo.resolve(option)
        assert spec is not None and option in spec.options, option
        if choices:
            assert [str(c) for c in spec.choices] == choices.split(","), option
    # and what it did not print is not there: the OpenAI server's frontend flags
    for option in ("--api-key", "--chat-template", "--lora-modules", "--served-model-name", "--response-role"):
        assert demo.resolve(option) is None, option
        assert load_catalog("vllm", "0.3.3").for_launcher(OPENAI).resolve(option) is not None, option


def test_a_2024_demo_server_command_is_refused_its_api_key_and_only_that() -> None:
    """vllm-project/vllm#3651: `api_server.py: error: unrecognized arguments: --api-key` on vLLM 0.3.3."""
    cmd = parse_command(VLLM_033_DEMO_API_KEY, engine_version="0.3.3")
    assert cmd.catalog.coverage == "exact" and cmd.catalog.launcher == DEMO
    assert _kinds(cmd) == [("unknown_flag", "--api-key")]
    problem = cmd.problems_of("unknown_flag")[0]
    assert problem.detail["launcher"] == DEMO and OPENAI in problem.detail["launchers"]
    assert "vllm/entrypoints/api_server.py" in problem.detail["evidence"]
    assert OPENAI in problem.detail["remedy"]
    assert cmd.get("tensor_parallel_size") == 2 and cmd.get("max_model_len") == 12800 and cmd.get("port") == 8080
    # the same flags on the OpenAI server of that release: accepted (the key is then only a secret on the line)
    openai = parse_command(VLLM_033_DEMO_API_KEY.replace(DEMO, OPENAI), engine_version="0.3.3")
    assert _kinds(openai) == [] and openai.catalog.launcher == OPENAI
    assert [p.flag for p in openai.problems_of("secret_flag")] == ["--api-key"]


def test_lint_names_the_launcher_in_the_unknown_flag_finding() -> None:
    result = run_cli("lint", "--engine-version", "0.3.3", "--format", "json", "--", *VLLM_033_DEMO_API_KEY.split())
    doc = json.loads(result.stdout)
    finding = next(f for f in doc["findings"] if f["id"] == "unknown-flag")
    assert DEMO in json.dumps(finding) and "token-temp" not in result.stdout


def test_the_openai_server_of_vllm_051_has_every_setting_it_logged() -> None:
    """vllm-project/vllm#6228: the argparse Namespace vLLM 0.5.1's OpenAI server logged, and its command."""
    openai = load_catalog("vllm", "0.5.1").for_launcher(OPENAI)
    missing = [d for d in VLLM_051_NAMESPACE_DESTS if not openai.has_dest(d)]
    assert missing == []
    cmd = parse_command(VLLM_051_OPENAI, engine_version="0.5.1")
    assert _kinds(cmd) == [] and cmd.get("tensor_parallel_size") == 8 and cmd.get("trust_remote_code") is True
    # the demo server of the same release lacks the frontend half of that Namespace
    demo = load_catalog("vllm", "0.5.1").for_launcher(DEMO)
    assert not demo.has_dest("lora_modules") and not demo.has_dest("chat_template") and demo.has_dest("block_size")


def test_a_flag_that_never_existed_is_unknown_on_its_release() -> None:
    """vllm-project/vllm#1215 proposed --conv-template on the day vLLM 0.2.0 shipped; no release has it."""
    cmd = parse_command(VLLM_020_CONV_TEMPLATE, engine_version="0.2.0")
    assert cmd.catalog.version == "0.2.0" and cmd.catalog.coverage == "exact"
    assert _kinds(cmd) == [("unknown_flag", "--conv-template")]
    assert cmd.get("quantization") == "awq" and cmd.get("served_model_name") == "gpt-4"


def test_vllm_serve_did_not_exist_before_0_5_2() -> None:
    """vllm/scripts.py (the `vllm` command) is in the wheels from 0.5.2 on."""
    assert load_catalog("vllm", "0.5.1").parser["prog"] == f"python -m {OPENAI}"
    assert load_catalog("vllm", "0.5.2").parser["prog"] == "vllm serve"
    assert "model_tag" in load_catalog("vllm", "0.5.2").parser["launchers"]["vllm serve"]["positionals"]
    cmd = parse_command("vllm serve facebook/opt-125m --max-model-len 2048", engine_version="0.5.1")
    assert "`vllm serve` does not exist in vllm 0.5.1" in cmd.notes


@pytest.mark.parametrize("version", ["0.1.12", "0.1.13", "0.1.14"])
def test_an_early_2024_sglang_command_reads_cleanly_on_its_releases(version: str) -> None:
    """haotian-liu/LLaVA#1289 (2024-03-16): --tp is argparse's prefix of --tp-size on those releases."""
    cmd = parse_command(SGLANG_LLAVA_2024, engine_version=version)
    assert cmd.catalog.version == version and _kinds(cmd) == []
    assert cmd.get("tp_size") == 4 and cmd.model == "models/llava-v1.6-34b"


def test_an_sglang_0_1_flag_is_known_on_0_1_and_removed_later() -> None:
    """sgl-project/sglang#565 (sglang==0.1.17): --enable-flashinfer, gone before 0.4.0."""
    cmd = parse_command(SGLANG_0117_FLASHINFER, engine_version="0.1.17")
    assert _kinds(cmd) == [] and cmd.get("enable_flashinfer") is True and cmd.get("mem_fraction_static") == 0.75
    later = parse_command(SGLANG_0117_FLASHINFER, engine_version="0.4.0")
    (kind, flag), = _kinds(later)
    assert kind in ("removed_flag", "renamed_flag") and flag == "--enable-flashinfer"
    detail = later.problems[[p.flag for p in later.problems].index(flag)].detail
    assert detail["since"] <= "0.1.17" and detail["dropped_in"] is not None


def test_every_sglang_launcher_builds_the_same_parser() -> None:
    for version in ("0.1.3", "0.2.9", "0.3.6.post3", "0.5.23"):
        cat = load_catalog("sglang", version)
        assert "sglang.launch_server" in cat.parser["launchers"]
        assert not any(f.launchers for f in cat.flags), version


@requires_shared
def test_a_quantized_checkpoint_without_the_flag_on_vllm_0_2_1() -> None:
    """Release rule quantization_from_checkpoint: vLLM 0.2.0/0.2.1 never read quantization_config."""
    config = str(shared_config("deepseek-ai__DeepSeek-R1.json"))  # a real quantization_config (fp8)
    command = f"python -m {OPENAI} --model deepseek-ai/DeepSeek-R1"
    old = json.loads(run_cli("lint", "--engine-version", "0.2.1.post1", "--config", config, "--format", "json",
                             "--", *command.split()).stdout)
    found = next(f for f in old["findings"] if f["id"] == "quantization-not-detected")
    assert "vllm/config.py:105-114" in json.dumps(found) or "vllm/config.py:100-109" in json.dumps(found)
    new = json.loads(run_cli("lint", "--engine-version", "0.2.2", "--config", config, "--format", "json",
                             "--", *command.split()).stdout)
    assert "quantization-not-detected" not in {f["id"] for f in new["findings"]}


@requires_shared
@pytest.mark.parametrize("version,flags,layout,per_token,cited", [
    # SGLang cached every head of DeepSeek-V2-Lite (padded to 256) until MLA became the default in 0.3.1.post2
    ("0.2.6", "", "per_head", 442368, "sglang/srt/models/deepseek_v2.py:247-253"),
    ("0.3.0", "", "per_head", 442368, "sglang/srt/models/deepseek_v2.py:263-269"),
    ("0.3.1.post2", "", "latent", 31104, "sglang/srt/models/deepseek_v2.py:510"),
    # ... unless the launch flag of the release switched it (--enable-mla 0.2.10-0.3.1.post1, --disable-mla after)
    ("0.3.0", " --enable-mla", "latent", 31104, "model_executor/model_runner.py:259-262"),
    ("0.4.0", " --disable-mla", "per_head", 442368, "deepseek_v2.py:272-278"),
])
def test_sglang_stored_mla_per_head_before_it_was_the_default(version: str, flags: str, layout: str, per_token: int,
                                                              cited: str) -> None:
    """Release rule mla_kv (doctor/model/engine_memory.yaml) for SGLang, through `check`: the layout, the bytes per
    token it gives the fit, and the wheel's file:line it cites."""
    config = str(shared_config("deepseek-ai__DeepSeek-V2-Lite.json"))
    result = run_cli("check", "--format", "json", "--config", config, "--gpu", "H100", "--engine-version", version,
                     "--command", "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V2-Lite" + flags)
    facts = json.loads(result.stdout)["facts"]
    assert facts["model.kv_layout"]["value"] == layout and cited in facts["model.kv_layout"]["source"]
    assert facts["model.kv_bytes_per_token"]["value"] == per_token


# ------------------------------------------------------------------------------- the error catalogs (point 1)
def test_a_vllm_027_warning_is_read_as_its_own_release_printed_it() -> None:
    """vllm-project/vllm#2518 (vLLM 0.2.7, bench/incidents/i201-vllm-2518.yaml): the real line is matched to the
    template vLLM 0.2.0-0.3.3 printed, and the catalog's line for 0.2.7 is the one the log's own prefix names."""
    import yaml
    from conftest import ROOT

    from doctor.logs import catalog as cat

    case = yaml.safe_load((ROOT / "bench" / "incidents" / "i201-vllm-2518.yaml").read_text(encoding="utf-8"))
    assert case["version"] == "0.2.7"
    line = case["evidence"]["log"].strip()
    match = cat.match_line(line, "vllm", "0.2.7")
    assert match is not None and match.in_release and (match.since, match.until) == ("0.2.0", "0.3.3")
    (site,) = match.sites
    assert (site.file, site.function) == ("vllm/core/scheduler.py", "Scheduler._schedule")
    assert f"scheduler.py:{site.line}]" in line  # WARNING 01-20 16:48:15 scheduler.py:149] …
    # (0.2.7's f-string gives {prompt_limit} no format spec, so its hole is typed str)
    assert tuple(int(v) for v in match.ordered) == (2380, 2048) and match.cause == "context-shorter-than-requests"
    # on 0.6.0 the same words are another template (vllm-5868166a16, holes renamed): the old one is not printed
    assert cat.match_line(line, "vllm", "0.6.0").template != match.template


def test_the_quantization_release_rule_agrees_with_the_catalogs_read_of_the_same_check() -> None:
    """quantization_from_checkpoint (release_rules.yaml) cites vllm/config.py:100-109 (0.2.0), :105-114 (0.2.1.post1)
    and the checkpoint's method read from 0.2.2: the error catalog, read independently from the same wheels, has
    ModelConfig._verify_quantization's refusal inside those ranges, and the check that compares the checkpoint's
    quant_method with --quantization first printed in 0.2.2."""
    from doctor.engines.release_rules import rule
    from doctor.logs import catalog as cat

    catalog = cat.load("vllm")

    def sites(words: str) -> list:
        return [s for tid, entry in catalog.templates.items() if words in cat.template_text(entry["parts"])
                for s in catalog.sites(tid, None)[0]
                if (s.file, s.function) == ("vllm/config.py", "ModelConfig._verify_quantization")]

    for version, (lo, hi) in (("0.2.0", (100, 109)), ("0.2.1.post1", (105, 114))):
        found = rule("quantization_from_checkpoint", "vllm", version)
        assert found is not None and found.values["detects"] is False and f":{lo}-{hi}" in found.evidence
        at = catalog.release_index(version)
        lines = [line for tid, e in catalog.templates.items() if "Unknown quantization:" in cat.template_text(e["parts"])
                 for line in [s.line for s in catalog.sites(tid, at)[0] if s.function == "ModelConfig._verify_quantization"]]
        assert lines and all(lo <= n <= hi for n in lines), (version, lines)
    compare = sites("Quantization method specified in the model config")
    assert min(s.since for s in compare if s.since.startswith("0.2")) == "0.2.2"
    assert rule("quantization_from_checkpoint", "vllm", "0.2.2").values["detects"] is True


def test_every_old_vllm_release_reads_each_launcher_with_its_own_parser() -> None:
    """Every vLLM release 0.2.0-0.5.5: the demo server and the OpenAI server each have their own parser (the demo's
    lacks the OpenAI frontend's own flags), and `vllm serve` exists from 0.5.2 only (vllm/scripts.py)."""
    releases = available("vllm")
    old = releases[:releases.index("0.6.0")]
    assert len(old) == 25
    for version in old:
        cat = load_catalog("vllm", version)
        launchers = set(cat.parser["launchers"]) - {"evidence_from"}  # (the history's file:line note)
        serve = {"vllm serve"} if old.index(version) >= old.index("0.5.2") else set()
        assert launchers == {DEMO, OPENAI} | serve, version
        demo, openai = cat.for_launcher(DEMO), cat.for_launcher(OPENAI)
        assert demo.resolve("--model") is not None and openai.resolve("--model") is not None, version
        # the OpenAI server's CORS flags, in its own parser on every one of them (--served-model-name is not: it
        # is an engine argument from 0.4.2, vllm/engine/arg_utils.py, so the demo server has it too)
        assert demo.resolve("--allowed-origins") is None and openai.resolve("--allowed-origins") is not None, version
        assert cat.parser["launchers"][DEMO]["entry"].startswith("vllm/entrypoints/api_server.py"), version


def test_a_vllm_020_config_refusal_is_mapped_by_its_config_class_and_its_fix_quotes_the_check() -> None:
    """vllm/config.py held every config class until 0.10.0: a refusal raised in CacheConfig's method (the swap-space
    check, whose words name no flag) is the cache group's, and the check quoted for the fix names that class's flags
    — read from the catalog's own site (file:line, function, guard of 0.2.0), rendered with values."""
    from doctor.logs import catalog as cat
    from doctor.logs.catalog_facts import refusal

    catalog = cat.load("vllm")
    at = catalog.release_index("0.2.0")
    tid = next(t for t, e in catalog.templates.items() if cat.template_text(e["parts"]).startswith("Too large swap space.")
               and cat._printed_at(catalog, t, at))
    parts = catalog.templates[tid]["parts"]
    line = "ValueError: " + "".join(p if isinstance(p, str) else "64.00 GiB out of the 62.00 GiB total CPU memory"
                                     for p in parts)
    match = cat.match_line(line, "vllm", "0.2.0")
    assert match is not None and match.template == tid and match.cause == "cache-config-rejected"
    (site,) = match.sites
    assert (site.file, site.function) == ("vllm/config.py", "CacheConfig.verify_with_parallel_config")
    quoted = refusal(match)
    assert f"vllm/config.py:{site.line}" in quoted and site.guard in quoted and "64.00 GiB" in quoted
    assert "the flags of the config class it checks: " in quoted and "--block-size" in quoted
