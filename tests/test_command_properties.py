"""Property tests: however a command is written, it means the same; garbage never crashes.

Hypothesis builds scenario commands from a pool of real flags (checked against the catalogs) in
random order, with random quoting (none / single / double), ``--flag=value`` or ``--flag value``,
backslash continuations (LF or CRLF), lost backslashes, env prefixes and comments. The expected
meaning comes from the pool itself (an oracle independent of the parser), not from parsing a
canonical form.
"""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doctor.engines.command import parse_command
from doctor.errors import InputError

# (flag, value as typed or None for a switch, dest, typed value)
POOL = {
    "sglang": [
        ("--tp-size", "2", "tp_size", 2),
        ("--kv-cache-dtype", "fp8_e5m2", "kv_cache_dtype", "fp8_e5m2"),
        ("--enable-metrics", None, "enable_metrics", True),
        ("--chunked-prefill-size", "4096", "chunked_prefill_size", 4096),
        ("--tool-call-parser", "qwen25", "tool_call_parser", "qwen25"),
        ("--context-length", "32768", "context_length", 32768),
        ("--mem-fraction-static", "0.85", "mem_fraction_static", 0.85),
        ("--served-model-name", "my model", "served_model_name", "my model"),
        ("--json-model-override-args", '{"rope_scaling": {"factor": 2}}', "json_model_override_args",
         '{"rope_scaling": {"factor": 2}}'),
    ],
    "vllm": [
        ("--tensor-parallel-size", "4", "tensor_parallel_size", 4),
        ("-dp", "2", "data_parallel_size", 2),
        ("--enable-expert-parallel", None, "enable_expert_parallel", True),
        ("--kv-cache-dtype", "fp8", "kv_cache_dtype", "fp8"),
        ("--max-model-len", "32768", "max_model_len", 32768),
        ("--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}', "speculative_config",
         {"method": "ngram", "num_speculative_tokens": 3}),
        ("--served-model-name", "my model", "served_model_name", ["my model"]),
        ("--gpu-memory-utilization", "0.85", "gpu_memory_utilization", 0.85),
        ("--no-enable-prefix-caching", None, "enable_prefix_caching", False),
    ],
}
HEADS = {"sglang": ["python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B",
                    "python -m sglang.launch_server --model Qwen/Qwen3-8B"],
         "vllm": ["vllm serve Qwen/Qwen3-8B", "python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B"]}
VERSION = {"sglang": "0.5.23", "vllm": "0.13.0"}
SAFE = re.compile(r"^[A-Za-z0-9_.,:/+-]+$")


def quote(value: str, style: str) -> str:
    if style == "none" and SAFE.match(value):
        return value
    if style == "double":
        return '"' + re.sub(r'(["\\$`])', r"\\\1", value) + '"'
    return "'" + value.replace("'", "'\\''") + "'"


@st.composite
def commands(draw):
    engine = draw(st.sampled_from(sorted(POOL)))
    pool = POOL[engine]
    chosen = draw(st.lists(st.integers(0, len(pool) - 1), unique=True, min_size=1, max_size=len(pool)))
    chosen = draw(st.permutations(chosen))
    words = []
    for idx in chosen:
        flag, value, _dest, _typed = pool[idx]
        if value is None:
            words.append(flag)
            continue
        quoted = quote(value, draw(st.sampled_from(["none", "single", "double"])))
        if flag.startswith("--") and draw(st.booleans()):
            words.append(f"{flag}={quoted}")
        else:
            words.append(f"{flag} {quoted}")
    joiner = draw(st.sampled_from([" ", " \\\n  ", " \\\r\n    ", "\n  ", "\t"]))
    env = draw(st.lists(st.sampled_from([("CUDA_VISIBLE_DEVICES", "0,1"), ("NCCL_DEBUG", "INFO")]),
                        unique=True, max_size=2))
    prefix = "".join(f"{k}={v} " for k, v in env)
    comment = draw(st.sampled_from(["", "# launch\n", "#!/bin/bash\n# serve it\n"]))
    trailer = draw(st.sampled_from(["", "  # done", "\n"]))
    text = comment + prefix + draw(st.sampled_from(HEADS[engine])) + joiner + joiner.join(words) + trailer
    expected = {pool[i][2]: pool[i][3] for i in chosen}
    return engine, text, expected, dict(env)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commands())
def test_any_spelling_parses_to_the_same_meaning(case) -> None:
    engine, text, expected, env = case
    cmd = parse_command(text, engine_version=VERSION[engine])
    assert cmd.engine == engine
    assert cmd.model == "Qwen/Qwen3-8B"
    got = {dest: fv.value for dest, fv in cmd.by_dest().items() if dest not in ("model", "model_path")}
    assert got == expected, text
    assert cmd.env == env
    assert cmd.problems == [], text
    assert cmd.positionals == []
    # what render() prints means the same again
    again = parse_command(cmd.render(), engine_version=VERSION[engine])
    assert {d: f.value for d, f in again.by_dest().items()} == {d: f.value for d, f in cmd.by_dest().items()}


def one_line_input_error_or_parse(source) -> None:
    try:
        parse_command(source)
    except InputError as err:
        assert "\n" not in str(err) and str(err)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_crashes(text: str) -> None:
    one_line_input_error_or_parse(text)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_binary_never_crashes(data: bytes) -> None:
    one_line_input_error_or_parse(data.decode("latin-1"))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["vllm", "serve", "python3", "-m", "sglang.launch_server", "--tp", "8", "=",
                                 "--tp-size=", "-O3", "--", "'", '"', "\\", "{", "--kv-cache-dtype", "fp8",
                                 "docker", "run", "vllm/vllm-openai:latest", "-e", "A=1", "--model", "--x.y",
                                 "&&", ";", "#", "\n", "-"]), max_size=14))
def test_token_soup_never_crashes(tokens: list[str]) -> None:
    one_line_input_error_or_parse(" ".join(tokens))
    one_line_input_error_or_parse(tokens)
