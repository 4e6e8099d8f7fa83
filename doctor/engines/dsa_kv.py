"""What `--kv-cache-dtype auto` becomes for a DSA model on each engine (dsa_kv.yaml, read in the engines' wheels):
engine knowledge that `plan` and the offline sources both size with."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DSA_KV_PATH = Path(__file__).with_name("dsa_kv.yaml")


@lru_cache(maxsize=1)
def dsa_auto_kv() -> dict[str, dict[str, Any]]:
    """engine → {min_sm, at_or_above, below, source}."""
    from doctor.yamlsafe import load_packaged  # lazy: only DSA models read it

    return load_packaged(DSA_KV_PATH)
