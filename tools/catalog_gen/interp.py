"""A small abstract interpreter: runs an engine's argparse set-up on its *source*, never its code.

Why an interpreter and not a list of regexes: since vLLM 0.9 most flags are built from config
dataclasses through ``get_kwargs`` (field types → choices, BooleanOptionalAction, defaults), and
SGLang moved from hand-written ``add_argument`` calls to ``Annotated`` field metadata. Both rules
change between versions. Reading each version's own rule (its ``_compute_kwargs``, its
``add_cli_args_from_dataclass``) by walking its AST keeps the catalog faithful to that version
without us re-implementing — or hard-coding — what the engine does.

What it is: an evaluator over Python ASTs read from the wheel (``WheelSource``) in which

* constants, containers, f-strings, comprehensions, ``typing`` forms (``Literal[...]``, ``X | None``,
  ``Annotated``) are real Python values, so the engine's own helper functions (``get_type_hints``,
  ``literal_to_kwargs``, ``contains_type``) run on them faithfully;
* modules, classes, functions, dataclass fields and enum members of the engine are stand-ins
  (``ModuleObj``, ``ClassObj``, ``FunctionObj``, ``FieldObj``, ``EnumMember``) read from source;
* anything that depends on the machine, torch, the environment or another package is ``Unknown``
  and absorbs every operation (``Unknown.__bool__`` raises, so a real builtin can never silently
  treat it as true);
* an ``if`` on an unknown condition runs both branches, so flags registered conditionally are kept;
* nothing from the wheel is imported or executed: only a whitelist of pure builtins is ever called,
  and only on plain data.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import itertools
import json
import math
import operator
import os
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from tools.catalog_gen.wheel import WheelSource

DEBUG = bool(os.environ.get("CATALOG_GEN_DEBUG"))
MAX_DEPTH = 60
MAX_LOOP = 5000
PYTHON_VERSION = (3, 12, 0, "final", 0)  # the interpreter the engines' images ship


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------
class Unknown:
    """A value the static reader cannot know. Every operation on it gives another Unknown."""


    __slots__ = ("why",)

    def __init__(self, why: str = "") -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<unknown {self.why}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Unknown:  # callable, so typing.Union accepts it
        return Unknown(self.why)

    def __bool__(self) -> bool:
        raise TypeError("truth of an unknown value")

    def __iter__(self) -> Any:
        raise TypeError("iterating an unknown value")

    def __len__(self) -> int:
        raise TypeError("length of an unknown value")

    def __or__(self, other: Any) -> Any:
        return typing.Union[self, other]  # noqa: UP007 - building the engine's own union

    def __ror__(self, other: Any) -> Any:
        return typing.Union[other, self]  # noqa: UP007

    def __deepcopy__(self, memo: dict) -> Unknown:
        return self


class ExternalName(Unknown):
    """A name from a package outside the wheel (``torch``, ``torch.dtype``): unknown, but known not to be a
    builtin type (see ``_identity_with_external``)."""

    __slots__ = ()


def unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


class _Missing:
    """Not-found marker for name lookups (distinct from a found None)."""


MISSING_NAME = _Missing()
NODEFAULT = type("NODEFAULT", (), {"__repr__": lambda self: "NODEFAULT"})()


class Obj:
    """Base of the interpreter's stand-ins for engine objects."""

    interp: Interp

    def getattr_(self, name: str) -> Any:
        return Unknown(f"{self!r}.{name}")

    def __deepcopy__(self, memo: dict) -> Obj:
        return self

    def __or__(self, other: Any) -> Any:
        return typing.Union[self, other]  # noqa: UP007

    def __ror__(self, other: Any) -> Any:
        return typing.Union[other, self]  # noqa: UP007

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.interp.call(self, list(args), kwargs)


class Native(Obj):
    """A Python callable the interpreter may call directly (parser sinks, handlers)."""

    def __init__(self, fn: Callable[..., Any], name: str = "") -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "native")

    def __repr__(self) -> str:
        return f"<native {self.name}>"


class Marker(Obj):
    """A named external object that matters by identity (``argparse.BooleanOptionalAction``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return Unknown(self.name)


class Annotating(Marker):
    """``pydantic.SkipValidation[T]`` and friends: subscripting gives ``Annotated[T, marker]``."""

    def getitem_(self, key: Any) -> Any:
        return typing.Annotated[key, self]


class Scope:
    """Local names of a running function (or a class body, or a comprehension)."""

    def __init__(self, module: ModuleObj, parent: Scope | None = None,
                 func: FunctionObj | None = None, args: list[Any] | None = None) -> None:
        self.module = module
        self.parent = parent
        self.vars: dict[str, Any] = {}
        self.func = func
        self.args = args or []

    def lookup(self, name: str) -> Any:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        value = self.module.get(name)
        if value is MISSING_NAME:
            return self.module.interp.builtin(name)
        return value


class ClassScope(Scope):
    """A class body: earlier class attributes are visible to later ones (``B = A + [...]``)."""

    def __init__(self, cls: ClassObj, parent: Scope | None) -> None:
        super().__init__(cls.module, parent=parent)
        self.cls = cls

    def lookup(self, name: str) -> Any:
        if name in self.vars:
            return self.vars[name]
        if name in self.cls._attr_nodes and not self.cls.is_enum:
            found = self.cls._own_attr(name, self.cls)
            if found is not MISSING_NAME:
                return found
        return super().lookup(name)


class ModuleObj(Obj):
    """One module of the wheel; globals are bound lazily, in source order, when first read."""

    def __init__(self, interp: Interp, name: str) -> None:
        self.interp = interp
        self.name = name
        self.path = interp.src.path(name)
        self.tree = interp.src.tree(name)
        self.package = name if interp.src.is_package(name) else name.rpartition(".")[0]
        self.bindings: dict[str, list[tuple[ast.stmt, bool]]] = {}
        self.cache: dict[str, Any] = {}
        self._busy: set[str] = set()
        self.scope = Scope(self)
        if self.tree is not None:
            self._index(self.tree.body, fallback=False)

    def __repr__(self) -> str:
        return f"<module {self.name}>"

    def _index(self, stmts: list[ast.stmt], fallback: bool) -> None:
        for st in stmts:
            if isinstance(st, ast.If):
                test = static_test(st.test)
                if test is not False:
                    self._index(st.body, fallback)
                if test is not True:
                    self._index(st.orelse, fallback)
            elif isinstance(st, ast.Try):
                self._index(st.body, fallback)
                for handler in st.handlers:
                    self._index(handler.body, True)
                self._index(st.orelse, fallback)
                self._index(st.finalbody, fallback)
            elif isinstance(st, ast.With):
                self._index(st.body, fallback)
            else:
                for name in bound_names(st):
                    self.bindings.setdefault(name, []).append((st, fallback))

    def get(self, name: str) -> Any:
        override = self.interp.overrides.get(f"{self.name}.{name}", MISSING_NAME)
        if override is not MISSING_NAME:
            return override
        if name in self.cache:
            return self.cache[name]
        entries = self.bindings.get(name)
        if not entries:
            sub = f"{self.name}.{name}"
            if self.interp.src.has_module(sub):
                return self.interp.module(sub)
            return MISSING_NAME
        if name in self._busy:
            return Unknown(f"cycle {self.name}.{name}")
        self._busy.add(name)
        value: Any = MISSING_NAME
        try:
            for st, fallback in entries:
                if fallback and value is not MISSING_NAME and not unknown(value):
                    continue
                new = self.interp.bind_stmt(st, name, value, self.scope)
                if unknown(new) and value is not MISSING_NAME and not unknown(value):
                    continue  # keep the best static knowledge (e.g. a class later wrapped by a runtime call)
                value = new
        finally:
            self._busy.discard(name)
        self.cache[name] = value
        return value

    def getattr_(self, name: str) -> Any:
        value = self.get(name)
        return Unknown(f"{self.name}.{name}") if value is MISSING_NAME else value


class ExternalModule(Obj):
    """A module outside the wheel: known stand-ins for a few stdlib names, Unknown for the rest."""

    def __init__(self, interp: Interp, name: str, attrs: dict[str, Any]) -> None:
        self.interp = interp
        self.name = name
        self.attrs = attrs

    def __repr__(self) -> str:
        return f"<external {self.name}>"

    def getattr_(self, name: str) -> Any:
        if name in self.attrs:
            value = self.attrs[name]
            return ExternalModule(self.interp, f"{self.name}.{name}", value) if isinstance(value, dict) else value
        return self.interp.external(f"{self.name}.{name}")


@dataclasses.dataclass(eq=False)
class FieldObj:
    """A dataclass / msgspec / pydantic field read from a class body (what ``fields(cls)`` yields)."""

    name: str
    type: Any
    default: Any
    default_factory: Any
    doc: str
    owner: ClassObj
    lineno: int
    init: bool = True
    metadata: dict = dataclasses.field(default_factory=dict)

    def __deepcopy__(self, memo: dict) -> FieldObj:
        return self


class EnumMember(Obj):
    def __init__(self, cls: ClassObj, name: str, value: Any) -> None:
        self.interp = cls.interp
        self.cls = cls
        self.name = name
        self.value = value

    def __repr__(self) -> str:
        return f"{self.cls.name}.{self.name}"

    def getattr_(self, name: str) -> Any:
        if name == "name":
            return self.name
        if name == "value":
            return self.value
        return self.cls.getattr_(name)


class ClassObj(Obj):
    """A class of the engine, read from its body: attributes, methods, fields, enum members."""

    def __init__(self, module: ModuleObj, node: ast.ClassDef, scope: Scope) -> None:
        self.interp = module.interp
        self.module = module
        self.node = node
        self.name = node.name
        self.scope = scope
        self.overrides: dict[str, Any] = {}
        #: classes whose fields are appended to this one's (set by an engine driver when a
        #: version assembles a record from namespaces at import time).
        self.extra_field_classes: list[ClassObj] = []
        #: bases a runtime rebuild adds (``msgspec.defstruct(...)`` turning a class into a Struct)
        self.extra_bases: list[Any] = []
        self._bases: list[Any] | None = None
        self._fields: list[FieldObj] | None = None
        self._attr_nodes: dict[str, ast.stmt] = {}
        self._attr_cache: dict[str, Any] = {}
        self.body_scope = ClassScope(self, parent=scope if scope is not module.scope else None)
        self._members: list[EnumMember] | None = None
        for st in node.body:
            for name in bound_names(st):
                self._attr_nodes[name] = st

    def __repr__(self) -> str:
        return f"<class {self.module.name}.{self.name}>"

    def __hash__(self) -> int:
        return id(self)

    @property
    def bases(self) -> list[Any]:
        if self._bases is None:
            self._bases = [self.interp.eval(b, self.scope) for b in self.node.bases]
        return self._bases + self.extra_bases

    def mro(self) -> list[Any]:
        out: list[Any] = [self]
        for base in self.bases:
            chain = base.mro() if isinstance(base, ClassObj) else [base]
            out.extend(b for b in chain if b not in out)
        return out

    def decorator_names(self) -> set[str]:
        return {terminal_name(d.func if isinstance(d, ast.Call) else d) for d in self.node.decorator_list}

    @property
    def is_enum(self) -> bool:
        return any(isinstance(b, Marker) and b.name.startswith("enum.") for b in self.mro()[1:])

    @property
    def is_struct(self) -> bool:
        return any(isinstance(b, Marker) and b.name == "msgspec.Struct" for b in self.mro()[1:])

    @property
    def is_record(self) -> bool:
        """dataclass, pydantic dataclass, vLLM ``@config``, msgspec Struct or pydantic model."""
        for cls in self.mro():
            if isinstance(cls, ClassObj) and cls.decorator_names() & {"dataclass", "config"}:
                return True
            if isinstance(cls, Marker) and cls.name in ("msgspec.Struct", "pydantic.BaseModel"):
                return True
        return False

    def members(self) -> list[EnumMember]:
        if self._members is None:
            self._members = self._read_members()
        return self._members

    def _read_members(self) -> list[EnumMember]:
        out = []
        for st in self.node.body:
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                name = st.targets[0].id
                if not name.startswith("_"):
                    out.append(EnumMember(self, name, self.interp.eval(st.value, self.body_scope)))
            elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                name = st.target.id
                if not name.startswith("_"):
                    out.append(EnumMember(self, name, self.interp.eval(st.value, self.body_scope)))
        return out

    def __iter__(self) -> Any:
        if not self.is_enum:
            raise TypeError(f"{self.name} is not iterable")
        return iter(self.members())

    def fields(self) -> list[FieldObj]:
        if self._fields is None:
            ordered: dict[str, FieldObj] = {}
            for base in reversed(self.bases):
                if isinstance(base, ClassObj):
                    for f in base.fields():
                        ordered[f.name] = f
            for f in self._own_fields():
                ordered[f.name] = f
            for extra in self.extra_field_classes:
                for f in extra.fields():
                    ordered.setdefault(f.name, f)
            self._fields = list(ordered.values())
        return self._fields

    def _own_fields(self) -> list[FieldObj]:
        out = []
        body = self.node.body
        absent = NODEFAULT if self.is_struct else dataclasses.MISSING
        for i, st in enumerate(body):
            if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
                continue
            ann_text = ast.unparse(st.annotation)
            if "ClassVar" in ann_text or "InitVar" in ann_text:
                continue
            doc = ""
            nxt = body[i + 1] if i + 1 < len(body) else None
            if isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str):
                doc = nxt.value.value
            default, factory, init = absent, absent, True
            if st.value is not None:
                default, factory, init = self._field_default(st.value, absent)
            annotation = self.interp.eval_annotation(st.annotation, self.body_scope)
            out.append(FieldObj(st.target.id, annotation, default, factory, doc, self, st.lineno, init))
        return out

    def _field_default(self, node: ast.expr, absent: Any) -> tuple[Any, Any, bool]:
        if isinstance(node, ast.Call) and terminal_name(node.func) in ("field", "Field"):
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            init = True
            if "init" in kw:
                init = self.interp.eval(kw["init"], self.body_scope) is not False
            if "default" in kw:
                return self.interp.eval(kw["default"], self.body_scope), absent, init
            if "default_factory" in kw:
                return absent, self.interp.eval(kw["default_factory"], self.body_scope), init
            if node.args and terminal_name(node.func) == "Field":  # pydantic Field(default)
                return self.interp.eval(node.args[0], self.body_scope), absent, init
            return absent, absent, init
        return self.interp.eval(node, self.body_scope), absent, True

    def field(self, name: str) -> FieldObj | None:
        return next((f for f in self.fields() if f.name == name), None)

    def docstring(self) -> str:
        return ast.get_docstring(self.node) or ""

    def getattr_(self, name: str) -> Any:
        if name in self.overrides:
            return self.overrides[name]
        if name == "__name__":
            return self.name
        if name == "__doc__":
            return self.docstring()
        if name == "__module__":
            return self.module.name
        for cls in self.mro():
            if isinstance(cls, ClassObj):
                found = cls._own_attr(name, self)
                if found is not MISSING_NAME:
                    return found
        # a record field without a class-level default still "has" its declared default
        f = self.field(name) if self.is_record else None
        if f is not None and f.default not in (dataclasses.MISSING, NODEFAULT):
            return f.default
        return Unknown(f"{self.name}.{name}")

    def _own_attr(self, name: str, bound_cls: ClassObj) -> Any:
        st = self._attr_nodes.get(name)
        if st is None:
            return MISSING_NAME
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kind = method_kind(st)
            fn = FunctionObj(self.module, st, self.scope, owner=self, kind=kind)
            if kind == "classmethod":
                return BoundMethod(fn, bound_cls)
            return fn
        if name in self._attr_cache:
            return self._attr_cache[name]
        if self.is_enum and isinstance(st, (ast.Assign, ast.AnnAssign)):
            value: Any = next((m for m in self.members() if m.name == name), MISSING_NAME)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            default, _factory, _init = self._field_default(st.value, dataclasses.MISSING)
            value = Unknown(f"{self.name}.{name}") if default is dataclasses.MISSING else default
        else:
            value = self.interp.bind_stmt(st, name, MISSING_NAME, self.body_scope)
        self._attr_cache[name] = value
        return value

    def attr_doc(self) -> dict[str, str]:
        """Field docstrings, what vLLM's ``get_attr_docs`` returns for help texts."""
        return {f.name: f.doc for f in self.fields() if f.doc}


class InstanceObj(Obj):
    """An instance of an engine class built in source (``Arg(help=..., aliases=[...])``)."""

    def __init__(self, cls: ClassObj, args: list[Any], kwargs: dict[str, Any]) -> None:
        self.interp = cls.interp
        self.cls = cls
        self.attrs: dict[str, Any] = {}
        fields = cls.fields() if cls.is_record else []
        for f, value in zip(fields, args, strict=False):
            self.attrs[f.name] = value
        self.attrs.update(kwargs)

    def __repr__(self) -> str:
        return f"<{self.cls.name} instance>"

    def getattr_(self, name: str) -> Any:
        if name in self.attrs:
            return self.attrs[name]
        f = self.cls.field(name) if self.cls.is_record else None
        if f is not None:
            if f.default not in (dataclasses.MISSING, NODEFAULT):
                return f.default
            if f.default_factory not in (dataclasses.MISSING, NODEFAULT):
                return self.interp.call(f.default_factory, [], {})
        value = self.cls.getattr_(name)
        if isinstance(value, FunctionObj) and value.kind == "function":
            return BoundMethod(value, self)
        if isinstance(value, FunctionObj) and value.kind == "property":
            return self.interp.call(value, [self], {})
        return value


class FunctionObj(Obj):
    def __init__(self, module: ModuleObj, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
                 scope: Scope, owner: ClassObj | None = None, kind: str = "function") -> None:
        self.interp = module.interp
        self.module = module
        self.node = node
        self.scope = scope
        self.owner = owner
        self.kind = kind
        self.name = getattr(node, "name", "<lambda>")

    def __repr__(self) -> str:
        return f"<function {self.module.name}.{self.qualname}>"

    def __hash__(self) -> int:
        return id(self)

    @property
    def qualname(self) -> str:
        return f"{self.owner.name}.{self.name}" if self.owner else self.name

    def getattr_(self, name: str) -> Any:
        if name == "__name__":
            return self.name
        if name == "__doc__":
            return ast.get_docstring(self.node) if not isinstance(self.node, ast.Lambda) else None
        return Unknown(f"{self.name}.{name}")


class BoundMethod(Obj):
    def __init__(self, func: FunctionObj, self_obj: Any) -> None:
        self.interp = func.interp
        self.func = func
        self.self_obj = self_obj

    def __repr__(self) -> str:
        return f"<bound {self.func!r}>"


class SuperObj(Obj):
    """``super()`` inside a method: attribute lookup starts after the defining class."""

    def __init__(self, start: ClassObj, bound: Any) -> None:
        self.interp = start.interp
        self.start = start
        self.bound = bound

    def getattr_(self, name: str) -> Any:
        bound_cls = self.bound if isinstance(self.bound, ClassObj) else getattr(self.bound, "cls", None)
        mro = bound_cls.mro() if isinstance(bound_cls, ClassObj) else self.start.mro()
        after = mro[mro.index(self.start) + 1:] if self.start in mro else self.start.mro()[1:]
        for cls in after:
            if isinstance(cls, ClassObj):
                found = cls._own_attr(name, bound_cls if isinstance(bound_cls, ClassObj) else cls)
                if found is MISSING_NAME:
                    continue
                if isinstance(found, FunctionObj) and found.kind == "function" and not isinstance(self.bound, ClassObj):
                    return BoundMethod(found, self.bound)
                return found
        return Unknown(f"super().{name}")


class _Return(Exception):  # noqa: N818 - control-flow signals, not errors
    def __init__(self, value: Any) -> None:
        self.value = value


class _Abort(Exception):  # noqa: N818
    """A ``raise`` was reached: the current path ends here."""


class _Break(Exception):  # noqa: N818
    pass


class _Continue(Exception):  # noqa: N818
    pass


# ---------------------------------------------------------------------------------------------
# Static helpers
# ---------------------------------------------------------------------------------------------
def terminal_name(node: ast.expr) -> str:
    """``a.b.c`` → ``c``; ``name`` → ``name``; anything else → ''."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def method_kind(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    for dec in node.decorator_list:
        name = terminal_name(dec.func if isinstance(dec, ast.Call) else dec)
        if name in ("staticmethod", "classmethod", "property", "cached_property"):
            return "property" if name == "cached_property" else name
    return "function"


def static_test(test: ast.expr) -> bool | None:
    """Module-level ``if`` tests decidable without running anything (TYPE_CHECKING, version checks)."""
    text = ast.unparse(test)
    if text in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
        return False
    if text in ("not TYPE_CHECKING", "not typing.TYPE_CHECKING"):
        return True
    if isinstance(test, ast.Compare) and ast.unparse(test.left).startswith("sys.version_info"):
        try:
            right = ast.literal_eval(test.comparators[0])
            return _compare(test.ops[0], PYTHON_VERSION[: len(right)], right)
        except (ValueError, TypeError, IndexError):
            return None
    return None


def bound_names(st: ast.stmt) -> list[str]:
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [st.name]
    if isinstance(st, ast.Assign):
        return [n for t in st.targets for n in _target_names(t)]
    if isinstance(st, (ast.AnnAssign, ast.AugAssign)):
        return _target_names(st.target) if (not isinstance(st, ast.AnnAssign) or st.value is not None) else []
    if isinstance(st, ast.Import):
        return [(a.asname or a.name.split(".")[0]) for a in st.names]
    if isinstance(st, ast.ImportFrom):
        return [(a.asname or a.name) for a in st.names if a.name != "*"]
    return []


def _target_names(t: ast.expr) -> list[str]:
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, (ast.Tuple, ast.List)):
        return [n for e in t.elts for n in _target_names(e)]
    return []


_CMP = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
        ast.Gt: operator.gt, ast.GtE: operator.ge}
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
        ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor,
        ast.LShift: operator.lshift, ast.RShift: operator.rshift}


def _compare(op: ast.cmpop, left: Any, right: Any) -> Any:
    if isinstance(op, ast.Is):
        return left is right
    if isinstance(op, ast.IsNot):
        return left is not right
    if isinstance(op, ast.In):
        return left in right
    if isinstance(op, ast.NotIn):
        return left not in right
    return _CMP[type(op)](left, right)


def _identity_with_external(op: ast.cmpop, left: Any, right: Any) -> bool | None:
    """``x is bool`` where x is a name from a package outside the wheel (``torch.dtype`` in vLLM 0.9.0's
    ``Union[ModelDType, torch.dtype]``): an object defined elsewhere is never a builtin type or a typing form,
    so identity is decided (False for ``is``) instead of Unknown — which made vLLM 0.9.0's ``get_kwargs`` take
    its ``contains_type(type_hints, bool)`` branch for ``--dtype``. None: not that case."""
    def plain(x: Any) -> bool:  # a builtin type or a typing form: never the same object as an outside name
        return not unknown(x) and ((isinstance(x, type) and x.__module__ == "builtins")
                                   or getattr(x, "__module__", None) == "typing")

    if isinstance(op, (ast.In, ast.NotIn)) and plain(left) and isinstance(right, (list, tuple, set, frozenset)) \
            and all(isinstance(e, ExternalName) or not _contains_unknown(e) for e in right):
        found = any(e == left for e in right if not unknown(e))  # `type(None) in type_hints`, same reasoning
        return found if isinstance(op, ast.In) else not found
    if not isinstance(op, (ast.Is, ast.IsNot)):
        return None
    for ext, other in ((left, right), (right, left)):
        if isinstance(ext, ExternalName) and plain(other):
            return isinstance(op, ast.IsNot)
    return None


def _contains_unknown(value: Any, depth: int = 0) -> bool:
    if unknown(value):
        return True
    if depth < 3 and isinstance(value, (list, tuple, set, frozenset)):
        return any(_contains_unknown(v, depth + 1) for v in value)
    if depth < 3 and isinstance(value, dict):
        return any(_contains_unknown(v, depth + 1) for v in list(value.keys()) + list(value.values()))
    return False


#: Plain-data types whose (non-dunder) methods are safe to call for real.
DATA_TYPES = (str, bytes, int, float, bool, list, dict, tuple, set, frozenset, type(None), range, slice,
              type({}.keys()), type({}.values()), type({}.items()))


def _is_typing_object(value: Any) -> bool:
    return type(value).__module__ in ("typing", "types", "typing_extensions") or value in (
        int, str, float, bool, list, dict, tuple, set, frozenset, bytes, object, type(None))


# ---------------------------------------------------------------------------------------------
# The interpreter
# ---------------------------------------------------------------------------------------------
class Interp:
    """Evaluates engine source. ``handlers`` replace engine functions by qualified name
    (``module.Class.func``) where reading them would need the real runtime."""

    def __init__(self, src: WheelSource, *, handlers: dict[str, Callable[..., Any]] | None = None,
                 overrides: dict[str, Any] | None = None) -> None:
        self.src = src
        self.handlers = handlers or {}
        self.overrides = overrides or {}
        self.modules: dict[str, ModuleObj] = {}
        self.depth = 0
        #: (module path, line) of the call being evaluated; parser sinks read it to cite sources.
        self.site: tuple[str, int] = ("", 0)
        #: the scope that made the call being evaluated (parser sinks look for the field being registered)
        self.call_scope: Scope | None = None
        self._externals = self._external_table()
        self._builtins = self._builtin_table()

    # -- modules ---------------------------------------------------------------------------
    def module(self, name: str) -> Any:
        if name in self.modules:
            return self.modules[name]
        if self.src.has_module(name):
            if self.src.tree(name) is None:
                return Unknown(f"unparsable {name}")
            mod = ModuleObj(self, name)
            self.modules[name] = mod
            return mod
        return self.external(name)

    def external(self, dotted: str) -> Any:
        if dotted in self._externals:
            value = self._externals[dotted]
            return ExternalModule(self, dotted, value) if isinstance(value, dict) else value
        return ExternalName(dotted)

    def resolve_from(self, module: ModuleObj, node: ast.ImportFrom, alias: str) -> Any:
        base = node.module or ""
        if node.level:
            pkg = module.package.split(".") if module.package else []
            pkg = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
            base = ".".join(pkg + ([base] if base else []))
        sub = f"{base}.{alias}"
        if self.src.has_module(sub):
            return self.module(sub)
        target = self.module(base)
        if isinstance(target, ModuleObj):
            value = target.get(alias)
            return Unknown(f"{base}.{alias}") if value is MISSING_NAME else value
        if isinstance(target, ExternalModule):
            return target.getattr_(alias)
        return self.external(sub)

    # -- statements that bind names ------------------------------------------------------------
    def bind_stmt(self, st: ast.stmt, name: str, previous: Any, scope: Scope) -> Any:
        module = scope.module
        try:
            if isinstance(st, ast.Import):
                for a in st.names:
                    if (a.asname or a.name.split(".")[0]) == name:
                        return self.module(a.name if a.asname else a.name.split(".")[0])
            elif isinstance(st, ast.ImportFrom):
                for a in st.names:
                    if (a.asname or a.name) == name:
                        return self.resolve_from(module, st, a.name)
            elif isinstance(st, ast.ClassDef):
                return ClassObj(module, st, scope)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return FunctionObj(module, st, scope, kind=method_kind(st))
            elif isinstance(st, ast.Assign):
                value = self.eval(st.value, scope)
                for target in st.targets:
                    found = _pick_target(target, name, value)
                    if found is not MISSING_NAME:
                        return found
            elif isinstance(st, ast.AnnAssign) and st.value is not None:
                return self.eval(st.value, scope)
            elif isinstance(st, ast.AugAssign):
                if previous is MISSING_NAME:
                    return Unknown(name)
                return self.binop(st.op, previous, self.eval(st.value, scope))
        except (_Return, _Abort, _Break, _Continue):
            pass
        return Unknown(name)

    # -- annotations -----------------------------------------------------------------------
    def eval_annotation(self, node: ast.expr, scope: Scope) -> Any:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except SyntaxError:
                return Unknown(node.value)
        return self.eval(node, scope)

    # -- expressions -----------------------------------------------------------------------
    def eval(self, node: ast.expr, scope: Scope) -> Any:
        try:
            return self._eval(node, scope)
        except (_Return, _Abort, _Break, _Continue):
            raise
        except RecursionError:
            return Unknown("recursion")
        except Exception as exc:  # noqa: BLE001 - any failure of a real op means "not knowable"
            if DEBUG:
                import traceback
                traceback.print_exc()
            return Unknown(f"{type(exc).__name__}")

    def _eval(self, node: ast.expr, scope: Scope) -> Any:  # noqa: C901 - one case per node type
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            value = scope.lookup(node.id)
            return Unknown(node.id) if value is MISSING_NAME else value
        if isinstance(node, ast.Attribute):
            return self.getattr_(self.eval(node.value, scope), node.attr)
        if isinstance(node, ast.Subscript):
            return self.getitem(self.eval(node.value, scope), self.eval(node.slice, scope))
        if isinstance(node, ast.Call):
            return self.eval_call(node, scope)
        if isinstance(node, ast.BinOp):
            return self.binop(node.op, self.eval(node.left, scope), self.eval(node.right, scope))
        if isinstance(node, ast.UnaryOp):
            operand = self.eval(node.operand, scope)
            if isinstance(node.op, ast.Not):
                t = self.truth(operand)
                return Unknown("not") if t is None else not t
            if unknown(operand):
                return operand
            return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)](operand)
        if isinstance(node, ast.BoolOp):
            return self._boolop(node, scope)
        if isinstance(node, ast.Compare):
            left = self.eval(node.left, scope)
            for op, comp in zip(node.ops, node.comparators, strict=False):
                right = self.eval(comp, scope)
                decided = _identity_with_external(op, left, right)
                if decided is not None:
                    if not decided:
                        return False
                    left = right
                    continue
                if _contains_unknown(left) or _contains_unknown(right):
                    return Unknown("compare")
                if not _compare(op, left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            t = self.truth(self.eval(node.test, scope))
            if t is None:
                return Unknown("ifexp")
            return self.eval(node.body if t else node.orelse, scope)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = self._elements(node.elts, scope)
            if unknown(items):
                return items
            if isinstance(node, ast.Tuple):
                return tuple(items)
            return set(items) if isinstance(node, ast.Set) else items
        if isinstance(node, ast.Dict):
            out: dict[Any, Any] = {}
            for k, v in zip(node.keys, node.values, strict=False):
                if k is None:
                    extra = self.eval(v, scope)
                    if not isinstance(extra, dict):
                        return Unknown("**")
                    out.update(extra)
                else:
                    out[self.eval(k, scope)] = self.eval(v, scope)
            return out
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            return self._comprehension(node, scope)
        if isinstance(node, ast.Lambda):
            return FunctionObj(scope.module, node, scope)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                    continue
                v = self.eval(value.value, scope)  # FormattedValue
                if _contains_unknown(v) or isinstance(v, Obj):
                    return Unknown("f-string")
                if value.conversion == ord("r"):
                    v = repr(v)
                spec = self.eval(value.format_spec, scope) if value.format_spec else ""
                parts.append(format(v, spec) if spec else str(v))
            return "".join(parts)
        if isinstance(node, ast.NamedExpr):
            value = self.eval(node.value, scope)
            scope.vars[node.target.id] = value
            return value
        if isinstance(node, ast.Slice):
            parts = [self.eval(p, scope) if p is not None else None for p in (node.lower, node.upper, node.step)]
            return Unknown("slice") if any(unknown(p) for p in parts) else slice(*parts)
        return Unknown(type(node).__name__)

    def _elements(self, elts: list[ast.expr], scope: Scope) -> Any:
        items: list[Any] = []
        for e in elts:
            if isinstance(e, ast.Starred):
                value = self.eval(e.value, scope)
                if unknown(value) or isinstance(value, Obj) and not isinstance(value, ClassObj):
                    return Unknown("*")
                items.extend(value)
            else:
                items.append(self.eval(e, scope))
        return items

    def _boolop(self, node: ast.BoolOp, scope: Scope) -> Any:
        is_and = isinstance(node.op, ast.And)
        value: Any = None
        uncertain = False
        for sub in node.values:
            value = self.eval(sub, scope)
            t = self.truth(value)
            if t is None:
                uncertain = True
                continue
            if is_and and not t:
                return value if not uncertain else Unknown("and")
            if not is_and and t:
                return value if not uncertain else Unknown("or")
        return Unknown("boolop") if uncertain else value

    def _comprehension(self, node: ast.expr, scope: Scope) -> Any:
        inner = Scope(scope.module, parent=scope, func=scope.func, args=scope.args)
        results: list[Any] = []

        def run(gens: list[ast.comprehension]) -> None:
            if not gens:
                if isinstance(node, ast.DictComp):
                    results.append((self.eval(node.key, inner), self.eval(node.value, inner)))
                else:
                    results.append(self.eval(node.elt, inner))
                return
            gen = gens[0]
            iterable = self.eval(gen.iter, inner)
            for count, item in enumerate(self.iterate(iterable)):
                if count > MAX_LOOP:
                    break
                self.assign(gen.target, item, inner)
                ok = True
                for cond in gen.ifs:
                    t = self.truth(self.eval(cond, inner))
                    if t is None:
                        raise TypeError("unknown comprehension filter")
                    if not t:
                        ok = False
                        break
                if ok:
                    run(gens[1:])

        run(node.generators)
        if isinstance(node, ast.DictComp):
            return dict(results)
        if isinstance(node, ast.SetComp):
            return set(results)
        return iter(results) if isinstance(node, ast.GeneratorExp) else results

    def iterate(self, value: Any) -> Iterable[Any]:
        if unknown(value):
            raise TypeError("iterating an unknown value")
        if isinstance(value, ClassObj):
            return iter(value)
        if isinstance(value, Obj):
            raise TypeError(f"cannot iterate {value!r}")
        return iter(value)

    def truth(self, value: Any) -> bool | None:
        """True/False when knowable, None when not."""
        if unknown(value):
            return None
        if isinstance(value, (Obj, FieldObj)):
            return True
        try:
            return bool(value)
        except Exception:  # noqa: BLE001
            return None

    def binop(self, op: ast.operator, left: Any, right: Any) -> Any:
        if isinstance(op, ast.BitOr) and (isinstance(left, (Obj, Unknown)) or isinstance(right, (Obj, Unknown))
                                          or _is_typing_object(left) or _is_typing_object(right)):
            return typing.Union[left, right]  # noqa: UP007 - the engine's own `X | Y` annotation
        if _contains_unknown(left) or _contains_unknown(right):
            return Unknown("binop")
        if isinstance(left, Obj) or isinstance(right, Obj):
            return Unknown("binop on object")
        return _BIN[type(op)](left, right)

    def getattr_(self, obj: Any, name: str) -> Any:
        if isinstance(obj, ExternalName):
            return ExternalName(f"{obj.why}.{name}")
        if unknown(obj):
            return Unknown(f"{obj.why}.{name}")
        if isinstance(obj, Obj):
            return obj.getattr_(name)
        if isinstance(obj, FieldObj):
            return getattr(obj, name) if name in ("name", "type", "default", "default_factory", "metadata",
                                                  "init", "doc") else Unknown(name)
        if name.startswith("__") and name not in ("__name__", "__doc__", "__origin__", "__args__",
                                                  "__metadata__", "__module__", "__qualname__"):
            return Unknown(name)
        if isinstance(obj, DATA_TYPES) or _is_typing_object(obj) or isinstance(obj, type):
            return getattr(obj, name)
        return Unknown(name)

    def getitem(self, obj: Any, key: Any) -> Any:
        if unknown(obj) or unknown(key):
            return Unknown("getitem")
        if isinstance(obj, Annotating):
            return obj.getitem_(key)
        if isinstance(obj, ClassObj) and obj.is_enum:
            return next((m for m in obj.members() if m.name == key), Unknown(f"{obj.name}[{key}]"))
        if isinstance(obj, Obj):
            return Unknown(f"{obj!r}[...]")
        return obj[key]

    # -- calls -----------------------------------------------------------------------------
    def eval_call(self, node: ast.Call, scope: Scope) -> Any:
        func = self.eval(node.func, scope)
        args = self._elements(node.args, scope)
        if unknown(args):
            return args
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            value = self.eval(kw.value, scope)
            if kw.arg is None:
                if isinstance(value, dict):
                    kwargs.update(value)
                elif isinstance(func, Native):
                    kwargs["_kwargs_unknown"] = True  # keep the call (a flag's names) even so
                else:
                    return Unknown("**kwargs")
            else:
                kwargs[kw.arg] = value
        if isinstance(node.func, ast.Name) and node.func.id == "super" and not args:
            return self._super(scope)
        saved = self.site, self.call_scope
        self.site = (scope.module.path, node.lineno)
        self.call_scope = scope
        try:
            return self.call(func, args, kwargs)
        finally:
            self.site, self.call_scope = saved

    def _super(self, scope: Scope) -> Any:
        s: Scope | None = scope
        while s is not None and s.func is None:
            s = s.parent
        if s is None or s.func is None or s.func.owner is None or not s.args:
            return Unknown("super")
        return SuperObj(s.func.owner, s.args[0])

    def call(self, func: Any, args: list[Any], kwargs: dict[str, Any]) -> Any:
        if unknown(func):
            return Unknown(f"{func.why}()")
        if isinstance(func, Native):
            return func.fn(*args, **kwargs)
        if isinstance(func, BoundMethod):
            return self.call_function(func.func, [func.self_obj, *args], kwargs)
        if isinstance(func, FunctionObj):
            return self.call_function(func, args, kwargs)
        if isinstance(func, ClassObj):
            handler = self.handlers.get(f"{func.module.name}.{func.name}") or self.handlers.get(f"*.{func.name}")
            if handler is not None:
                return handler(self, args, kwargs)
            if func.is_enum:
                return next((m for m in func.members() if args and m.value == args[0]), Unknown(func.name))
            return InstanceObj(func, args, kwargs)
        if isinstance(func, Obj):
            return Unknown(f"call {func!r}")
        if func is type:
            return self._type(*args)
        if func in (typing.get_origin, typing.get_args) and len(args) == 1 and isinstance(args[0], ExternalName):
            # a bare name from outside the wheel (torch.dtype) is a plain class, not a subscripted typing form
            return None if func is typing.get_origin else ()
        if any(unknown(a) for a in args) or any(unknown(v) for v in kwargs.values()):
            return Unknown("call with unknown argument")
        if func in self._safe_callables or (callable(func) and getattr(func, "__self__", None) is not None
                                            and isinstance(func.__self__, DATA_TYPES)):
            return func(*args, **kwargs)
        return Unknown(f"call {func!r}")

    def call_function(self, fn: FunctionObj, args: list[Any], kwargs: dict[str, Any], *,
                      use_handlers: bool = True) -> Any:
        handler = (self.handlers.get(f"{fn.module.name}.{fn.qualname}") or self.handlers.get(f"*.{fn.qualname}")
                   if use_handlers else None)
        if handler is not None:
            return handler(self, args, kwargs)
        if self.depth >= MAX_DEPTH:
            return Unknown("depth")
        scope = Scope(fn.module, parent=fn.scope if fn.scope is not fn.module.scope else None,
                      func=fn, args=args)
        self._bind_args(fn, scope, args, kwargs)
        self.depth += 1
        try:
            if isinstance(fn.node, ast.Lambda):
                return self.eval(fn.node.body, scope)
            self.exec_block(fn.node.body, scope)
        except _Return as ret:
            return ret.value
        except (_Abort, _Break, _Continue):
            return Unknown(f"{fn.name} raised")
        finally:
            self.depth -= 1
        return None

    def _bind_args(self, fn: FunctionObj, scope: Scope, args: list[Any], kwargs: dict[str, Any]) -> None:
        a = fn.node.args
        positional = [p.arg for p in a.posonlyargs + a.args]
        defaults = a.defaults
        def_scope = fn.scope
        first_default = len(positional) - len(defaults)
        for i, name in enumerate(positional):
            if i < len(args):
                scope.vars[name] = args[i]
            elif name in kwargs:
                scope.vars[name] = kwargs.pop(name)
            elif i >= first_default:
                scope.vars[name] = self.eval(defaults[i - first_default], def_scope)
            else:
                scope.vars[name] = Unknown(f"arg {name}")
        if a.vararg:
            scope.vars[a.vararg.arg] = tuple(args[len(positional):])
        for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=False):
            if p.arg in kwargs:
                scope.vars[p.arg] = kwargs.pop(p.arg)
            else:
                scope.vars[p.arg] = self.eval(d, def_scope) if d is not None else Unknown(p.arg)
        if a.kwarg:
            scope.vars[a.kwarg.arg] = dict(kwargs)
        scope.args = [scope.vars.get(n) for n in positional]

    # -- statements ------------------------------------------------------------------------
    def exec_block(self, stmts: list[ast.stmt], scope: Scope) -> None:
        for st in stmts:
            self.exec_stmt(st, scope)

    def exec_stmt(self, st: ast.stmt, scope: Scope) -> None:  # noqa: C901 - one case per statement
        if isinstance(st, ast.Expr):
            self.eval(st.value, scope)
        elif isinstance(st, ast.Assign):
            value = self.eval(st.value, scope)
            for target in st.targets:
                self.assign(target, value, scope)
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self.assign(st.target, self.eval(st.value, scope), scope)
        elif isinstance(st, ast.AugAssign):
            current = self.eval(_as_load(st.target), scope)
            new = self.binop(st.op, current, self.eval(st.value, scope))
            if isinstance(current, list) and isinstance(st.op, ast.Add) and isinstance(new, list):
                current[:] = new  # list += keeps identity (the kwargs dicts share it)
                new = current
            self.assign(st.target, new, scope)
        elif isinstance(st, ast.If):
            t = self.truth(self.eval(st.test, scope))
            if t is True:
                self.exec_block(st.body, scope)
            elif t is False:
                self.exec_block(st.orelse, scope)
            else:
                for block in (st.body, st.orelse):
                    with contextlib.suppress(_Abort, _Break, _Continue):
                        self.exec_block(block, scope)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            self._exec_for(st, scope)
        elif isinstance(st, ast.While):
            for _ in range(MAX_LOOP):
                if self.truth(self.eval(st.test, scope)) is not True:
                    break
                try:
                    self.exec_block(st.body, scope)
                except _Break:
                    break
                except _Continue:
                    continue
        elif isinstance(st, ast.Return):
            raise _Return(self.eval(st.value, scope) if st.value is not None else None)
        elif isinstance(st, ast.Raise):
            raise _Abort()
        elif isinstance(st, ast.Try):
            try:
                self.exec_block(st.body, scope)
                self.exec_block(st.orelse, scope)
            except _Abort:
                pass
            finally:
                self.exec_block(st.finalbody, scope)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                self.eval(item.context_expr, scope)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, Unknown("with"), scope)
            self.exec_block(st.body, scope)
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope.vars[st.name] = FunctionObj(scope.module, st, scope, kind=method_kind(st))
        elif isinstance(st, ast.ClassDef):
            scope.vars[st.name] = ClassObj(scope.module, st, scope)
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            for name in bound_names(st):
                scope.vars[name] = self.bind_stmt(st, name, MISSING_NAME, scope)
        elif isinstance(st, ast.Delete):
            for target in st.targets:
                if isinstance(target, ast.Subscript):
                    container = self.eval(target.value, scope)
                    key = self.eval(target.slice, scope)
                    if isinstance(container, (dict, list)) and not unknown(key):
                        with contextlib.suppress(KeyError, IndexError, TypeError):
                            del container[key]
        elif isinstance(st, ast.Break):
            raise _Break()
        elif isinstance(st, ast.Continue):
            raise _Continue()
        # Pass, Global, Nonlocal, Assert, Match: nothing the argparse set-up depends on

    def _exec_for(self, st: ast.For | ast.AsyncFor, scope: Scope) -> None:
        iterable = self.eval(st.iter, scope)
        try:
            items = list(itertools.islice(self.iterate(iterable), MAX_LOOP))
        except TypeError:
            return
        for item in items:
            self.assign(st.target, item, scope)
            try:
                self.exec_block(st.body, scope)
            except _Break:
                return
            except (_Continue, _Abort):
                # a raise inside one iteration is almost always a check failing on an unknown
                # value (e.g. "Unsupported type" for torch.dtype): skip that item, keep the rest
                continue
        self.exec_block(st.orelse, scope)

    def assign(self, target: ast.expr, value: Any, scope: Scope) -> None:
        if isinstance(target, ast.Name):
            scope.vars[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            try:
                items = list(self.iterate(value))
            except TypeError:
                items = [Unknown("unpack")] * len(target.elts)
            if len(items) != len(target.elts):
                items = [Unknown("unpack")] * len(target.elts)
            for t, v in zip(target.elts, items, strict=False):
                self.assign(t, v, scope)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value, scope)
            key = self.eval(target.slice, scope)
            if isinstance(container, (dict, list)) and not unknown(key):
                with contextlib.suppress(IndexError, TypeError):
                    container[key] = value
        elif isinstance(target, ast.Attribute):
            owner = self.eval(target.value, scope)
            if isinstance(owner, ClassObj):
                owner.overrides[target.attr] = value
            elif isinstance(owner, (InstanceObj, Sink)):
                owner.attrs[target.attr] = value

    # -- builtins and the outside world -----------------------------------------------------
    def builtin(self, name: str) -> Any:
        return self._builtins.get(name, MISSING_NAME)

    def _builtin_table(self) -> dict[str, Any]:
        plain = ["list", "tuple", "set", "frozenset", "dict", "sorted", "len", "str", "int", "float", "bool",
                 "any", "all", "min", "max", "sum", "enumerate", "zip", "range", "reversed", "repr", "abs",
                 "round", "iter", "next", "chr", "ord", "bytes", "object", "type", "slice", "map", "filter",
                 "ValueError", "TypeError", "KeyError", "RuntimeError", "NotImplementedError", "Exception",
                 "AssertionError", "AttributeError", "ImportError", "OSError", "DeprecationWarning",
                 "UserWarning", "FutureWarning", "NotImplemented", "Ellipsis", "hex", "divmod", "callable"]
        table: dict[str, Any] = {n: getattr(__builtins__, n) if not isinstance(__builtins__, dict)
                                 else __builtins__[n] for n in plain}
        self._safe_callables = {v for v in table.values() if callable(v)} | {
            typing.get_args, typing.get_origin, json.loads, json.dumps, copy.copy,
            itertools.permutations, itertools.product, itertools.chain, itertools.combinations,
            math.ceil, math.floor, math.log2, math.sqrt, math.inf.__class__} | {
            v for v in vars(typing).values() if isinstance(v, types.FunctionType)}
        table.update({
            "isinstance": Native(self._isinstance, "isinstance"),
            "issubclass": Native(self._issubclass, "issubclass"),
            "getattr": Native(self._getattr, "getattr"),
            "hasattr": Native(lambda o, n: not unknown(self.getattr_(o, n)), "hasattr"),
            "setattr": Native(lambda o, n, v: None, "setattr"),
            "print": Native(lambda *a, **k: None, "print"),
            "super": Native(lambda *a: Unknown("super(...)"), "super"),
            "__name__": "__main__",
            "None": None, "True": True, "False": False,
            "staticmethod": Native(lambda f: f), "classmethod": Native(lambda f: f),
            "property": Native(lambda f: f),
        })
        return table

    def _type(self, obj: Any, *rest: Any) -> Any:
        if rest:
            return Unknown("type(name, bases, ns)")
        if isinstance(obj, InstanceObj):
            return obj.cls
        if isinstance(obj, EnumMember):
            return obj.cls
        if isinstance(obj, (Obj, Unknown)):
            return Unknown("type")
        return type(obj)

    def _isinstance(self, obj: Any, cls: Any) -> Any:
        if isinstance(cls, tuple):
            results = [self._isinstance(obj, c) for c in cls]
            return True if any(r is True for r in results) else (
                Unknown("isinstance") if any(unknown(r) for r in results) else False)
        if unknown(obj):
            return Unknown("isinstance")
        if isinstance(cls, type):
            if isinstance(obj, ClassObj):
                return cls is type or cls is object
            if isinstance(obj, Obj):
                return cls is object
            return isinstance(obj, cls)
        if isinstance(cls, (ClassObj, Marker)):
            if isinstance(obj, InstanceObj):
                return cls in obj.cls.mro()
            if isinstance(obj, EnumMember):
                return cls in obj.cls.mro()
            return False
        return Unknown("isinstance")

    def _issubclass(self, cls: Any, base: Any) -> Any:
        if isinstance(base, tuple):
            return any(self._issubclass(cls, b) is True for b in base)
        if isinstance(cls, ClassObj):
            return base in cls.mro()
        if isinstance(cls, type) and isinstance(base, type):
            return issubclass(cls, base)
        return False if isinstance(cls, type) else Unknown("issubclass")

    def _getattr(self, obj: Any, name: Any, *default: Any) -> Any:
        value = self.getattr_(obj, name) if isinstance(name, str) else Unknown("getattr")
        if unknown(value) and default:
            return default[0] if not unknown(obj) else value
        return value

    def _external_table(self) -> dict[str, Any]:
        """Stand-ins for the stdlib (and a few libraries) the engines' argparse code touches."""
        identity = Native(lambda f=None, *a, **k: f if f is not None else Native(lambda g: g))
        decorator_factory = Native(lambda *a, **k: Native(lambda g: g))
        field_marker = Native(lambda *a, **k: Unknown("field()"), "field")
        typing_names = {n: getattr(typing, n) for n in dir(typing) if not n.startswith("_")}
        typing_names.update({"TYPE_CHECKING": False, "cast": Native(lambda t, v: v, "cast"),
                             "get_type_hints": Native(self._get_type_hints, "get_type_hints"),
                             "overload": identity, "final": identity, "runtime_checkable": identity,
                             "TypeVar": Native(lambda *a, **k: Unknown("TypeVar")),
                             "NewType": Native(lambda name, tp: tp),
                             "TypeAlias": Unknown("TypeAlias"),
                             "TypeIs": typing.Any, "TypeGuard": typing.Any, "Self": typing.Any,
                             "Never": typing.Any, "NotRequired": typing.Any, "Required": typing.Any,
                             "Unpack": typing.Any, "LiteralString": str, "deprecated": decorator_factory})
        struct = Marker("msgspec.Struct")
        return {
            "typing": typing_names,
            "typing_extensions": typing_names,
            "types": {"UnionType": types.UnionType, "NoneType": type(None),
                      "SimpleNamespace": Unknown("SimpleNamespace")},
            "dataclasses": {"dataclass": identity, "field": field_marker, "MISSING": dataclasses.MISSING,
                            "fields": Native(self._fields, "fields"),
                            "is_dataclass": Native(lambda c: isinstance(c, ClassObj) and c.is_record),
                            "InitVar": typing.Any, "KW_ONLY": Unknown("KW_ONLY")},
            "argparse": {"BooleanOptionalAction": Marker("BooleanOptionalAction"),
                         "Action": Marker("argparse.Action"), "_StoreTrueAction": Marker("argparse._StoreTrueAction"),
                         "_StoreConstAction": Marker("argparse._StoreConstAction"),
                         "_StoreAction": Marker("argparse._StoreAction"),
                         "_AppendAction": Marker("argparse._AppendAction"),
                         "SUPPRESS": "==SUPPRESS==", "ArgumentTypeError": ValueError,
                         "ArgumentParser": Marker("argparse.ArgumentParser"),
                         "Namespace": Marker("argparse.Namespace"), "REMAINDER": "...",
                         "HelpFormatter": Marker("argparse.HelpFormatter"),
                         "RawDescriptionHelpFormatter": Marker("argparse.RawDescriptionHelpFormatter"),
                         "ArgumentDefaultsHelpFormatter": Marker("argparse.ArgumentDefaultsHelpFormatter"),
                         "RawTextHelpFormatter": Marker("argparse.RawTextHelpFormatter")},
            "enum": {"Enum": Marker("enum.Enum"), "IntEnum": Marker("enum.IntEnum"),
                     "StrEnum": Marker("enum.StrEnum"), "Flag": Marker("enum.Flag"),
                     "IntFlag": Marker("enum.IntFlag"), "auto": Native(lambda: Unknown("auto()")),
                     "unique": identity, "EnumMeta": Marker("enum.EnumMeta")},
            "functools": {"lru_cache": identity, "cache": identity, "cached_property": identity,
                          "wraps": decorator_factory, "partial": Native(lambda *a, **k: Unknown("partial"))},
            "copy": {"deepcopy": Native(_deepcopy, "deepcopy"), "copy": Native(copy.copy, "copy")},
            "itertools": {n: getattr(itertools, n) for n in ("permutations", "product", "chain", "combinations")},
            "json": {"loads": json.loads, "dumps": json.dumps},
            "math": {n: getattr(math, n) for n in ("inf", "ceil", "floor", "log2", "sqrt", "isinf")},
            "sys": {"version_info": PYTHON_VERSION, "argv": Unknown("sys.argv"), "platform": "linux",
                    "maxsize": 2**63 - 1,
                    "modules": ExternalModule(self, "sys.modules", {"get": Native(lambda *a: None)})},
            "os": {"environ": ExternalModule(self, "os.environ", {"get": Native(lambda k, d=None: d)}),
                   "getenv": Native(lambda k, d=None: d), "path": Unknown("os.path")},
            "msgspec": {"Struct": struct, "field": field_marker, "NODEFAULT": NODEFAULT,
                        "structs": {"fields": Native(self._fields, "fields")},
                        "defstruct": Native(lambda *a, **k: Unknown("defstruct"))},
            "msgspec.structs": {"fields": Native(self._fields, "fields")},
            "pydantic": {"Field": field_marker, "BaseModel": Marker("pydantic.BaseModel"),
                         "SkipValidation": Annotating("pydantic.SkipValidation"),
                         "field_validator": decorator_factory, "model_validator": decorator_factory,
                         "ConfigDict": Native(lambda *a, **k: Unknown("ConfigDict"))},
            "pydantic.dataclasses": {"dataclass": identity},
            "pydantic.fields": {"FieldInfo": Marker("pydantic.FieldInfo")},
            "collections": {"OrderedDict": dict, "defaultdict": Native(lambda *a: {})},
        }

    def _fields(self, cls: Any) -> Any:
        if isinstance(cls, InstanceObj):
            cls = cls.cls
        if isinstance(cls, ClassObj):
            return tuple(cls.fields())
        return Unknown("fields")

    def _get_type_hints(self, cls: Any, globalns: Any = None, localns: Any = None,
                        include_extras: bool = False) -> Any:
        if not isinstance(cls, ClassObj):
            return Unknown("get_type_hints")
        out = {}
        for f in cls.fields():
            tp = f.type
            if not include_extras and typing.get_origin(tp) is typing.Annotated:
                tp = typing.get_args(tp)[0]
            out[f.name] = tp
        return out


def _deepcopy(value: Any, memo: Any = None) -> Any:
    return copy.deepcopy(value)


def _pick_target(target: ast.expr, name: str, value: Any) -> Any:
    if isinstance(target, ast.Name):
        return value if target.id == name else MISSING_NAME
    if isinstance(target, (ast.Tuple, ast.List)):
        if not isinstance(value, (tuple, list)) or len(value) != len(target.elts):
            return Unknown(name) if name in _target_names(target) else MISSING_NAME
        for t, v in zip(target.elts, value, strict=False):
            found = _pick_target(t, name, v)
            if found is not MISSING_NAME:
                return found
    return MISSING_NAME


def _as_load(target: ast.expr) -> ast.expr:
    node = copy.copy(target)
    node.ctx = ast.Load()
    return node


class Sink(Obj):
    """Base for objects that record what the engine does to them (an argparse parser)."""

    def __init__(self, interp: Interp) -> None:
        self.interp = interp
        self.attrs: dict[str, Any] = {}
