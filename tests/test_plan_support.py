"""Shared plumbing for the plan tests: plans are pure functions of their request, so each is made once."""

from __future__ import annotations

from functools import cache

from doctor.plan.planner import Plan, make_plan
from doctor.plan.request import PlanRequest
from tests.conftest import shared_config


@cache
def _plan(request: PlanRequest) -> Plan:
    return make_plan(request)


def plan_for(config: str, gpu: str, **options: object) -> Plan:
    """A plan for a real fixture (``Org__Name.json``, skipped when absent) or an ``example:`` scenario."""
    spec = config if config.startswith("example:") else str(shared_config(config))
    engines = options.pop("engines", ("vllm", "sglang"))
    return _plan(PlanRequest(config=spec, gpu=gpu, engines=tuple(engines), **options))  # type: ignore[arg-type]


def test_plans_are_cached_by_request() -> None:
    first = plan_for("example:seed-gqa-27b", "H200:2", context=32768)
    assert plan_for("example:seed-gqa-27b", "H200:2", context=32768) is first
