"""``llmdoctor serve`` as a real subprocess on a free loopback port, and the payloads Alertmanager sends.

The payload builder writes Alertmanager's webhook format (version 4) as documented; the alerts in it are
SCENARIOS. The end-to-end test in test_serve_e2e.py gets real ones from a real Alertmanager instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from support.httpserver import JSON, PROM, Response
from support.prometheus import free_port

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "fixtures" / "scenarios"


def vllm_routes(metrics: Path) -> dict[str, Response]:
    """A vLLM server replaying a /metrics scrape (a real one from fixtures/metrics) with the scenario
    /version and /v1/models bodies of fixtures/scenarios."""
    return {"/version": Response(file=SCENARIOS / "vllm_version.json", content_type=JSON),
            "/v1/models": Response(file=SCENARIOS / "vllm_v1_models.json", content_type=JSON),
            "/metrics": Response(file=metrics, content_type=PROM)}


def payload(alerts: list[dict[str, Any]], status: str = "firing") -> bytes:
    full = [{"status": a.get("status", "firing"), "labels": a["labels"], "annotations": a.get("annotations", {}),
             "startsAt": "2026-12-01T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z",
             "generatorURL": "http://prometheus/graph", "fingerprint": a.get("fingerprint", f"{i:016x}")}
            for i, a in enumerate(alerts)]
    return json.dumps({"version": "4", "groupKey": "{}:{}", "truncatedAlerts": 0, "status": status,
                       "receiver": "llmdoctor", "groupLabels": {}, "commonLabels": {}, "commonAnnotations": {},
                       "externalURL": "http://alertmanager:9093", "alerts": full}).encode()


def post(url: str, body: bytes, headers: dict[str, str] | None = None, timeout: float = 10) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def get_json(url: str, timeout: float = 5) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as answer:
        return json.loads(answer.read())


class Receiver:
    """``with Receiver(tmp, "--out-dir", d) as r: r.url``: llmdoctor serve until the block ends."""

    def __init__(self, workdir: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.workdir = workdir
        self.args = args
        self.env = env or {}
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.log = workdir / "serve.log"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Receiver:
        for _attempt in range(3):
            self.port = free_port()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "doctor", "serve", "--listen", f"127.0.0.1:{self.port}", *self.args],
                cwd=ROOT, env={**os.environ, **self.env}, stdout=subprocess.DEVNULL,
                stderr=self.log.open("w"), text=True)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and self.process.poll() is None:
                with contextlib.suppress(OSError):
                    get_json(f"{self.url}/healthz", timeout=1)
                    return self
                time.sleep(0.1)
            self.stop()
        raise RuntimeError(f"llmdoctor serve did not start: {self.log.read_text()[-2000:]}")

    def health(self) -> dict[str, Any]:
        return get_json(f"{self.url}/healthz")

    def wait(self, predicate: Any, timeout: float = 30) -> dict[str, Any]:
        """Poll /healthz until ``predicate(health)`` holds; the last health either way."""
        deadline = time.monotonic() + timeout
        health = self.health()
        while not predicate(health) and time.monotonic() < deadline:
            time.sleep(0.1)
            health = self.health()
        return health

    def stop(self) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        rc = self.process.returncode
        self.process = None
        return rc

    def __exit__(self, *exc: object) -> None:
        self.stop()
