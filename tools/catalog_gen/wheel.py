"""Getting an engine wheel and reading its Python sources without installing or importing anything.

The wheel is fetched with ``pip download --no-deps`` (the ordinary client) into a cache folder and
then read straight out of the zip: only ``.py`` members are decoded, nothing is written to disk and
no engine code ever runs. The sha256 of the wheel goes into the catalog header so a reviewer can
check which bytes a catalog was read from.
"""

from __future__ import annotations

import ast
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path


def find_wheel(cache: Path, engine: str, version: str) -> Path | None:
    """The cached wheel for exactly ``engine==version`` (any platform tag), if present. A wheel's file name spells
    the distribution with underscores (PEP 427: ``flashinfer-python`` is ``flashinfer_python-0.7.2…whl``)."""
    if not cache.is_dir():
        return None
    prefix = f"{engine.replace('-', '_').lower()}-{version}-"
    matches = sorted(p for p in cache.iterdir() if p.name.lower().startswith(prefix) and p.suffix == ".whl")
    return matches[0] if matches else None


def download_wheel(cache: Path, engine: str, version: str) -> Path:
    """Return the wheel for ``engine==version``, downloading it with pip when it is not cached."""
    found = find_wheel(cache, engine, version)
    if found is not None:
        return found
    cache.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
           "-d", str(cache), f"{engine}=={version}"]
    subprocess.run(cmd, check=True)
    found = find_wheel(cache, engine, version)
    if found is None:
        raise SystemExit(f"pip download did not leave a {engine} {version} wheel in {cache}")
    return found


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class WheelSource:
    """The ``.py`` files of one wheel, addressed by dotted module name, parsed on demand."""

    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel
        self._zip = zipfile.ZipFile(wheel)
        self._files: dict[str, str] = {}  # module name -> member path
        self._trees: dict[str, ast.Module | None] = {}
        for member in self._zip.namelist():
            if not member.endswith(".py") or ".data/" in member.split("/", 1)[0]:
                continue
            parts = member[:-3].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            if parts and all(p.isidentifier() for p in parts):
                self._files[".".join(parts)] = member

    def has_module(self, name: str) -> bool:
        return name in self._files

    def path(self, name: str) -> str:
        return self._files[name]

    def is_package(self, name: str) -> bool:
        return self._files.get(name, "").endswith("__init__.py")

    def modules(self, prefix: str = "") -> list[str]:
        return sorted(m for m in self._files if m == prefix or m.startswith(prefix + ".") or not prefix)

    def text(self, name: str) -> str:
        return self._zip.read(self._files[name]).decode("utf-8", errors="replace")

    def tree(self, name: str) -> ast.Module | None:
        """The module's AST, parsed once per WheelSource (a per-instance cache: ``--all`` reads 150 wheels in
        one process, and a functools cache on the method would keep every one of them alive)."""
        if name not in self._trees:
            try:
                self._trees[name] = ast.parse(self.text(name), filename=self._files[name])
            except SyntaxError:
                self._trees[name] = None
        return self._trees[name]
