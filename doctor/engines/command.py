"""Parsing a pasted launch command exactly as the engine of that version would.

``parse_command`` finds the launch (``shapes.find_launch``: shell, docker, Kubernetes, argv), picks
the engine's catalog for the version (given, from the image tag, or the newest — said so), and then
walks the arguments the way the engine's argparse does: aliases, ``--flag=value``, prefix
abbreviations where that parser allows them (SGLang ``--tp 8`` is ``--tp-size 8``), vLLM's
``--max_model_len`` spelling and dotted JSON keys, ``nargs``, BooleanOptionalAction's ``--no-X``.
Values are typed per the catalog; anything the engine would reject or warn about becomes a
``Problem``: unknown flags (with the nearest real one), flags of the other engine (with the
equivalent), values outside the choices or type, deprecated and "too new" flags, secrets on the
command line. Secret values never leave this module unredacted.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from doctor.engines import shapes
from doctor.engines.catalog import (
    ENGINES,
    Catalog,
    FlagSpec,
    Resolution,
    available,
    flag_change,
    load_catalog,
)
from doctor.engines.semantics import equivalent_dest, folk_flag
from doctor.errors import InputError
from doctor.redact import MASK, is_secret_name, redact_env, redact_text
from doctor.versions import extract_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_BOOLEAN_NAME = re.compile(r"^--(enable|disable|no|use|trust|skip|allow|force|show|log)-")
_HUMAN_INT = re.compile(r"^(-?\d+(?:\.\d+)?)([kmgtKMGT]?)$")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


@dataclass(frozen=True)
class FlagValue:
    """One flag as given: the token typed, what the engine resolves it to, and its typed value."""

    token: str                 # as typed, without a value ("--tp", "--max_model_len", "-q")
    option: str                # the option argparse matched ("--tp-size")
    dest: str                  # the engine's destination name ("tp_size")
    value: Any                 # typed per the catalog (secrets: the mask)
    raw: list[str]             # the value words as typed (secrets: the mask)
    abbreviated: bool = False
    subkey: str | None = None  # vLLM dotted JSON key (--compilation-config.mode 3 → "mode")
    secret: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "option": self.option, "dest": self.dest, "value": self.value,
                "raw": self.raw, "abbreviated": self.abbreviated, "subkey": self.subkey, "secret": self.secret}


@dataclass(frozen=True)
class Problem:
    """Something the engine would reject, ignore or warn about. ``kind`` is one of KINDS."""

    kind: str
    flag: str
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "flag": self.flag, **self.detail}


KINDS = ("unknown_flag", "other_engine_flag", "too_new_flag", "ambiguous_flag", "invalid_value", "missing_value",
         "deprecated_flag", "secret_flag", "abbreviated_flag", "duplicate_flag", "unexpected_positional",
         "removed_flag", "renamed_flag")


@dataclass
class LaunchCommand:
    """A launch command read against its engine's catalog: every flag resolved, every problem noted."""

    engine: str
    version: str | None            # as given / from the image tag; None: unknown
    version_source: str            # "given", "image tag vllm/vllm-openai:v0.13.0", "unknown"
    catalog: Catalog
    entry: str
    shape: str
    model: str | None
    model_source: str | None
    flags: list[FlagValue]
    env: dict[str, str]            # redacted
    positionals: list[str]
    problems: list[Problem]
    image: str | None = None
    notes: list[str] = field(default_factory=list)
    #: every argument group as given (flag + its values, known or not), redacted, in order
    words: list[list[str]] = field(default_factory=list)
    #: values the paste does not have (doctor/engines/placeholders.py): {"flag", "dest", "word", "default"};
    #: a placeholder with no default leaves its flag out of ``flags`` (its value is unknown, not invalid)
    placeholders: list[dict[str, Any]] = field(default_factory=list)

    @property
    def catalog_version(self) -> str:
        return self.catalog.version

    def by_dest(self) -> dict[str, FlagValue]:
        """The flag that decides each dest (argparse: the last one given wins)."""
        out: dict[str, FlagValue] = {}
        for fv in self.flags:
            out[fv.dest] = fv
        return out

    def get(self, dest: str, default: Any = None) -> Any:
        fv = self.by_dest().get(dest)
        return default if fv is None else fv.value

    def has(self, dest: str) -> bool:
        return any(fv.dest == dest for fv in self.flags)

    def problems_of(self, kind: str) -> list[Problem]:
        return [p for p in self.problems if p.kind == kind]

    def argv(self) -> list[str]:
        """The engine arguments as given, redacted."""
        return [w for group in self.words for w in group]

    def render(self) -> str:
        """The command for a report: redacted, env first, one flag per line with continuations."""
        env = [f"{k}={shlex.quote(v)}" for k, v in self.env.items()]
        entry = self.entry.replace("python -m", "python3 -m", 1)
        if self.shape == "docker" and self.image and entry.startswith(f"docker {self.image}"):
            inner = entry[len(f"docker {self.image}"):].strip()
            first = ["docker", "run"] + [w for e in env for w in ("-e", e)] + [self.image] + ([inner] if inner else [])
        else:
            first = env + [entry]
        groups = list(self.words)
        if groups and self.model_source == "positional" and groups[0] == [self.model]:
            first.append(shlex.quote(groups.pop(0)[0]))
        lines = [" ".join(first)]
        for group in groups:
            lines.append("  " + " ".join(_shell_word(w, i == 0) for i, w in enumerate(group)))
        return redact_text(" \\\n".join(lines))

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine, "version": self.version, "version_source": self.version_source,
            "catalog_version": self.catalog.version, "catalog_note": self.catalog.note, "entry": self.entry,
            "shape": self.shape, "model": self.model, "image": self.image, "env": self.env,
            "flags": [f.to_dict() for f in self.flags], "positionals": self.positionals,
            "problems": [p.to_dict() for p in self.problems], "notes": self.notes,
            "placeholders": self.placeholders,
        }


# ---------------------------------------------------------------------------------------------
# Entry point
# ---------------------------------------------------------------------------------------------
def parse_command(text: str | list[str], *, engine_version: str | None = None,
                  engine: str | None = None, placeholders: bool = True) -> LaunchCommand:
    """Parse a launch command in any pasted shape. ``engine_version`` overrides the image tag;
    ``engine`` is only needed for bare argument lists that name no engine.
    ``placeholders``: read ``${VAR}``, ``{{ .Values.x }}``, ``<model>`` as unknown values (a pasted command); False
    for an observed process argv, where such a word is what the engine really received."""
    launch = shapes.find_launch(text)
    notes = list(launch.notes)
    chosen = launch.engine or engine
    if engine is not None and engine not in ENGINES:
        raise InputError(f"engine: {engine!r} is not a known engine (expected one of: {', '.join(ENGINES)})")
    if chosen is None:
        chosen = _guess_engine(launch.argv)
        notes.append(f"engine guessed from the flags: {chosen}")
    if engine_version is not None:
        version, version_source = _clean_version(engine_version), "given"
    elif launch.image_version is not None:
        version, version_source = launch.image_version, f"image tag {launch.image}"
    else:
        version, version_source = None, "unknown"
    catalog = load_catalog(chosen, version)
    if catalog.note:
        notes.append(catalog.note)
    notes.extend(_entry_notes(launch.entry, catalog))
    catalog = catalog.for_launcher(launcher_of(launch.entry))
    cmd = LaunchCommand(engine=chosen, version=version, version_source=version_source, catalog=catalog,
                        entry=launch.entry, shape=launch.shape, model=None, model_source=None, flags=[],
                        env=redact_env(launch.env), positionals=[], problems=[], image=launch.image, notes=notes)
    _Walker(cmd, launch, placeholders).run()
    for name, value in launch.env.items():
        if value.startswith("<from "):  # a secretKeyRef / configMapKeyRef: the right way to pass it
            continue
        expanded, found = _expand_word(value) if placeholders else (value, [])
        if found:  # VLLM_X=$VALUE: the shell fills it in; unknown (or its default), never a literal secret
            cmd.placeholders.append({"flag": f"env {name}", "dest": None, "word": MASK if is_secret_name(name)
                                     else value, "default": None if is_secret_name(name) else expanded})
            continue
        if is_secret_name(name) and value:  # a literal secret in the command (not a secretKeyRef)
            cmd.problems.append(Problem("secret_flag", name, {"env": True}))
    return cmd


def _entry_notes(entry: str, catalog: Catalog) -> list[str]:
    """A launcher that this engine version does not have (``sglang serve`` before it existed)."""
    label = catalog.label
    if entry.endswith(("vllm serve", "sglang serve")):
        if catalog.parser.get("prog") != entry.split()[-2] + " serve":
            return [f"`{entry.split()[-2]} serve` does not exist in {label}"]
        return []
    module = re.search(r"python3? -m (\S+)", entry)
    known = catalog.parser.get("entry_modules")
    if module and known is not None and module.group(1) not in known:
        return [f"{module.group(1)} does not exist in {label}"]
    return []


def launcher_of(entry: str) -> str:
    """The launcher a command's entry names, as the catalogs key their parsers (``parser.launchers``):
    ``vllm serve``, or the ``python -m`` module. A container started through its image's own entrypoint is ''
    (the catalog's main parser)."""
    module = re.search(r"python3? -m (\S+)", entry)
    if module:
        return "vllm serve" if module.group(1) == "vllm.entrypoints.cli.main" else module.group(1)
    return "vllm serve" if entry.endswith("vllm serve") else ""


def _launch_words(launcher: str) -> str:
    return launcher if launcher == "vllm serve" else f"python -m {launcher}"


def _clean_version(text: str) -> str:
    found = extract_version(text)
    if found is None:
        raise InputError(f"engine version: {text!r} is not a version number (expected e.g. 0.13.0)")
    return found


def _guess_engine(argv: list[str]) -> str:
    """The engine whose newest catalog knows more of these flags exactly (no abbreviations)."""
    scores = {}
    for engine in ENGINES:
        cat = load_catalog(engine)
        scores[engine] = sum(1 for tok in argv if tok.startswith("-") and (r := cat.lookup(tok)) is not None
                             and not r.abbreviated)
    best = max(scores, key=lambda e: scores[e])
    if list(scores.values()).count(scores[best]) > 1:
        raise InputError("launch command: only arguments, and they do not tell vLLM from SGLang "
                         "(paste the full command, or give the engine)")
    return best


# ---------------------------------------------------------------------------------------------
# Walking the arguments
# ---------------------------------------------------------------------------------------------
class _Walker:
    def __init__(self, cmd: LaunchCommand, launch: shapes.Launch, placeholders: bool = True) -> None:
        self.cmd = cmd
        self.placeholders = placeholders
        self.cat = cmd.catalog
        self.argv = launch.argv
        self.i = 0
        self.seen: dict[str, str] = {}
        own = (self.cat.parser.get("launchers") or {}).get(self.cat.launcher or "", {})
        self.positional_model = ("model_tag" in own.get("positionals", self.cat.parser.get("positionals", []))
                                 if cmd.engine == "vllm" else "sglang serve" in cmd.entry and bool(self.cat.parser.get("serve_positional_model")))

    def run(self) -> None:
        while self.i < len(self.argv):
            tok = self.argv[self.i]
            if tok == "--":
                self._positionals(self.argv[self.i + 1:])
                break
            if _is_option(tok):
                self._option(tok)
            else:
                self._positionals([tok])
                self.i += 1
        self._model()

    # -- one option ------------------------------------------------------------------------
    def _option(self, tok: str) -> None:
        res = self.cat.lookup(tok)
        if res is None:
            self._unknown(tok)
            return
        spec = res.flag
        start = self.i
        self.i += 1
        raw = self._values(spec, res)
        self._words(start, secret=is_secret_name(spec.dest) or is_secret_name(res.option))
        if raw is None:
            return
        secret = is_secret_name(spec.dest) or is_secret_name(res.option)
        raw = self._expand(res.option, spec.dest, raw, secret)
        if raw is None:  # a placeholder without a default: the value is unknown, not invalid
            return
        value, problem = _typed(spec, raw, res)
        if problem is not None:
            self.cmd.problems.append(Problem("invalid_value", res.token, problem))
        if secret:
            value = MASK if spec.takes_value else value
            raw = [MASK] * len(raw)
            self.cmd.problems.append(Problem("secret_flag", res.option, {"dest": spec.dest}))
        typed = tok.partition("=")[0]
        if res.subkey is not None:
            typed = typed.partition(".")[0]
        fv = FlagValue(typed, res.option, spec.dest, value, raw, res.abbreviated, res.subkey, secret)
        self._record(fv, spec, res)

    def _values(self, spec: FlagSpec, res: Resolution) -> list[str] | None:
        if not spec.takes_value:
            if res.explicit is not None:
                self.cmd.problems.append(Problem("invalid_value", res.token, {
                    "value": res.explicit, "choices": None, "expected": "no value (a switch)", "enforced": "argparse"}))
            return []
        if res.explicit is not None:
            return [res.explicit]
        nargs = spec.nargs
        following = []
        j = self.i
        while j < len(self.argv) and not _is_option(self.argv[j]) and self.argv[j] != "--":
            following.append(self.argv[j])
            j += 1
        if nargs is None or nargs == 1:
            take = following[:1]
            if not take:
                self.cmd.problems.append(Problem("missing_value", res.token, {"expected": "one value"}))
                return None
        elif nargs == "?":
            take = following[:1]
        elif nargs in ("*", "+"):
            take = following
            if nargs == "+" and not take:
                self.cmd.problems.append(Problem("missing_value", res.token, {"expected": "one or more values"}))
                return None
        elif isinstance(nargs, int):
            take = following[:nargs]
            if len(take) < nargs:
                self.cmd.problems.append(Problem("missing_value", res.token, {"expected": f"{nargs} values"}))
                return None
        else:
            take = following[:1]
        self.i += len(take)
        return take

    def _expand(self, flag: str, dest: str, raw: list[str], secret: bool) -> list[str] | None:
        """The value words with placeholders replaced by their defaults; None when one has no default."""
        if not self.placeholders or not any(_may_hold_placeholder(word) for word in raw):
            return raw
        out: list[str] = []
        for word in raw:
            value, found = _expand_word(word)
            if found:
                shown = MASK if secret else word
                self.cmd.placeholders.append({"flag": flag, "dest": dest, "word": shown,
                                              "default": None if value is None or secret else value})
            if value is None:
                return None
            out.append(value)
        return out

    def _record(self, fv: FlagValue, spec: FlagSpec, res: Resolution) -> None:
        cmd = self.cmd
        key = f"{fv.dest}.{fv.subkey}" if fv.subkey else fv.dest
        if key in self.seen and spec.action not in ("append", "count") and spec.nargs not in ("*", "+"):
            cmd.problems.append(Problem("duplicate_flag", fv.token, {"first": self.seen[key],
                                                                      "effective": "the last one"}))
        self.seen[key] = fv.token
        if res.abbreviated:
            cmd.problems.append(Problem("abbreviated_flag", fv.token, {"resolved": fv.option}))
        if spec.deprecated:
            cmd.problems.append(Problem("deprecated_flag", fv.option, {
                "replacement": spec.replacement, "rejected": spec.rejected, "help": spec.help}))
        cmd.flags.append(fv)

    # -- unknown options -------------------------------------------------------------------
    def _unknown(self, tok: str) -> None:
        start = self.i
        try:
            self._classify_unknown(tok)
        finally:
            self._words(start, secret=is_secret_name(tok.partition("=")[0]))

    def _words(self, start: int, secret: bool) -> None:
        """Keep the words consumed since ``start`` for render(), masking a secret's value."""
        group = list(self.argv[start:self.i])
        if secret:
            head, eq, _ = group[0].partition("=")
            group = [head + eq + MASK] if eq else [head] + [MASK] * (len(group) - 1)
        self.cmd.words.append(group)

    def _classify_unknown(self, tok: str) -> None:
        cmd, cat = self.cmd, self.cat
        name = tok.partition("=")[0]
        norm = _normalise(cat, name)
        self.i += 1
        if cat.coverage == "unknown" and self._older_release_flag(tok, name, norm):
            return
        ambiguous = cat.ambiguous(tok)
        if ambiguous:
            cmd.problems.append(Problem("ambiguous_flag", name, {"matches": ambiguous}))
            self._skip_value(tok, None)
            return
        if cat.launcher is not None and self._other_launcher(tok, name, norm):
            return
        change = flag_change(cat, norm)
        if change is not None:
            self._history_problem(name, change)
            self._skip_value(tok, change.spec)
            return
        other = "sglang" if cmd.engine == "vllm" else "vllm"
        other_cat = load_catalog(other)
        other_res = other_cat.lookup(name)
        if other_res is not None and not other_res.abbreviated:
            mapped = equivalent_dest(other, other_res.flag.dest, cmd.engine)
            equivalent, note = None, ""
            if mapped is not None:
                spec = cat.flag(mapped[0])
                equivalent = spec.name if spec is not None else None
                note = mapped[1]
            elif cat.flag(other_res.flag.dest) is not None:
                equivalent = cat.flag(other_res.flag.dest).name
            detail: dict[str, Any] = {"engine": other, "equivalent": equivalent}
            if note:
                detail["note"] = note
            cmd.problems.append(Problem("other_engine_flag", name, detail))
            self._skip_value(tok, other_res.flag)
            return
        detail = {"nearest": cat.nearest_flag(name)}
        folk = folk_flag(name)
        if folk is not None and folk.get("engine") == cmd.engine:
            spec = cat.flag(folk.get("means", ""))
            detail["equivalent"] = spec.name if spec is not None else None
            detail["note"] = folk.get("note", "")
        if not detail.get("note") and not detail["nearest"]:
            releases = available(cmd.engine)
            detail["note"] = f"no {cmd.engine} release from {releases[0]} to {releases[-1]} has it"
            if cat.coverage in ("older", "newer"):  # the release itself was not read: say what that means
                detail["note"] += f"; {cmd.engine} {cmd.version} itself was not read and may have it"
            detail["remedy"] = "drop it"
        cmd.problems.append(Problem("unknown_flag", name, detail))
        self._skip_value(tok, None)

    def _older_release_flag(self, tok: str, name: str, norm: str) -> bool:
        """With the version unknown, a flag the newest release dropped but older ones read by its exact name: the
        command was most likely written for such a release (argparse refuses an ambiguous prefix, so a command
        that ran did not meet the newest parser), so its value is read with that release's meaning — the
        removed/renamed problem still says which releases read it. False: not such a flag."""
        change = flag_change(self.cat, norm)
        if change is None or change.kind == "too_new" or change.spec is None:
            return False
        self._history_problem(name, change)
        spec = change.spec
        explicit = tok.partition("=")[2] if "=" in tok else None
        res = Resolution(spec, norm, name, explicit, False)
        raw = self._values(spec, res)
        if raw is None:
            return True
        secret = is_secret_name(spec.dest) or is_secret_name(norm)
        if secret:  # never typed into a fact: the mask stands for it, as for a flag the release reads
            return True
        value, problem = _typed(spec, raw, res)
        if problem is None:
            self.cmd.flags.append(FlagValue(name, norm, spec.dest, value, raw))
        return True

    def _other_launcher(self, tok: str, name: str, norm: str) -> bool:
        """A flag this release has, but not on the launcher the command used (vLLM's demo server and
        ``--chat-template``): argparse refuses it there; the launchers that take it are the remedy."""
        cmd, cat = self.cmd, self.cat
        res = cat.everywhere().lookup(norm)
        if res is None or res.abbreviated or res.flag.launchers is None:
            return False
        takes = [_launch_words(lau) for lau in res.flag.launchers]
        cmd.problems.append(Problem("unknown_flag", name, {
            "nearest": None, "launcher": cat.launcher, "launchers": list(res.flag.launchers),
            "evidence": f"{cat.label} {cat.parser['launchers'][cat.launcher]['entry']} (its parser); "
                        f"{res.flag.source or '?'} (where {res.option} is registered)",
            "note": f"{res.option} exists in {cat.label} but not on `{_launch_words(cat.launcher)}`, whose parser "
                    f"lacks it; {' and '.join(f'`{t}`' for t in takes)} take{'s' if len(takes) == 1 else ''} it",
            "remedy": f"launch with `{takes[0]}`, or drop {res.option}"}))
        self._skip_value(tok, res.flag)
        return True

    def _history_problem(self, name: str, change: Any) -> None:
        """A flag this release lacks but another release read has: too new, removed, or renamed.

        With the version unknown (the newest release's flags were used) a dropped flag is not an error but a
        condition: it is valid up to ``last`` — the detail says so, and nothing is called too new."""
        cmd, cat = self.cmd, self.cat
        if change.kind == "too_new":
            cmd.problems.append(Problem("too_new_flag", name, {"since": change.since, "catalog": cat.version,
                                                               "evidence": change.evidence}))
            return
        detail = {"last": change.last, "dropped_in": change.dropped_in, "since": change.since,
                  "replacement": change.replacement, "evidence": change.evidence,
                  "version_known": cat.coverage != "unknown"}
        if cat.coverage == "unknown":
            detail["note"] = (f"valid on {cmd.engine} {change.since}–{change.last}; refused from {change.dropped_in} "
                              f"on (version unknown)")
        else:
            detail["note"] = f"{cmd.engine} {change.dropped_in} dropped it (last in {change.last})"
        kind = "renamed_flag" if change.kind == "renamed" else "removed_flag"
        cmd.problems.append(Problem(kind, name, detail))

    def _skip_value(self, tok: str, spec: FlagSpec | None) -> None:
        """Step over the value an unknown flag most likely has, so it is not read as the model."""
        if "=" in tok or self.i >= len(self.argv) or _is_option(self.argv[self.i]):
            return
        takes = spec.takes_value if spec is not None else not _BOOLEAN_NAME.match(tok)
        if takes:
            self.i += 1

    # -- positionals, model, env -----------------------------------------------------------
    def _positionals(self, words: list[str]) -> None:
        for word in words:
            self.cmd.words.append([word])
            value, found = _expand_word(word) if self.placeholders else (word, [])
            is_model = self.positional_model and self.cmd.model is None and not self.cmd.positionals
            if found:
                self.cmd.placeholders.append({"flag": "model (positional)" if is_model else "argument",
                                              "dest": "model" if is_model else None, "word": word, "default": value})
                if value is None:
                    if is_model:
                        self.positional_model = False  # the model is unknown: a later word is no model either
                    continue  # `$EXTRA_ARGS`: arguments the paste does not show, not a stray positional
                word = value
            if self.positional_model and self.cmd.model is None and not self.cmd.positionals:
                self.cmd.model, self.cmd.model_source = word, "positional"
            else:
                self.cmd.positionals.append(word)
                self.cmd.problems.append(Problem("unexpected_positional", word, {}))

    def _model(self) -> None:
        cmd = self.cmd
        by_dest = cmd.by_dest()
        for dest in ("model", "model_path"):
            if dest in by_dest and cmd.model is None:
                cmd.model, cmd.model_source = str(by_dest[dest].value), by_dest[dest].option



def _may_hold_placeholder(word: str) -> bool:
    """Cheap test before the placeholder scan (doctor/engines/placeholders.py is imported only when needed)."""
    return "$" in word or "{{" in word or "<" in word or "`" in word


def _expand_word(word: str) -> tuple[str | None, list[Any]]:
    if not _may_hold_placeholder(word):
        return word, []
    from doctor.engines.placeholders import expand

    return expand(word)


def _shell_word(word: str, first: bool) -> str:
    """Quote a word for render(); an option keeps its name bare (``--x='{"a": 1}'``)."""
    if first and _is_option(word):
        name, eq, value = word.partition("=")
        return name + eq + shlex.quote(value) if eq else word
    return shlex.quote(word)


def _is_option(tok: str) -> bool:
    return tok.startswith("-") and len(tok) > 1 and not re.match(r"^-\d", tok)


def _normalise(cat: Catalog, name: str) -> str:
    if cat.parser.get("underscores_as_dashes") and name.startswith("--"):
        head, dot, tail = name[2:].partition(".")
        name = "--" + head.replace("_", "-") + dot + tail
    if cat.parser.get("dotted_json_args") and "." in name:
        name = name.partition(".")[0]
    return name


# ---------------------------------------------------------------------------------------------
# Typing values
# ---------------------------------------------------------------------------------------------
def _typed(spec: FlagSpec, raw: list[str], res: Resolution) -> tuple[Any, dict[str, Any] | None]:
    """(typed value, problem detail or None) for the words given to ``spec``."""
    if not spec.takes_value:
        if spec.action == "store_false":
            return False, None
        if spec.action == "store_const" or spec.action == "append_const":
            return spec.default if spec.default is not None else True, None
        return (not res.negated), None
    if res.subkey is not None:  # vLLM --json-arg.key value → {"key": json.loads(value) or the string}
        word = raw[0] if raw else None
        try:
            value = json.loads(word) if word is not None else None
        except json.JSONDecodeError:
            value = word
        return {res.subkey: value}, None
    values = []
    for word in raw:
        value, problem = _convert(spec.type or "str", word)
        if problem is not None:
            return word, {"value": word, "choices": None, "expected": problem, "enforced": "argparse"}
        values.append(value)
    allowed = spec.allowed()
    if allowed is not None and allowed:
        for value in values:
            if not _member(value, allowed, spec.values_case_insensitive and spec.choices is None):
                return _one(values, spec), {
                    "value": value, "choices": list(allowed),
                    "enforced": "argparse" if spec.choices is not None else "engine at startup"}
    return _one(values, spec), None


def _one(values: list[Any], spec: FlagSpec) -> Any:
    if spec.nargs in ("*", "+") or isinstance(spec.nargs, int) and spec.nargs > 1:
        return values
    return values[0] if values else None


def _member(value: Any, allowed: tuple[Any, ...], case_insensitive: bool) -> bool:
    if value in allowed:
        return True
    if isinstance(value, str):
        if "None" in allowed and value == "None":
            return True
        if case_insensitive:
            return value.upper() in {str(a).upper() for a in allowed}
    return False


def _convert(kind: str, word: str) -> tuple[Any, str | None]:
    if kind == "int":
        try:
            return int(word), None
        except ValueError:
            return None, "an integer"
    if kind in ("int_hr", "int_hr_auto"):
        if kind == "int_hr_auto" and word.lower() == "auto":
            return "auto", None
        m = _HUMAN_INT.match(word)
        if not m:
            return None, "an integer (human-readable suffixes k/M/G allowed)"
        number, suffix = m.groups()
        if not suffix:
            return (int(number), None) if "." not in number else (None, "an integer")
        scale = _DECIMAL.get(suffix) or _BINARY[suffix]
        return int(float(number) * scale), None
    if kind == "float":
        try:
            return float(word), None
        except ValueError:
            return None, "a number"
    if kind == "json":
        if word[:1] in "{[":
            try:
                return json.loads(word), None
            except json.JSONDecodeError as exc:
                return None, f"valid JSON ({exc.msg} at char {exc.pos})"
        return word, None
    return word, None
