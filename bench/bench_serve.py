"""``llmdoctor serve``: one Alertmanager webhook carrying 100 alerts (10 % for hung servers) — none dropped.

    python bench/bench_serve.py [--alerts 100] [--hung 0.1] [--timeout 2] [--concurrency 8]

The receiver runs as the real console script on a loopback port; the engines are one-thread local servers
(tests/support/multiport.py) replaying the real vllm_1.prom scrape (fixtures/) — the hung ones
accept and never answer. The payload is Alertmanager's documented webhook format (version 4) with SCENARIO
alerts. Measured: how long Alertmanager waits for its answer, how long until every diagnosis is delivered (to
--out-dir and to a local chat sink), and that none was dropped.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", type=int, default=100)
    parser.add_argument("--hung", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=2.0)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()

    from support.httpserver import LocalServer, Response
    from support.multiport import MultiPortServer
    from support.serve import Receiver, payload, post

    scenarios = ROOT / "fixtures" / "scenarios"
    metrics = ROOT / "fixtures" / "metrics" / "vllm_1.prom"
    routes = {"/version": ("application/json", (scenarios / "vllm_version.json").read_bytes()),
              "/v1/models": ("application/json", (scenarios / "vllm_v1_models.json").read_bytes()),
              "/metrics": ("text/plain; version=0.0.4", metrics.read_bytes())}
    hung = int(args.alerts * args.hung)
    sink = LocalServer({"/hook": Response(body="ok")})
    with tempfile.TemporaryDirectory() as tmp, MultiPortServer(routes, healthy=args.alerts - hung, dead=hung) as fleet, \
            sink, Receiver(Path(tmp), "--out-dir", str(Path(tmp) / "out"), "--notify-url", sink.url("/hook"),
                           "--timeout", str(args.timeout), "--concurrency", str(args.concurrency)) as rx:
        endpoints = fleet.healthy_endpoints + fleet.dead_endpoints
        alerts = [{"labels": {"alertname": "LLMDoctorKvCacheExhausted", "instance": e,
                              "symptom": "memory-filling-fast"}, "fingerprint": f"{i:016x}"}
                  for i, e in enumerate(endpoints)]
        start = time.perf_counter()
        status, answer = post(f"{rx.url}/alertmanager", payload(alerts))
        answered = time.perf_counter() - start
        health = rx.wait(lambda h: h["delivered"] + h["delivery_failed"] + h["check_failed"] >= args.alerts,
                         timeout=600)
        done = time.perf_counter() - start
        files = len(list((Path(tmp) / "out").glob("*.md")))
        posted = sum(r.method == "POST" for r in sink.requests)
    print(f"{args.alerts} alerts in one webhook ({hung} for hung servers), --timeout {args.timeout:g} s, "
          f"--concurrency {args.concurrency}: answered HTTP {status} in {answered * 1000:.0f} ms "
          f"({len(answer['accepted'])} accepted); all delivered after {done:.1f} s: {health['delivered']} delivered, "
          f"{health['dropped']} dropped, {health['check_failed']} failed, {files} files, {posted} chat posts")
    return 0 if health["delivered"] == args.alerts == files == posted else 1


if __name__ == "__main__":
    raise SystemExit(main())
