"""End to end with the real binaries, all on loopback: Prometheus → Alertmanager → llmdoctor serve → a chat sink.

* two engines: local servers replaying the REAL scrapes vllm_1.prom (KV exhausted) and vllm_2.prom (queueing
  with KV idle, 0 prefix-cache hits in 96 lookups) from fixtures/metrics;
* Prometheus (Debian's ``prometheus``) with 30 minutes of history backfilled by ``promtool tsdb
  create-blocks-from openmetrics`` (a SCENARIO around the real values: tests/support/scrape_history.py) and
  the rules ``llmdoctor rules`` writes;
* Alertmanager (Debian's ``prometheus-alertmanager``) routing every alert to ``llmdoctor serve``;
* ``llmdoctor serve`` checking each alert's instance live and posting Slack-compatible JSON to a local sink.

Skips with the reason where the binaries are missing; .ci/run installs both packages.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import IN_CI, SHARED_FIXTURES, requires_shared, run_cli, unavailable
from support.httpserver import LocalServer, Response
from support.prometheus import PrivatePrometheus, backfill, free_port, requires_prometheus
from support.scrape_history import openmetrics
from support.serve import Receiver, get_json, vllm_routes

ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
_NO_ALERTMANAGER = "alertmanager not installed (Debian: apt-get install prometheus-alertmanager; .ci/run does it)"
#: skipped where it is missing, except under CI (the test then fails: .ci/run installs it)
requires_alertmanager = pytest.mark.skipif(ALERTMANAGER is None and not IN_CI, reason=_NO_ALERTMANAGER)
METRICS = SHARED_FIXTURES / "metrics"


class PrivateAlertmanager:
    """Alertmanager on 127.0.0.1 with clustering off (it would listen on 0.0.0.0:9094), in a tmp directory."""

    def __init__(self, workdir: Path, webhook: str) -> None:
        self.workdir = workdir
        self.webhook = webhook
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> PrivateAlertmanager:
        config = self.workdir / "alertmanager.yml"
        config.write_text(
            "route:\n  receiver: llmdoctor\n  group_by: [alertname, instance]\n"
            "  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 2s\n"
            f"receivers:\n  - name: llmdoctor\n    webhook_configs:\n      - url: {self.webhook}\n"
            "        send_resolved: false\n")
        for _attempt in range(3):
            self.port = free_port()
            self.process = subprocess.Popen(
                [str(ALERTMANAGER), f"--config.file={config}", f"--storage.path={self.workdir / 'am-data'}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--cluster.listen-address=", "--log.level=warn"],
                stdout=(self.workdir / "alertmanager.log").open("wb"), stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    get_json(f"{self.url}/api/v2/status", timeout=1)
                    return self
                except OSError:
                    time.sleep(0.2)
            self.stop()
        raise RuntimeError(f"alertmanager did not start: {(self.workdir / 'alertmanager.log').read_text()[-2000:]}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=15)
        self.process = None

    def __exit__(self, *exc: object) -> None:
        self.stop()


@requires_shared
@requires_prometheus
@requires_alertmanager
def test_prometheus_alertmanager_serve_sink(tmp_path: Path) -> None:
    if ALERTMANAGER is None:
        unavailable(_NO_ALERTMANAGER)
    sink = LocalServer({"/hook": Response(body="ok")})
    with LocalServer(vllm_routes(METRICS / "vllm_1.prom")) as full, \
            LocalServer(vllm_routes(METRICS / "vllm_2.prom")) as queueing, sink:
        # history: the last 30 minutes up to a minute ago, every 60 s, for both instances
        end = int(time.time()) // 60 * 60 - 60
        backfill(openmetrics({full.endpoint: METRICS / "vllm_1.prom", queueing.endpoint: METRICS / "vllm_2.prom"},
                             "llm", end - 1800, end, 60), tmp_path)
        rules = tmp_path / "llmdoctor.rules.yml"
        made = run_cli("rules", "-o", str(rules), "--selector", '{job="llm"}', "--for", "1s")
        assert made.returncode == 0, made.stderr
        targets = tmp_path / "fleet.yaml"
        targets.write_text(f"- {{endpoint: '{full.endpoint}', gpu: 'L4:1'}}\n- '{queueing.endpoint}'\n")
        out = tmp_path / "out"
        with Receiver(tmp_path, "--targets", str(targets), "--out-dir", str(out), "--notify-url", sink.url("/hook"),
                      "--timeout", "3") as rx, \
                PrivateAlertmanager(tmp_path, f"{rx.url}/alertmanager") as am, \
                PrivatePrometheus(tmp_path, rule_files=[rules], alertmanagers=[f"127.0.0.1:{am.port}"],
                                  # an alert that fired before the Alertmanager was discovered is re-sent after
                                  # this delay (default 1m)
                                  flags=["--rules.alert.resend-delay=1s"]):
            health = rx.wait(lambda h: h["delivered"] >= 2, timeout=90)
            assert health["delivered"] == 2, ((tmp_path / "serve.log").read_text()
                                              + (tmp_path / "prometheus.log").read_text()[-2000:])
            # Alertmanager re-sends the firing groups every repeat_interval: deduplicated, not re-checked
            health = rx.wait(lambda h: h["deduplicated"] >= 1, timeout=30)
            assert health["deduplicated"] >= 1 and health["checked"] == 2
            alerts = {(a["labels"]["alertname"], a["labels"]["instance"]): a["fingerprint"]
                      for a in get_json(f"{am.url}/api/v2/alerts")}
    # exactly the alerts whose causes check names from the same scrapes; no prefix-cache page for vllm_2
    assert set(alerts) == {("LLMDoctorKvCacheExhausted", full.endpoint),
                           ("LLMDoctorMaxNumSeqsLimit", queueing.endpoint)}
    texts = {json.loads(r.body)["text"] for r in sink.requests if r.method == "POST"}
    assert len(texts) == 2
    for (name, instance), fingerprint in alerts.items():
        text = (out / f"{fingerprint}.md").read_text()
        assert text in texts and text.startswith(f"# {name} on {instance}: llmdoctor check")
        cause = "kv-cache-exhausted" if instance == full.endpoint else "max-num-seqs-limit"
        assert f"`{cause}`" in text and "runbook_url: https://" in text and f"docs/causes.md#{cause}" in text
