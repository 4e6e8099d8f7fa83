"""Versioned engine catalogs: the flags, parsers, metrics and defaults of one vLLM / SGLang version.

The catalogs are JSON files generated from the engines' real wheels (``tools/gen_catalog.py``; see
tools/README.md) and shipped in ``doctor/engines/catalogs/``. This module loads them lazily (only the
version asked for; JSON only, no engine import) and answers the questions the launch-command parser
and the linter ask: what does this token resolve to *exactly as that engine's argparse would*
(aliases, ``--flag=value``, vLLM's ``_``→``-`` rewriting and dotted JSON keys, prefix abbreviations
when the parser allows them), what are the choices, the defaults, the registered parser names.

Version rule: a requested version uses the catalog of the same version, else the nearest catalog
*at or below* it (flags only accumulate or get deprecated between neighbouring releases far more
often than they disappear, and a flag the older catalog lacks is reported as "too new" from the
newer ones rather than silently accepted). A version older than the oldest catalog uses the oldest;
no version uses the newest. Either way ``Catalog.note`` says what was done.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from doctor.errors import InputError
from doctor.versions import release
from doctor.versions import version_key as _version_key

ENGINES = ("vllm", "sglang")
CATALOG_DIR = Path(__file__).resolve().parent / "catalogs"
SCHEMA = "llmdoctor.catalog/1"

#: argparse actions that store a fixed value instead of reading one from the command line.
BOOLEAN_ACTIONS = {"store_true", "store_false", "BooleanOptionalAction"}


# ---------------------------------------------------------------------------------------------
# Versions
# ---------------------------------------------------------------------------------------------
def version_key(version: str) -> tuple[Any, ...]:
    """Catalog order (doctor/versions.py); ValueError for text that is not a version (``latest``)."""
    key = _version_key(version)
    if key is None:
        raise ValueError(f"not a version: {version!r}")
    return key


def available(engine: str) -> list[str]:
    """Versions with a shipped catalog for ``engine``, oldest first."""
    _check_engine(engine)
    return list(_available(engine))


@cache
def _available(engine: str) -> tuple[str, ...]:
    versions = [p.name[len(engine) + 1: -len(".json")] for p in CATALOG_DIR.glob(f"{engine}-*.json")]
    return tuple(sorted(versions, key=version_key))


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise InputError(f"engine: {engine!r} is not a known engine (expected one of: {', '.join(ENGINES)})")


def choose_version(engine: str, requested: str | None) -> tuple[str, str]:
    """(catalog version, note) for a requested engine version; the note is '' for an exact match."""
    versions = available(engine)
    if not versions:
        raise InputError(f"engine catalogs: none shipped for {engine} in {CATALOG_DIR}")
    newest, oldest = versions[-1], versions[0]
    if requested is None:
        return newest, f"{engine} version unknown: using the newest catalog ({newest})"
    try:
        want = version_key(requested)
    except ValueError:
        return newest, f"{engine} version {requested!r} is not a version number: using the newest catalog ({newest})"
    if requested in versions:
        return requested, ""
    below = [v for v in versions if version_key(v) <= want]
    if not below:
        return oldest, f"{engine} {requested} is older than the oldest catalog: flags checked against {oldest}"
    chosen = below[-1]
    if release(chosen) == release(requested):
        return chosen, ""  # a post-release of a catalogued version
    if chosen == newest:
        return chosen, f"{engine} {requested} is newer than the newest catalog: flags checked against {newest}"
    return chosen, f"no catalog for {engine} {requested}: using {chosen}, the nearest at or below"


# ---------------------------------------------------------------------------------------------
# Flags
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FlagSpec:
    """One argparse argument of the engine's server parser."""

    dest: str
    options: tuple[str, ...]
    action: str
    takes_value: bool
    type: str | None
    nargs: int | str | None
    default: Any
    default_known: bool
    choices: tuple[Any, ...] | None
    values: tuple[Any, ...] | None
    values_case_insensitive: bool
    deprecated: bool
    replacement: str | None
    rejected: bool
    help: str
    source: str
    field: str | None

    @property
    def name(self) -> str:
        """The primary spelling (the first long option)."""
        return next((o for o in self.options if o.startswith("--") and not self.is_negation(o)), self.options[0])

    @property
    def is_boolean(self) -> bool:
        return not self.takes_value and (self.action in BOOLEAN_ACTIONS or "store_true" in self.action)

    def is_negation(self, option: str) -> bool:
        """``--no-X`` generated by BooleanOptionalAction."""
        return self.action == "BooleanOptionalAction" and option.startswith("--no-") and \
            ("--" + option[5:]) in self.options

    def allowed(self) -> tuple[Any, ...] | None:
        """Values argparse enforces, else the values the engine checks after parsing."""
        return self.choices if self.choices is not None else self.values

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> FlagSpec:
        choices = d.get("choices")
        values = d.get("values")
        return cls(
            dest=d["dest"], options=tuple(d["options"]), action=d.get("action", "store"),
            takes_value=bool(d.get("takes_value", True)), type=d.get("type"), nargs=d.get("nargs"),
            default=d.get("default"), default_known=not d.get("default_unknown", False),
            choices=tuple(choices) if isinstance(choices, list) else None,
            values=tuple(values) if isinstance(values, list) else None,
            values_case_insensitive=bool(d.get("values_case_insensitive", False)),
            deprecated=bool(d.get("deprecated", False)), replacement=d.get("replacement"),
            rejected=bool(d.get("rejected", False)), help=d.get("help", ""), source=d.get("source", ""),
            field=d.get("field"),
        )


@dataclass(frozen=True)
class Resolution:
    """What a command-line token means to the engine's parser."""

    flag: FlagSpec
    option: str            # the option string argparse matched ("--tp-size")
    token: str             # the option part as typed ("--tp", "--max_model_len")
    explicit: str | None   # the value after "=", if any
    abbreviated: bool      # resolved by argparse prefix matching
    subkey: str | None = None  # vLLM dotted JSON key: --compilation-config.level → "level"

    @property
    def negated(self) -> bool:
        return self.flag.is_negation(self.option)


# ---------------------------------------------------------------------------------------------
# The catalog
# ---------------------------------------------------------------------------------------------
@dataclass
class Catalog:
    """One engine version's catalog (plus what was asked for, when that differs)."""

    engine: str
    version: str
    requested_version: str | None
    note: str
    header: dict[str, Any]
    parser: dict[str, Any]
    flags: tuple[FlagSpec, ...]
    tool_parsers: tuple[str, ...]
    reasoning_parsers: tuple[str, ...]
    metrics: tuple[dict[str, Any], ...]
    defaults: dict[str, Any]
    _by_option: dict[str, FlagSpec] = field(default_factory=dict, repr=False)
    _by_dest: dict[str, FlagSpec] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self._by_option:
            self._by_option, self._by_dest = _index(self.flags)

    # -- parser behaviour ------------------------------------------------------------------
    @property
    def allow_abbrev(self) -> bool:
        return bool(self.parser.get("allow_abbrev", True))

    @property
    def label(self) -> str:
        return f"{self.engine} {self.version}"

    def options(self) -> list[str]:
        return list(self._by_option)

    def resolve(self, token: str) -> FlagSpec | None:
        """The flag ``token`` (``--tp``, ``--tp-size=8``, ``-tp``) means to this engine version, or None."""
        found = self.lookup(token)
        return found.flag if found is not None else None

    def lookup(self, token: str) -> Resolution | None:
        """Like :meth:`resolve`, with how it matched. None: unknown, ambiguous or not an option."""
        if not token.startswith("-") or token in ("-", "--") or _NEGATIVE_NUMBER.match(token):
            return None
        shorthand = self.parser.get("o_shorthand")
        if shorthand and token.startswith("-O") and not token.startswith("--") and shorthand in self._by_option:
            # vLLM >= 0.13 rewrites -O3 / -O=3 / -O (then a level) to --optimization-level
            rest = token[2:].removeprefix("=")
            return Resolution(self._by_option[shorthand], shorthand, "-O", rest or None, False)
        name, eq, explicit = token.partition("=")
        value = explicit if eq else None
        if self.parser.get("underscores_as_dashes") and name.startswith("--"):
            head, dot, tail = name[2:].partition(".")
            name = "--" + head.replace("_", "-") + dot + tail
        subkey = None
        if self.parser.get("dotted_json_args") and "." in name:
            name, _, subkey = name.partition(".")
        exact = self._by_option.get(name)
        if exact is not None:
            return Resolution(exact, name, name, value, False, subkey)
        matches = self._prefix_matches(name)
        if len(matches) == 1:
            option, rest = matches[0]
            return Resolution(self._by_option[option], option, name, value if rest is None else rest, True, subkey)
        return None

    def ambiguous(self, token: str) -> list[str]:
        """Options a prefix could mean when it means more than one (argparse refuses those)."""
        name = token.partition("=")[0]
        matches = self._prefix_matches(name)
        return [m for m, _ in matches] if len(matches) > 1 else []

    def _prefix_matches(self, name: str) -> list[tuple[str, str | None]]:
        """argparse's ``_get_option_tuples`` (CPython 3.10-3.12): ``--x`` prefixes only when
        allow_abbrev; single-dash tokens also match a 2-char short option with the rest as value."""
        if len(name) < 2:
            return []
        if name.startswith("--"):
            if not self.allow_abbrev:
                return []
            return [(o, None) for o in self._by_option if o.startswith(name)]
        out: list[tuple[str, str | None]] = []
        short = name[:2]
        for option in self._by_option:
            if option == short and len(name) > 2:
                out.append((option, name[2:]))
            elif option.startswith(name):
                out.append((option, None))
        return out

    # -- lookups ---------------------------------------------------------------------------
    def flag(self, dest: str) -> FlagSpec | None:
        """The flag that stores into ``dest`` (the engine's own destination name)."""
        return self._by_dest.get(dest)

    def has_dest(self, dest: str) -> bool:
        return dest in self._by_dest

    def choices(self, dest: str) -> tuple[Any, ...] | None:
        spec = self._by_dest.get(dest)
        return spec.allowed() if spec else None

    def default(self, dest: str) -> Any:
        spec = self._by_dest.get(dest)
        return spec.default if spec else None

    def metric(self, name: str) -> dict[str, Any] | None:
        """A metric by its declared or exposed name (``vllm:num_preemptions`` or ``..._total``)."""
        for m in self.metrics:
            if m["name"] == name or name in m.get("exposed", ()):
                return m
        return None

    def nearest_flag(self, token: str) -> str | None:
        """The real flag a mistyped one most likely meant ("did you mean").

        A real option followed by ``-``/``_`` and more (``--reasoning-parser-glm45``: a value glued on
        with a dash) wins; otherwise difflib's closest long option.
        """
        import difflib  # lazy: only an unknown flag needs it

        name = token.partition("=")[0]
        if self.parser.get("underscores_as_dashes") and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        longs = [o for o in self._by_option if o.startswith("--")]
        glued = [o for o in longs if name.startswith(o) and len(name) > len(o) and name[len(o)] in "-_"]
        if glued:
            return max(glued, key=len)
        close = difflib.get_close_matches(name, longs, n=1, cutoff=0.6)
        return close[0] if close else None


_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def load_catalog(engine: str, version: str | None = None) -> Catalog:
    """The catalog for ``engine`` at ``version`` (None: the newest); see the module doc for the rule."""
    _check_engine(engine)
    chosen, note = choose_version(engine, version)
    data = _load_json(engine, chosen)
    by_option, by_dest = _indexes(engine, chosen)
    return Catalog(
        engine=engine, version=chosen, requested_version=version, note=note,
        header=data.get("header", {}), parser=data.get("parser", {}), flags=_flag_specs(engine, chosen),
        tool_parsers=tuple(data.get("tool_parsers", {})), reasoning_parsers=tuple(data.get("reasoning_parsers", {})),
        metrics=tuple(data.get("metrics", [])), defaults=data.get("defaults", {}),
        _by_option=by_option, _by_dest=by_dest,
    )


@cache
def _load_json(engine: str, version: str) -> dict[str, Any]:
    """One catalog, kept parsed between runs (doctor/datacache.py): json.loads of a 240 kB catalog is a few ms
    of every command that reads a launch command, marshal a fraction of that."""
    from doctor.datacache import cached

    path = CATALOG_DIR / f"{engine}-{version}.json"
    return cached(f"engines.catalog.{engine}-{version}", [path], lambda: _parse_json(path))


def _parse_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read engine catalog: {exc}") from None
    if data.get("header", {}).get("schema") != SCHEMA:
        raise InputError(f"{path}: header.schema: expected {SCHEMA}")
    return data


def _index(flags: tuple[FlagSpec, ...]) -> tuple[dict[str, FlagSpec], dict[str, FlagSpec]]:
    by_option: dict[str, FlagSpec] = {}
    by_dest: dict[str, FlagSpec] = {}
    for spec in flags:
        for option in spec.options:
            by_option.setdefault(option, spec)
        by_dest.setdefault(spec.dest, spec)
    return by_option, by_dest


@cache
def _indexes(engine: str, version: str) -> tuple[dict[str, FlagSpec], dict[str, FlagSpec]]:
    return _index(_flag_specs(engine, version))


@cache
def _flag_specs(engine: str, version: str) -> tuple[FlagSpec, ...]:
    return tuple(FlagSpec.from_json(d) for d in _load_json(engine, version).get("flags", []))


@cache
def flag_history(engine: str) -> dict[str, tuple[str, str]]:
    """Option string → (first, last) catalog version that has it: for "too new" and "removed" notes.

    Loads every catalog of the engine, so it is only called when a flag was not found.
    """
    history: dict[str, tuple[str, str]] = {}
    for version in available(engine):
        for spec in _flag_specs(engine, version):
            for option in spec.options:
                first = history.get(option, (version, version))[0]
                history[option] = (first, version)
    return history
