"""The release history: every vLLM release from 0.6.0 and every SGLang release from 0.4.0, read from the wheels.

What is checked against what: the vLLM 0.32.0 view against the option, tool-parser and reasoning-parser lists of
a real 0.32.0 install (fixtures/live/vllm-0.32.0-cpu/argparse-options.json); flags that
came and went against the engines' wheels (the comment names the file:line the history recorded, which a
reviewer can open in that release's wheel); the version rule's notes, and the flag-history problems
(removed, renamed, too new) as `lint` reports them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, requires_shared

from doctor.commands.lint import lint
from doctor.engines.catalog import (
    annotate_since,
    available,
    choose_version,
    flag_change,
    flag_history,
    history_path,
    load_catalog,
    version_key,
)
from doctor.engines.command import parse_command
from doctor.sources.offline import OfflineInputs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/ is not an installed package
from tools.gen_catalog import shipped_versions  # noqa: E402

LIVE_VLLM = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu" / "argparse-options.json"


def kinds(cmd) -> dict[str, dict]:
    return {p.kind: {"flag": p.flag, **p.detail} for p in cmd.problems}


def findings(command: str, version: str | None = None, **kw) -> dict[str, object]:
    result = lint(OfflineInputs(command=command, engine_version=version, **kw))
    return {f.id: f for f in result.diagnosis.findings}


# ---------------------------------------------------------------------------------------------
# What was read
# ---------------------------------------------------------------------------------------------
def test_every_listed_release_is_in_the_history_and_nothing_else() -> None:
    for engine, oldest in (("vllm", "0.2.0"), ("sglang", "0.1.3")):
        listed = [v for e, v in shipped_versions() if e == engine]
        assert available(engine) == listed
        assert listed[0] == oldest
        header = json.loads(history_path(engine).read_text())["header"]
        assert f"{len(listed)} releases, {oldest} to {listed[-1]}" in header["read"]
    # post-releases and four-part versions are releases too (PyPI: vllm 0.10.1.1, sglang 0.5.4.post3)
    assert {"0.8.5.post1", "0.10.1.1"} <= set(available("vllm"))
    assert {"0.4.10.post2", "0.5.4.post3"} <= set(available("sglang"))


def test_history_is_compact() -> None:
    """One table per engine, not one catalog per release: far smaller than the releases' catalogs together."""
    for engine in ("vllm", "sglang"):
        table = json.loads(history_path(engine).read_text())
        releases = len(table["releases"])
        runs = sum(len(r) for r in table["flags"].values())
        flags_per_release = sum(len(load_catalog(engine, v).flags) for v in available(engine)[-3:]) / 3
        assert runs < releases * flags_per_release / 10, (engine, runs)
        for section in ("flags", "metrics", "tool_parsers", "reasoning_parsers", "parser", "defaults"):
            for key, item_runs in table[section].items():
                for run in item_runs:
                    assert set(run) == {"since", "until", "value"}, (section, key)


@requires_shared
def test_vllm_032_knows_every_option_and_parser_of_the_real_install() -> None:
    """issue 13: the 0.29 catalog lacked 35 options, 5 tool and 6 reasoning parsers of a real 0.32.0 install."""
    real = json.loads(LIVE_VLLM.read_text())
    cat = load_catalog("vllm", "0.32.0")
    assert cat.version == "0.32.0" and cat.note == ""
    options = set(cat.options())
    missing = [o for o in real["options"] if o not in options and o not in ("-h", "--help")]
    assert missing == []
    assert set(real["tool_parsers"]) == set(cat.tool_parsers)
    assert set(real["reasoning_parsers"]) == set(cat.reasoning_parsers)
    assert "--enable-scale-out" in options and "qwen3_json" in cat.tool_parsers
    # a healthy 0.32.0 command is clean: no engine-too-old, no unknown flag
    found = findings("vllm serve /models/tiny --enable-auto-tool-choice --tool-call-parser qwen3_json "
                     "--enable-scale-out", "0.32.0")
    assert not {"engine-too-old", "unknown-flag", "removed-flag"} & set(found)


def test_enable_scale_out_is_too_new_for_029_and_names_its_first_release() -> None:
    # vllm 0.30.0 vllm/entrypoints/launchers/cli_args.py:184 `enable_scale_out: bool = False` (FrontendArgs field,
    # added to the parser at :249); not in 0.29.0. The catalogs the project had jumped from 0.29.0 to 0.33.0.
    change = flag_change(load_catalog("vllm", "0.29.0"), "--enable-scale-out")
    assert change is not None and change.kind == "too_new" and change.since == "0.30.0"
    found = findings("vllm serve m --enable-scale-out", "0.29.0")
    assert found["engine-too-old"].severity == "critical"
    assert "engine-too-old" not in findings("vllm serve m --enable-scale-out", "0.30.0")


# ---------------------------------------------------------------------------------------------
# Flag history: removed, renamed, never existed
# ---------------------------------------------------------------------------------------------
def test_enable_reasoning_is_valid_on_085_and_renamed_later() -> None:
    # vllm 0.8.5 vllm/entrypoints/openai/cli_args.py:212 (0.7.1 on) add_argument("--enable-reasoning",
    # action="store_true"); 0.9.0 vllm/engine/arg_utils.py:575 "[DEPRECATED] ... Use `--reasoning-parser`";
    # gone from 0.10.0. issue 13/14: on 0.8.5 it was called unknown, "did you mean --enable-prefix-caching".
    command = "vllm serve deepseek-ai/DeepSeek-R1 --enable-reasoning --reasoning-parser deepseek_r1"
    cmd = parse_command(command, engine_version="0.8.5")
    assert cmd.catalog.version == "0.8.5" and cmd.catalog.note == ""
    assert not {"unknown_flag", "removed_flag", "renamed_flag"} & set(kinds(cmd))
    assert cmd.get("enable_reasoning") is True
    assert flag_history("vllm")["--enable-reasoning"] == ("0.7.1", "0.9.2")
    deprecated = parse_command(command, engine_version="0.9.2")
    assert kinds(deprecated)["deprecated_flag"]["replacement"] == "--reasoning-parser"
    later = parse_command(command, engine_version="0.33.0")
    problem = kinds(later)["renamed_flag"]
    assert problem["last"] == "0.9.2" and problem["dropped_in"] == "0.10.0"
    assert problem["replacement"] == "--reasoning-parser" and "unknown_flag" not in kinds(later)
    found = findings(command, "0.33.0")
    assert found["renamed-flag"].severity == "critical" and "0.10.0 dropped it" in found["renamed-flag"].what
    assert found["renamed-flag"].fix == "Use the new spelling: --enable-reasoning → --reasoning-parser."
    assert "unknown-flag" not in found


def test_removed_flag_without_replacement() -> None:
    # --use-v2-block-manager: vllm 0.4.0 vllm/engine/arg_utils.py (store_true); the history says when it went
    first, last = flag_history("vllm")["--use-v2-block-manager"]
    assert first == "0.4.0"
    found = findings("vllm serve m --use-v2-block-manager", "0.33.0")
    assert found["removed-flag"].severity == "critical" and f"last in {last}" in found["removed-flag"].fix
    assert "removed-flag" not in findings("vllm serve m --use-v2-block-manager", last)


def test_removed_flag_with_the_version_unknown_is_a_hedged_warning() -> None:
    found = findings("vllm serve m --use-v2-block-manager")
    finding = found["removed-flag"]
    assert finding.severity == "warning"
    first, last = flag_history("vllm")["--use-v2-block-manager"]
    assert f"valid on vllm {first}–{last}" in finding.what and "version unknown" in finding.what


def test_nearest_name_only_for_near_misses() -> None:
    """issue 14: `--lora-path → --root-path` and `--enable-reasoning → --enable-prefix-caching` were nonsense."""
    cat = load_catalog("vllm", "0.8.5")
    assert cat.nearest_flag("--lora-path") is None
    assert cat.nearest_flag("--tensor-paralel-size") == "--tensor-parallel-size"
    assert cat.nearest_flag("--max-model-length") == "--max-model-len"
    assert cat.nearest_flag("--reasoning-parser-deepseek_r1") == "--reasoning-parser"
    assert load_catalog("vllm", "0.33.0").nearest_flag("--enable-reasoning") is None
    cmd = parse_command("vllm serve m --lora-path /x", engine_version="0.8.5")
    assert kinds(cmd)["unknown_flag"]["nearest"] is None


def test_renamed_flag_names_its_replacement() -> None:
    """A flag whose setting (dest) lives on under another option is `renamed-flag`, with the new spelling."""
    renames = []
    versions = available("vllm")
    for option, (_first, last) in flag_history("vllm").items():
        if last == versions[-1] or not option.startswith("--"):
            continue
        change = flag_change(load_catalog("vllm", versions[-1]), option)
        if change is not None and change.kind == "renamed":
            renames.append((option, change))
    assert renames, "the vLLM history has renamed flags"
    option, change = renames[0]
    cmd = parse_command(f"vllm serve m {option} 1", engine_version=versions[-1])
    problem = kinds(cmd)["renamed_flag"]
    assert problem["replacement"] == change.replacement and load_catalog("vllm").resolve(change.replacement)


# ---------------------------------------------------------------------------------------------
# Version semantics
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("requested, chosen, words", [
    ("0.8.5", "0.8.5", None),
    ("0.8.6", "0.8.5.post1", "not a release that was read"),         # between two releases
    ("0.1.7", "0.2.0", "older than every release read"),
    ("99.0", None, "newer than every release read"),
    (None, None, "version unknown"),
    ("latest", None, "not a version number"),
    ("0.33.0+cpu", "0.33.0", None),                                # a local build of a release read
    ("0.8.5.post2", "0.8.5.post1", "nearest of the same release series"),  # no such post-release on PyPI
    ("0.11.1rc2.dev5+g2671fedfc", "0.11.1", "pre-release of 0.11.1"),  # a dev build, as /version reports it
])
def test_version_rule_says_what_it_did(requested, chosen, words) -> None:
    got, note = choose_version("vllm", requested)
    assert got == (chosen or available("vllm")[-1])
    assert (note == "") if words is None else (words in note)


def test_engine_too_old_never_fires_without_a_known_version() -> None:
    command = "vllm serve m --enable-auto-tool-choice --tool-call-parser qwen3_json --enable-scale-out"
    assert "engine-too-old" not in findings(command)
    assert "engine-too-old" in findings(command, "0.29.0")


def test_older_than_the_oldest_release_reads_the_oldest_and_says_so() -> None:
    cmd = parse_command("python -m vllm.entrypoints.openai.api_server --model m --max-num-seqs 8",
                        engine_version="0.1.7")
    assert cmd.catalog.version == "0.2.0" and cmd.catalog.coverage == "older"
    assert any("older than every release read" in n for n in cmd.notes)


def test_sglang_dsa_on_sm120_with_the_version_unknown_names_the_releases() -> None:
    """issue 13: with no version, SGLang >= 0.5.20's sm_120 path hid that older releases fail."""
    command = "python -m sglang.launch_server --model-path zai-org/GLM-5.2 --tp-size 4"
    unknown = findings(command, None, config="example:seed-dsa-moe", gpu="RTX PRO 6000:4")
    finding = unknown["dsa-unsupported-gpu"]
    assert finding.severity == "warning" and "sglang < 0.5.20" in finding.what
    old = findings(command, "0.5.12", config="example:seed-dsa-moe", gpu="RTX PRO 6000:4")
    assert old["dsa-unsupported-gpu"].severity == "critical" and "sglang 0.5.12" in old["dsa-unsupported-gpu"].what


def test_fix_spelling_with_the_version_unknown_is_valid_on_every_release() -> None:
    from doctor.sources.launch import spelling_facts

    cmd = parse_command("python -m sglang.launch_server --model-path m --tp-size 8")
    spelling = spelling_facts(cmd).get("engine.dp_attention_flags")
    assert spelling.startswith("--enable-dp-attention --dp-size 8")
    for option in ("--enable-dp-attention", "--dp-size"):  # every release from 0.3.6 (0.1.x-0.3.5 predate DP)
        first, last = flag_history("sglang")[option]
        assert version_key(first) <= version_key("0.3.6") and last == available("sglang")[-1]
    assert parse_command("python -m sglang.launch_server --model-path m --tp-size 8",
                         engine_version="0.5.23").catalog.resolve("--attn-dp-size") is not None


def test_fixes_name_the_first_release_of_a_recent_flag_when_the_version_is_unknown() -> None:
    # sglang 0.5.22 is the first release with --attn-dp-size (history: sglang.json flags["--attn-dp-size"]);
    # --ep-size is missing only from 0.4.0 (alias of --expert-parallel-size from 0.4.0.post1): left alone
    assert flag_history("sglang")["--attn-dp-size"][0] == "0.5.22"
    assert annotate_since("sglang", "add --attn-dp-size 8") == \
        "add --attn-dp-size 8 (version unknown: --attn-dp-size needs SGLang ≥ 0.5.22)"
    assert annotate_since("sglang", "add --ep-size 8") == "add --ep-size 8"
    command = "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp-size 8"
    unknown = findings(command, None, config="example:seed-mla-moe", gpu="H200:8")
    assert unknown["kv-replicated-by-tp"].fix.startswith("at high concurrency: add --enable-dp-attention --dp-size 8")
    assert "--attn-dp-size needs SGLang ≥ 0.5.22" in unknown["kv-replicated-by-tp"].fix
    known = findings(command, "0.5.23", config="example:seed-mla-moe", gpu="H200:8")
    assert known["kv-replicated-by-tp"].fix == "at high concurrency: add --attn-dp-size 8"


def test_a_default_that_changed_is_hedged_when_the_version_is_unknown() -> None:
    # --gpu-memory-utilization: 0.9 up to vllm 0.19.1, 0.92 from 0.20.0 (vllm/config/cache.py; history
    # defaults["mem_fraction"]); prefix caching was off by default in vllm 0.6.0-0.6.4.post1
    from doctor.engines.launch_facts import launch_facts

    unknown = launch_facts(parse_command("vllm serve m"))
    mem = unknown.fact("launch.mem_fraction")
    assert mem.value == 0.92 and "older releases differ (0.2.0–0.19.1: 0.9)" in mem.source
    assert "0.4.0–0.6.4.post1: false" in unknown.fact("launch.prefix_caching").source
    old = launch_facts(parse_command("vllm serve m", engine_version="0.19.1")).fact("launch.mem_fraction")
    assert old.value == 0.9 and old.source == "default of vllm 0.19.1"
    known = launch_facts(parse_command("vllm serve m", engine_version="0.33.0")).fact("launch.mem_fraction")
    assert known.source == "default of vllm 0.33.0"
