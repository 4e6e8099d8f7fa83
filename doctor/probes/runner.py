"""Run the live probes side by side, under one bound for the whole run.

Probes are I/O-bound and independent, so each runs in its own thread; the run ends when all have
finished or when :meth:`ProbeOptions.budget_s` has passed, whichever comes first. A probe still running
then is reported as timed out (its thread is a daemon and ends at its own request deadline), so a hung
server can slow ``llmdoctor check`` down to the bound but never hang it.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable, Iterable

from doctor.errors import InputError
from doctor.probes.base import ProbeOptions, ProbeResult, Target, interpret_raw, run_probe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.probes.base import ProbeModule

#: name -> module; the order is the order results come back in.
PROBES: dict[str, str] = {
    "server": "doctor.probes.server",
    "metrics": "doctor.probes.metrics",
    "process": "doctor.probes.process",
    "gpu": "doctor.probes.gpu",
    "liveness": "doctor.probes.liveness",
}
#: What a run without ``names`` probes: liveness generates a token, so only the hung tree asks for it.
DEFAULT = ("server", "metrics", "process", "gpu")


def probe_module(name: str) -> ProbeModule:
    """The module of probe ``name`` (imported on first use: a command pays only for the probes it runs)."""
    if name not in PROBES:
        raise InputError(f"--probe: unknown probe {name!r} (known: {', '.join(PROBES)})")
    return importlib.import_module(PROBES[name])  # type: ignore[return-value]


def run_probes(target: Target, opts: ProbeOptions, names: Iterable[str] | None = None,
               on_result: Callable[[ProbeResult], None] | None = None) -> list[ProbeResult]:
    """Every named probe (all by default), concurrently; one result per probe, in the order asked."""
    return PendingProbes(target, opts, names, on_result).results()


class PendingProbes:
    """Probes started and running in their threads: the caller does other work (imports, loading the playbooks)
    while they wait on the network, then takes :meth:`results`, bounded by the run's budget from the start.
    ``on_result`` is called in each probe's thread with its result as soon as it has one (`check` starts the served
    model's lookup from the server probe's answer while the others still run)."""

    def __init__(self, target: Target, opts: ProbeOptions, names: Iterable[str] | None = None,
                 on_result: Callable[[ProbeResult], None] | None = None, *, inline_last: bool = False) -> None:
        """``inline_last``: the last probe runs in the caller's thread when it takes :meth:`results` (beside the
        others, still in theirs), for a caller with nothing else to do meanwhile: a check --targets pool thread,
        which spares a thread start per target."""
        self._on_result = on_result
        wanted = list(dict.fromkeys(names if names is not None else DEFAULT))
        for name in wanted:  # an unknown name fails before any request is sent
            if name not in PROBES:
                probe_module(name)
        self._results: dict[str, ProbeResult] = {}
        self._budget = opts.budget_s()
        self._deadline = time.monotonic() + self._budget
        self.modules: list[ProbeModule] = []
        self._threads: list[threading.Thread] = []
        self._inline: tuple[ProbeModule, Target, ProbeOptions] | None = None
        # Each probe starts as soon as its module is imported: the server probe's requests are out while the
        # other probes' modules load (~20 ms of imports in the caller's thread otherwise spent before any request).
        for index, name in enumerate(wanted):
            module = probe_module(name)
            self.modules.append(module)
            if inline_last and index == len(wanted) - 1:
                self._inline = (module, target, opts)
                continue
            thread = threading.Thread(target=self._work, args=(module, target, opts), name=f"probe-{module.NAME}",
                                      daemon=True)
            self._threads.append(thread)
            thread.start()

    def _work(self, module: ProbeModule, target: Target, opts: ProbeOptions) -> None:
        result = self._results[module.NAME] = run_probe(module, target, opts)
        if self._on_result is not None:
            self._on_result(result)

    def results(self) -> list[ProbeResult]:
        if self._inline is not None:  # bounded by its own request deadlines, as the threads' probes are
            self._work(*self._inline)
            self._inline = None
        for thread in self._threads:
            thread.join(max(0.0, self._deadline - time.monotonic()))
        finished = dict(self._results)  # one read: a probe finishing now is still reported as timed out
        return [finished.get(m.NAME) or _timed_out(m, self._budget) for m in self.modules]


def _timed_out(module: ProbeModule, budget: float) -> ProbeResult:
    raw = {"error": f"timed out: still running when the run's {budget:g}s bound passed"}
    facts, error = interpret_raw(module, raw)
    return ProbeResult(module.NAME, False, error, budget * 1000, raw, facts)
