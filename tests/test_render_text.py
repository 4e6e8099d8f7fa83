"""The text an on-call engineer reads: one screen by default, tokens never split, values in words.

Real runs of the CLI (subprocess, COLUMNS fixed) over the bundled incident snapshot, real seed commands and
the real scrapes in fixtures; plus the primitives (wrapping, values, percentages) on their own.
"""

from __future__ import annotations

import re
import socket

import pytest
import seed_commands
from conftest import SHARED_FIXTURES, requires_shared, run_cli

from doctor.humanize import percent, readable
from doctor.render.text import fit_line, wrap

#: Python reprs of a value: a list, a dict, a quoted string after "=", Python's booleans and null.
REPR = re.compile(r"\['|\{'|'\]|= '[^']*'|\bTrue\b|\bFalse\b|\bNone\b")


def _cli(*args: str, columns: int = 100):
    return run_cli(*args, env={"COLUMNS": str(columns)})


def test_incident_fits_one_screen_with_the_headline_and_the_fix_first() -> None:
    result = _cli("check", "--snapshot", "example:vllm-kv-full")
    assert result.returncode == 1, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) <= 30 and max(len(line) for line in lines) <= 100, result.stdout
    head = lines[0]
    for part in ("http://127.0.0.1:36355", "vllm 0.33.0", "deepseek-ai/DeepSeek-V3"):
        assert part in head
    assert lines[1].startswith("verdict  CRITICAL — 1 critical, 1 warning, ")
    top = next(i for i, line in enumerate(lines) if line.startswith("CRITICAL kv-cache-exhausted"))
    labels = [line.split()[0] for line in lines[top + 1:top + 8] if line.startswith("  ") and line[2] != " "]
    assert labels[:2] == ["fix", "what"]  # the fix comes first
    others = [line for line in lines if re.match(r"  (WARNING|INFO|CRITICAL) ", line)]
    assert {"moe-without-ep", "kv-dtype-could-be-fp8", "kv-replicated-by-tp"} <= {o.split()[1] for o in others}
    assert [o.split()[0] for o in others][0] == "WARNING"  # most severe first
    assert "evidence" in result.stdout and "•" not in result.stdout  # the chain is behind -v


def test_verbose_keeps_every_detail() -> None:
    result = _cli("check", "--snapshot", "example:vllm-kv-full", "-v")
    for detail in ("why", "• metrics.kv_usage = 0.987 (/metrics vllm:kv_cache_usage_perc) >= 0.95 (observed)",
                   "add --enable-expert-parallel (EP size = TP×DP = 8)", "Facts", "seed § MoE and Expert Parallelism"):
        assert detail in result.stdout
    findings = result.stdout.split("\nFacts\n")[0]  # the facts list shows label values as the server sent them
    assert not REPR.search(findings), REPR.findall(findings)


@pytest.mark.parametrize("columns", [60, 80, 100])
def test_ids_flags_and_urls_are_never_split(columns: int) -> None:
    result = _cli("lint", "-v", seed_commands.SEED_DSV3, columns=columns)
    assert result.returncode == 1, result.stderr
    text = result.stdout
    tokens = set(re.findall(r"(?:--[a-z][a-z0-9-]+|https?://\S+|\b[a-z0-9]+(?:-[a-z0-9]+){2,}\b)", " ".join(text.split())))
    assert "--tool-call-parser" in tokens and any(t.startswith("https://") for t in tokens)
    lines = text.splitlines()
    for token in tokens:
        token = token.rstrip(").,;")
        assert any(token in line for line in lines), f"{token} is split across lines at {columns} columns"
    assert not REPR.search(text), REPR.findall(text)


def test_lint_default_is_one_screen_and_verbose_explains_every_flag() -> None:
    short = _cli("lint", seed_commands.SEED_GLM_HANDOVER)
    full = _cli("lint", "-v", seed_commands.SEED_GLM_HANDOVER)
    assert len(short.stdout.splitlines()) <= 30 < len(full.stdout.splitlines())
    assert "(-v explains each)" in short.stdout and "Flags" in full.stdout
    assert short.stdout.splitlines()[0].startswith("llmdoctor lint · sglang")
    assert sum(line.startswith("Could not check") for line in short.stdout.splitlines()) <= 1


@requires_shared
def test_could_not_check_is_one_line_naming_the_most_useful_input() -> None:
    result = _cli("check", "--metrics", str(SHARED_FIXTURES / "metrics" / "vllm_2.prom"))
    text = result.stdout
    joined = " ".join(text.split())
    assert "most useful next input: pass --config PATH|REPO (the model's config.json)" in joined
    assert text.count("Could not check") == 1 and "  - " not in text
    assert "KV usage is only 0.46%" in joined


def test_an_unreachable_target_prints_its_reason_once() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    for extra in ((), ("--active",)):
        result = _cli("check", "--endpoint", f"127.0.0.1:{port}", "--timeout", "0.5", *extra)
        assert result.returncode == 3
        both = result.stdout + result.stderr
        assert both.count("connection refused") == 1, both
        assert "No findings" not in both and "re-run with --active" not in both and "Could not check" not in both


def test_wrap_keeps_long_tokens_whole_and_breaks_only_at_spaces() -> None:
    url = "https://github.com/vllm-project/recipes/blob/main/models/deepseek-ai/DeepSeek-V3.yaml"
    lines = wrap(f"see {url} and add --enable-auto-tool-choice --tool-call-parser deepseek_v3", 40, "  ")
    assert url in "".join(lines) and any(url in line for line in lines)
    assert all(len(line) <= 40 for line in lines if url not in line)
    assert any("--tool-call-parser" in line for line in lines)
    assert fit_line("INFO kv-dtype-could-be-fp8  BF16 KV cache where FP8 would double capacity", 40) == \
        "INFO kv-dtype-could-be-fp8  BF16 KV…"


@pytest.mark.parametrize(("ratio", "shown"), [
    (0.004618937644341847, "0.46%"), (0.0001, "0.01%"), (0.00001, "<0.01%"), (0.075, "7.5%"), (0.4, "40%"),
    (0.987, "99%"), (0.999, "99.9%"), (0.9996, "99.96%"), (1.0, "100%"), (0.0, "0%"),
])
def test_percentages_keep_their_precision(ratio: float, shown: str) -> None:
    assert percent(ratio) == shown


def test_values_read_as_text_not_python() -> None:
    assert readable("dsa") == "dsa"
    assert readable(None) == "not set" and readable(True) == "true"
    assert readable(["mha", "gqa"]) == "mha, gqa"
    assert readable({"flag": "--dtype", "value": "fp8"}) == "flag --dtype · value fp8"
    assert readable([{"flag": "--a", "value": 1}, {"flag": "--b", "value": 2}]) == "flag --a · value 1; flag --b · value 2"
    assert readable(0.004618937644341847) == "0.004619" and readable(2.0) == "2"


def test_plan_default_is_readable_and_verbose_has_the_detail() -> None:
    args = ("plan", "example:seed-mla-moe", "--gpu", "H200:8", "--context", "32k", "--users", "100")
    short, full = _cli(*args), _cli(*args, "-v")
    assert short.returncode == full.returncode == 0, short.stderr
    assert len(short.stdout.splitlines()) <= 65 < len(full.stdout.splitlines())
    # a reason both engines give is said once (and pointed at), every flag's reason is behind -v
    assert "as for vLLM 0.33.0 above (-v repeats them)" in short.stdout
    assert "Left to the engine" not in short.stdout and "Left to the engine" in full.stdout
    reason = "- MLA: one compressed latent per token, not split by head (TP replicates it); MoE with 256"
    assert short.stdout.count(reason) == 1 and full.stdout.count(reason) == 2
    assert "command (-v: why each flag)" in short.stdout and "vllm serve seed-mla-moe" in short.stdout
