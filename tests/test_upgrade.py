"""`lint --target-version V`: the upgrade report, read from the release catalogs, through the real CLI.

The commands are scenarios (what a team pins in a manifest); which release has which flag, default and parser
is the catalogs' (read from every wheel), so each expectation below is a fact of those releases: e.g. vLLM
0.13.0 dropped --cuda-graph-sizes for --cudagraph-capture-sizes, 0.20.0 raised the default
--gpu-memory-utilization from 0.9 to 0.92, SGLang deprecates the tool parser qwen25 for qwen.
"""

from __future__ import annotations

import json

from conftest import SHARED_FIXTURES, run_cli

from doctor.engines.upgrade import deprecated_parser, deprecations

QWEN3 = ["--config", str(SHARED_FIXTURES / "configs" / "Qwen__Qwen3-8B.json")]


def _lint(command: str, *options: str) -> dict:
    proc = run_cli("lint", "--offline", "--format", "json", *options, command)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def _finding(document: dict, cause: str) -> dict | None:
    return next((f for f in document["findings"] if f["id"] == cause), None)


def test_flags_the_target_refuses_and_the_fix() -> None:
    command = "vllm serve m --cuda-graph-sizes 8 --disable-log-requests"
    before = _lint(command, "--engine-version", "0.9.2")
    assert _finding(before, "upgrade-refuses-command") is None   # no target: no upgrade findings
    report = _lint(command, "--engine-version", "0.9.2", "--target-version", "0.33.0")
    refused = _finding(report, "upgrade-refuses-command")
    assert refused is not None and refused["severity"] == "critical"
    assert "--cuda-graph-sizes (renamed" in refused["what"] and "--disable-log-requests (removed" in refused["what"]
    fixed = _lint(command, "--engine-version", "0.9.2", "--target-version", "0.33.0", "--fix")
    assert fixed["fix"]["fixed"] == "vllm serve m --cudagraph-capture-sizes 8"
    # the fixed command is 0.33.0's: it starts there
    again = _lint(fixed["fix"]["fixed"], "--engine-version", "0.33.0")
    assert not {"unknown-flag", "removed-flag", "renamed-flag"} & {f["id"] for f in again["findings"]}


def test_a_refusal_already_there_is_the_ordinary_finding() -> None:
    report = _lint("vllm serve m --tp-size 2", "--engine-version", "0.9.2", "--target-version", "0.33.0")
    assert _finding(report, "flag-from-other-engine") is not None
    assert _finding(report, "upgrade-refuses-command") is None


def test_defaults_that_change_and_a_pinned_one() -> None:
    report = _lint("vllm serve m --max-model-len 8192", "--engine-version", "0.19.1", "--target-version", "0.20.0")
    changed = _finding(report, "upgrade-default-changed")
    assert changed is not None and "--gpu-memory-utilization 0.9 → 0.92" in changed["what"]
    pinned = _lint("vllm serve m --gpu-memory-utilization 0.9", "--engine-version", "0.19.1",
                   "--target-version", "0.20.0")
    assert _finding(pinned, "upgrade-default-changed") is None


def test_defaults_need_the_version_in_use() -> None:
    """With the release in use unknown there is nothing to compare a default with: no finding, not a guess."""
    report = _lint("vllm serve m", "--target-version", "0.20.0")
    assert _finding(report, "upgrade-default-changed") is None


def test_deprecated_parser_on_the_target_and_its_fix() -> None:
    command = "python -m sglang.launch_server --model-path m --enable-metrics --tool-call-parser qwen25"
    report = _lint(command, "--engine-version", "0.5.2", "--target-version", "0.5.23")
    found = _finding(report, "upgrade-parser-deprecated")
    assert found is not None and "qwen25 (use qwen;" in found["what"]
    fixed = _lint(command, "--engine-version", "0.5.2", "--target-version", "0.5.23", "--fix")
    assert fixed["fix"]["fixed"].endswith("--tool-call-parser qwen")


def test_parser_the_target_does_not_register() -> None:
    from doctor.engines.catalog import registered_runs, version_key

    older = "0.8.0"
    assert version_key(older) < version_key(registered_runs("vllm", "reasoning_parsers", "qwen3")[0][0])
    report = _lint("vllm serve m --reasoning-parser qwen3", "--engine-version", "0.33.0", "--target-version", older)
    gone = _finding(report, "upgrade-parser-unregistered")
    assert gone is not None and "--reasoning-parser qwen3" in gone["what"]


def test_deprecations_are_read_from_the_wheels() -> None:
    data = deprecations()
    assert data["header"]["generator"] == "tools/gen_parser_deprecations.py"
    run = deprecated_parser("sglang", "tool_parsers", "qwen25", "0.5.23")
    assert run is not None and run["replacement"] == "qwen" and ".py:" in run["source"]
    assert deprecated_parser("sglang", "tool_parsers", "qwen25", "0.4.3") is None


def test_a_deprecated_parser_is_never_suggested() -> None:
    """SGLang 0.5.23 deprecates qwen25: a Qwen3 server without a tool parser is told to add qwen."""
    report = _lint("python -m sglang.launch_server --model-path m --enable-metrics", *QWEN3,
                   "--engine-version", "0.5.23")
    missing = _finding(report, "tool-parser-missing")
    assert missing is not None and "--tool-call-parser qwen" in missing["fix"]
    assert "qwen25" not in missing["fix"]
    # ... and the replacement is accepted as right (no tool-parser-wrong for it)
    ok = _lint("python -m sglang.launch_server --model-path m --enable-metrics --tool-call-parser qwen", *QWEN3,
               "--engine-version", "0.5.23")
    assert _finding(ok, "tool-parser-wrong") is None


def test_an_unknown_target_is_one_line() -> None:
    proc = run_cli("lint", "--offline", "--target-version", "banana", "vllm serve m")
    assert proc.returncode == 2 and "banana" in proc.stderr and "Traceback" not in proc.stderr


def test_check_takes_the_same_target() -> None:
    proc = run_cli("check", "--offline", "--format", "json", "--command", "vllm serve m --cuda-graph-sizes 8",
                   "--engine-version", "0.9.2", "--target-version", "0.33.0")
    assert proc.returncode == 1, proc.stderr
    assert "upgrade-refuses-command" in [f["id"] for f in json.loads(proc.stdout)["findings"]]
