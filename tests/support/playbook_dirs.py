"""Writing a user's playbook directory in the shipped layout: trees beside ``causes/<cause-id>.yaml`` files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def cause_files(causes: dict[str, dict[str, Any]]) -> dict[str, str]:
    """``{cause id: body}`` → ``{"causes/<id>.yaml": text}``, each file holding one cause with its id."""
    return {f"causes/{cid}.yaml": yaml.safe_dump({"id": cid, **body}, sort_keys=False, allow_unicode=True)
            for cid, body in causes.items()}


def write_dir(directory: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (relative names, maybe under causes/) into ``directory``; return it."""
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory
