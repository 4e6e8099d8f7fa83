"""What the user asks `plan` for, checked, and the traffic turned into a concurrency to size for.

A bad request is an InputError naming the option (exit 2); everything the plan assumes instead of being told
(the context, the request duration behind --rps) is recorded with the assumption, so the output can say so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from doctor.errors import InputError
from doctor.plan.rules import latency_modes, rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENGINES = ("vllm", "sglang")


@dataclass(frozen=True)
class PlanRequest:
    config: str
    gpu: str
    context: int | None = None
    users: int | None = None
    rps: float | None = None
    request_seconds: float | None = None
    latency: str | None = None
    engines: tuple[str, ...] = ENGINES
    engine_version: str | None = None
    weights_dtype: str = "auto"
    model_path: str | None = None
    text_only: bool = False
    gpu_mem: str | None = None  # --gpu-mem SIZE: each GPU's memory, over the catalog's (or for an unknown GPU)
    #: never ask the Hugging Face Hub for CONFIG (--offline)
    offline: bool = False
    #: CONFIG's content once resolved (doctor/model/resolve.py), so the plan's checks need not resolve it again
    config_raw: dict[str, Any] | None = None

    def check(self) -> None:
        """Reject contradictory or impossible options before any file is read."""
        if self.users is not None and self.rps is not None:
            raise InputError("--users and --rps: give one of them (--rps is turned into concurrent users with "
                             "Little's law)")
        from doctor.bounds import check

        if self.users is not None:
            check("users", self.users, "--users")
        if self.rps is not None:
            check("rps", self.rps, "--rps")
        if self.request_seconds is not None:
            if self.rps is None:
                raise InputError("--request-seconds: only meaningful with --rps")
            check("request_seconds", self.request_seconds, "--request-seconds")
        if self.context is not None:
            check("context", self.context, "--context")
        if self.latency is not None and self.latency not in latency_modes():
            raise InputError(f"--latency: {self.latency!r} is not one of {', '.join(latency_modes())}")
        unknown = [e for e in self.engines if e not in ENGINES]
        if unknown or not self.engines:
            raise InputError(f"--engine: expected vllm, sglang or both, got {', '.join(unknown) or 'nothing'}")
        if self.engine_version is not None and len(self.engines) != 1:
            raise InputError("--engine-version: a version belongs to one engine; add --engine vllm or --engine sglang")


@dataclass(frozen=True)
class Demand:
    """The traffic to size for: tokens per request and concurrent requests, each with where it came from."""

    context: int
    context_source: str
    users: int | None
    users_source: str
    latency: str
    latency_source: str

    def to_dict(self) -> dict[str, object]:
        return {"context": self.context, "context_source": self.context_source, "users": self.users,
                "users_source": self.users_source, "latency": self.latency, "latency_source": self.latency_source}


def demand_for(request: PlanRequest, max_context: int | None, config_label: str) -> Demand:
    """Resolve defaults and --rps; a context beyond the model's own limit is an input error (it cannot be served)."""
    if request.context is not None:
        context, context_source = request.context, "--context"
    else:
        context = rules()["default_context"]
        if max_context is not None:
            context = min(context, max_context)
        context_source = f"default: {context} tokens (no --context; the seed's worked examples use 32k)"
    if max_context is not None and context > max_context:
        raise InputError(f"--context {context}: longer than {config_label}'s max_position_embeddings "
                         f"({max_context}); the engines refuse longer requests")
    if request.users is not None:
        users, users_source = request.users, "--users"
    elif request.rps is not None:
        seconds = request.request_seconds or rules()["request_seconds"]
        assumed = "" if request.request_seconds else " (assumed: no --request-seconds)"
        users = max(1, math.ceil(request.rps * seconds))
        from doctor.bounds import check

        check("users", users, f"--rps {request.rps:g} × {seconds:g} s per request")
        users_source = (f"Little's law: {request.rps:g} requests/s × {seconds:g} s per request{assumed} "
                        f"= {users} concurrent requests")
    else:
        users, users_source = None, "not given (--users or --rps): sized for low concurrency"
    latency = request.latency or rules()["latency"]["default"]
    latency_source = "--latency" if request.latency else f"default ({latency}; --latency strict|relaxed to change)"
    return Demand(context, context_source, users, users_source, latency, latency_source)
