"""Recording what an engine does to its argparse parser, and turning it into catalog flag entries.

``ParserSink`` stands in for ``argparse.ArgumentParser`` (and its groups) while the interpreter runs
the engine's ``add_cli_args``; every ``add_argument`` call is kept with its evaluated arguments and
the file:line it came from. ``flag_entry`` then applies argparse's own rules (dest from the first
long option, ``--no-X`` for BooleanOptionalAction, which actions take a value) to produce the JSON
the catalog ships.
"""

from __future__ import annotations

import ast
import dataclasses
import enum
import json
import math
import re
from typing import Any

from tools.catalog_gen.interp import (
    BoundMethod,
    ClassObj,
    EnumMember,
    FieldObj,
    FunctionObj,
    Interp,
    Marker,
    Native,
    Obj,
    Sink,
    Unknown,
    unknown,
)

#: argparse actions that consume no value on the command line.
NO_VALUE_ACTIONS = {"store_true", "store_false", "store_const", "append_const", "count", "help", "version",
                    "BooleanOptionalAction"}
_DEPRECATED = re.compile(r"\[deprecated\]|^\s*\(?deprecated\b|\bis deprecated\b|\bdeprecated[:.;,]|"
                         r"\bdeprecated,? (?:use|please|and will)|\bwill be removed\b", re.IGNORECASE)
_FLAG_IN_TEXT = re.compile(r"(?<![\w-])(--[a-z0-9][a-z0-9-]*[a-z0-9])")


@dataclasses.dataclass
class Recorded:
    names: list[Any]
    kwargs: dict[str, Any]
    group: str | None
    site: tuple[str, int]


class ParserSink(Sink):
    """An ``ArgumentParser`` (or argument group) that records instead of parsing."""

    def __init__(self, interp: Interp, calls: list[Recorded] | None = None, group: str | None = None,
                 init_kwargs: dict[str, Any] | None = None) -> None:
        super().__init__(interp)
        self.calls: list[Recorded] = calls if calls is not None else []
        self.group = group
        self.init_kwargs = init_kwargs or {}
        self.defaults: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<parser {self.group or ''}>"

    def getattr_(self, name: str) -> Any:
        if name == "add_argument":
            return Native(self._add_argument, "add_argument")
        if name in ("add_argument_group", "add_mutually_exclusive_group"):
            return Native(self._group, name)
        if name == "set_defaults":
            return Native(lambda **kw: self.defaults.update(kw), name)
        if name in self.attrs:
            return self.attrs[name]
        return Unknown(f"parser.{name}")

    def _add_argument(self, *names: Any, **kwargs: Any) -> Any:
        site = self.interp.site
        if "_field" not in kwargs:
            # registered from a loop over a record's fields (SGLang's add_cli_args_from_dataclass):
            # cite the field, not the loop
            scope = self.interp.call_scope
            found = [v for v in (scope.vars.values() if scope is not None else []) if isinstance(v, FieldObj)]
            if len(found) == 1:
                kwargs["_field"] = found[0]
        self.calls.append(Recorded(list(names), dict(kwargs), self.group, site))
        return Unknown("action")

    def _group(self, *args: Any, **kwargs: Any) -> ParserSink:
        title = kwargs.get("title", args[0] if args else None)
        sub = ParserSink(self.interp, self.calls, title if isinstance(title, str) else self.group)
        sub.defaults = self.defaults
        return sub


class SubparsersSink(Sink):
    """``parser.add_subparsers()``: ``add_parser(name, **kw)`` hands out a recording parser."""

    def __init__(self, interp: Interp) -> None:
        super().__init__(interp)
        self.parsers: dict[str, ParserSink] = {}

    def getattr_(self, name: str) -> Any:
        if name == "add_parser":
            return Native(self._add_parser, name)
        return Unknown(f"subparsers.{name}")

    def _add_parser(self, name: Any, **kwargs: Any) -> ParserSink:
        sink = ParserSink(self.interp, init_kwargs=kwargs)
        self.parsers[str(name)] = sink
        return sink


# ---------------------------------------------------------------------------------------------
# Recorded call -> catalog entry
# ---------------------------------------------------------------------------------------------
def flag_entry(rec: Recorded, root: str) -> dict[str, Any] | None:
    """One catalog flag (or None for a positional, which the caller records separately)."""
    names = [n for n in rec.names if isinstance(n, str)]
    options = [n for n in names if n.startswith("-")]
    if not options:
        return None
    kw = rec.kwargs
    action = action_name(kw.get("action"))
    if action == "BooleanOptionalAction":
        options = options + ["--no-" + o[2:] for o in options if o.startswith("--")]
    dest = kw.get("dest")
    if not isinstance(dest, str):
        dest = derive_dest(options)
    nargs = kw.get("nargs")
    nargs = nargs if isinstance(nargs, (int, str)) and not isinstance(nargs, bool) else None
    action_nargs = custom_action_param(kw.get("action"), "nargs")
    if nargs is None and action_nargs is not ...:
        nargs = action_nargs
    takes_value = action not in NO_VALUE_ACTIONS and nargs != 0
    help_text = kw.get("help") if isinstance(kw.get("help"), str) else ""
    entry: dict[str, Any] = {
        "dest": dest,
        "options": options,
        "action": action,
        "takes_value": takes_value,
        "type": value_kind(kw.get("type")) if takes_value else None,
        "nargs": nargs,
        "help": short_help(help_text),
        "source": f"{rec.site[0]}:{rec.site[1]}" if rec.site[0] else root,
    }
    if rec.group:
        entry["group"] = rec.group
    if kw.get("_kwargs_unknown"):
        entry["kwargs_unknown"] = True
    choices, choices_known = json_list(kw.get("choices"))
    if "choices" in kw and kw.get("choices") is not None:
        entry["choices"] = choices if choices_known else None
        if not choices_known:
            entry["choices_unknown"] = True
    metavar = kw.get("metavar")
    if isinstance(metavar, (list, tuple)):
        values, known = json_list(metavar)
        if known:
            entry["values"] = values  # documented values the engine checks after parsing
    if "default" in kw:
        default, known = to_json(kw["default"])
        entry["default"] = default
        if not known:
            entry["default_unknown"] = True
    else:
        implied = custom_action_param(kw.get("action"), "default")
        entry["default"] = (False if action == "store_true" else True if action == "store_false"
                            else implied if implied is not ... else None)
    if "const" in kw:
        entry["const"], _ = to_json(kw["const"])
    if kw.get("required") is True:
        entry["required"] = True
    deprecated = is_deprecated(kw, help_text)
    if deprecated:
        entry["deprecated"] = True
        replacement = kw.get("new_flag") if isinstance(kw.get("new_flag"), str) else replacement_flag(
            help_text, options)
        if replacement:
            entry["replacement"] = replacement
        if action_raises(kw.get("action")):
            entry["rejected"] = True  # the action raises when used: the server refuses to start
    return entry


def action_raises(action: Any) -> bool:
    """A custom Action whose ``__call__`` always raises (SGLang's DeprecatedAction in 0.5.x)."""
    if not isinstance(action, ClassObj):
        return False
    for cls in action.mro():
        if not isinstance(cls, ClassObj):
            continue
        call = next((st for st in cls.node.body if isinstance(st, ast.FunctionDef) and st.name == "__call__"), None)
        if call is not None:
            body = [st for st in call.body if not (isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant))]
            return bool(body) and isinstance(body[0], ast.Raise)
    return False


def derive_dest(options: list[str]) -> str:
    """argparse: the first ``--long`` option, else the first option; dashes become underscores."""
    longs = [o for o in options if o.startswith("--")]
    chosen = longs[0] if longs else options[0]
    return chosen.lstrip("-").replace("-", "_")


def action_name(action: Any) -> str:
    if action is None:
        return "store"
    if isinstance(action, str):
        return action
    if isinstance(action, Marker):
        return action.name.rsplit(".", 1)[-1]
    if isinstance(action, ClassObj):
        for cls in action.mro():
            if isinstance(cls, Marker) and cls.name in ("argparse._StoreTrueAction",):
                return f"{action.name}(store_true)"
        return action.name
    return "custom"


def custom_action_param(action: Any, param: str) -> Any:
    """A parameter a custom Action class fixes in its ``__init__`` (``nargs=0``, ``default=False``).

    Returns ``...`` when the class says nothing about it.
    """
    if not isinstance(action, ClassObj):
        return ...
    for cls in action.mro():
        if isinstance(cls, Marker) and param == "nargs" and cls.name in (
                "argparse._StoreTrueAction", "argparse._StoreConstAction"):
            return 0
        if not isinstance(cls, ClassObj):
            continue
        init = next((st for st in cls.node.body if isinstance(st, ast.FunctionDef) and st.name == "__init__"), None)
        if init is None:
            continue
        positional = [p.arg for p in init.args.args]
        defaults = dict(zip(positional[len(positional) - len(init.args.defaults):], init.args.defaults, strict=False))
        defaults.update({p.arg: d for p, d in zip(init.args.kwonlyargs, init.args.kw_defaults, strict=False) if d is not None})
        if param in defaults:
            try:
                return ast.literal_eval(defaults[param])
            except ValueError:
                return ...
        for node in ast.walk(init):  # super().__init__(..., nargs=0, ...)
            if isinstance(node, ast.keyword) and node.arg == param and isinstance(node.value, ast.Constant):
                return node.value.value
    return ...


_KIND_BY_NAME = (("human_readable_int_or_auto", "int_hr_auto"), ("human_readable", "int_hr"), ("json", "json"), ("dict", "json"), ("dataclass", "json"), ("config", "json"),
                 ("int", "int"), ("float", "float"), ("bool", "bool"))


def value_kind(tp: Any, depth: int = 0) -> str:
    """What the ``type=`` callable turns a value into: int, float, str, bool, json, or int_hr
    (vLLM's human-readable integers: ``32k``, ``1M``; ``int_hr_auto`` also takes ``auto``)."""
    if tp is None or unknown(tp):
        return "str"
    if tp in (int, float, str, bool):
        return tp.__name__
    if tp is json.loads:
        return "json"
    if isinstance(tp, BoundMethod):
        tp = tp.func
    if isinstance(tp, FunctionObj):
        name = tp.name.lower()
        for needle, kind in _KIND_BY_NAME:
            if needle in name and not (needle == "int" and "print" in name):
                return kind
        if depth < 3:  # closures such as optional_type(int): the wrapped callable decides
            scope = tp.scope
            for value in (scope.vars.values() if scope is not None else []):
                if value in (int, float, bool, json.loads) or isinstance(value, FunctionObj):
                    return value_kind(value, depth + 1)
        return "str"
    return "str"


def short_help(text: str, limit: int = 300) -> str:
    text = " ".join(text.replace("%%", "%").split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = cut.rfind(". ")
    return (cut[: end + 1] if end > 80 else cut.rstrip() + "…")


def is_deprecated(kw: dict[str, Any], help_text: str) -> bool:
    if kw.get("deprecated") is True or isinstance(kw.get("deprecated"), str):
        return True
    action = kw.get("action")
    if isinstance(action, ClassObj) and "deprecat" in action.name.lower():
        return True
    return bool(_DEPRECATED.search(help_text))


def replacement_flag(help_text: str, own: list[str]) -> str | None:
    for flag in _FLAG_IN_TEXT.findall(help_text):
        if flag not in own:
            return flag
    return None


def to_json(value: Any) -> tuple[Any, bool]:
    """A JSON-able copy of ``value`` and whether it was knowable at all."""
    if value is None or isinstance(value, (bool, int, str)):
        return value, True
    if isinstance(value, float):
        return (value if math.isfinite(value) else str(value)), True
    if isinstance(value, EnumMember):
        inner, ok = to_json(value.value)
        return (inner if ok else value.name), True
    if isinstance(value, enum.Enum):
        return value.name, True
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [to_json(v) for v in value]
        out = [v for v, _ in items]
        if isinstance(value, (set, frozenset)):
            out = sorted(out, key=repr)
        return out, all(ok for _, ok in items)
    if isinstance(value, dict):
        out_d: dict[str, Any] = {}
        ok_all = True
        for k, v in value.items():
            jv, ok = to_json(v)
            out_d[str(to_json(k)[0])] = jv
            ok_all = ok_all and ok
        return out_d, ok_all
    if unknown(value) or isinstance(value, (Obj,)):
        return None, False
    return None, False


def json_list(value: Any) -> tuple[list[Any] | None, bool]:
    if value is None or unknown(value) or isinstance(value, (str, Obj)):
        return None, False
    try:
        items = list(value)
    except TypeError:
        return None, False
    converted = [to_json(v) for v in items]
    if not all(ok for _, ok in converted):
        return None, False
    out = [v for v, _ in converted]
    if isinstance(value, (set, frozenset)):
        out = sorted(out, key=repr)
    return out, True
