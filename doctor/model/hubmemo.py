"""What the Hub said about a repo revision, remembered in the user's cache for the next run.

A config.json fetched from the Hub lands in the Hugging Face cache, but the exact weights (summed from the
safetensors headers by range requests) do not: without this memo every later ``check`` of a served repo
imports ``huggingface_hub`` (~220 ms) and asks the Hub again for headers that cannot change (a revision is a
commit). So the summary is kept per (endpoint, repo, revision) under llmdoctor's cache directory
(doctor/datacache.py ``cache_dir``: the user's own, not writable by others; ``LLMDOCTOR_CACHE_DIR=""`` turns
it off). A Hub found unreachable is remembered too, for UNREACHABLE_S only: an air-gapped host should not pay
a timeout on every run, and a network that comes back is asked again within the hour.

Plain JSON, read with every field checked: a corrupt or foreign file is a miss, never an error.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from doctor.model.checkpoint import CheckpointWeights

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: How long "the Hub did not answer" is believed (seconds).
UNREACHABLE_S = 3600.0


def _path(endpoint: str, repo: str, revision: str) -> Path | None:
    from doctor.datacache import cache_dir, sha1  # CPython's own SHA-1: hashlib would load OpenSSL first

    directory = cache_dir()
    if directory is None:
        return None
    digest = sha1(f"{endpoint}|{repo}|{revision}".encode()).hexdigest()[:20]
    return directory / "hub" / f"{digest}.json"


def _write(path: Path | None, data: dict[str, Any]) -> None:
    if path is None:
        return
    try:
        path.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)
    except OSError:
        pass  # a memo is an optimisation only


def _read(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def remember_weights(endpoint: str, repo: str, revision: str, weights: CheckpointWeights) -> None:
    _write(_path(endpoint, repo, revision), {
        "repo": repo, "revision": revision, "weights": {
            "total_bytes": weights.total_bytes, "expert_bytes": weights.expert_bytes, "tensors": weights.tensors,
            "files": weights.files, "where": weights.where, "by_dtype": weights.by_dtype,
            "by_layer": {str(k): list(v) for k, v in weights.by_layer.items()}}})


def recalled_weights(endpoint: str, repo: str, revision: str) -> CheckpointWeights | None:
    """The weights summary an earlier run read from the Hub for this revision, or None."""
    data = _read(_path(endpoint, repo, revision))
    w = data.get("weights") if data and data.get("repo") == repo and data.get("revision") == revision else None
    if not isinstance(w, dict):
        return None
    try:
        return CheckpointWeights(int(w["total_bytes"]), int(w["expert_bytes"]), int(w["tensors"]), int(w["files"]),
                                 str(w["where"]), {str(k): int(v) for k, v in w["by_dtype"].items()},
                                 {int(k): (int(v[0]), int(v[1])) for k, v in w["by_layer"].items()})
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return None


def remember_unreachable(endpoint: str, reason: str) -> None:
    _write(_path(endpoint, "", "unreachable"), {"repo": "", "revision": "unreachable", "at": time.time(),
                                                  "reason": reason})


def recalled_unreachable(endpoint: str) -> str | None:
    """Why the Hub at ``endpoint`` did not answer in a run less than UNREACHABLE_S ago, or None."""
    data = _read(_path(endpoint, "", "unreachable"))
    if not data or not isinstance(data.get("at"), (int, float)) or not isinstance(data.get("reason"), str):
        return None
    age = time.time() - data["at"]
    return data["reason"] if 0 <= age < UNREACHABLE_S else None


def forget_unreachable(endpoint: str) -> None:
    path = _path(endpoint, "", "unreachable")
    if path is not None:
        path.unlink(missing_ok=True)
