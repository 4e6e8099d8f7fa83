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
from typing import Any

from doctor.errors import InputError
from doctor.hardware.catalog import GpuModel
from doctor.versions import release, require_key

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


def _rule_at(rules: tuple[KernelRule, ...], version: str | None) -> KernelRule | None:
    if version is None:
        return rules[-1]
    # pre/post tags do not move a rule boundary: 0.5.6.post2 follows the 0.5.6 rules
    require_key(version)
    key = release(version)
    applicable = [r for r in rules if release(r.since) <= key]
    return applicable[-1] if applicable else None


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
                rule = _rule_at(rules, version)
                out[kernel] = rule is not None and gpu.sm in rule.sm
            continue
        out[kernel] = any(gpu.sm in rules[-1].sm for rules in per_engine.values())
        for name, rules in per_engine.items():
            out[f"{kernel}_since.{name}"] = next((r.since for r in rules if gpu.sm in r.sm), None)
    return out
