"""Every launch failure the CPU build of vLLM 0.32.0 can reproduce: the real engine is started with the
command and must refuse (exit status and the line of its log that says why), and `llmdoctor lint` of the same
command must name that cause at critical — the engine is the referee of what "refuses to start" means.

Each refusal costs 10-30 s (imports, argument validation; the model never loads). Causes that need a GPU
(kernels, memory) cannot be reproduced on CPU and are cited from the wheel instead (playbooks/causes.yaml
`behaviour`).
"""

from __future__ import annotations

import json

import pytest

from doctor.logs.catalog import match_line
from realengine.vllm_engine import VLLM, lint_json, llmdoctor, model_dir

pytestmark = pytest.mark.realengine

# (id, flags, env, exit status, the line of the log, the cause lint must name at critical); `check --log` of the
# engine's own log must name the cause too — LOG_CAUSE where a log line alone cannot tell more (an SGLang flag is
# an unknown flag to a log reader).
REFUSALS = [
    ("auto-tool-choice-without-parser", ["--enable-auto-tool-choice"], {}, 1,
     "TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser", "auto-tool-choice-without-parser"),
    ("unknown-tool-parser", ["--enable-auto-tool-choice", "--tool-call-parser", "qwen_tools_v9"], {}, 1,
     "KeyError: 'invalid tool call parser: qwen_tools_v9 (chose from {", "tool-parser-unregistered"),
    ("llama3-json-without-python-tag", ["--enable-auto-tool-choice", "--tool-call-parser", "llama3_json"], {}, 1,
     "TypeError: --tool-call-parser llama3_json cannot be used with the tokenizer of",
     "tool-parser-tokenizer-mismatch"),
    ("max-model-len-over-the-model", ["--max-model-len", "16384"], {}, 1,
     "User-specified max_model_len (16384) is greater than the derived max_model_len (max_position_embeddings=8192",
     "max-model-len-over-model-limit"),
    ("sglang-flag", ["--tp-size", "1"], {}, 2, "unrecognized arguments: --tp-size", "flag-from-other-engine"),
    ("invalid-value", ["--dtype", "fp8"], {}, 2, "argument --dtype: invalid choice: 'fp8'", "invalid-flag-value"),
    ("typo", ["--max-modle-len", "512"], {}, 2, "unrecognized arguments: --max-modle-len", "unknown-flag"),
    ("ambiguous-abbreviation", ["--max-num", "4"], {}, 2, "ambiguous option: --max-num could match",
     "ambiguous-flag"),
    ("value-lost", ["--tensor-parallel-size"], {}, 2, "expected one argument", "argument-error"),
    ("unknown-reasoning-parser", ["--reasoning-parser", "think_v9"], {}, 1,
     "KeyError: \"Reasoning parser 'think_v9' not found. Available parsers: ", "reasoning-parser-unregistered"),
]


LOG_CAUSE = {"sglang-flag": "unknown-flag"}
# The refusal's template in the error catalog (doctor/engines/errors/vllm.json.gz) and the file:line of the
# installed release it must be matched to (read from the vLLM 0.32.0 wheel by tools/gen_errors.py). Argparse's
# own refusals (exit 2) are CPython's, not vLLM's; the max-model-len message is built in a variable (no template).
CATALOG_SITES = {
    "auto-tool-choice-without-parser": ("vllm-c3cd1df022", "vllm/entrypoints/launchers/cli_args.py:524"),
    "unknown-tool-parser": ("vllm-aef12e19a4", "vllm/entrypoints/launchers/launcher.py:362"),
    "llama3-json-without-python-tag": ("vllm-6c62c9627b", "vllm/parser/parser_manager.py:94"),
    "unknown-reasoning-parser": ("vllm-4349de4d9d", "vllm/reasoning/abs_reasoning_parsers.py:247"),
}


@pytest.mark.parametrize("case,flags,env,status,line,cause", REFUSALS, ids=[r[0] for r in REFUSALS])
def test_the_engine_refuses_and_lint_names_the_cause(engines, case, flags, env, status, line, cause):
    refused = engines.refusal(VLLM, flags, env)
    assert refused.returncode == status, f"exit {refused.returncode}; log tail:\n{refused.log[-3000:]}"
    assert line in refused.log, f"{line!r} not in the log; tail:\n{refused.log[-3000:]}"
    assert "Application startup complete" not in refused.log
    if case in CATALOG_SITES:  # the line is the template the catalog read from this release's wheel, at its line
        template, site = CATALOG_SITES[case]
        said = next(text for text in refused.log.splitlines() if line in text)
        match = match_line(said, "vllm", VLLM.version)
        assert match is not None and match.template == template and match.in_release, (said, match)
        assert site in match.where, (site, match.where)

    # The same command, as an operator would paste it, read offline.
    command = " ".join(["vllm", "serve", str(model_dir()), "--max-num-seqs", "4", "--dtype", "bfloat16", *flags])
    result, doc = lint_json(command)
    critical = {f["id"] for f in doc["findings"] if f["severity"] == "critical"}
    assert cause in critical, f"lint found {[(f['id'], f['severity']) for f in doc['findings']]}"
    assert result.returncode == 1

    # The engine's own log, handed over after the fact.
    logged = llmdoctor("check", "--log", str(refused.log_path), "--format", "json")
    named = {f["id"]: f for f in json.loads(logged.stdout)["findings"]}
    expected = LOG_CAUSE.get(case, cause)
    assert expected in named and named[expected]["severity"] == "critical", sorted(named)
    assert named[expected]["confidence"] == "high"


def test_long_max_model_len_is_only_a_warning_where_vllm_allows_it():
    """VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 turns the refusal into vLLM's warning (the server is not started here: the
    served test of that set-up is in test_vllm_plain.py); lint says it runs degraded, not that it will not start."""
    VLLM.require()  # the model lint reads is the installed one
    command = f"VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 vllm serve {model_dir()} --max-model-len 16384"
    _, doc = lint_json(command)
    severities = {f["id"]: f["severity"] for f in doc["findings"]}
    assert severities.get("max-model-len-over-model-limit-allowed") == "warning"
    assert "max-model-len-over-model-limit" not in severities


def test_a_setting_refusal_fix_names_the_flag_the_check_and_the_values(engines):
    """A refusal of vLLM's own config check (LoRAConfig), mapped by construction — its condition names two flags of
    the flag catalog — not by a rule written for it: the finding's fix names both flags, the condition the engine
    tested and the values its message printed (doctor/logs/catalog_facts.py ``refusal``)."""
    flags = ["--enable-lora", "--max-loras", "4", "--max-cpu-loras", "2"]
    refused = engines.refusal(VLLM, flags, {})
    line = "max_cpu_loras (2) must be >= max_loras (4)"
    assert refused.returncode == 1 and line in refused.log, refused.log[-3000:]
    logged = llmdoctor("check", "--log", str(refused.log_path), "--format", "json")
    named = {f["id"]: f for f in json.loads(logged.stdout)["findings"]}
    assert named["lora-config-rejected"]["severity"] == "critical", sorted(named)
    fix = named["lora-config-rejected"]["fix"]
    for said in ("--max-cpu-loras", "--max-loras", "self.max_cpu_loras < self.max_loras", "max_cpu_loras=2",
                 "max_loras=4", "vllm/config/lora.py:"):
        assert said in fix, (said, fix)
