"""Capacity of one layout: weights per GPU, the KV pool, and how many users of the context fit — per engine.

The memory arithmetic is doctor/model/fit.py's (``fit_layout``), the same that `lint` and `check` run over a launch
command, so a plan and the lint of its own command cannot disagree. What this module adds is the per-sequence
view: users = KV budget per GPU ÷ (one sequence's KV + state, at the GPU's share), with sliding/chunked layers
capped at their window (doctor/model/kvcache.py ``bytes_per_sequence``), the inverse (the longest context N
users can each have), and the seed's own back-of-the-envelope method, kept for comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.model.card import ModelCard
from doctor.model.fit import DEFAULT_MEM_FRACTION, Layout, LayoutFit, fit_layout
from doctor.model.kvcache import KVLayout, kv_layout
from doctor.model.weights import WeightPlan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.engines.catalog import Catalog


def default_fraction(engine: str, catalog: Catalog) -> tuple[float, str]:
    """The memory fraction the engine uses when the command does not set one, and where that comes from.

    vLLM's is the catalog's static default of --gpu-memory-utilization; SGLang computes its own at start-up,
    for which doctor/model/fit.py's typical value stands in (the same value `lint` assumes).
    """
    default = (catalog.defaults.get("mem_fraction") or {}).get("default")
    if isinstance(default, (int, float)) and default > 0:
        return float(default), f"default of {engine} {catalog.version}"
    return DEFAULT_MEM_FRACTION[engine], f"typical {engine} start-up value, doctor/model/fit.py DEFAULT_MEM_FRACTION"


@dataclass(frozen=True)
class Capacity:
    """One engine, one KV dtype, one layout (``groups`` attention groups per instance, ``replicas`` instances)."""

    engine: str
    kv_dtype: str
    fit: LayoutFit
    kv: KVLayout
    context: int
    groups: int
    replicas: int
    max_context_limit: int | None

    @property
    def weights_fit(self) -> bool:
        return bool(self.fit.weights_fit)

    @property
    def share(self) -> float:
        """The fraction of a token's (or sequence's) whole-model KV one GPU stores."""
        return (self.fit.kv_bytes_per_token_per_gpu or 0) / self.kv.bytes_per_token if self.kv.bytes_per_token else 0

    @property
    def bytes_per_sequence(self) -> int:
        return self.kv.bytes_per_sequence(self.context)

    @property
    def users_per_group(self) -> int:
        if not self.weights_fit:
            return 0
        return self.fit.sequences_per_group(self.bytes_per_sequence, self.kv.bytes_per_token) or 0

    @property
    def users_per_instance(self) -> int:
        return self.users_per_group * self.groups

    @property
    def users_total(self) -> int:
        return self.users_per_instance * self.replicas

    @property
    def kv_tokens_per_group(self) -> int:
        return (self.fit.kv_tokens_per_group or 0) if self.weights_fit else 0

    def max_context(self, users: int) -> int:
        """The longest context each of ``users`` concurrent requests can have (0: not even one token)."""
        per_group = math.ceil(users / max(1, self.groups * self.replicas))
        budget = self.fit.kv_budget_per_gpu_bytes or 0
        share = self.share
        if not self.weights_fit or share <= 0:
            return 0

        def fits(context: int) -> bool:
            return per_group * self.kv.bytes_per_sequence(context) * share <= budget

        high = self.max_context_limit or 1 << 24
        if fits(high):
            return high
        low = 0
        while high - low > 1:  # bytes_per_sequence grows with the context: bisect
            mid = (low + high) // 2
            low, high = (mid, high) if fits(mid) else (low, mid)
        return low

    def to_dict(self, users: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kv_dtype": self.kv_dtype,
            "kv_bytes_per_token": self.kv.bytes_per_token,
            "state_bytes_per_sequence": self.kv.state_bytes_per_sequence,
            "bytes_per_sequence": self.bytes_per_sequence,
            "kv_tokens_per_group": self.kv_tokens_per_group,
            "users_per_group": self.users_per_group,
            "users_per_replica": self.users_per_instance,
            "users_total": self.users_total,
        }
        if users is not None:
            out["max_context_for_users"] = self.max_context(users)
        return out


class Sizer:
    """Model facts per engine and KV dtype (built once), evaluated over candidate layouts."""

    def __init__(self, card: ModelCard, weights: WeightPlan, memory_bytes: int, gpu_name: str | None) -> None:
        self.card = card
        self.weights = weights
        self.memory = memory_bytes
        self.gpu_name = gpu_name
        self._models: dict[tuple[str, str], tuple[Facts, KVLayout] | None] = {}
        self._errors: dict[tuple[str, str], str] = {}

    def unsupported(self, engine: str) -> str | None:
        """Why ``engine`` cannot serve this model at all (no KV layout for it at the model's own dtype), else None."""
        return self._errors.get((engine, "auto")) if self.model(engine, "auto") is None else None

    def model(self, engine: str, kv_dtype: str) -> tuple[Facts, KVLayout] | None:
        """model.* facts with the planned weights, and the KV layout; None when the engine has no such layout."""
        key = (engine, kv_dtype)
        if key not in self._models:
            from doctor.model.facts import model_facts

            try:
                facts = model_facts(self.card, kv_dtype=kv_dtype, engine=engine)
                layout = kv_layout(self.card, kv_dtype, engine)
            except InputError as exc:
                self._models[key] = None
                self._errors[key] = str(exc)
                return None
            facts.set("model.weight_bytes", self.weights.total_bytes, self.weights.source)
            facts.set("model.expert_weight_bytes", self.weights.expert_bytes, self.weights.source)
            from doctor.model.memory import engine_pool_facts

            # as `lint`/`check` size the same launch (the plan's command leaves --max-model-len at the model's own
            # unless it caps it, so vLLM's group-aware capacity is taken at that length)
            facts.update(engine_pool_facts(self.card, facts, engine))
            self._models[key] = (facts, layout)
        return self._models[key]

    def evaluate(self, engine: str, kv_dtype: str, layout: Layout, *, fraction: float, context: int,
                 replicas: int) -> Capacity | None:
        found = self.model(engine, kv_dtype)
        if found is None:
            return None
        facts, kv = found
        from doctor.hardware.catalog import lookup_gpu
        from doctor.model.memory import non_kv_bytes, on_nvswitch

        gpu = lookup_gpu(self.gpu_name) if self.gpu_name else None
        reserved = non_kv_bytes(self.card, engine, None, tp=layout.attn_tp, gpu_name=self.gpu_name,
                                gpu_memory_bytes=self.memory, mem_fraction=fraction,
                                gpu_sm=gpu.sm if gpu is not None else None, ep=layout.ep,
                                nvswitch=gpu is not None and on_nvswitch(gpu.interconnect, gpu.nvlink_domain),
                                cuda_total=gpu is not None and gpu.memory_is_cuda_total
                                and gpu.memory_bytes == self.memory)
        result = fit_layout(facts, layout, self.memory, fraction, reserved.total if reserved else 0.0)
        return Capacity(engine, kv.kv_dtype, result, kv, context, layout.kv_groups, replicas, self.card.max_context)


def seed_method_users(gpus: int, memory_bytes: float, weight_bytes: float, kv_bytes_per_token: float,
                      context: int) -> int:
    """The seed's worked-example arithmetic: (GPUs × memory − weights) ÷ (KV per token × context).

    No memory fraction, no activation reserve, KV summed over the instance's GPUs (right for GQA under TP up to
    the KV heads). The seed also rounds one user's KV before dividing (3.1 GB for 3.22 GB): docs/plan.md.
    """
    per_user = kv_bytes_per_token * context
    if per_user <= 0:
        return 0
    return max(0, int((gpus * memory_bytes - weight_bytes) // per_user))
