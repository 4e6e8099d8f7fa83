"""Loading ``semantics.yaml``: what engine flags mean engine-neutrally (data, not if-chains)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SEMANTICS_FILE = Path(__file__).resolve().parent / "semantics.yaml"


@lru_cache(maxsize=1)
def load_semantics() -> dict[str, Any]:
    from doctor.yamlsafe import load_packaged  # lazy: only commands that read a launch command pay for it

    data = load_packaged(SEMANTICS_FILE)
    if not isinstance(data, dict) or not isinstance(data.get("facts"), dict):
        raise InputError(f"{SEMANTICS_FILE}: facts: expected a mapping")
    return data


def equivalent_dest(from_engine: str, dest: str, to_engine: str) -> tuple[str, str] | None:
    """(dest in ``to_engine``, note) for a setting spelled ``dest`` in ``from_engine``."""
    for item in load_semantics().get("equivalents", []):
        if item.get(from_engine) == dest and to_engine in item:
            return item[to_engine], item.get("note", "")
    return None


def folk_flag(option: str) -> dict[str, Any] | None:
    return load_semantics().get("folk_flags", {}).get(option)
