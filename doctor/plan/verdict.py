"""Does the plan run on this hardware? The playbooks answer, over the plan's own facts.

The generated command, the config and the GPUs go through the same sources as `lint` (doctor/sources/offline.py
``gather``); the planned weights replace the checkpoint's where --weights-dtype changed them; then
doctor/derive/analyzers.py and the playbooks run. The gating causes (dsa-unsupported-gpu, nvfp4-needs-blackwell,
fp8-unsupported-gpu, model-does-not-fit, nvfp4-checkpoint-missing, amd-stack-unverified, …) are the findings of
the launch-failure and hardware-fit trees: a critical one means it does not run, a warning that it runs degraded.
"""

from __future__ import annotations

from dataclasses import dataclass

from doctor.findings import Finding
from doctor.playbook.engine import Diagnosis
from doctor.sources.offline import Gathered, OfflineInputs, Workload

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RUNS, DEGRADED, DOES_NOT_RUN = "runs", "runs-degraded", "does-not-run"
STATUSES = (RUNS, DEGRADED, DOES_NOT_RUN)
GATING_SYMPTOMS = ("launch-failure", "hardware-fit")


@dataclass
class CommandCheck:
    engine: str
    gathered: Gathered
    diagnosis: Diagnosis

    @property
    def gating(self) -> list[Finding]:
        return [f for f in self.diagnosis.findings if f.symptom in GATING_SYMPTOMS and f.severity != "info"]

    @property
    def status(self) -> str:
        severities = {f.severity for f in self.gating}
        return DOES_NOT_RUN if "critical" in severities else DEGRADED if "warning" in severities else RUNS

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "causes": [f.id for f in self.gating]}


def check_command(argv: list[str], version: str, *, config: str, gpu: str, context: int, users: int | None,
                  text_only: bool, weight_facts: dict[str, tuple[Any, str]],
                  config_json: dict[str, Any] | None = None, gpu_mem: str | None = None,
                  planned: dict[str, tuple[Any, str]] | None = None) -> CommandCheck:
    """Lint's pipeline over the plan: gather, the planned weights, derived facts, every playbook. ``planned``:
    facts the plan computed itself (the users its layout holds), over the derived ones, so the findings agree
    with the numbers the plan shows."""
    from doctor.commands.lint import UNREACHABLE
    from doctor.derive import derive_all
    from doctor.playbook.engine import diagnose
    from doctor.playbook.loader import load_playbooks
    from doctor.sources.offline import gather

    inputs = OfflineInputs(command=argv, engine_version=version, config=config, config_json=config_json, gpu=gpu,
                           gpu_mem=gpu_mem,
                           workload=Workload(context=context, users=users, text_only=text_only))
    gathered = gather(inputs)
    for key, (value, source) in weight_facts.items():
        gathered.facts.set(key, value, source)
    derive_all(gathered.facts)
    for key, (value, source) in (planned or {}).items():
        gathered.facts.set(key, value, source)
    diagnosis = diagnose(load_playbooks(), gathered.facts, unreachable=UNREACHABLE)
    engine = gathered.command.engine if gathered.command else "?"
    return CommandCheck(engine, gathered, diagnosis)


def overall(statuses: list[str]) -> str:
    """The best any engine achieves: a plan runs if one engine runs it."""
    return min(statuses, key=STATUSES.index) if statuses else DOES_NOT_RUN
