"""Derived kernel availability: which engine kernel paths a GPU's compute capability can take.

The playbooks (YAML) decide whether a deployment can run; they need a few booleans that are not
properties of the GPU alone but of the GPU *and* the engines' kernels (DSA sparse attention exists for
sm_90 and sm_10x, and for sm_12x only in recent releases). The rules are data in kernels.yaml, read from
the engines' wheels; this module only evaluates them, for one engine release or for the newest releases
we know.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from doctor.errors import InputError
from doctor.hardware.catalog import GpuModel
from doctor.versions import require_key, rule_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

KERNELS_PATH = Path(__file__).with_name("kernels.yaml")
ENGINES = ("vllm", "sglang")


@dataclass(frozen=True)
class KernelRule:
    since: str
    sm: frozenset[int]
    only: str | None
    evidence: str


@lru_cache(maxsize=1)
def kernel_rules() -> dict[str, dict[str, tuple[KernelRule, ...]]]:
    """kernel -> engine -> rules sorted by release."""
    from doctor.yamlsafe import load_packaged  # lazy, like the catalog

    data = load_packaged(KERNELS_PATH)["kernels"]
    out: dict[str, dict[str, tuple[KernelRule, ...]]] = {}
    for kernel, spec in data.items():
        per_engine: dict[str, tuple[KernelRule, ...]] = {}
        for engine in ENGINES:
            rules = [KernelRule(str(r["since"]), frozenset(r["sm"]), r.get("only"), r["evidence"])
                     for r in spec.get(engine) or ()]
            if rules:
                per_engine[engine] = tuple(sorted(rules, key=lambda r: require_key(r.since)))
        out[kernel] = per_engine
    return out


def kernel_support(gpu: GpuModel, engine: str | None = None, version: str | None = None) -> dict[str, Any]:
    """Derived facts (keys without the ``gpu.`` prefix) for an NVIDIA GPU; {} for other vendors.

    With ``engine`` (and optionally ``version``, default: the newest release we read), each kernel the
    engine has rules for maps to a bool for that release. Without ``engine``: each kernel maps to
    "some engine's newest release has it", and ``<kernel>_since.<engine>`` to the first release that
    accepts this sm (None: no release does), so a playbook can compare against ``launch.version``.
    """
    if gpu.sm is None:
        return {}
    if engine is not None and engine not in ENGINES:
        raise InputError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    out: dict[str, Any] = {}
    for kernel, per_engine in kernel_rules().items():
        if engine is not None:
            rules = per_engine.get(engine)
            if rules:
                rule = rule_for(rules, version)
                out[kernel] = rule is not None and gpu.sm in rule.sm
            continue
        out[kernel] = any(gpu.sm in rules[-1].sm for rules in per_engine.values())
        for name, rules in per_engine.items():
            out[f"{kernel}_since.{name}"] = next((r.since for r in rules if gpu.sm in r.sm), None)
    return out


def kernel_support_unknown_version(gpu: GpuModel, engine: str) -> dict[str, tuple[bool, str]]:
    """kernel → (verdict, which releases it holds for) when the engine is known but its version is not.

    The newest release's answer is not the answer for an unknown version: SGLang < 0.5.20 has no DSA path for
    sm_120 although 0.5.20 has one. When the releases disagree (from the kernel's first rule on: before it the
    engine does not have the feature at all, which is the engine-too-old question), the verdict is False —
    the failure is possible — and the text names the releases where it holds, and where it does not."""
    out: dict[str, tuple[bool, str]] = {}
    for kernel, per_engine in kernel_rules().items():
        rules = per_engine.get(engine)
        if not rules:
            continue
        states: list[tuple[str, bool, KernelRule]] = []
        for r in rules:  # consecutive rules with the same verdict for this sm are one span
            if not states or states[-1][1] != (gpu.sm in r.sm):
                states.append((r.since, gpu.sm in r.sm, r))
        if all(ok == states[0][1] for _, ok, _ in states):
            out[kernel] = (states[0][1], f"every {engine} release since {states[0][0]}")
            continue
        missing, present = [], []
        for i, (since, ok, rule) in enumerate(states):
            until = states[i + 1][0] if i + 1 < len(states) else None
            span = f"{since} ≤ {engine} < {until}" if until else f"{engine} ≥ {since}"
            if i == 0 and not ok and until:
                span = f"{engine} < {until}"
            (present if ok else missing).append(span + (f" ({rule.only})" if ok and rule.only else ""))
        out[kernel] = (False, f"{', '.join(missing)} (version unknown; {', '.join(present)} has it)")
    return out
