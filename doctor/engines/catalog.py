"""Versioned engine catalogs: the flags, parsers, metrics and defaults of one vLLM / SGLang release.

Every release from vLLM 0.2.0 and SGLang 0.1.3 on is read from its real wheel (``tools/gen_catalog.py``;
see tools/README.md) into one history table per engine, ``doctor/engines/catalogs/<engine>.json``
(since/until per item, doctor/engines/history.py). This module rebuilds the release asked for from it
(cached between runs; JSON only, no engine import) and answers the questions the launch-command parser
and the linter ask: what does this token resolve to *exactly as that engine's argparse would*
(aliases, ``--flag=value``, vLLM's ``_``→``-`` rewriting and dotted JSON keys, prefix abbreviations
when the parser allows them), what are the choices, the defaults, the registered parser names — and,
for a flag that release lacks, what the history says (``flag_change``: too new, removed, renamed).

Version rule (``_choose``): a release that was read is used as is; a post-release or local build of one
uses it; a version between two releases uses the nearest at or below (flags of the next are "too
new"); older than the oldest uses the oldest, newer than the newest the newest; no version (or not a
version number) reads flags with the newest release but is *unknown*: nothing is too new and a flag
only older releases had is valid up to its last release. ``Catalog.note`` says which case applied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from doctor.errors import InputError
from doctor.versions import release
from doctor.versions import version_key as _version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
    """The releases of ``engine`` that were read into its history table, oldest first."""
    _check_engine(engine)
    return list(_available(engine))


@cache
def _available(engine: str) -> tuple[str, ...]:
    from doctor.datacache import cached

    path = history_path(engine)
    return tuple(cached(f"engines.catalog.{engine}.releases", [path],
                        lambda: [r["version"] for r in _parse_history(path)["releases"]]))


@cache
def release_index(engine: str) -> dict[str, int]:
    """release -> its position in ``available(engine)``: the one order the history's runs are compared in."""
    return {v: i for i, v in enumerate(available(engine))}


def history_path(engine: str) -> Path:
    return CATALOG_DIR / f"{engine}.json"


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise InputError(f"engine: {engine!r} is not a known engine (expected one of: {', '.join(ENGINES)})")


#: Catalog.coverage: how the requested version relates to the releases read
COVERAGE = ("exact", "series", "between", "older", "newer", "unknown")


def choose_version(engine: str, requested: str | None) -> tuple[str, str]:
    """(release read, note) for a requested engine version; the note is '' for a release that was read."""
    chosen, note, _ = _choose(engine, requested)
    return chosen, note


def _choose(engine: str, requested: str | None) -> tuple[str, str, str]:
    """(release read, note, coverage) — see COVERAGE and tools/README.md "Which release a version uses"."""
    versions = available(engine)
    if not versions:
        raise InputError(f"engine catalogs: no releases in {history_path(engine)}")
    newest, oldest = versions[-1], versions[0]
    span = f"{oldest}–{newest}"
    if requested is None:
        return newest, (f"{engine} version unknown: flags read with the newest release ({newest}); "
                        f"version-dependent findings say which releases they hold for"), "unknown"
    try:
        want = version_key(requested)
    except ValueError:
        return newest, (f"{engine} version {requested!r} is not a version number: treated as unknown, flags read "
                        f"with the newest release ({newest})"), "unknown"
    if requested in versions:
        return requested, "", "exact"
    series = [v for v in versions if release(v) == release(requested)]
    if series and version_key(series[0]) > want:  # a pre-release or dev build (0.11.1rc2.dev5+g…) of a release read
        return series[0], (f"{engine} {requested} is a pre-release of {series[0]}: flags read with {series[0]}; a "
                           f"flag added late in that cycle may be missing from it"), "series"
    below = [v for v in versions if version_key(v) <= want]
    if not below:
        return oldest, (f"{engine} {requested} is older than every release read ({span}): flags checked against "
                        f"{oldest}, the oldest; a flag {oldest} lacks may still have existed in {requested}"), "older"
    chosen = below[-1]
    if chosen == newest and release(chosen) != release(requested):
        return chosen, (f"{engine} {requested} is newer than every release read ({span}): flags checked against "
                        f"{newest}; a flag added after {newest} cannot be known and is reported as unknown"), "newer"
    if release(chosen) == release(requested):  # a local build (+cpu) or an unread post-release of a release read
        if version_key(chosen) == want:
            return chosen, "", "series"
        return chosen, (f"{engine} {requested} is not a release that was read: using {chosen}, the nearest of the "
                        f"same release series"), "series"
    after = versions[versions.index(chosen) + 1]
    return chosen, (f"{engine} {requested} is not a release that was read: using {chosen}, the nearest at or below "
                    f"(the next is {after}; flags it added are reported as too new)"), "between"


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
    #: the release whose wheel ``source`` was read in, when not the catalog's own (doctor/engines/history.py)
    evidence_from: str | None = None
    #: the launchers whose parser has it (``vllm serve``, ``vllm.entrypoints.api_server``…); None: every launcher
    launchers: tuple[str, ...] | None = None

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
        return cls.from_fields(cls.fields_of(d))

    @staticmethod
    def fields_of(d: dict[str, Any]) -> dict[str, Any]:
        """Every field's value from a catalog's flag entry (defaults filled, lists as tuples): plain data, so a
        release's flags are kept in this form between runs (``_load_json``)."""
        choices = d.get("choices")
        values = d.get("values")
        return dict(
            dest=d["dest"], options=tuple(d["options"]), action=d.get("action", "store"),
            takes_value=bool(d.get("takes_value", True)), type=d.get("type"), nargs=d.get("nargs"),
            default=d.get("default"), default_known=not d.get("default_unknown", False),
            choices=tuple(choices) if isinstance(choices, list) else None,
            values=tuple(values) if isinstance(values, list) else None,
            values_case_insensitive=bool(d.get("values_case_insensitive", False)),
            deprecated=bool(d.get("deprecated", False)), replacement=d.get("replacement"),
            rejected=bool(d.get("rejected", False)), help=d.get("help", ""), source=d.get("source", ""),
            field=d.get("field"), evidence_from=d.get("evidence_from"),
            launchers=tuple(d["launchers"]) if isinstance(d.get("launchers"), list) else None,
        )

    @classmethod
    def from_fields(cls, fields: dict[str, Any]) -> FlagSpec:
        # Every field set at once, as the generated __init__ would set them one by one through
        # object.__setattr__ (the frozen dataclass's way): a release has 300-500 flags and every command that
        # parses a launch builds them all, ~15 M instructions through __init__ (tests/test_catalog.py checks that
        # each field is set).
        spec = object.__new__(cls)
        spec.__dict__.update(fields)
        return spec


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
    #: how the requested version relates to the releases read (COVERAGE): "unknown" when no version was given
    coverage: str = "exact"
    #: the launcher whose parser this view is (``for_launcher``); None: every launcher's flags
    launcher: str | None = None
    _by_option: dict[str, FlagSpec] = field(default_factory=dict, repr=False)
    _by_dest: dict[str, FlagSpec] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self._by_option:
            self._by_option, self._by_dest = _index(self.flags)

    def for_launcher(self, launcher: str) -> Catalog:
        """The flags ``launcher`` itself parses (tools/catalog_gen/entrypoints.py): vLLM's demo server
        ``vllm.entrypoints.api_server`` never had the OpenAI server's flags. The release's catalog itself when it
        did not read that launcher's parser, or every launcher takes every flag."""
        read = self.parser.get("launchers") or {}
        if launcher not in read or not any(f.launchers for f in self.flags):
            return self
        flags, (by_option, by_dest) = _launcher_flags(self.engine, self.version, launcher)
        return Catalog(engine=self.engine, version=self.version, requested_version=self.requested_version,
                       note=self.note, header=self.header, parser=self.parser, flags=flags,
                       tool_parsers=self.tool_parsers, reasoning_parsers=self.reasoning_parsers,
                       metrics=self.metrics, defaults=self.defaults, coverage=self.coverage, launcher=launcher,
                       _by_option=by_option, _by_dest=by_dest)

    def everywhere(self) -> Catalog:
        """The release's catalog with every launcher's flags (undoes ``for_launcher``)."""
        return self if self.launcher is None else load_catalog(self.engine, self.requested_version)

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
        """The real flag a mistyped one most likely meant ("did you mean"), or None.

        Only near misses: a real option with a value glued on (``--reasoning-parser-glm45``), a real option
        with a few letters more (``--max-model-length``), or one within two edits (``--tensor-paralel-size``).
        difflib's similarity alone matched unrelated flags that share a word (``--lora-path`` →
        ``--root-path``, ``--enable-reasoning`` → ``--enable-prefix-caching``); renames come from the
        history (``flag_change``), not from spelling.
        """
        name = token.partition("=")[0]
        if self.parser.get("underscores_as_dashes") and name.startswith("--"):
            name = "--" + name[2:].replace("_", "-")
        longs = [o for o in self._by_option if o.startswith("--")]
        glued = [o for o in longs if name.startswith(o) and len(name) > len(o) and name[len(o)] in "-_"]
        if glued:
            return max(glued, key=len)
        longer = [o for o in longs if name.startswith(o) and len(name) - len(o) <= 4]
        if longer:
            return max(longer, key=len)
        best = min(((_edit_distance(name, o, 3), o) for o in longs if abs(len(o) - len(name)) <= 2), default=None)
        return best[1] if best is not None and best[0] <= 2 else None


def _edit_distance(a: str, b: str, cap: int) -> int:
    """Levenshtein distance with adjacent transpositions, giving up (returning ``cap``) once it exceeds cap - 1."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        row = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            row[j] = min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                row[j] = min(row[j], prev2[j - 2] + 1)
        if min(row) >= cap:
            return cap
        prev2, prev = prev, row
    return min(prev[-1], cap)


_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


def load_catalog(engine: str, version: str | None = None) -> Catalog:
    """The catalog for ``engine`` at ``version`` (None: unknown, the newest release's flags); see the module doc."""
    _check_engine(engine)
    chosen, note, coverage = _choose(engine, version)
    data = _load_json(engine, chosen)
    by_option, by_dest = _indexes(engine, chosen)
    return Catalog(
        engine=engine, version=chosen, requested_version=version, note=note,
        header=data.get("header", {}), parser=data.get("parser", {}), flags=_flag_specs(engine, chosen),
        tool_parsers=tuple(data.get("tool_parsers", {})), reasoning_parsers=tuple(data.get("reasoning_parsers", {})),
        metrics=tuple(data.get("metrics", [])), defaults=data.get("defaults", {}),
        coverage=coverage, _by_option=by_option, _by_dest=by_dest,
    )


@cache
def _load_json(engine: str, version: str) -> dict[str, Any]:
    """One release's view of the history table, kept between runs (doctor/datacache.py): a run pays for marshal
    of one release's catalog, not for json.loads of the whole history."""
    from doctor.datacache import cached
    from doctor.engines import history

    path = history_path(engine)
    return cached(f"engines.catalog.{engine}-{version}", [path, Path(history.__file__), Path(__file__)],
                  lambda: _view(engine, version))


def _view(engine: str, version: str) -> dict[str, Any]:
    """One release's view, its flags already as FlagSpec fields (``FlagSpec.fields_of``)."""
    from doctor.engines import history

    view = history.view(_history(engine), version)
    return {**view, "flags": [FlagSpec.fields_of(d) for d in view.get("flags", [])]}


@cache
def _history(engine: str) -> dict[str, Any]:
    from doctor.datacache import cached

    path = history_path(engine)
    return cached(f"engines.catalog.{engine}.history", [path], lambda: _parse_history(path))


def _parse_history(path: Path) -> dict[str, Any]:
    from doctor.engines.history import SCHEMA as HISTORY_SCHEMA

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: cannot read engine catalog history: {exc}") from None
    if data.get("header", {}).get("schema") != HISTORY_SCHEMA:
        raise InputError(f"{path}: header.schema: expected {HISTORY_SCHEMA}")
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
def _launcher_flags(engine: str, version: str, launcher: str) -> tuple[tuple[FlagSpec, ...], tuple[dict, dict]]:
    """One launcher's flags of a release, indexed once per run (Catalog.for_launcher)."""
    flags = tuple(f for f in _flag_specs(engine, version) if f.launchers is None or launcher in f.launchers)
    return flags, _index(flags)


@cache
def _flag_specs(engine: str, version: str) -> tuple[FlagSpec, ...]:
    return tuple(FlagSpec.from_fields(d) for d in _load_json(engine, version).get("flags", []))


@cache
def flag_runs(engine: str) -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """Option string → [(since, until, flag)]: every run of releases that had the option, oldest first.

    Reads the whole history table, so it is only called when a flag was not found."""
    from doctor.engines.history import option_runs

    return option_runs(_history(engine))


def registered_runs(engine: str, kind: str, name: str) -> list[tuple[str, str]]:
    """[(since, until)]: the runs of releases whose ``kind`` registry ("tool_parsers" / "reasoning_parsers") has
    ``name``, from the history table (empty: no release read registers it)."""
    return [(r["since"], r["until"]) for r in _history(engine).get(kind, {}).get(name, [])]


def registered_since(engine: str, kind: str, name: str, after: str) -> str | None:
    """The first release after ``after`` whose ``kind`` registry has ``name``; None when no later release read
    has it."""
    order = release_index(engine)
    later = [since for since, _ in registered_runs(engine, kind, name) if order[since] > order[after]]
    return later[0] if later else None


@cache
def option_since(engine: str) -> dict[str, str]:
    """Option → the first release read that has it. A small index kept between runs (doctor/datacache.py), so a
    command whose version is unknown does not pay for the whole history to annotate its fixes."""
    from doctor.datacache import cached

    return cached(f"engines.catalog.{engine}.since", [history_path(engine), Path(__file__)],
                  lambda: {option: runs[0][0] for option, runs in flag_runs(engine).items()})


#: With the version unknown, the releases a fix is taken to be read on start here: vLLM 0.2.0-0.5.5 and SGLang
#: 0.1.3-0.3.6 (2023-2024) are read so that old incidents are parsed by their own release, not to widen that span.
RECENT_FROM = {"vllm": "0.6.0", "sglang": "0.4.0"}
_OPTION = re.compile(r"(?<![\w-])--[a-z0-9][a-z0-9-]*")


def annotate_since(engine: str, text: str) -> str:
    """With the engine version unknown, a fix must say when a flag it names is not valid on the releases in
    question: an option that arrived after the first quarter of the releases read (SGLang's ``--attn-dp-size``,
    0.5.22) is listed with its first release. One that only the oldest releases lack (``--ep-size``, missing from
    SGLang 0.4.0 alone) is left alone: annotating every fix for one release of 2024 would bury the ones that
    matter. The releases read for old incidents (before ``RECENT_FROM``) do not count: they would push the quarter
    back to 2023 and annotate nearly every fix."""
    since = option_since(engine)
    cutoff = _recent_cutoff(engine)
    label = {"vllm": "vLLM", "sglang": "SGLang"}[engine]
    needs = {}
    for option in _OPTION.findall(text):
        first = since.get(option)
        if first is not None and version_key(first) > cutoff:
            needs.setdefault(option, first)
    if not needs:
        return text
    return f"{text} (version unknown: " + ", ".join(f"{o} needs {label} ≥ {v}" for o, v in needs.items()) + ")"


@cache
def _recent_cutoff(engine: str) -> tuple[Any, ...]:
    """The release a quarter into the recent releases read (from ``RECENT_FROM``), as a version key."""
    versions = [v for v in available(engine) if version_key(v) >= version_key(RECENT_FROM[engine])]
    return version_key(versions[len(versions) // 4])


@cache
def default_changes(engine: str) -> dict[str, list[tuple[str, str, Any]]]:
    """Setting → [(since, until, default)] for every flag dest (and ``defaults`` entry, as ``defaults.NAME``)
    whose default differed between releases read (a null default — computed at startup, or not read — is left
    out, not counted as a difference). A small index kept between runs, so that a command whose
    version is unknown can say that a default it relies on is only the newest release's."""
    from doctor.datacache import cached

    def build() -> dict[str, list[list[Any]]]:
        table = _history(engine)
        runs: dict[str, list[list[Any]]] = {}
        for item_runs in table.get("flags", {}).values():
            for run in item_runs:
                value = run["value"]
                if not value.get("default_unknown") and value.get("default") is not None:
                    runs.setdefault(value["dest"], []).append([run["since"], run["until"], value.get("default")])
        for name, item_runs in table.get("defaults", {}).items():
            runs[f"defaults.{name}"] = [[r["since"], r["until"], r["value"].get("default")] for r in item_runs
                                        if r["value"].get("default") is not None]
        order = release_index(engine)
        out = {}
        for key, found in runs.items():
            found.sort(key=lambda r: order[r[0]])
            merged: list[list[Any]] = []
            for since, until, default in found:  # consecutive runs with the same default are one
                if merged and merged[-1][2] == default:
                    merged[-1][1] = until
                else:
                    merged.append([since, until, default])
            if len(merged) > 1:
                out[key] = merged
        return out

    data = cached(f"engines.catalog.{engine}.defaults", [history_path(engine), Path(__file__)], build)
    return {k: [tuple(r) for r in v] for k, v in data.items()}


def default_hedge(catalog: Catalog, key: str) -> str:
    """'' unless the version is unknown and the default of ``key`` (a dest, or ``defaults.NAME``) differed
    between releases: then which releases had which default, for the fact's source."""
    if catalog.coverage != "unknown":
        return ""
    changes = default_changes(catalog.engine).get(key)
    if not changes:
        return ""
    older = [f"{since}–{until}: {json.dumps(default)}" for since, until, default in changes[:-1]]
    return f"; version unknown, and older releases differ ({', '.join(older)})"


def flag_history(engine: str) -> dict[str, tuple[str, str]]:
    """Option string → (first, last) release read that has it."""
    return {option: (runs[0][0], runs[-1][1]) for option, runs in flag_runs(engine).items()}


@dataclass(frozen=True)
class FlagChange:
    """What the history says about an option that the catalog in use does not have.

    ``kind``: "too_new" (first registered after this release: ``since``), "removed" (last in ``last``, gone
    from ``dropped_in`` on) or "renamed" (removed, and ``replacement`` is the option that took its place in
    this release). ``valid_until`` is the last release that accepts it, when it is an older flag."""

    kind: str
    option: str
    since: str | None = None
    last: str | None = None
    dropped_in: str | None = None
    replacement: str | None = None
    evidence: str = ""
    spec: FlagSpec | None = None


def flag_change(catalog: Catalog, option: str) -> FlagChange | None:
    """How ``option`` (normalised, no value) relates to ``catalog``'s release, from the history; None: never seen."""
    runs = flag_runs(catalog.engine).get(option)
    if not runs:
        return None
    versions = available(catalog.engine)
    order = release_index(catalog.engine)
    at = order[catalog.version]
    before = [r for r in runs if order[r[1]] < at]
    after = [r for r in runs if order[r[0]] > at]
    if not before:
        if not after:
            return None
        since, _, flag = after[0]
        return FlagChange("too_new", option, since=since, evidence=f"{catalog.engine} {since} {flag.get('source')}",
                          spec=FlagSpec.from_json(flag))
    first, last, flag = before[-1]
    spec = FlagSpec.from_json(flag)
    dropped = versions[order[last] + 1]
    replacement = _replacement(catalog, spec)
    evidence = f"{catalog.engine} {first} {flag.get('source')} (unchanged to {last}); absent from {dropped}"
    return FlagChange("renamed" if replacement else "removed", option, since=runs[0][0], last=last, dropped_in=dropped,
                      replacement=replacement, evidence=evidence, spec=spec)


def _replacement(catalog: Catalog, old: FlagSpec) -> str | None:
    """The option of ``catalog`` that took over a dropped flag: the one its deprecation named, else the flag that
    stores into the same setting (dest, or the same config field)."""
    if old.replacement:
        named = catalog.resolve(old.replacement.split()[0])
        if named is not None:
            return old.replacement.split()[0] if old.replacement.split()[0] in named.options else named.name
    same = catalog.flag(old.dest)
    if same is None and old.field:
        same = next((f for f in catalog.flags if f.field == old.field), None)
    return same.name if same is not None else None
