"""Every error and warning template an engine's own source can print, read from one file's AST.

A *template* is the message of a ``raise X(<message>)`` or of a ``logger.error/warning/critical/exception``
call (and vLLM's ``*_once`` forms) whose message is a literal, an f-string, a ``%`` format or a
``"...".format(...)`` call: literal text with typed *holes* where the engine puts a value. Nothing is imported
or run; a message built any other way (a variable, a helper's return value) is not a template and is counted,
not guessed.

Each site records where it is (file, line, the enclosing function's qualified name) and why it fires (the
guarding ``if`` conditions, innermost first, as source text; ``not (...)`` for an ``else`` branch).
"""

from __future__ import annotations

import ast
import re
from typing import Any

#: Logger methods whose message is an error or warning (``info``/``debug`` never explain a failure).
LOG_LEVELS = {"error": "error", "warning": "warning", "warn": "warning", "critical": "critical",
              "fatal": "critical", "exception": "error", "error_once": "error", "warning_once": "warning",
              "warn_once": "warning", "critical_once": "critical"}
#: Conditions longer than this are cut (a guard is evidence to read, not code to run).
GUARD_CHARS = 200
#: A template must carry at least this many letters of literal text to be matched on its own.
MIN_LETTERS = 12

_PERCENT = re.compile(r"%(?:\((\w+)\))?[-#0 +]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_BRACE = re.compile(r"\{\{|\}\}|\{([^{}!:]*)(?:![rsa])?(?::([^{}]*))?\}")
#: Name words that make a hole a number (``max_model_len`` → int, ``needed_memory`` → float); whole words of
#: the expression's last name only, so ``runtime_path`` stays a string.
_INT_WORDS = {"len", "num", "size", "count", "tokens", "blocks", "rank", "port", "dim", "layers", "heads",
              "seqs", "bits", "tp", "pp", "dp", "ep"}
_FLOAT_WORDS = {"gib", "gb", "mb", "memory", "mem", "ratio", "fraction", "utilization", "util", "percent",
                "secs", "seconds", "timeout"}


def hole_type(name: str, spec: str) -> str:
    """``int``, ``float`` or ``str`` for a hole: from its format spec first, else from the expression's name."""
    conv = spec[-1:] if spec else ""
    if conv in "dioxXn" and conv:
        return "int"
    if conv in "eEfFgG%" and conv:
        return "float"
    if spec and "," in spec:
        return "int"
    if re.fullmatch(r"len\(.*\)", name.strip()):
        return "int"
    names = re.findall(r"[A-Za-z_]\w*", name)
    words = set(names[-1].lower().split("_")) if names and re.fullmatch(r"[\w.]+", name.strip()) else set()
    if words & _FLOAT_WORDS:
        return "float"
    if words & _INT_WORDS:
        return "int"
    return "str"


def _hole(expr: str, spec: str = "") -> dict[str, str]:
    return {"hole": _hole_name(expr), "type": hole_type(expr, spec)}


def _hole_name(expr: str) -> str:
    """A fact-friendly name for a hole's expression (``self.model_config.max_model_len`` → ``max_model_len``)."""
    expr = expr.strip()
    m = re.fullmatch(r"len\((.*)\)", expr)
    if m:
        return "len_" + _hole_name(m.group(1))
    tail = re.findall(r"[A-Za-z_]\w*", expr)
    return tail[-1] if tail else "value"


def _src(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - an exotic node: the hole keeps a neutral name
        return "value"


def _const_parts(text: str) -> list[Any]:
    return [text] if text else []


def _percent_parts(fmt: str, args: list[ast.AST] | None, mapping: dict[str, ast.AST] | None) -> list[Any]:
    parts: list[Any] = []
    pos = 0
    index = 0
    for m in _PERCENT.finditer(fmt):
        parts.extend(_const_parts(fmt[pos:m.start()]))
        pos = m.end()
        key, conv = m.group(1), m.group(2)
        if conv == "%":
            parts.append("%")
            continue
        if key is not None:
            node = (mapping or {}).get(key)
            expr = _src(node) if node is not None else key
        else:
            node = args[index] if args and index < len(args) else None
            index += 1
            expr = _src(node) if node is not None else "value"
        parts.append(_hole(expr, conv))
    parts.extend(_const_parts(fmt[pos:]))
    return parts


def _format_parts(fmt: str, args: list[ast.AST], keywords: dict[str, ast.AST]) -> list[Any]:
    parts: list[Any] = []
    pos = 0
    auto = 0
    for m in _BRACE.finditer(fmt):
        parts.extend(_const_parts(fmt[pos:m.start()]))
        pos = m.end()
        if m.group(0) in ("{{", "}}"):
            parts.append(m.group(0)[0])
            continue
        field, spec = m.group(1) or "", m.group(2) or ""
        head = re.split(r"[.\[]", field, maxsplit=1)[0]
        if head == "":
            node = args[auto] if auto < len(args) else None
            auto += 1
        elif head.isdigit():
            node = args[int(head)] if int(head) < len(args) else None
        else:
            node = keywords.get(head)
        expr = _src(node) if node is not None else (field or "value")
        parts.append(_hole(expr, spec))
    parts.extend(_const_parts(fmt[pos:]))
    return parts


def message_parts(node: ast.AST, log_args: list[ast.AST] | None = None) -> list[Any] | None:
    """The template of a message expression as literal strings and holes, or None when it is not a template.

    ``log_args`` are a logger call's arguments after the message (``logger.warning("%s", x)``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if log_args:
            return _percent_parts(node.value, log_args, None)
        return _const_parts(node.value)
    if isinstance(node, ast.JoinedStr):
        parts: list[Any] = []
        for value in node.values:
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                parts.extend(_const_parts(value.value))
            elif isinstance(value, ast.FormattedValue):
                spec = ""
                if isinstance(value.format_spec, ast.JoinedStr):
                    spec = "".join(v.value for v in value.format_spec.values
                                   if isinstance(v, ast.Constant) and isinstance(v.value, str))
                parts.append(_hole(_src(value.value), spec))
        return parts
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
            and isinstance(node.left.value, str):
        right = node.right
        if isinstance(right, ast.Tuple):
            return _percent_parts(node.left.value, list(right.elts), None)
        if isinstance(right, ast.Dict):
            mapping = {k.value: v for k, v in zip(right.keys, right.values, strict=False)
                       if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            return _percent_parts(node.left.value, None, mapping)
        return _percent_parts(node.left.value, [right], None)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = message_parts(node.left), message_parts(node.right)
        if left is None and right is None:
            return None
        return (left if left is not None else [_hole(_src(node.left))]) + \
            (right if right is not None else [_hole(_src(node.right))])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str):
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        return _format_parts(node.func.value.value, list(node.args), keywords)
    return None


def merge(parts: list[Any]) -> list[Any]:
    """Adjacent literals joined; the canonical form every template is compared and stored in."""
    out: list[Any] = []
    for part in parts:
        if isinstance(part, str) and out and isinstance(out[-1], str):
            out[-1] += part
        elif part != "":
            out.append(part)
    return out


def first_line(parts: list[Any]) -> tuple[list[Any], bool]:
    """The parts up to the first newline (a log line is one line) and whether anything was cut."""
    out: list[Any] = []
    for part in parts:
        if isinstance(part, str) and "\n" in part:
            head = part.split("\n", 1)[0]
            if head:
                out.append(head)
            return merge(out), True
        out.append(part)
    return merge(out), False


def letters(parts: list[Any]) -> int:
    return sum(sum(c.isalpha() for c in p) for p in parts if isinstance(p, str))


def _exc_name(node: ast.AST | None) -> tuple[str | None, ast.Call | None]:
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            return func.id, node
        if isinstance(func, ast.Attribute):
            return func.attr, node
    return None, None


def _logger_level(call: ast.Call) -> str | None:
    func = call.func
    if not isinstance(func, ast.Attribute) or func.attr not in LOG_LEVELS:
        return None
    owner = _src(func.value).lower()
    if "log" not in owner:
        return None
    return LOG_LEVELS[func.attr]


class _Visitor(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.scope: list[str] = []
        self.guards: list[str] = []
        self.sites: list[dict[str, Any]] = []
        self.skipped = 0

    # scopes -------------------------------------------------------------------------------------------------
    def _scoped(self, node: ast.AST, name: str) -> None:
        self.scope.append(name)
        saved, self.guards = self.guards, []
        self.generic_visit(node)
        self.guards = saved
        self.scope.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scoped(node, node.name)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self._scoped(node, node.name)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name)

    def visit_If(self, node: ast.If) -> None:
        cond = _src(node.test)
        self.visit(node.test)
        self.guards.append(cond)
        for child in node.body:
            self.visit(child)
        self.guards[-1] = f"not ({cond})"
        for child in node.orelse:
            self.visit(child)
        self.guards.pop()

    # sites --------------------------------------------------------------------------------------------------
    def _add(self, node: ast.AST, kind: str, level: str, parts: list[Any] | None) -> None:
        if parts is None:
            self.skipped += 1
            return
        parts = merge(parts)
        line, cut = first_line(parts)
        guard = self.guards[-1] if self.guards else ""
        if len(guard) > GUARD_CHARS:
            guard = guard[:GUARD_CHARS - 1] + "…"
        self.sites.append({"kind": kind, "type": level, "parts": line, "cut": cut,
                           "line": node.lineno, "function": ".".join(self.scope) or "<module>", "guard": guard})

    def visit_Raise(self, node: ast.Raise) -> None:
        name, call = _exc_name(node.exc)
        if call is not None and name and call.args:
            self._add(node, "raise", name, message_parts(call.args[0]))
        elif call is not None and name:
            self.skipped += 1
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        level = _logger_level(node)
        if level and node.args:
            self._add(node, "log", level, message_parts(node.args[0], node.args[1:]))
        self.generic_visit(node)


def scan_source(text: str, path: str) -> dict[str, Any]:
    """The template sites of one source file (JSON-ready; the generator caches it by the file's hash)."""
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError:
        return {"sites": [], "skipped": 0, "unparsed": True}
    visitor = _Visitor(path)
    visitor.visit(tree)
    return {"sites": visitor.sites, "skipped": visitor.skipped}
