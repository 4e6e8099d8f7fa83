"""Whole-package scans that do not need the interpreter's argparse run.

* parser registries (tool-call and reasoning parser names registered by decorator, lazy-registration
  dict or explicit call),
* Prometheus metric definitions (name, type, labels, documentation, file:line),
* places where the engine overrides a setting after parsing (``x.enable_prefix_caching = False``
  under some condition), kept as evidence for the linter's "the engine decides this" explanations.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any

from tools.catalog_gen.argspec import to_json
from tools.catalog_gen.interp import Interp, ModuleObj, Scope, terminal_name
from tools.catalog_gen.wheel import WheelSource

#: Paths that are tests, benchmarks or examples: never part of what a server registers or exports.
_NOT_RUNTIME = re.compile(r"(^|/)(tests?|testing|benchmarks?|examples?|test_utils?)(/|\.py$)|/test_[^/]*\.py$")


def runtime_modules(src: WheelSource, needle: str) -> Iterator[str]:
    """Modules of the wheel (tests excluded) whose text contains ``needle``."""
    for name in src.modules():
        if _NOT_RUNTIME.search(src.path(name)):
            continue
        if needle in src.text(name):
            yield name


def _str_args(node: ast.Call) -> list[str]:
    names: list[str] = []
    candidates = list(node.args[:1]) + [k.value for k in node.keywords if k.arg in ("name", "names")]
    for arg in candidates:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            names.append(arg.value)
        elif isinstance(arg, (ast.List, ast.Tuple)):
            names.extend(e.value for e in arg.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    return names


def registry_names(src: WheelSource, manager: str, lazy_dict: str) -> dict[str, str]:
    """Parser names registered with ``manager`` (e.g. ``ToolParserManager``) → file:line of the registration.

    Three shapes exist across versions: ``@Manager.register_module("a")`` / ``(["a", "b"])`` on a
    class, ``Manager.register_lazy_module("a", ...)`` calls, and a module-level dict named
    ``lazy_dict`` whose keys are the names.
    """
    found: dict[str, str] = {}
    for mod in runtime_modules(src, manager):
        tree = src.tree(mod)
        if tree is None:
            continue
        path = src.path(mod)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("register_module", "register_lazy_module") \
                    and terminal_name(node.func.value) == manager:
                for name in _str_args(node):
                    found.setdefault(name, f"{path}:{node.lineno}")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == lazy_dict for t in targets) \
                        and isinstance(node.value, ast.Dict):
                    for key in node.value.keys:
                        if isinstance(key, ast.Constant) and isinstance(key.value, str):
                            found.setdefault(key.value, f"{path}:{key.lineno}")
    return found


_METRIC_KINDS = (("histogram", "histogram"), ("counter", "counter"), ("gauge", "gauge"),
                 ("summary", "summary"), ("info", "info"))


def metrics(src: WheelSource, interp: Interp, prefix: str) -> list[dict[str, Any]]:
    """Every Prometheus metric the engine defines with a literal ``prefix:`` name."""
    out: dict[str, dict[str, Any]] = {}
    for mod in sorted(set(runtime_modules(src, f'"{prefix}:')) | set(runtime_modules(src, f"'{prefix}:"))):
        tree = src.tree(mod)
        if tree is None:
            continue
        module = interp.module(mod)
        for func, call in _calls_with_parent(tree):
            kind = _metric_kind(call)
            if kind is None:
                continue
            for name in _metric_names(call, prefix, func):
                if name not in out:
                    out[name] = _metric(interp, src, mod, module, func, call, kind, name)
    return [out[k] for k in sorted(out)]


def _metric(interp: Interp, src: WheelSource, mod: str, module: Any, func: ast.AST | None, call: ast.Call,
            kind: str, name: str) -> dict[str, Any]:
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    labels = None
    label_node = kw.get("labelnames")
    if label_node is not None and isinstance(module, ModuleObj):
        labels = _labels(interp, module, func, call, label_node)
    doc_node = kw.get("documentation", call.args[1] if len(call.args) > 1 else None)
    doc = ""
    if doc_node is not None and isinstance(module, ModuleObj):
        value = interp.eval(doc_node, _function_scope(interp, module, func, call))
        doc = " ".join(value.split()) if isinstance(value, str) else ""
    return {"name": name, "type": kind, "labels": labels, "help": doc, "exposed": _exposed(name, kind),
            "source": f"{src.path(mod)}:{call.lineno}"}


def _exposed(name: str, kind: str) -> list[str]:
    """The series prometheus_client writes for a metric (counters gain ``_total``)."""
    if kind == "counter":
        return [name if name.endswith("_total") else name + "_total"]
    if kind == "histogram":
        return [name + s for s in ("_bucket", "_sum", "_count")]
    if kind == "summary":
        return [name + "_sum", name + "_count"]
    if kind == "info":
        return [name + "_info"]
    return [name]


def _calls_with_parent(tree: ast.Module) -> Iterator[tuple[ast.AST | None, ast.Call]]:
    def walk(node: ast.AST, func: ast.AST | None) -> Iterator[tuple[ast.AST | None, ast.Call]]:
        for child in ast.iter_child_nodes(node):
            inner = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            if isinstance(child, ast.Call):
                yield func, child
            yield from walk(child, inner)
    yield from walk(tree, None)


def _metric_kind(call: ast.Call) -> str | None:
    name = terminal_name(call.func).lower()
    for needle, kind in _METRIC_KINDS:
        if needle in name and not name.startswith(("get_", "set_", "observe", "inc", "labels")):
            return kind
    return None


def _metric_names(call: ast.Call, prefix: str, func: ast.AST | None) -> list[str]:
    """Literal metric names of a constructor call; ``name=name`` is followed to the literal
    assignments of that variable in the same function (vLLM's ``log_metrics_info``)."""
    nodes = [k.value for k in call.keywords if k.arg == "name"] + list(call.args[:1])
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(prefix + ":"):
            return [node.value]
        if isinstance(node, ast.Name) and func is not None:
            found = []
            for st in ast.walk(func):
                if isinstance(st, ast.Assign):
                    for t, v in _pairs(st):
                        if t == node.id and isinstance(v, ast.Constant) and isinstance(v.value, str) \
                                and v.value.startswith(prefix + ":"):
                            found.append(v.value)
            if found:
                return found
    return []


def _pairs(st: ast.Assign) -> Iterator[tuple[str, ast.expr]]:
    for target in st.targets:
        if isinstance(target, ast.Name):
            yield target.id, st.value
        elif isinstance(target, ast.Tuple) and isinstance(st.value, ast.Tuple) \
                and len(target.elts) == len(st.value.elts):
            for t, v in zip(target.elts, st.value.elts, strict=False):
                if isinstance(t, ast.Name):
                    yield t.id, v


def _labels(interp: Interp, module: ModuleObj, func: ast.AST | None, call: ast.Call,
            node: ast.expr) -> list[str] | None:
    """Evaluate ``labelnames=`` with the simple assignments that precede the call in its function."""
    value = interp.eval(node, _function_scope(interp, module, func, call))
    if isinstance(value, type({}.keys())):
        value = list(value)
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _function_scope(interp: Interp, module: ModuleObj, func: ast.AST | None, call: ast.Call) -> Scope:
    """A scope holding the literal-ish assignments made before ``call`` in its function."""
    scope = Scope(module)
    if func is not None:
        for st in ast.walk(func):
            if isinstance(st, ast.Assign) and st.lineno < call.lineno and len(st.targets) == 1 \
                    and isinstance(st.targets[0], ast.Name):
                scope.vars[st.targets[0].id] = interp.eval(st.value, scope)
    return scope


def overrides(src: WheelSource, attrs: set[str], package: str) -> dict[str, list[dict[str, Any]]]:
    """Where the engine assigns one of ``attrs`` after parsing, with the conditions around it.

    Covers ``obj.attr = value`` and ``declare_resolution(..., attr=value)``-style keyword
    declarations. Each hit: the value (JSON when literal, else the expression text), the enclosing
    ``if`` tests (innermost last) and function, and file:line.
    """
    found: dict[str, list[dict[str, Any]]] = {a: [] for a in attrs}
    needles = tuple(attrs)
    for mod in src.modules(package):
        if _NOT_RUNTIME.search(src.path(mod)):
            continue
        text = src.text(mod)
        if not any(n in text for n in needles):
            continue
        tree = src.tree(mod)
        if tree is None:
            continue
        for hit in _assignments(tree, attrs):
            attr, value_node, lineno, conds, func = hit
            try:
                value: Any = ast.literal_eval(value_node)
                value = to_json(value)[0]
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                value = {"expr": _short(ast.unparse(value_node))}
            found[attr].append({"value": value, "when": [_short(c) for c in conds[-3:]], "in": func,
                                "source": f"{src.path(mod)}:{lineno}"})
    return found


def _assignments(tree: ast.Module, attrs: set[str]) -> Iterator[tuple[str, ast.expr, int, list[str], str]]:
    def walk(stmts: list[ast.stmt], conds: list[str], func: str) -> Iterator[Any]:
        for st in stmts:
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from walk(st.body, [], st.name)
                continue
            if isinstance(st, ast.ClassDef):
                yield from walk(st.body, [], func)
                continue
            if isinstance(st, ast.If):
                test = ast.unparse(st.test)
                yield from walk(st.body, conds + [test], func)
                yield from walk(st.orelse, conds + [f"not ({test})"], func)
                continue
            for sub in ("body", "orelse", "finalbody"):  # for / while / with / try blocks
                if isinstance(getattr(st, sub, None), list):
                    yield from walk(getattr(st, sub), conds, func)
            if isinstance(st, ast.Try):
                for h in st.handlers:
                    yield from walk(h.body, conds, func)
            if isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Attribute) and t.attr in attrs:
                        yield t.attr, st.value, st.lineno, conds, func
            for node in ast.walk(st) if isinstance(st, (ast.Expr, ast.Assign)) else []:
                if isinstance(node, ast.Call) and "declare" in terminal_name(node.func):
                    for k in node.keywords:
                        if k.arg in attrs:
                            yield k.arg, k.value, node.lineno, conds, func
    yield from walk(tree.body, [], "<module>")


def false_returns(src: WheelSource, module: str, qualname: str) -> list[dict[str, Any]]:
    """Conditions under which ``module.qualname`` returns False (e.g. ``is_prefix_caching_supported``)."""
    if not src.has_module(module):
        return []
    tree = src.tree(module)
    if tree is None:
        return []
    cls_name, _, fn_name = qualname.rpartition(".")
    target = None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (not cls_name or node.name == cls_name):
            target = next((f for f in node.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                           and f.name == fn_name), target)
    if target is None:
        return []
    out: list[dict[str, Any]] = []

    def walk(stmts: list[ast.stmt], conds: list[str]) -> None:
        for st in stmts:
            if isinstance(st, ast.If):
                test = ast.unparse(st.test)
                walk(st.body, conds + [test])
                walk(st.orelse, conds + [f"not ({test})"])
            elif isinstance(st, ast.Return) and isinstance(st.value, ast.Constant) and st.value.value is False:
                out.append({"value": False, "when": [_short(c) for c in conds],
                            "in": qualname, "source": f"{src.path(module)}:{st.lineno}"})
    walk(target.body, [])
    return out


def _short(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
