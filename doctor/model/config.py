"""Finding and parsing a model's config.json: a file, a model directory, a repo id in the local
Hugging Face cache, or ``example:NAME`` for a scenario bundled with llmdoctor.

Nothing here touches the network (the Hub is doctor/model/resolve.py's job, after these local places):
on-call machines often have none, and a diagnosis must not depend on the Hub being up. Real configs are not
always strict JSON (Nemotron-H writes a bare ``Infinity``), so Python's permissive parser is used on purpose; at most the size cap is read (doctor.inio)
so a wrong path to a multi-gigabyte safetensors file fails fast instead of filling memory.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Largest config.json we parse (real ones are a few KiB; the biggest vision configs ~100 KiB).
MAX_CONFIG_BYTES = 16 * 1024 * 1024
_REF_BYTES = 4096  # refs/main holds a 40-character commit hash
EXAMPLE_PREFIX = "example:"
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"


@dataclass(frozen=True)
class LoadedConfig:
    """A parsed config and where it came from (``path`` is None only for in-memory input)."""

    path: Path | None
    name: str
    raw: dict[str, Any]


def load_config(spec: str) -> LoadedConfig:
    """Resolve ``spec`` to a config.json and parse it; raise InputError naming what is wrong."""
    if spec.startswith(EXAMPLE_PREFIX):
        name = spec[len(EXAMPLE_PREFIX):]
        return LoadedConfig(_example_path(name), spec, _parse(_example_path(name)))
    path = Path(spec).expanduser()
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise InputError(f"{path}: config.json: not found in this directory")
        return LoadedConfig(config, path.resolve().name, _parse(config))
    if path.is_file():
        name = path.parent.resolve().name if path.name == "config.json" else path.stem
        return LoadedConfig(path, name, _parse(path))
    from doctor.inio import not_a_file

    special = not_a_file(path, fifo=True)
    if special:
        raise InputError(f"{spec}: {special}, not a config.json file or a model directory")
    if looks_like_repo_id(spec):
        cached = _hf_cache_config(spec)
        return LoadedConfig(cached, spec, _parse(cached))
    raise InputError(f"{spec}: no such file or directory")


def example_names() -> list[str]:
    """The bundled scenario configs, for ``example:NAME`` and the error that lists them."""
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.json"))


def _example_path(name: str) -> Path:
    path = EXAMPLES_DIR / f"{name}.json"
    if not name or "/" in name or not path.is_file():
        known = ", ".join(example_names()) or "none installed"
        raise InputError(f"{EXAMPLE_PREFIX}{name}: no such bundled example (available: {known})")
    return path


def looks_like_repo_id(spec: str) -> bool:
    parts = spec.split("/")
    return len(parts) == 2 and all(parts) and not spec.startswith((".", "~"))


def hf_hub_cache() -> Path:
    """The hub cache directory the way huggingface_hub resolves it (HF_HUB_CACHE, then HF_HOME)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface" / "hub"


def _hf_cache_config(repo_id: str) -> Path:
    """config.json of ``repo_id`` in the local cache: the snapshot refs/main points at, else the newest."""
    cache = hf_hub_cache()
    repo_dir = cache / ("models--" + repo_id.replace("/", "--"))
    snapshots = repo_dir / "snapshots"
    if not snapshots.is_dir():
        raise InputError(f"{repo_id}: not a local path and not in the Hugging Face cache at {cache}")
    ref = repo_dir / "refs" / "main"
    if ref.is_file():
        from doctor.inio import read_text_capped

        try:  # a commit hash; anything else (or a file far larger than one) pins nothing
            pinned = snapshots / read_text_capped(ref, limit=_REF_BYTES, label=str(ref)).strip() / "config.json"
        except InputError:
            pinned = None
        if pinned is not None and pinned.is_file():
            return pinned
    candidates = [p / "config.json" for p in snapshots.iterdir() if (p / "config.json").is_file()]
    if not candidates:
        raise InputError(f"{repo_id}: config.json: not in any snapshot under {snapshots}")
    return max(candidates, key=lambda p: p.stat().st_mtime)


def _parse(path: Path) -> dict[str, Any]:
    from doctor.inio import read_text_capped

    return parse_config_text(read_text_capped(path, limit=MAX_CONFIG_BYTES, label=str(path),
                                              hint="is this a weights file?"), str(path))


def parse_config_text(text: str, source: str) -> dict[str, Any]:
    """Parse config text; bare Infinity/NaN are accepted because real configs contain them."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{source}: JSON nested too deeply to be a config") from None
    if not isinstance(raw, dict):
        raise InputError(f"{source}: expected a JSON object at the top level, got {type(raw).__name__}")
    return raw
