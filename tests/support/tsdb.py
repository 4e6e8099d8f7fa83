"""Private time-series stores for tests and benches: a real Prometheus or VictoriaMetrics, a temporary store,
127.0.0.1 and a free port. No pytest here (bench/ scripts import this from a plain install of the project).

Never a package's system service and never 0.0.0.0: each server listens on a loopback port picked free at
start, stores into a temporary directory, and is stopped (by its own pid) when done. Prometheus history is
backfilled with ``promtool tsdb create-blocks-from openmetrics``; VictoriaMetrics takes the same OpenMetrics
text through its import API (``/api/v1/import/prometheus``, timestamps in milliseconds) and is flushed before
it is queried, so both hold the same samples.
"""

from __future__ import annotations

import contextlib
import importlib.util
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_PY = ROOT / "fixtures" / "prometheus" / "scenarios.py"
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
VICTORIA = shutil.which("victoria-metrics")

def scenarios() -> ModuleType:
    """fixtures/prometheus/scenarios.py (scenario history, not real captures), imported by path."""
    name = "llmdoctor_prometheus_scenarios"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, SCENARIOS_PY)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def backfill(openmetrics: str, workdir: Path) -> Path:
    """TSDB blocks from OpenMetrics text (with timestamps), in ``workdir/data``."""
    source = workdir / "history.om"
    source.write_text(openmetrics)
    data = workdir / "data"
    subprocess.run([str(PROMTOOL), "tsdb", "create-blocks-from", "openmetrics", "-q", str(source), str(data)],
                   check=True, capture_output=True, timeout=300)
    source.unlink()
    return data


def backfill_rules(rules: Path, url: str, start: int, end: int, data: Path, every: str = "10m") -> list[Path]:
    """Blocks of what the recording rules in ``rules`` would have recorded between ``start`` and ``end``,
    evaluated every ``every`` by ``promtool tsdb create-blocks-from rules`` against the store at ``url``,
    moved into ``data`` (a Prometheus started on it afterwards serves them)."""
    out = data.parent / "recorded-blocks"
    subprocess.run([str(PROMTOOL), "tsdb", "create-blocks-from", "rules", f"--start={start}", f"--end={end}",
                    f"--eval-interval={every}", f"--url={url}", f"--output-dir={out}", str(rules)],
                   check=True, capture_output=True, timeout=600)
    moved = []
    for block in sorted(out.iterdir()):
        moved.append(block.rename(data / block.name))
    out.rmdir()
    return moved


def wait_ready(process: subprocess.Popen, url: str, timeout: float) -> bool:
    """Whether the store answers 200 at ``url`` within ``timeout`` (False at once if its process ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=1) as answer:
            if answer.status == 200:
                return True
        time.sleep(0.1)
    return False


class _StoreProcess:
    """What both private stores share: the server process, stopped when the ``with`` block ends."""

    process: subprocess.Popen | None = None
    port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
        self.process = None

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PrivatePrometheus(_StoreProcess):
    """``with PrivatePrometheus(tmp, data=...) as prom: prom.url``: a running server until the block ends."""

    def __init__(self, workdir: Path, *, data: Path | None = None, scrape: list[str] = (),
                 scrape_interval: str = "1s", rule_files: list[Path] = (), alertmanagers: list[str] = (),
                 flags: list[str] = ()) -> None:
        self.workdir = workdir
        self.data = data or workdir / "data"
        self.scrape = list(scrape)
        self.scrape_interval = scrape_interval
        self.rule_files = list(rule_files)
        self.alertmanagers = list(alertmanagers)
        self.flags = list(flags)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def _config(self) -> Path:
        lines = ["global:", f"  scrape_interval: {self.scrape_interval}", f"  evaluation_interval: {self.scrape_interval}",
                 "scrape_configs:"]
        if self.scrape:
            lines += ["  - job_name: llm", "    static_configs:",
                      "      - targets: [" + ", ".join(f'"{t}"' for t in self.scrape) + "]"]
        else:
            lines[-1] = "scrape_configs: []"
        if self.rule_files:
            lines += ["rule_files:"] + [f'  - "{f}"' for f in self.rule_files]
        if self.alertmanagers:
            lines += ["alerting:", "  alertmanagers:", "    - static_configs:",
                      "        - targets: [" + ", ".join(f'"{t}"' for t in self.alertmanagers) + "]"]
        path = self.workdir / "prometheus.yml"
        path.write_text("\n".join(lines) + "\n")
        return path

    def __enter__(self) -> PrivatePrometheus:
        config = self._config()
        for _attempt in range(3):  # a port picked free can be taken before Prometheus binds it
            self.port = free_port()
            log = (self.workdir / "prometheus.log").open("wb")
            self.process = subprocess.Popen(
                [str(PROMETHEUS), f"--config.file={config}", f"--storage.tsdb.path={self.data}",
                 f"--web.listen-address=127.0.0.1:{self.port}", "--log.level=warn",
                 "--storage.tsdb.retention.time=30d", *self.flags],
                stdout=log, stderr=subprocess.STDOUT)
            if self._wait_ready(30):
                return self
            self.stop()
        raise RuntimeError(f"prometheus did not start: {(self.workdir / 'prometheus.log').read_text()[-2000:]}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self.process is not None
        return wait_ready(self.process, f"{self.url}/-/ready", timeout)



def prometheus_text(openmetrics: Iterable[str]) -> Iterator[bytes]:
    """OpenMetrics lines (timestamps in seconds) as the Prometheus text VictoriaMetrics imports (milliseconds)."""
    for line in openmetrics:
        if not line or line.startswith("#"):
            continue
        head, _, stamp = line.rpartition(" ")
        yield f"{head} {round(float(stamp) * 1000)}\n".encode()


class PrivateVictoria(_StoreProcess):
    """``with PrivateVictoria(tmp) as vm: vm.load(text); vm.url``: single-node VictoriaMetrics (Debian's
    ``victoria-metrics``), whose Prometheus-compatible query API the report reads as it reads Prometheus."""

    def __init__(self, workdir: Path, *, flags: list[str] = ()) -> None:
        self.workdir = workdir
        self.flags = list(flags)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> PrivateVictoria:
        assert VICTORIA is not None, "victoria-metrics not installed (Debian: apt-get install victoria-metrics)"
        for _attempt in range(3):  # a port picked free can be taken before it binds
            self.port = free_port()
            log = (self.workdir / "victoria.log").open("wb")
            self.process = subprocess.Popen(
                [VICTORIA, f"-storageDataPath={self.workdir / 'vmdata'}", f"-httpListenAddr=127.0.0.1:{self.port}",
                 "-retentionPeriod=100y", "-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=ERROR",
                 *self.flags], stdout=log, stderr=subprocess.STDOUT)
            if self._wait_ready(30):
                return self
            self.stop()
        raise RuntimeError(f"victoria-metrics did not start: {(self.workdir / 'victoria.log').read_text()[-2000:]}")

    def _wait_ready(self, timeout: float) -> bool:
        assert self.process is not None
        return wait_ready(self.process, f"{self.url}/health", timeout)

    def load(self, openmetrics: Iterable[str], batch: int = 50_000) -> int:
        """Import OpenMetrics lines (as written for promtool) and flush them to searchable storage."""
        lines, sent = [], 0
        for line in prometheus_text(openmetrics):
            lines.append(line)
            if len(lines) >= batch:
                sent += self._post(lines)
                lines = []
        if lines:
            sent += self._post(lines)
        self.flush()
        return sent

    def flush(self) -> None:
        """Make what was written so far searchable (imports, and what vmalert wrote back)."""
        with urllib.request.urlopen(f"{self.url}/internal/force_flush", timeout=60):
            pass

    def _post(self, lines: list[bytes]) -> int:
        request = urllib.request.Request(f"{self.url}/api/v1/import/prometheus", data=b"".join(lines), method="POST")
        with urllib.request.urlopen(request, timeout=300):
            pass
        return len(lines)

