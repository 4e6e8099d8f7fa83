"""The distribution PyPI would get: a name it accepts next to the unrelated `llmdoctor`, the same command and
import package, and the optional MCP dependency wired into the test extra (so CI runs tests/test_mcp.py).
`python -m build` and `twine check --strict` run in .ci/run (they need the network for the build backend)."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11+")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _pypi_key(name: str) -> str:
    """What PyPI compares to refuse a new project: case, '-', '_' and '.' dropped."""
    return re.sub(r"[-_.]", "", name.lower())


def test_distribution_name_is_not_the_unrelated_llmdoctor() -> None:
    name = PYPROJECT["project"]["name"]
    assert name == "llm-serving-doctor"
    assert _pypi_key(name) != _pypi_key("llmdoctor")  # PyPI's llmdoctor 0.2.5 is another project
    assert PYPROJECT["project"]["scripts"] == {"llmdoctor": "doctor.cli.main:main"}
    assert PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["doctor"]


def test_readme_install_line_uses_the_distribution_name() -> None:
    head = (ROOT / "README.md").read_text().split("## ", 1)[0]
    assert "pip install llm-serving-doctor " in head


def test_mcp_is_an_extra_and_the_tests_install_it() -> None:
    extras = PYPROJECT["project"]["optional-dependencies"]
    assert any(dep.startswith("mcp") for dep in extras["mcp"])
    assert "llm-serving-doctor[mcp]" in extras["test"]
    assert not any(dep.startswith("mcp") for dep in PYPROJECT["project"]["dependencies"])
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python -m build" in ci and "twine check" in ci and "prometheus-alertmanager" in ci
