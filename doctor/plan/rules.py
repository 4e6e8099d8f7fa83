"""The planner's rules (doctor/plan/rules.yaml), loaded once: thresholds are data, not constants in code."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RULES_PATH = Path(__file__).with_name("rules.yaml")


@lru_cache(maxsize=1)
def rules() -> dict[str, Any]:
    from doctor.yamlsafe import load_packaged  # lazy: only `plan` reads the rules

    return load_packaged(RULES_PATH)


def latency_modes() -> tuple[str, ...]:
    return tuple(rules()["latency"]["modes"])
