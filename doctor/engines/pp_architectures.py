"""The model architectures vLLM's newest release read runs with pipeline parallelism (``pp_architectures.json``,
generated from the release wheel by ``tools/gen_pp_architectures.py``: each with the file:line of its model class).

vLLM refuses ``--pipeline-parallel-size`` above 1 for an architecture whose class lacks the ``SupportsPP`` interface
(vllm/config/model.py:1569-1576 in 0.33.0). When an older release refused an architecture the newest one runs with
pipeline parallelism, the release is what is missing, not a setting.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).with_name("pp_architectures.json")


@lru_cache(maxsize=1)
def _table() -> tuple[str, dict[str, str]]:
    doc = json.loads(DATA.read_text(encoding="utf-8"))["vllm"]
    return doc["version"], doc["architectures"]


def pp_class(architecture: str) -> str | None:
    """"<file>:<line> (vLLM <version>)" of the class that runs ``architecture`` with pipeline parallelism in the
    newest release read, or None (no such class, or one the generator could not resolve)."""
    version, table = _table()
    where = table.get(architecture)
    return f"{where} (vLLM {version})" if where else None
