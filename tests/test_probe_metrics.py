"""The metrics probe: every real scrape in fixtures/metrics, served over real HTTP, maps to the facts
its SOURCES.md describes; plus scenario expositions (labelled) for DP ranks, rates and faults."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path

import pytest
from conftest import SHARED_FIXTURES, unavailable
from support.httpserver import HTML, PROM, LocalServer, Response

from doctor.probes import metrics
from doctor.probes.base import ProbeOptions, Target, run_probe

SCENARIOS = Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"
MB = 1024 * 1024


def real_scrape(name: str) -> Path:
    path = SHARED_FIXTURES / "metrics" / name
    if not path.is_file():
        unavailable(f"real scrape {path} not available")
    return path


def _probe(routes: dict, **opts):
    with LocalServer(routes) as srv:
        return run_probe(metrics, Target.parse(srv.endpoint), ProbeOptions(**opts))


def _scrape(path: Path, **opts):
    return _probe({"/metrics": Response(file=path, content_type=PROM)}, **opts)


# -- the real scrapes -----------------------------------------------------------------------------------

def test_vllm_1_kv_cache_exhausted():
    result = _scrape(real_scrape("vllm_1.prom"))
    facts = result.facts
    assert result.ok and facts.get("metrics.engine") == "vllm"
    assert facts.get("metrics.kv_usage") == pytest.approx(0.999, abs=1e-3)
    assert facts.fact("metrics.kv_usage").source == "/metrics vllm:kv_cache_usage_perc"
    assert facts.fact("metrics.kv_usage").observed
    assert facts.get("metrics.running") == 84 and facts.get("metrics.queued") == 16
    assert facts.get("metrics.preemptions_total") == 53366
    assert facts.get("metrics.rank_kv_usage") == {"engine=0": pytest.approx(0.999, abs=1e-3)}
    # counters, not a gauge: hits / queries (3,899,168 / 4,180,581 in the scrape)
    assert facts.get("metrics.prefix_hit_rate") == pytest.approx(3899168 / 4180581)
    # --num-gpu-blocks-override 1024 x block_size 16
    assert facts.get("metrics.kv_capacity_tokens") == 16384
    assert facts.get("launch.prefix_caching") is True and facts.get("launch.mem_fraction") == 0.8
    assert 0 < facts.get("metrics.ttft_p50") <= facts.get("metrics.ttft_p99")
    assert 0 < facts.get("metrics.itl_p50") <= facts.get("metrics.itl_p99")
    assert "--sample SECONDS" in facts.unknown_reason("metrics.preemptions_per_s")


def test_vllm_2_under_load():
    facts = _scrape(real_scrape("vllm_2.prom")).facts
    assert facts.get("metrics.running") == 2 and facts.get("metrics.queued") == 12
    assert facts.get("metrics.kv_capacity_tokens") == 55552


def test_vllm_3_old_names_and_no_final_newline():
    result = _scrape(real_scrape("vllm_3.prom"))
    facts = result.facts
    assert result.ok and result.raw["scrapes"][0]["truncated"] is False  # complete last line, no newline
    assert facts.get("metrics.kv_usage") == 0.0 and facts.get("metrics.running") == 0
    assert facts.get("launch.prefix_caching") is False
    # no kv_cache_size_tokens label in this version: blocks x block size (7281 x 16)
    assert facts.get("metrics.kv_capacity_tokens") == 7281 * 16
    assert "num_gpu_blocks x block_size" in facts.fact("metrics.kv_capacity_tokens").source


def test_v0_kv_usage_name_alone_still_maps():
    """Scenario derived in memory from the real vllm_3.prom: the new name removed, only V0's remains."""
    text = real_scrape("vllm_3.prom").read_text()
    old_only = "\n".join(line for line in text.splitlines() if "kv_cache_usage_perc" not in line) + "\n"
    facts = _probe({"/metrics": Response(body=old_only, content_type=PROM)}).facts
    assert facts.fact("metrics.kv_usage").source == "/metrics vllm:gpu_cache_usage_perc"


def test_sglang_1_overloaded():
    facts = _scrape(real_scrape("sglang_1.prom")).facts
    assert facts.get("metrics.engine") == "sglang"
    assert facts.get("metrics.running") == 162 and facts.get("metrics.queued") == 2826
    assert facts.get("metrics.kv_usage") == 0.28
    assert facts.fact("metrics.kv_usage").source == "/metrics sglang:token_usage"
    # the per-batch cache_hit_rate gauge (0.0075 here) is not a prefix hit rate; this version has no counter
    assert "metrics.prefix_hit_rate" not in facts
    assert "sglang:cached_tokens" in facts.unknown_reason("metrics.prefix_hit_rate")
    # most TTFTs are beyond the last 30 s bucket: a lower bound, and the source says so
    assert facts.get("metrics.ttft_p99") == 30.0
    assert "lower bound" in facts.fact("metrics.ttft_p99").source
    assert "time_per_output_token_seconds" in facts.fact("metrics.itl_p50").source
    assert "sglang:num_retracted_requests" in facts.unknown_reason("metrics.preemptions_total")


@pytest.mark.parametrize("name", ["sglang_2.prom", "sglang_3.prom"])
def test_sglang_idle(name):
    facts = _scrape(real_scrape(name)).facts
    assert facts.get("metrics.engine") == "sglang"
    assert facts.get("metrics.running") == 0 and facts.get("metrics.queued") == 0


def test_sglang_2_tp_rank_and_counter_hit_rate():
    facts = _scrape(real_scrape("sglang_2.prom")).facts
    assert facts.get("metrics.rank_kv_usage") == {"tp_rank=0": 0.25}
    assert facts.get("metrics.prefix_hit_rate") == pytest.approx(1 / 5)  # cached_tokens 1 / prompt_tokens 5
    assert facts.get("metrics.kv_capacity_tokens") == 430839


def test_underscore_names_map_like_colon_names():
    """Scenario derived in memory from the real sglang_1.prom, as a pipeline that renames `sglang:` would."""
    text = real_scrape("sglang_1.prom").read_text().replace("sglang:", "sglang_")
    facts = _probe({"/metrics": Response(body=text, content_type=PROM)}).facts
    assert facts.get("metrics.running") == 162 and facts.get("metrics.kv_usage") == 0.28


def test_only_mapped_families_are_kept_and_replay_gives_the_same_facts():
    result = _scrape(real_scrape("vllm_1.prom"))
    kept = result.raw["scrapes"][0]["text"]
    assert result.raw["scrapes"][0]["bytes"] == real_scrape("vllm_1.prom").stat().st_size
    assert len(kept) < 15_000 and "python_gc_objects" not in kept and "http_request" not in kept
    replayed = metrics.interpret(json.loads(json.dumps(result.raw)))
    assert replayed.to_dict() == result.facts.to_dict()


def test_secrets_in_labels_are_redacted_in_raw():
    """Scenario derived in memory from the real vllm_1.prom: a label carrying a token (a model path with one)."""
    secret = "hf_abcdefghijklmnopqrstuvwxyz012345"
    text = real_scrape("vllm_1.prom").read_text().replace('model_name="facebook/opt-125m"',
                                                          f'model_name="facebook/opt-125m",hf_token="{secret}"')
    result = _probe({"/metrics": Response(body=text, content_type=PROM)})
    assert secret not in json.dumps(result.raw) and result.facts.get("metrics.running") == 84


# -- scenarios ------------------------------------------------------------------------------------------

def test_dp_ranks_add_up_and_tp_replicas_count_once():
    facts = _scrape(SCENARIOS / "sglang_dp2_tp4_metrics.prom").facts
    assert facts.get("metrics.running") == 3 + 58 and facts.get("metrics.queued") == 41
    assert facts.get("metrics.rank_kv_usage") == {"dp_rank=0": 0.12, "dp_rank=1": 0.97}
    assert facts.get("metrics.rank_running") == {"dp_rank=0": 3, "dp_rank=1": 58}
    assert facts.get("metrics.kv_usage") == 0.97
    assert facts.get("metrics.preemptions_total") == 137
    assert facts.fact("metrics.preemptions_total").source == "/metrics sglang:num_retracted_requests_total"
    # cached (device + host) / prompt (streaming + not), over both DP ranks: 1.2M / 2.0M
    assert facts.get("metrics.prefix_hit_rate") == pytest.approx(0.6)
    assert facts.get("metrics.kv_capacity_tokens") == 598016  # the smaller rank pool
    assert facts.get("metrics.spec_accept_rate") == pytest.approx(0.7)
    assert facts.get("metrics.eplb_balancedness") == pytest.approx(0.72)
    assert facts.get("metrics.ttft_p50") == pytest.approx(0.25 + 0.25 * (500 - 400) / 400)


def _bump(text: str, name: str, new_value: float) -> str:
    """Replace every sample value of one family (scenario: the same server a moment later)."""
    return re.sub(rf"^({re.escape(name)}(?:{{[^}}]*}})?) \S+$", rf"\g<1> {new_value}", text, flags=re.M)


def test_two_scrapes_give_rates_and_time_to_full():
    """Scenario derived in memory from the real vllm_1.prom: a second scrape with 120 more preemptions,
    2,000 more generated tokens and KV usage up from 0.50 to 0.60."""
    first = _bump(real_scrape("vllm_1.prom").read_text(), "vllm:kv_cache_usage_perc", 0.5)
    second = _bump(first, "vllm:kv_cache_usage_perc", 0.6)
    second = _bump(second, "vllm:num_preemptions_total", 53366 + 120)
    second = _bump(second, "vllm:generation_tokens_total", 7.477067e06 + 2000)
    scrapes = [Response(body=first, content_type=PROM), Response(body=second, content_type=PROM)]
    result = _probe({"/metrics": scrapes}, sample_s=0.2)
    t0, t1 = (s["at_s"] for s in result.raw["scrapes"])
    dt = t1 - t0
    assert dt >= 0.2
    facts = result.facts
    assert facts.get("metrics.preemptions_per_s") == pytest.approx(120 / dt)
    assert facts.get("metrics.gen_tokens_per_s") == pytest.approx(2000 / dt)
    assert facts.get("metrics.prompt_tokens_per_s") == 0.0
    assert facts.get("metrics.kv_fill_rate") == pytest.approx(0.1 / dt)
    assert facts.get("metrics.time_to_full_s") == pytest.approx(0.4 / (0.1 / dt))
    assert "over" in facts.fact("metrics.preemptions_per_s").source


def test_a_counter_going_backwards_is_not_a_rate():
    text = real_scrape("vllm_1.prom").read_text()
    restarted = _bump(text, "vllm:num_preemptions_total", 5)
    result = _probe({"/metrics": [Response(body=text, content_type=PROM),
                                  Response(body=restarted, content_type=PROM)]}, sample_s=0.05)
    assert "metrics.preemptions_per_s" not in result.facts
    assert "went backwards" in result.facts.unknown_reason("metrics.preemptions_per_s")
    assert result.facts.get("metrics.time_to_full_s") is None  # KV usage flat: not filling


@pytest.mark.parametrize("q,expected", [(0.5, (1.25, False)), (0.2, (0.5, False)), (0.99, (2.0, True))])
def test_quantile_interpolates_like_prometheus(q, expected):
    # 10 observations in (0, 1], 10 in (1, 2], 5 above 2
    assert metrics.quantile(q, [(1.0, 10.0), (2.0, 20.0), (float("inf"), 25.0)]) == expected


def test_quantile_without_observations():
    assert metrics.quantile(0.5, [(1.0, 0.0), (float("inf"), 0.0)]) is None


# -- faults ---------------------------------------------------------------------------------------------

def test_sglang_without_enable_metrics_is_a_fact():
    result = _probe({})  # FastAPI's 404, as SGLang answers without --enable-metrics
    assert not result.ok
    assert result.facts.get("metrics.available") is False
    assert "--enable-metrics" in result.error and "--enable-metrics" in result.facts.unknown_reason("metrics.kv_usage")


@pytest.mark.parametrize("status", [500, 503])
def test_server_errors(status):
    result = _probe({"/metrics": Response(status)})
    assert not result.ok and f"HTTP {status}" in result.error
    assert "metrics.available" not in result.facts


def test_401_asks_for_a_key():
    result = _probe({"/metrics": Response(401)})
    assert "needs an API key: pass --api-key-env" in result.error


def test_html_page_is_not_metrics():
    result = _probe({"/metrics": Response(body="<html>login</html>", content_type=HTML)})
    assert result.error.endswith("not an LLM server (got text/html)")


def test_truncated_transfer_is_an_error():
    body = real_scrape("vllm_1.prom").read_bytes()[:20_000]
    result = _probe({"/metrics": Response(body=body, content_type=PROM, length=52_370)})
    assert not result.ok and "closed before the body was complete" in result.error


def test_exposition_cut_mid_line_keeps_what_parsed():
    text = real_scrape("vllm_1.prom").read_text()
    cut = text[: text.index("vllm:kv_cache_usage_perc{") + 30]  # ends inside the label set
    result = _probe({"/metrics": Response(body=cut, content_type=PROM)})
    assert result.ok and result.facts.get("metrics.truncated") is True
    assert result.facts.get("metrics.running") == 84
    assert "metrics.kv_usage" not in result.facts
    assert "not in /metrics" in result.facts.unknown_reason("metrics.kv_usage")


def test_garbage_family_is_reported_not_raised():
    text = real_scrape("vllm_1.prom").read_text().replace(
        "vllm:num_requests_waiting{engine=\"0\",model_name=\"facebook/opt-125m\"} 16.0",
        "vllm:num_requests_waiting{engine=\"0\",model_name=\"facebook/opt-125m\"} sixteen")
    facts = _probe({"/metrics": Response(body=text, content_type=PROM)}).facts
    assert facts.get("metrics.running") == 84 and "metrics.queued" not in facts
    assert any(e.startswith("vllm_num_requests_waiting:") for e in facts.get("metrics.parse_errors"))


def test_fifty_megabyte_metrics_body():
    result = _probe({"/metrics": Response(body=b"#" * MB, repeat=50, content_type=PROM)})
    assert not result.ok and "body larger than" in result.error


def test_gzip_bomb_metrics_body():
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = b"".join(packer.compress(bytes(MB)) for _ in range(40)) + packer.flush()
    result = _probe({"/metrics": Response(body=bomb, headers={"Content-Encoding": "gzip"}, content_type=PROM)})
    assert not result.ok and "decompressed body larger than" in result.error


def test_slow_metrics_times_out():
    result = _probe({"/metrics": Response(body="x", delay=5)}, timeout_s=0.3)
    assert not result.ok and "timed out after 0.3s" in result.error
    assert result.elapsed_ms < 2000


def test_not_an_engine_exposition():
    result = _probe({"/metrics": Response(body="node_load1 0.5\n", content_type=PROM)})
    assert not result.ok and "no vLLM or SGLang metric names" in result.error
