"""The SGLang-on-CPU defects, on the recorded answers of a real SGLang 0.5.23 CPU server
(fixtures/live/sglang-0.5.23-cpu and replayed over real HTTP on 127.0.0.1), so they are
tested without the engine installed; tests/realengine/test_sglang_check.py checks the same against the live engine.

- a CPU deployment is not a GPU failure: the GPU probe is "n/a", nothing asks for --gpu;
- mem-fraction-low does not fire there, and launch.mem_fraction is not both unknown and 0.716;
- sglang:num_retracted_requests_total, which 0.5.23 shows only after the first retraction, reads as 0 retractions
  (and stays unknown when the version cannot say it has the counter).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import SHARED_FIXTURES, run_cli, shared_config, unavailable
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor.derive.analyzers import derive_absent_counters
from doctor.facts import Facts
from doctor.probes import metrics

LIVE = SHARED_FIXTURES / "live" / "sglang-0.5.23-cpu"


def _live(name: str) -> Path:
    path = LIVE / name
    if not path.is_file():
        unavailable(f"real capture {path} not found")
    return path


def _routes() -> dict[str, Response]:
    return {"/server_info": Response(file=_live("server_info.before.out"), content_type=JSON),
            "/model_info": Response(file=_live("model_info.before.out"), content_type=JSON),
            "/v1/models": Response(file=_live("v1_models.before.out"), content_type=JSON),
            "/health": Response(body=b""),
            "/metrics": Response(file=_live("metrics.after.out"), content_type=PROM)}


@pytest.fixture(scope="module")
def replayed() -> tuple[int, dict[str, Any], str]:
    with LocalServer(_routes()) as srv:
        result = run_cli("check", "--endpoint", srv.endpoint, "--format", "json")
        text = run_cli("check", "--endpoint", srv.endpoint).stdout
    return result.returncode, json.loads(result.stdout), text


def test_a_cpu_server_gets_no_gpu_failure_and_no_gpu_hints(replayed: tuple[int, dict[str, Any], str]) -> None:
    code, doc, text = replayed
    assert doc["facts"]["launch.device"]["value"] == "cpu"
    assert "server_info device" in doc["facts"]["launch.device"]["source"]
    [gpu] = [p for p in doc["probes"] if p["name"] == "gpu"]
    assert "runs on CPU" in gpu["not_applicable"]
    assert "gpu n/a (the server runs on CPU" in " ".join(text.split()) and "failed" not in text
    assert "pass --gpu" not in text
    assert code == 0, doc["findings"]


def test_mem_fraction_is_not_low_on_cpu_nor_both_known_and_unknown(replayed: tuple[int, dict[str, Any], str]) -> None:
    _, doc, _ = replayed
    assert "mem-fraction-low" not in {f["id"] for f in doc["findings"]}
    assert "launch.mem_fraction" not in doc["facts"]
    assert "runs on CPU" in doc["errors"]["launch.mem_fraction"]
    assert not set(doc["facts"]) & set(doc["errors"]), "a key is both known and unknown"


def test_the_absent_retraction_counter_reads_zero_on_0_5_23(replayed: tuple[int, dict[str, Any], str]) -> None:
    _, doc, _ = replayed
    facts = doc["facts"]
    assert facts["metrics.preemptions_total"]["value"] == 0
    assert "sglang:num_retracted_requests_total absent" in facts["metrics.preemptions_total"]["source"]
    # the 0.5.23 gauge of the same name family is read for what it is: retracted by the last step, not a total
    assert facts["metrics.retracted_recent"] == {"value": 0, "source": "/metrics sglang:num_retracted_reqs",
                                                 "observed": True}


@pytest.mark.parametrize(("version", "expected"), [("0.5.23", 0), ("0.5.7", 0), ("0.5.6", None), (None, None)])
def test_absence_means_zero_only_for_versions_that_have_the_counter(version: str | None, expected: int | None) -> None:
    facts = metrics.interpret(metrics.raw_from_text(_live("metrics.after.out").read_text(), "/metrics"))
    if version is not None:
        facts.set("server.version", version, "server_info version")
    derive_absent_counters(facts)
    assert facts.get("metrics.preemptions_total") == expected
    if expected is None:
        why = facts.unknown_reason("metrics.preemptions_total")
        assert why is not None and "sglang:num_retracted_requests_total is not in /metrics" in why
        assert (f"version is {version}" if version else "version is unknown") in why


def test_a_counter_created_between_two_scrapes_counted_from_zero() -> None:
    """Two real scrapes of the same server; the retraction counter is added to the second as SGLang writes it on its
    first increment (metrics_collector.py:1519) — a scenario line, labelled as such, on real data."""
    before = _live("metrics.after.out").read_text()
    labels = 'engine_type="unified",model_name="/models/tiny-qwen2-tools",moe_ep_rank="0",pp_rank="0",tp_rank="0"'
    after = (_live("metrics.after2.out").read_text() + "# TYPE sglang:num_retracted_requests_total counter\n"
             f"sglang:num_retracted_requests_total{{{labels}}} 3.0\n")
    raw = {"scrapes": [{**metrics.raw_from_text(before, "/metrics")["scrapes"][0], "at_s": 0.0},
                       {**metrics.raw_from_text(after, "/metrics")["scrapes"][0], "at_s": 2.0}]}
    facts = metrics.interpret(raw)
    assert facts.get("metrics.preemptions_total") == 3
    assert facts.get("metrics.preemptions_per_s") == 1.5


def test_a_later_source_answers_an_unknown_fact() -> None:
    facts = Facts()
    facts.error("launch.mem_fraction", "not given: the engine picks it at start-up")
    facts.error("gpu", "NVML unavailable")
    facts.set("launch.mem_fraction", 0.716, "server_info mem_fraction_static")
    facts.error("launch.mem_fraction", "a later, stale reason")
    assert facts.errors == {"gpu": "NVML unavailable"}
    facts.set("gpu.name", "H200", "--gpu")
    assert facts.unknown_reason("gpu.sm") == "NVML unavailable"  # a prefix's reason still explains its other keys
    merged = Facts()
    merged.set("launch.tp", 1, "argv")
    other = Facts()
    other.error("launch.tp", "unknown there")
    merged.update(other)
    assert "launch.tp" not in merged.errors


# Scenario commands (written here, not captured): the same low fraction with and without a token cap on the pool.
@pytest.mark.parametrize(("extra", "fires"), [([], True), (["--max-total-tokens", "20000"], False)])
def test_mem_fraction_low_only_when_the_fraction_sizes_the_pool(extra: list[str], fires: bool) -> None:
    command = ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-7B",
               "--mem-fraction-static", "0.6", "--enable-metrics", *extra]
    result = run_cli("lint", "--format", "json", "--config", str(shared_config("Qwen__Qwen2.5-7B.json")),
                     "--gpu", "H100", "--", *command)
    doc = json.loads(result.stdout)
    found = {f["id"]: f for f in doc["findings"]}
    assert ("mem-fraction-low" in found) is fires
    if fires:
        evidence = {e["fact"] for e in found["mem-fraction-low"]["evidence"]}
        assert {"launch.mem_fraction", "capacity.kv_override"} <= evidence


def test_no_prefix_cache_hit_yet_is_a_zero_hit_rate() -> None:
    """The real 0.5.23 scrape without its sglang:cached_tokens_total lines (a scenario: a server whose prompts never
    hit the radix cache, which SGLang shows by not having the family at all, metrics_collector.py:2114)."""
    text = "\n".join(line for line in _live("metrics.after.out").read_text().splitlines()
                     if "sglang:cached_tokens_total" not in line) + "\n"
    facts = metrics.interpret(metrics.raw_from_text(text, "/metrics"))
    assert "metrics.prefix_hit_rate" not in facts
    facts.set("server.version", "0.5.23", "server_info version")
    derive_absent_counters(facts)
    assert facts.get("metrics.prefix_hit_rate") == 0.0
    older = metrics.interpret(metrics.raw_from_text(text, "/metrics"))
    older.set("server.version", "0.5.6", "server_info version")
    derive_absent_counters(older)
    assert "metrics.prefix_hit_rate" not in older
    assert "from 0.5.7 on that means none yet" in older.unknown_reason("metrics.prefix_hit_rate")


@pytest.mark.parametrize(("given", "fires"), [(False, False), (True, True)])
def test_a_fraction_sglang_picked_itself_is_not_low(given: bool, fires: bool) -> None:
    """Scenario facts shaped as a GPU server's check: /server_info reports the fraction SGLang resolved; only one the
    command gave can be "low" (memory-filling-fast's note, and what lint says of the same command)."""
    from doctor.derive import derive_all
    from doctor.playbook.engine import diagnose
    from doctor.playbook.loader import load_playbooks

    facts = Facts()
    facts.set("launch.engine", "sglang", "server_info version")
    facts.set("launch.flags.model_path", "Qwen/Qwen2.5-7B", "server_info launch_command")
    facts.set("model.attention", "gqa", "config.json")
    facts.set("launch.max_total_tokens", None, "server_info max_total_tokens")
    facts.set("launch.mem_fraction", 0.716, "server_info mem_fraction_static")
    if given:
        facts.set("launch.flags.mem_fraction_static", 0.716, "server_info launch_command")
    diagnosis = diagnose(load_playbooks(), derive_all(facts), ["memory-filling-fast"])
    assert ("mem-fraction-low" in {f.id for f in diagnosis.findings}) is fires
    assert facts.get("launch.mem_fraction_picked_by_engine") is not given


def test_lint_of_a_cpu_command_asks_nothing_about_gpus() -> None:
    command = ["python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen2.5-7B", "--device", "cpu",
               "--max-total-tokens", "32768", "--enable-metrics"]
    doc = json.loads(run_cli("lint", "--format", "json", "--", *command).stdout)
    assert not [u for u in doc["unchecked"] if "--gpu" in u["hint"]], doc["unchecked"]
    assert not [u for u in doc["unchecked"] if any(m.split(".")[0] in ("gpu", "fit") for m in u["missing"])]
