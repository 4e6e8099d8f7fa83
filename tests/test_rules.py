"""`llmdoctor rules`: alerting rules generated from the playbooks, checked by the real promtool.

`promtool check rules` on the output, and `promtool test rules` on SCENARIO series (written below, not real
captures; names and labels as the engines and exporters write them) that must fire, and must not.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import SHARED_FIXTURES, requires_shared, run_cli
from support.prometheus import PROMTOOL, requires_promtool

from doctor.playbook.loader import load_playbooks
from doctor.report.promql import Params, Selector, load_catalog
from doctor.report.rules import RuleOptions, generate


def _rules(tmp_path: Path, *args: str) -> tuple[Path, dict, str]:
    out = tmp_path / "llmdoctor.rules.yml"
    result = run_cli("rules", "-o", str(out), *args)
    assert result.returncode == 0, result.stderr
    return out, yaml.safe_load(out.read_text()), result.stderr


def _alerts(doc: dict) -> dict[str, dict]:
    return {rule["alert"]: rule for group in doc["groups"] for rule in group["rules"] if "alert" in rule}


def test_builtin_playbooks_export_the_metric_nodes(tmp_path: Path) -> None:
    _, doc, stderr = _rules(tmp_path, "--selector", '{job="llm"}', "-v")
    alerts = _alerts(doc)
    assert set(alerts) == {"LLMDoctorKvCacheExhausted", "LLMDoctorKvFillingFast", "LLMDoctorMaxNumSeqsLimit",
                           "LLMDoctorExpertLoadImbalance", "LLMDoctorMetricsDisabled",
                           "LLMDoctorMetricsDisabledAbsent", "LLMDoctorEngineNoProgress",
                           "LLMDoctorGpuFaultReportedHungCritical", "LLMDoctorGpuFaultReportedSlowDecodeWarning"}
    exhausted = alerts["LLMDoctorKvCacheExhausted"]
    assert exhausted["expr"] == ("(llmdoctor:metrics_kv_usage >= 0.95) and ((llmdoctor:metrics_preemptions_per_s > 0)"
                                 " or (llmdoctor:metrics_preemptions_total > 0))")
    assert exhausted["labels"] == {"severity": "critical", "symptom": "memory-filling-fast",
                                   "cause": "kv-cache-exhausted"}
    assert exhausted["annotations"]["runbook"] == ("llmdoctor check --endpoint {{ $labels.instance }} "
                                                   "--symptom memory-filling-fast")
    assert exhausted["annotations"]["runbook_url"].endswith("/docs/causes.md#kv-cache-exhausted")
    assert alerts["LLMDoctorMetricsDisabledAbsent"]["expr"] == 'absent(up{job="llm"})'
    # a low hit rate alone names no cause check could name from these series: no page (issue 16)
    assert "skipped low-cache-hit › (entry): the entry threshold" in stderr
    records = {r["record"]: r["expr"] for r in doc["groups"][0]["rules"]}
    # both engines, every name, ':' and '_' combined with `or`; the user's selector on each
    kv = records["llmdoctor:metrics_kv_usage"]
    for name in ("vllm:kv_cache_usage_perc", "vllm_gpu_cache_usage_perc", "sglang:token_usage", "sglang_token_usage"):
        assert f'{name}{{job="llm"}}' in kv
    # skipped nodes are listed, with the facts PromQL cannot see
    assert "skipped memory-filling-fast › moe-without-ep: needs model.moe, launch.tp" in stderr
    assert "skipped idle-ep-gpus › ep-batch-too-small: info is below --min-severity" in stderr
    assert "ep-batch-too-small" not in str(alerts)


@requires_promtool
def test_promtool_check_rules(tmp_path: Path) -> None:
    for args in ((), ("--selector", '{job="llm",env=~"prod-.*"}', "--min-severity", "info")):
        out, doc, _ = _rules(tmp_path, *args)
        check = subprocess.run([str(PROMTOOL), "check", "rules", str(out)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
    assert "LLMDoctorEpBatchTooSmall" in _alerts(doc)  # info included on request
    assert "LLMDoctorMetricsDisabledAbsent" in _alerts(doc)


# SCENARIO series for promtool (values every minute): one instance per alert, and a healthy one.
_SERIES = [
    # a: healthy vLLM
    ('up{instance="a:8000",job="llm"}', "1x40"),
    ('vllm:kv_cache_usage_perc{instance="a:8000",job="llm",engine="0"}', "0.4x40"),
    ('vllm:num_requests_running{instance="a:8000",job="llm",engine="0"}', "30x40"),
    ('vllm:num_requests_waiting{instance="a:8000",job="llm",engine="0"}', "0x40"),
    ('vllm:num_preemptions_total{instance="a:8000",job="llm",engine="0"}', "0x40"),
    ('vllm:prefix_cache_queries_total{instance="a:8000",job="llm",engine="0"}', "0+1000x40"),
    ('vllm:prefix_cache_hits_total{instance="a:8000",job="llm",engine="0"}', "0+600x40"),
    # b: KV full and preempting, under the V0-era name
    ('up{instance="b:8000",job="llm"}', "1x40"),
    ('vllm:gpu_cache_usage_perc{instance="b:8000",job="llm",engine="0"}', "0.97x40"),
    ('vllm:num_requests_running{instance="b:8000",job="llm",engine="0"}', "120x40"),
    ('vllm:num_requests_waiting{instance="b:8000",job="llm",engine="0"}', "20x40"),
    ('vllm:num_preemptions_total{instance="b:8000",job="llm",engine="0"}', "0+5x40"),
    # c: SGLang queueing at the sequence cap with KV idle
    ('up{instance="c:30000",job="llm"}', "1x40"),
    ('sglang:token_usage{instance="c:30000",job="llm",tp_rank="0"}', "0.1x40"),
    ('sglang:num_running_reqs{instance="c:30000",job="llm",tp_rank="0"}', "48x40"),
    ('sglang:num_queue_reqs{instance="c:30000",job="llm",tp_rank="0"}', "25x40"),
    # d: SGLang EP 8 (moe_ep_rank 0-7) with GPU 3 pegged on the DCGM exporter of the same host
    ('up{instance="d:30000",job="llm"}', "1x40"),
    *[(f'sglang:num_running_reqs{{instance="d:30000",job="llm",tp_rank="{r}",moe_ep_rank="{r}",dp_rank="{r}"}}',
       "30x40") for r in range(8)],
    *[(f'sglang:token_usage{{instance="d:30000",job="llm",tp_rank="{r}",moe_ep_rank="{r}",dp_rank="{r}"}}',
       "0.5x40") for r in range(8)],
    *[(f'DCGM_FI_DEV_GPU_UTIL{{instance="d:9400",job="gpu",gpu="{g}",modelName="NVIDIA H200"}}',
       "97x40" if g == 3 else "25x40") for g in range(8)],
    # e: SGLang behind a pipeline that writes sglang_; KV climbing 2 points a minute
    ('up{instance="e:30000",job="llm"}', "1x40"),
    ('sglang_token_usage{instance="e:30000",job="llm",tp_rank="0"}', "0.3+0.02x40"),
    ('sglang_num_running_reqs{instance="e:30000",job="llm",tp_rank="0"}', "10+2x40"),
    ('sglang_num_queue_reqs{instance="e:30000",job="llm",tp_rank="0"}', "0x40"),
    # f: was serving metrics, then the scrape fails from minute 10
    ('up{instance="f:8000",job="llm"}', "1x10 0x30"),
    ('vllm:num_requests_running{instance="f:8000",job="llm",engine="0"}', "5x10"),
    # g: vLLM whose prefix cache hits 10% of lookups: no alert (check names no cause from these series)
    ('up{instance="g:8000",job="llm"}', "1x40"),
    ('vllm:num_requests_running{instance="g:8000",job="llm",engine="0"}', "5x40"),
    ('vllm:prefix_cache_queries_total{instance="g:8000",job="llm",engine="0"}', "0+1000x40"),
    ('vllm:prefix_cache_hits_total{instance="g:8000",job="llm",engine="0"}', "0+100x40"),
    # a GPU exporter on a host with only a healthy GPU: no engine there, so nothing to alert on
    ('nvidia_smi_utilization_gpu_ratio{instance="h:9835",job="gpu",uuid="GPU-0"}', "0.1x40"),
]
_SERIES += [
    # k: vLLM with requests running and its generation counter frozen: hung
    ('up{instance="k:8000",job="llm"}', "1x40"),
    ('vllm:num_requests_running{instance="k:8000",job="llm",engine="0"}', "5x40"),
    ('vllm:num_requests_waiting{instance="k:8000",job="llm",engine="0"}', "3x40"),
    ('vllm:generation_tokens_total{instance="k:8000",job="llm",engine="0"}', "1000x40"),
    # m: vLLM whose host's DCGM exporter reads Xid 79 on GPU 5; n: one whose GPU 2 is under the power brake
    # (names and labels of the recorded scrape, fixtures/dcgm)
    *[(f'{name}{{instance="{host}:8000",job="llm",engine="0"}}', values) for host in ("m", "n")
      for name, values in (("vllm:num_requests_running", "10x40"), ("vllm:generation_tokens_total", "0+500x40"))],
    *[(f'up{{instance="{host}:8000",job="llm"}}', "1x40") for host in ("m", "n")],
    *[(f'DCGM_FI_DEV_XID_ERRORS{{instance="m:9400",job="gpu",gpu="{g}",UUID="GPU-{g}",Hostname="m"}}',
       "79x40" if g == 5 else "0x40") for g in range(8)],
    *[(f'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{instance="n:9400",job="gpu",gpu="{g}",UUID="GPU-{g}",Hostname="n"}}',
       "136x40" if g == 2 else "0x40") for g in range(8)],
    # p: vLLM whose host's GPU 4 replays its PCIe link 40 times a minute; q: one whose GPU 6 counts NVLink CRC
    # errors; r: one whose GPUs replay a little (2 a minute: 10 in the rules' 5-minute range, under 100) — no alert
    # (names of the recorded dcgm-exporter 1.4.6 scrape, fixtures/dcgm)
    *[(f'{name}{{instance="{host}:8000",job="llm",engine="0"}}', values) for host in ("p", "q", "r")
      for name, values in (("vllm:num_requests_running", "10x40"), ("vllm:generation_tokens_total", "0+500x40"))],
    *[(f'up{{instance="{host}:8000",job="llm"}}', "1x40") for host in ("p", "q", "r")],
    *[(f'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{instance="p:9400",job="gpu",gpu="{g}",UUID="GPU-{g}",Hostname="p"}}',
       "0+40x40" if g == 4 else "0x40") for g in range(8)],
    *[(f'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL{{instance="q:9400",job="gpu",gpu="{g}",UUID="GPU-{g}",'
       f'Hostname="q"}}', "0+5x40" if g == 6 else "0x40") for g in range(8)],
    *[(f'DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL{{instance="q:9400",job="gpu",gpu="{g}",UUID="GPU-{g}",'
       f'Hostname="q"}}', "0x40") for g in range(8)],
    *[(f'DCGM_FI_DEV_PCIE_REPLAY_COUNTER{{instance="r:9400",job="gpu",gpu="{g}",UUID="GPU-{g}",Hostname="r"}}',
       "0+2x40") for g in range(8)],
]

_FIRING = {  # alert → the instances it must fire for at minute 26 (and for no other)
    "LLMDoctorEngineNoProgress": ["k:8000"],
    "LLMDoctorGpuFaultReportedHungCritical": ["m:8000"],
    "LLMDoctorGpuFaultReportedSlowDecodeWarning": ["n:8000", "p:8000", "q:8000"],
    "LLMDoctorKvCacheExhausted": ["b:8000"],
    "LLMDoctorMaxNumSeqsLimit": ["c:30000"],
    "LLMDoctorExpertLoadImbalance": ["d:30000"],
    "LLMDoctorKvFillingFast": ["e:30000"],
    "LLMDoctorMetricsDisabled": ["f:8000"],
    "LLMDoctorMetricsDisabledAbsent": [],
}


def _expected(rule: dict, instance: str | None) -> dict:
    def fill(text: str) -> str:
        return text.replace("{{ $labels.instance }}", instance or "")

    labels = dict(rule["labels"])
    if instance:
        labels["instance"] = instance
    else:
        labels["job"] = "llm"
    return {"exp_labels": labels, "exp_annotations": {k: fill(v) for k, v in rule["annotations"].items()}}


@requires_promtool
def test_promtool_test_rules_fire_and_stay_quiet(tmp_path: Path) -> None:
    out, doc, _ = _rules(tmp_path, "--selector", '{job="llm"}', "--for", "2m")
    alerts = _alerts(doc)
    assert set(_FIRING) == set(alerts)
    fire = [{"eval_time": "26m", "alertname": name,
             "exp_alerts": [_expected(alerts[name], i) for i in instances]} for name, instances in _FIRING.items()]
    quiet = [{"eval_time": "1m", "alertname": name, "exp_alerts": []} for name in _FIRING]  # `for` not yet over
    tests = {
        "rule_files": [out.name],
        "evaluation_interval": "1m",
        "tests": [
            {"interval": "1m", "input_series": [{"series": s, "values": v} for s, v in _SERIES],
             "alert_rule_test": fire + quiet,
             # max/mean of the host's GPUs, joined to the engine instance on the same host
             "promql_expr_test": [{"expr": "round(1000 * llmdoctor:gpu_util_skew)", "eval_time": "26m",
                                   "exp_samples": [{"labels": '{instance="d:30000"}',
                                                    "value": round(1000 * 97 / ((97 + 7 * 25) / 8))}]}]},
            # every target gone: only the absent() companion can say so
            {"interval": "1m", "input_series": [{"series": 'up{instance="z:1",job="other"}', "values": "1x20"}],
             "alert_rule_test": [{"eval_time": "15m", "alertname": "LLMDoctorMetricsDisabledAbsent",
                                  "exp_alerts": [_expected(alerts["LLMDoctorMetricsDisabledAbsent"], None)]},
                                 {"eval_time": "15m", "alertname": "LLMDoctorMetricsDisabled", "exp_alerts": []}]},
        ],
    }
    spec = tmp_path / "tests.yml"
    spec.write_text(yaml.safe_dump(tests, sort_keys=False, width=1 << 16))
    result = subprocess.run([str(PROMTOOL), "test", "rules", str(spec)], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


def test_a_users_own_playbook_exports_too(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "causes").mkdir()
    (mine / "causes" / "queue-storm.yaml").write_text(
        "id: queue-storm\ntitle: Queue storm\nseverity: critical\nwhat: many wait\n"
        "why: bursts\nfix: {any: add replicas}\nref: ours\n")
    (mine / "queue-storm.yaml").write_text(
        "symptom: queue-storm\ntitle: Queue storm\ntree:\n"
        "  - when:\n      all:\n        - {fact: metrics.queued, op: gt, value: 100}\n"
        "        - {fact: launch.prefix_caching, op: is_false}\n"
        "        - not: {fact: metrics.ttft_p99, op: lt, value: 2}\n    cause: queue-storm\n"
        "  - when: {fact: launch.tp, op: gt, value: 4}\n    cause: queue-storm\n")
    out, doc, stderr = _rules(tmp_path, "--playbooks", str(mine), "-v")
    rule = _alerts(doc)["LLMDoctorQueueStorm"]
    assert rule["expr"].startswith("(llmdoctor:metrics_queued > 100) and ((group by (instance) "
                                   '(vllm:cache_config_info{enable_prefix_caching="False"}))')
    assert rule["expr"].endswith("and (llmdoctor:launch_engine unless (llmdoctor:metrics_ttft_p99 < 2))")
    assert rule["labels"]["severity"] == "critical" and rule["labels"]["cause"] == "queue-storm"
    assert "skipped queue-storm › queue-storm: needs launch.tp" in stderr
    if PROMTOOL:
        check = subprocess.run([str(PROMTOOL), "check", "rules", str(out)], capture_output=True, text=True)
        assert check.returncode == 0, check.stdout


def test_stop_siblings_guard_later_nodes() -> None:
    """An earlier sibling with `stop` that holds silences the later ones: `unless` in PromQL."""
    from doctor.playbook.loader import Playbook, PlaybookSet

    base = load_playbooks()
    tree = [{"when": {"fact": "metrics.queued", "op": "gt", "value": 0}, "stop": True, "cause": "max-num-seqs-limit"},
            {"when": {"fact": "metrics.kv_usage", "op": "ge", "value": 0.95}, "cause": "kv-cache-exhausted"}]
    pbset = PlaybookSet({"t": Playbook("t", "t", tree)}, base.causes)
    generated = generate(pbset, load_catalog(), RuleOptions(Params(selector=Selector())))
    exprs = {a["alert"]: a["expr"] for a in generated.alerts}
    assert exprs["LLMDoctorKvCacheExhausted"] == ("(llmdoctor:metrics_kv_usage >= 0.95) and (llmdoctor:launch_engine"
                                                 " unless (llmdoctor:metrics_queued > 0))")


@pytest.mark.parametrize("args, says", [
    (["--for", "ten minutes"], "--for: 'ten minutes' is not a duration"),
    (["--selector", "job"], "--selector"),
    (["--playbooks", "/nonexistent/dir"], "/nonexistent/dir"),
])
def test_bad_input(args: list[str], says: str) -> None:
    result = run_cli("rules", *args)
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_runbook_url_base_is_configurable_and_every_alert_has_one(tmp_path: Path) -> None:
    _, doc, _ = _rules(tmp_path, "--runbook-base", "https://wiki.example/llm/causes.html", "--min-severity", "info")
    for rule in _alerts(doc).values():
        anchor = rule["labels"].get("cause", rule["labels"]["symptom"])
        assert rule["annotations"]["runbook_url"] == f"https://wiki.example/llm/causes.html#{anchor}"
        assert rule["annotations"]["runbook"].startswith("llmdoctor check --endpoint ")
    # every anchor is a heading of the generated causes documentation
    headings = set(re.findall(r"^### (\S+)$", (Path(__file__).parents[1] / "docs" / "causes.md").read_text(), re.M))
    assert {r["labels"]["cause"] for r in _alerts(doc).values()} <= headings
    bad = run_cli("rules", "--runbook-base", "wiki/causes")
    assert bad.returncode == 2 and "--runbook-base" in bad.stderr


@requires_promtool
def test_prometheusrule_groups_pass_promtool(tmp_path: Path) -> None:
    out, doc, _ = _rules(tmp_path, "--format", "prometheusrule", "--namespace", "monitoring",
                         "--label", "release=kube-prometheus-stack", "--name", "llm-rules")
    assert doc["apiVersion"] == "monitoring.coreos.com/v1" and doc["kind"] == "PrometheusRule"
    assert doc["metadata"] == {"name": "llm-rules", "namespace": "monitoring",
                               "labels": {"app.kubernetes.io/name": "llmdoctor", "release": "kube-prometheus-stack"}}
    _, plain, _ = _rules(tmp_path)
    assert doc["spec"] == plain  # the same groups as the rules file
    groups = tmp_path / "spec.yml"
    groups.write_text(yaml.safe_dump(doc["spec"], sort_keys=False, width=1 << 16))
    check = subprocess.run([str(PROMTOOL), "check", "rules", str(groups)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    bad = run_cli("rules", "--format", "prometheusrule", "--label", "release")
    assert bad.returncode == 2 and "KEY=VALUE" in bad.stderr


@requires_shared
@requires_promtool
def test_real_scrapes_page_only_for_what_check_names(tmp_path: Path) -> None:
    """REAL scrapes (history around them is a scenario: gauges held, counters climbing to the scraped value).
    vllm_2.prom has 0 prefix-cache hits in 96 lookups with no shared prefixes: nothing about the cache may page;
    the alerts that do fire are exactly the causes `check --metrics` names from the same scrape."""
    from support.scrape_history import promtool_series

    out, doc, _ = _rules(tmp_path, "--for", "2m")
    alerts = _alerts(doc)
    scrapes = {"v1:8000": SHARED_FIXTURES / "metrics" / "vllm_1.prom",
               "v2:8000": SHARED_FIXTURES / "metrics" / "vllm_2.prom"}
    assert "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"facebook/opt-125m\"} 96.0" in \
        scrapes["v2:8000"].read_text()
    series, expected = [], {name: [] for name in alerts}
    for instance, path in scrapes.items():
        series += promtool_series(path, instance, "llm", 30)
        check = run_cli("check", "--metrics", str(path), "--format", "json", "--fail-on", "critical")
        named = {f["id"] for f in json.loads(check.stdout)["findings"]
                 if f["severity"] in ("warning", "critical")}
        for name, rule in alerts.items():
            if rule["labels"].get("cause") in named:
                expected[name].append(instance)
    assert expected["LLMDoctorKvCacheExhausted"] == ["v1:8000"] and expected["LLMDoctorMaxNumSeqsLimit"] == ["v2:8000"]
    tests = {"rule_files": [out.name], "evaluation_interval": "1m", "tests": [{
        "interval": "1m", "input_series": series,
        "alert_rule_test": [{"eval_time": "20m", "alertname": name,
                             "exp_alerts": [_expected(alerts[name], i) for i in instances]}
                            for name, instances in expected.items() if name != "LLMDoctorMetricsDisabledAbsent"]}]}
    spec = tmp_path / "tests.yml"
    spec.write_text(yaml.safe_dump(tests, sort_keys=False, width=1 << 16))
    result = subprocess.run([str(PROMTOOL), "test", "rules", str(spec)], capture_output=True, text=True,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
