"""``report --targets FILE``: a live look at some instances, exactly as ``check --targets`` takes it.

Prometheus holds the history but not the launch flags, the model or the GPUs' names. The targets file is the
one ``check --targets`` reads (doctor/commands/fleet.py: ``endpoint``, ``name``, ``api_key_env``, ``command``,
``config``, ``gpu``, ``engine_version``), and each target is checked by the same code (``run_fleet``: the
HTTP probes of ``doctor.probes.runner.run_probes``, then the command/config/GPU hints through
``doctor.sources.offline.gather``). Here a target is matched to a Prometheus instance by its ``name`` or its
endpoint's host:port (the ``instance`` label Prometheus gives a scrape target); one Prometheus does not know
is reported from its live facts alone. A target that cannot be reached, or whose hints are wrong, is a note in
the report, never a failed run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from doctor.errors import InputError
from doctor.facts import Facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.commands.fleet import TargetSpec


@dataclass
class LiveResult:
    """What the live look at one target gave: facts (probes and hints), and a note when something failed."""

    facts: Facts
    note: str | None = None


def instance_of(spec: TargetSpec, instances: Iterable[str]) -> str:
    """The Prometheus instance a target is: its name, else its endpoint's host:port, else (unknown) its name."""
    from doctor.probes.base import Target

    known = set(instances)
    if spec.name in known:
        return spec.name
    try:
        netloc = Target.parse(spec.endpoint).netloc
    except InputError:
        return spec.name
    return netloc if netloc in known else spec.name


def look(specs: list[TargetSpec], instances: Iterable[str], *, timeout_s: float,
         playbook_dirs: tuple[str, ...] = ()) -> dict[str, LiveResult]:
    """Check every target side by side (doctor.commands.fleet.run_fleet); one result per instance."""
    from doctor.commands.fleet import run_fleet

    if not specs:
        return {}
    known = set(instances)
    out: dict[str, LiveResult] = {}
    for result in run_fleet(specs, timeout_s=timeout_s, playbook_dirs=playbook_dirs).results:
        key = instance_of(result.spec, known)
        if result.run is None:
            out[key] = LiveResult(Facts(), f"target {result.spec.name}: {result.error}: history only")
        elif result.run.unreachable is not None:
            out[key] = LiveResult(result.run.facts, f"live check of {result.spec.name} failed "
                                                    f"({result.run.unreachable}): history and hints only")
        else:
            out[key] = LiveResult(result.run.facts)
    return out
