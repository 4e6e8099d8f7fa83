"""The layer contract (pyproject.toml [tool.importlinter], checked by `lint-imports` in .ci/run) names every
top-level module of the package: a new one that no contract lists would escape the check unnoticed."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib
from conftest import ROOT


def _named(contracts: list[dict]) -> set[str]:
    names: set[str] = set()
    for contract in contracts:
        names.update(contract.get("source_modules", ()), contract.get("forbidden_modules", ()))
        for layer in contract.get("layers", ()):
            names.update(part.strip() for part in layer.replace("|", ":").split(":"))
    return names


def test_every_top_level_module_is_in_the_layer_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    package = ROOT / config["root_package"]
    top = {f"doctor.{p.stem}" for p in package.glob("*.py") if not p.stem.startswith("__")}
    top |= {f"doctor.{p.parent.name}" for p in package.glob("*/__init__.py")}
    missing = sorted(top - _named(config["contracts"]))
    assert not missing, f"add {missing} to a contract in pyproject.toml [tool.importlinter]"


#: What only a renderer writes: terminal styling, a Markdown table's rule, an HTML or SVG document.
_RENDERING = re.compile(r"click\.(?:style|secho)\(|[\"']\|---\||<html|<table|<svg|<!DOCTYPE")


def test_every_renderer_is_under_render() -> None:
    """Issue 20 point 5: text, Markdown, HTML and SVG are written under doctor/render/ only (the generated
    reference pages included), so a stage below never formats for people and a front end never carries a
    renderer of its own."""
    outside = sorted(f"{path.relative_to(ROOT)}:{n}" for path in (ROOT / "doctor").rglob("*.py")
                     if "render" not in path.relative_to(ROOT / "doctor").parts
                     for n, line in enumerate(path.read_text().splitlines(), 1) if _RENDERING.search(line))
    assert outside == [], f"rendering outside doctor/render/: {outside}"
    assert len([p for p in (ROOT / "doctor" / "render").glob("*.py") if _RENDERING.search(p.read_text())]) > 5


def test_the_contract_holds_and_ci_checks_it() -> None:
    """`lint-imports` (import-linter, the test extra) finds every contract kept, and .ci/run runs it."""
    import shutil
    import subprocess
    import sys

    assert re.search(r"(?m)^lint-imports\s*$", (ROOT / ".ci" / "run").read_text())
    tool = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    result = subprocess.run([tool], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:]
    assert re.search(r"Contracts: [1-9]\d* kept, 0 broken", result.stdout), result.stdout[-2000:]
