"""Classes of running-server symptoms (reasoning-leak, tools-ignored, slow-decode, hardware-fit) read on the reporters' own output
from the benchmark's worked cases (bench/incidents/<id>.yaml, each with its thread's URL).

Each test runs the class's rule on a case's real evidence — the log parser on the quoted lines, and the runner's own
`llmdoctor check` subprocess for the finding — and a neighbour the rule must leave alone. The cases are examples of
the class, not the rule: the rules cite the engine source they follow (doctor/logs/parse.py,
doctor/engines/release_rules.yaml, playbooks/hardware-fit.yaml).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import yaml

from doctor.logs.source import read_log_input

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "bench" / "incidents"
sys.path.insert(0, str(ROOT / "bench"))
import incidents  # noqa: E402

#: only worked batches are read here (a blind batch is never run before it is measured)
WORKED = {1, 2, 3, 4, 5, 6}


def _case(number: str) -> incidents.Case:
    case = incidents.load_case(next(CASES.glob(f"{number}-*.yaml")))
    assert case.batch in WORKED
    return case


def _log_facts(number: str, key: str, tmp_path: Path) -> dict:
    """The facts the log parser reads from the case's evidence ``key`` (log or client_output), as --log reads it."""
    data = yaml.safe_load(next(CASES.glob(f"{number}-*.yaml")).read_text(encoding="utf-8"))
    path = tmp_path / f"{number}.{key}"
    path.write_text(data["evidence"][key], encoding="utf-8")
    return {f.key: f.value for f in read_log_input(str(path)).facts}


def _named(case: incidents.Case, tmp_path: Path) -> list[str]:
    outcome = incidents.run_case(case, tmp_path)
    assert not outcome.error, outcome.error
    return outcome.named


# --- slow-decode: an acceptance length of 1.00 keeps no draft token (sglang metrics_reporter.py:973)

def test_acceptance_length_one_is_no_draft_accepted(tmp_path: Path) -> None:
    facts = _log_facts("i114", "log", tmp_path)  # "accept_len: 1.00", the only line the PR quotes
    assert facts["log.spec_accept_length"] == 1.0
    assert facts["log.spec_accept_rate"] == 0.0
    assert _named(_case("i114"), tmp_path)[:1] == ["spec-decode-low-acceptance"]


def test_a_longer_acceptance_length_without_the_draft_count_decides_no_rate(tmp_path: Path) -> None:
    # SGLang 0.4.6's Decode batch lines: "accept len: 2.12" (1.55 on the other rank); how many tokens each step
    # drafted is not in them, so the rate is unknown, not guessed
    facts = _log_facts("i157", "log", tmp_path)
    assert facts["log.stats"]["spec_accept_length"] == 2.12
    assert "log.spec_accept_rate" not in facts
    assert "spec-decode-low-acceptance" not in _named(_case("i157"), tmp_path)


# --- reasoning-leak: the answer closes a thinking block it never opened (the prompt opened it)

def test_a_closing_marker_without_the_opening_one_is_read_from_the_client_output(tmp_path: Path) -> None:
    facts = _log_facts("i054", "client_output", tmp_path)
    assert facts["log.reasoning_end_only"] == "</think>"
    # an answer with both markers (or none) is not this class
    both = tmp_path / "both.txt"
    both.write_text("<think>\nthe user greets me\n</think>\n\nHello!\n", encoding="utf-8")
    assert "log.reasoning_end_only" not in {f.key for f in read_log_input(str(both)).facts}


def test_the_template_opened_block_is_named_and_the_release_decides_engine_too_old(tmp_path: Path) -> None:
    case = _case("i054")  # vLLM 0.7.2, the client output only: the engine is not known, so the release decides nothing
    assert _named(case, tmp_path)[:1] == ["reasoning-format-mismatch"]
    # the same output with the reporter's engine known: vLLM 0.7.2's only parser needs "<think>" in the output
    # (deepseek_r1_reasoning_parser.py:112-114); 0.7.3 puts it back (:130-135), so there the release is no cause
    command = "vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-32B --enable-reasoning --reasoning-parser deepseek_r1"
    on_old = replace(case, evidence={**case.evidence, "command": command})
    assert _named(on_old, tmp_path)[:1] == ["engine-too-old"]
    on_new = replace(on_old, version="0.7.3")
    named = _named(on_new, tmp_path)
    assert "engine-too-old" not in named and named[:1] == ["reasoning-format-mismatch"]


# --- hardware-fit: FP8 weights on a GPU with the weight-only Marlin path are no poor match

def test_fp8_checkpoint_with_the_marlin_fallback_is_not_blamed_on_hardware_fit(tmp_path: Path) -> None:
    case = _case("i249")  # Qwen3-VL-235B-A22B-Thinking-FP8 on 4 A100s: it ran (the thread's settled answer)
    assert "fp8-unsupported-gpu" not in _named(case, tmp_path)
    # the same command on GPUs without the fallback path (sm_75: below Marlin's sm_80), eight of them so that the
    # weights fit, is still critical
    command = case.evidence["command"].replace("--tensor-parallel-size 4", "--tensor-parallel-size 8")
    on_turing = replace(case, evidence={**case.evidence, "command": command, "gpu": "Quadro RTX 8000:8"})
    outcome = incidents.run_case(on_turing, tmp_path)
    assert "fp8-unsupported-gpu" in outcome.named
    assert outcome.severities[outcome.named.index("fp8-unsupported-gpu")] == "critical"


# --- tools-ignored: a release that refuses gpt-oss tool calls; a vLLM command without either tool flag

def test_the_harmony_two_message_refusal_names_the_release(tmp_path: Path) -> None:
    # "Expected 2 output messages (reasoning and final), but got 7." exists only in vLLM 0.10.1-0.10.1.1
    # (harmony_utils.py:344, the error catalog's vllm-63253a5814); 0.10.2 parses any number of messages
    facts = _log_facts("i189", "log", tmp_path)
    assert "engine-too-old" in facts["log.causes"]
    assert _named(_case("i189"), tmp_path)[:1] == ["engine-too-old"]


def test_vllm_without_either_tool_flag_needs_both(tmp_path: Path) -> None:
    case = _case("i155")  # vllm serve Phi-4-mini… with neither --tool-call-parser nor --enable-auto-tool-choice
    named = _named(case, tmp_path)
    assert {"tool-parser-missing", "auto-tool-choice-missing"} <= set(named[:3])
    # with the auto flag given, only the parser is missing (vLLM refuses that pair at start-up: not this branch)
    given = replace(case, evidence={**case.evidence, "command": case.evidence["command"] + " --enable-auto-tool-choice"})
    assert "auto-tool-choice-missing" not in _named(given, tmp_path)


# --- config-hygiene: vLLM's own warning for a VLLM_* variable its release does not define

def test_an_environment_variable_the_release_does_not_read_is_named(tmp_path: Path) -> None:
    # "Unknown vLLM environment variable detected: VLLM_USE_V1" (vllm 0.33.0 vllm/platforms/interface.py:1458-1470;
    # vllm/envs.py validate_environ from 0.17.0): the error catalog's template, not a hand-written pattern
    facts = _log_facts("i637", "log", tmp_path)
    assert "unknown-env-var" in facts["log.causes"]
    assert _named(_case("i637"), tmp_path)[:1] == ["unknown-env-var"]
    # a variable vLLM defines is not reported by that check: a log line about it names nothing
    other = tmp_path / "known.log"
    other.write_text("WARNING 06-26 15:11:37 [envs.py:1830] Using VLLM_USE_V1 as requested\n", encoding="utf-8")
    assert "unknown-env-var" not in ({f.key: f.value for f in read_log_input(str(other)).facts}.get("log.causes") or [])
