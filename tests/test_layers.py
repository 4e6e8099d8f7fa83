"""The layer contract (pyproject.toml [tool.importlinter], checked by `lint-imports` in .ci/run) names every
top-level module of the package: a new one that no contract lists would escape the check unnoticed."""

from __future__ import annotations

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
