"""Every renderer under doctor/render/ (issue 20, point 5): what a command prints for people is made there, and the
CLI only hands it to ``emit``. Checked on the CLI's source: each text or Markdown a command emits is the result of
a function imported from doctor.render (JSON is the document's own ``to_dict``), and no CLI module styles text."""

from __future__ import annotations

import ast

import pytest
from conftest import ROOT

#: the CLI's modules; common.py is the emitter itself (emit, emit_document)
CLI = sorted(p for p in (ROOT / "doctor" / "cli").glob("*.py") if p.name != "output.py")  # output.py: the plumbing


def _render_imports(tree: ast.Module) -> set[str]:
    """Names a module imports from doctor.render.* (at the top or inside a function)."""
    return {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith("doctor.render") for alias in node.names}


def _made(node: ast.AST) -> list[ast.AST]:
    """The functions whose result an emitted argument is: a call's function (through ``"".join(...)``, ``+``, ``a if c else b``
    and a lambda's body), or the name passed. An f-string is a one-line status message, not a document's rendering."""
    if isinstance(node, ast.Lambda):
        return _made(node.body)
    if isinstance(node, ast.Name):
        return [node]
    if isinstance(node, ast.BinOp):
        return _made(node.left) + _made(node.right)
    if isinstance(node, ast.IfExp):
        return _made(node.body) + _made(node.orelse)
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "join" and isinstance(func.value, ast.Constant):
            return [made for arg in node.args for made in _made(arg)]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "json":
            return []  # json.dumps: the document itself
        return [func]
    return []


def _renderers(path) -> list[tuple[int, str]]:
    """(line, name) of each function or name whose result a CLI command emits."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "emit_document":
            if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == "json":
                continue  # a JSON-only document: its text argument is never rendered
            made = [kw.value for kw in node.keywords if kw.arg in ("text", "markdown")]
        elif node.func.id == "emit" and node.args and isinstance(node.args[0], (ast.Call, ast.BinOp, ast.IfExp)):
            made = [node.args[0]]
        else:
            continue
        for value in made:
            for func in _made(value):
                out.append((node.lineno, func.id if isinstance(func, ast.Name) else ast.unparse(func)))
    return out


@pytest.mark.parametrize("path", CLI, ids=[p.name for p in CLI])
def test_what_a_command_prints_is_rendered_under_render(path) -> None:
    tree = ast.parse(path.read_text())
    imported = _render_imports(tree)
    outside = [f"{path.name}:{line}: {name}" for line, name in _renderers(path) if name not in imported]
    assert outside == [], f"rendered outside doctor/render/: {outside}"
    styled = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute) and node.attr in ("style", "secho")
              and isinstance(node.value, ast.Name) and node.value.id == "click"]
    assert styled == [], f"{path.name}: click.style at lines {styled}: styling belongs to a renderer"


def test_the_check_sees_the_renderers_it_should() -> None:
    """The scan finds the calls it is about (a scan that finds nothing would pass on anything)."""
    found = {name for path in CLI for _, name in _renderers(path)}
    assert {"check_text", "check_markdown", "lint_text", "plan_text", "text_table", "cause_text", "added_text",
            "report_chunks", "sarif", "render_text"} <= found
