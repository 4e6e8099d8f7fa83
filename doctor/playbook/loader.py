"""Loading and validating playbooks: the built-in knowledge plus any directories the user adds.

A playbook directory holds one ``<symptom>.yaml`` per symptom tree, one ``causes/<cause-id>.yaml`` per cause (its
text, fix, evidence, log signatures and cases), optionally ``facts/<namespace>.yaml`` (the fact registry) and
``traps.yaml`` (engine telemetry known to mislead). The built-in directory ships with the package; users add
theirs with ``--playbooks DIR``, in the same shape and under the same schema. Every file is checked against its
JSON Schema (:mod:`doctor.playbook.schema`), then across files — every cause a tree names exists, no symptom or
cause is defined twice, every regular expression compiles, every fact named anywhere is registered — with errors
naming file and line. The tree nodes for log signatures are generated from the cause files (lognodes.py).
"""

from __future__ import annotations

import marshal
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path

from doctor.errors import InputError
from doctor.playbook.registry import FactSpec, Registry
from doctor.yamlsafe import MAX_YAML_BYTES, line_of, load_yaml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    V = TypeVar("V")

CAUSES_DIR = "causes"
FACTS_DIR = "facts"
TRAPS_FILE = "traps.yaml"
#: The one-file catalog of causes earlier releases read; now one file per cause (a clear error, not ignored).
LEGACY_CAUSES_FILE = "causes.yaml"


@dataclass(frozen=True)
class Cause:
    """One cause, defined once in causes/<id>.yaml: what it is, why it matters, the fix per engine, the seed ref."""

    id: str
    title: str
    severity: str
    what: str
    why: str
    fix: dict[str, str]
    ref: str
    evidence: tuple[str, ...] = ()
    source: str = ""
    #: server-log lines that name this cause by themselves: ({pattern, engine, seen} or {catalog, ...}, ...)
    log_signatures: tuple[dict[str, Any], ...] = ()
    #: what the engine does (launch-failure causes): effect and, per engine, the file:line in its wheel
    behaviour: dict[str, str] = field(default_factory=dict)
    #: how the tree node generated from the log signatures reads: symptom, yields_to, when, note
    log_node: dict[str, Any] = field(default_factory=dict)
    #: scenario facts in, verdict out (the test suite runs them): ({symptom, facts, evidence, negative}, ...)
    cases: tuple[dict[str, Any], ...] = ()
    #: the fix as flag operations `lint --fix` applies (doctor/fix/plan.py): ({op, flag, to, value, each, ...}, ...)
    edits: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Trap:
    """A metric that misleads on one engine (traps.yaml): why, and what to read instead."""

    id: str
    metric: str
    engine: str
    why: str
    instead: str
    ref: str = ""


@dataclass(frozen=True)
class Playbook:
    """One symptom's decision tree, with the entry conditions that decide whether it runs unasked."""

    symptom: str
    title: str
    tree: list[dict[str, Any]]
    description: str = ""
    aliases: tuple[str, ...] = ()
    applies_when: dict[str, Any] | None = None
    source: str = ""

    @cached_property
    def steps(self) -> Any:
        """The tree for walking (doctor.playbook.engine.Tree), kept with the playbook: from its third walk on, every
        ``when`` compiled, so a process that lints many commands (MCP, ``serve``) reads each node's shape once."""
        from doctor.playbook.engine import Tree

        return Tree(self.tree)

    @cached_property
    def entry(self) -> Any:
        """``applies_when`` compiled (doctor.playbook.conditions.compile_condition); None: the tree always runs."""
        from doctor.playbook.conditions import compile_condition

        return None if self.applies_when is None else compile_condition(self.applies_when)


class LazyEntries(Mapping[str, "V"]):
    """Entries kept marshalled, each built the first time it is asked for (then kept).

    A loaded set holds ~160 causes and ~360 registry entries, and a `check` reads the few its findings name: built
    all at once from the cache they cost ~20 M instructions of every run (their texts, cases and log signatures are
    two thirds of the playbooks' data), decoded one by one only those few."""

    __slots__ = ("_raw", "_make", "_built")

    def __init__(self, raw: dict[str, bytes], make: Callable[[dict[str, Any]], V]) -> None:
        self._raw, self._make = raw, make
        self._built: dict[str, V] = {}

    def __getitem__(self, key: str) -> V:
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = self._make(marshal.loads(self._raw[key]))
        return built

    def __contains__(self, key: object) -> bool:
        return key in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


@dataclass
class PlaybookSet:
    """Every loaded playbook, cause and trap: what the engine walks. Loaded from the cache, ``causes`` and
    ``facts`` are read-only mappings whose entries are built when first asked for (:class:`LazyEntries`)."""

    playbooks: dict[str, Playbook] = field(default_factory=dict)
    causes: dict[str, Cause] | LazyEntries[Cause] = field(default_factory=dict)
    traps: list[Trap] = field(default_factory=list)
    facts: dict[str, FactSpec] | LazyEntries[FactSpec] = field(default_factory=dict)
    #: per registry namespace: its title and notes (docs/facts.md)
    fact_namespaces: dict[str, dict[str, str]] = field(default_factory=dict)

    @cached_property
    def registry(self) -> Registry:
        """The fact registry these playbooks were checked against (read once all of it is loaded)."""
        return Registry(self.facts)

    def find(self, symptom: str) -> Playbook | None:
        """A playbook by its symptom id or one of its aliases."""
        if symptom in self.playbooks:
            return self.playbooks[symptom]
        return next((p for p in self.playbooks.values() if symptom in p.aliases), None)


def builtin_dir() -> Path:
    """The shipped trees: inside the wheel at doctor/_playbooks, in a source checkout at ./playbooks."""
    packaged = Path(__file__).resolve().parents[1] / "_playbooks"
    return packaged if packaged.is_dir() else Path(__file__).resolve().parents[2] / "playbooks"


def load_playbooks(extra_dirs: Iterable[str | Path] = (), *, builtin: bool = True) -> PlaybookSet:
    """Built-in playbooks plus the user's directories; raise InputError naming the first problem found."""
    extra = [Path(d) for d in extra_dirs]
    if builtin and not extra:
        return _load_builtin()
    return _load_given([builtin_dir(), *extra] if builtin else extra)


@lru_cache(maxsize=1)
def _load_builtin() -> PlaybookSet:
    # The shipped files are schema-checked by the test suite and `llmdoctor playbook validate`; at run time
    # only the cheap cross-checks run (the JSON Schema pass costs ~0.3 s of every command's start-up), and the
    # result is kept between runs as plain data (doctor.datacache: the YAML of ~100 files is parsed once).
    from doctor.datacache import cached

    def build() -> dict[str, Any]:
        pbset, errors = _load_dirs([builtin_dir()], schema=False)
        if errors:  # a broken shipped playbook is our bug, but it must still read as one line
            raise InputError(errors[0])
        return _as_data(pbset)

    return _from_data(cached("playbooks", [*_all_files(builtin_dir()), *_code_files()], build))


def _load_given(dirs: list[Path]) -> PlaybookSet:
    """The user's directories (with the built-ins when asked), checked in full — schema and cross-checks — and,
    once they pass, kept between runs like the built-ins: keyed by every YAML file in every directory (an edit,
    a new or a removed file loads afresh, tests/test_datacache.py). A directory with a problem is never kept:
    each run reports it again."""
    from doctor.datacache import cached, sha1

    def build() -> dict[str, Any]:
        pbset, errors = _load_dirs(dirs)
        if errors:
            raise InputError(errors[0] + (f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""))
        return _as_data(pbset)

    slot = sha1("|".join(os.path.abspath(d) for d in dirs).encode()).hexdigest()[:12]
    return _from_data(cached(f"playbooks-given-{slot}", [*(f for d in dirs for f in _all_files(d)),
                                                          *_code_files()], build))


def _code_files() -> list[Path]:
    """The loader's own modules (the schemas, the generated log nodes, the registry): they decide what a
    directory loads to, so an edit to them must load afresh too."""
    here = Path(__file__).parent
    return [here / name for name in sorted(os.listdir(here)) if name.endswith(".py")]


def _as_data(pbset: PlaybookSet) -> dict[str, Any]:
    """A loaded set as plain data (doctor.datacache keeps it as marshal); each cause and registry entry marshalled
    on its own, so that a run decodes only those it reads (:class:`LazyEntries`)."""
    return {"playbooks": [asdict(p) for p in pbset.playbooks.values()],
            "causes": {k: marshal.dumps(asdict(c)) for k, c in pbset.causes.items()},
            "traps": [asdict(t) for t in pbset.traps],
            "facts": {k: marshal.dumps(asdict(f)) for k, f in pbset.facts.items()},
            "fact_namespaces": pbset.fact_namespaces}


def _cause(data: dict[str, Any]) -> Cause:
    return Cause(**{**data, "evidence": tuple(data["evidence"]), "log_signatures": tuple(data["log_signatures"]),
                    "cases": tuple(data["cases"])})


def _from_data(data: dict[str, Any]) -> PlaybookSet:
    return PlaybookSet(playbooks={p["symptom"]: Playbook(**p) for p in data["playbooks"]},
                       causes=LazyEntries(data["causes"], _cause),
                       traps=[Trap(**t) for t in data["traps"]],
                       facts=LazyEntries(data["facts"], lambda f: FactSpec(**f)),
                       fact_namespaces=data["fact_namespaces"])


def _yaml_names(directory: str | Path) -> list[str]:
    """The directory's *.yaml and *.yml entries in name order (what ``sorted(glob)`` gives, from one listing:
    globbing ~150 cause files twice cost ~10 ms of every run)."""
    try:
        names = os.listdir(directory)
    except OSError:  # missing, not a directory, unreadable: nothing in it (as glob)
        return []
    return [name for name in sorted(names) if name.endswith((".yaml", ".yml"))]


def _yaml_files(directory: Path) -> list[Path]:
    return [directory / name for name in _yaml_names(directory)]


def _all_files(directory: Path) -> list[str]:
    """Every YAML file the directory loads from, as path strings: each run keys the cache on them (~200 files; as
    Path objects, joining them cost more than stat-ing them)."""
    top = os.fspath(directory)
    return [os.path.join(top, sub, name) for sub in ("", CAUSES_DIR, FACTS_DIR)
            for name in _yaml_names(os.path.join(top, sub))]


def validate_dirs(dirs: Iterable[str | Path], *, builtin: bool = True) -> list[str]:
    """Every problem in these directories (with the built-ins loaded first, as at run time)."""
    extra = [Path(d) for d in dirs]
    _pbset, errors = _load_dirs([builtin_dir(), *extra] if builtin else extra)
    return errors


def _load_dirs(dirs: list[Path], *, schema: bool = True) -> tuple[PlaybookSet, list[str]]:
    pbset = PlaybookSet()
    errors: list[str] = []
    names: list[tuple[str, str]] = []  # (fact key, file:line) for every fact a file names
    present = []
    for directory in dirs:
        if not directory.is_dir():
            errors.append(f"{directory}: not a directory of playbooks")
        elif not _all_files(directory):
            errors.append(f"{directory}: no *.yaml playbooks in it (trees, causes/<id>.yaml or facts/*.yaml)")
        else:
            present.append(directory)
        if (directory / LEGACY_CAUSES_FILE).is_file():
            errors.append(f"{directory / LEGACY_CAUSES_FILE}: causes now live one per file, as "
                          f"{directory / CAUSES_DIR}/<cause-id>.yaml (docs/playbooks.md); this file is not read")
    # The registry first, then the causes, then the trees: a tree may name facts and causes from any directory.
    # Fact names are the code's: the built-in registry applies even when only the user's trees are loaded.
    registries = present if builtin_dir() in dirs else [builtin_dir(), *present]
    steps = [(FACTS_DIR, "facts"), (CAUSES_DIR, "cause"), ("", "traps"), ("", "playbook")]
    for sub, kind in steps:
        for directory in registries if kind == "facts" else present:
            for path in _yaml_files(directory / sub):
                if kind in ("traps", "playbook") and (path.name == TRAPS_FILE) != (kind == "traps"):
                    continue
                if path.name == LEGACY_CAUSES_FILE and not sub:
                    continue
                try:
                    _load_file(path, kind, pbset, errors, names, schema=schema)
                except InputError as exc:
                    errors.append(str(exc))
    errors.extend(_generate_log_nodes(pbset))
    registry = pbset.registry
    errors.extend(f"{where}: {problem}" for key, where in names if (problem := registry.unknown(key)))
    errors.extend(_capture_errors(pbset, names))
    return pbset, errors


#: The fact a log signature captures: the line that named its cause (doctor/logs/parse.py ``log.seen.<id>``).
SEEN = "log.seen."


def _capture_errors(pbset: PlaybookSet, names: list[tuple[str, str]]) -> list[str]:
    """A ``log.seen.<cause>`` name is a log signature's capture: the registry covers the whole family, so a typo
    in the cause part would pass it and stay unset forever. Each must name a loaded cause that has signatures."""
    captured = {SEEN + c.id.replace("-", "_") for c in pbset.causes.values() if c.log_signatures}
    out = []
    for key, where in names:
        if key.startswith(SEEN) and key not in captured:
            import difflib  # only for a misspelt capture

            near = difflib.get_close_matches(key, sorted(captured), n=3, cutoff=0.75)
            hint = f"did you mean {' or '.join(repr(n) for n in near)}?" if near else \
                "log.seen.<cause id, dashes as underscores> of a cause with log_signatures"
            out.append(f"{where}: fact '{key}' is no log signature's capture ({hint})")
    return out


def _load_file(path: Path, kind: str, pbset: PlaybookSet, errors: list[str], names: list[tuple[str, str]], *,
               schema: bool = True) -> None:
    from doctor.inio import read_capped

    data, node = load_yaml(read_capped(path, limit=MAX_YAML_BYTES, label=str(path)), str(path))
    if schema:
        from doctor.playbook import schema as schemas

        rules = {"facts": schemas.FACTS_SCHEMA, "cause": schemas.CAUSE_SCHEMA, "traps": schemas.TRAPS_SCHEMA,
                 "playbook": schemas.PLAYBOOK_SCHEMA}[kind]
        problems = _schema_errors(data, rules, node, path)
        if problems:
            errors.extend(problems)
            return
    if kind == "facts":
        _load_facts(path, data, node, pbset, errors)
    elif kind == "cause":
        _load_cause(path, data, node, pbset, errors, names)
    elif kind == "traps":
        for item in data["traps"]:
            pbset.traps.append(Trap(item["id"], item["metric"], item.get("engine", "any"), item["why"].strip(),
                                    item["instead"].strip(), item.get("ref", "")))
    else:
        _load_tree(path, data, node, pbset, errors, names)


def _load_facts(path: Path, data: dict[str, Any], node: Any, pbset: PlaybookSet, errors: list[str]) -> None:
    pbset.fact_namespaces.setdefault(path.stem, {"title": data.get("title", f"{path.stem}.*"),
                                                 "notes": " ".join(data.get("notes", "").split())})
    for index, item in enumerate(data["facts"]):
        where = f"{path}:{line_of(node, ['facts', index])}"
        key = item["key"]
        if key.split(".")[0] != path.stem:
            errors.append(f"{where}: fact '{key}' belongs in {path.parent}/{key.split('.')[0]}.yaml")
            continue
        if key in pbset.facts:
            errors.append(f"{where}: fact '{key}' is already registered in {pbset.facts[key].source}")
            continue
        pbset.facts[key] = FactSpec(key=key, type=item["type"], producer=item["producer"], learnt=item["learnt"],
                                    meaning=" ".join(item["meaning"].split()), unit=item.get("unit", ""),
                                    signals=item.get("signals", ""), source=where)


def _load_cause(path: Path, data: dict[str, Any], node: Any, pbset: PlaybookSet, errors: list[str],
                names: list[tuple[str, str]]) -> None:
    cause_id = data["id"]
    where = f"{path}:{line_of(node, ['id'])}"
    if path.stem != cause_id:
        errors.append(f"{where}: cause '{cause_id}' must match the file name '{path.stem}'")
        return
    if cause_id in pbset.causes:
        errors.append(f"{where}: cause '{cause_id}' is already defined in {pbset.causes[cause_id].source}")
        return
    pbset.causes[cause_id] = Cause(
        id=cause_id, title=data["title"], severity=data["severity"], what=data["what"].strip(),
        why=data["why"].strip(), fix={k: v.strip() for k, v in data["fix"].items()}, ref=data["ref"],
        evidence=tuple(data.get("evidence", ())), source=where,
        log_signatures=tuple(data.get("log_signatures", ())), behaviour=dict(data.get("behaviour") or {}),
        log_node=dict(data.get("log_node") or {}), cases=tuple(data.get("cases", ())),
        edits=tuple(data.get("edits", ())),
    )
    for index, sig in enumerate(data.get("log_signatures", ())):
        if "pattern" not in sig:
            continue
        try:
            re.compile(sig["pattern"])
        except re.error as exc:
            errors.append(f"{path}:{line_of(node, ['log_signatures', index])}: "
                          f"log_signatures pattern: not a valid regular expression: {exc}")
    names.extend(_cause_names(path, data, node))


def _cause_names(path: Path, data: dict[str, Any], node: Any) -> list[tuple[str, str]]:
    """(fact key, file:line) for every fact a cause file names: its texts' placeholders, evidence, log_node
    conditions, edits and cases."""
    from doctor.playbook.template import placeholders

    def at(*location: Any) -> str:
        return f"{path}:{line_of(node, list(location))}"

    names: list[tuple[str, str]] = []
    for field_name in ("title", "what", "why"):
        names.extend((key, at(field_name)) for key in placeholders(data[field_name]))
    for engine, text in data["fix"].items():
        names.extend((key, at("fix", engine)) for key in placeholders(text))
    names.extend((key, at("evidence", i)) for i, key in enumerate(data.get("evidence", ())))
    for loc, cond in _conditions(data.get("log_node", {}), []):
        names.extend((cond[k], at("log_node", *loc)) for k in ("fact", "ref") if k in cond)
    for i, edit in enumerate(data.get("edits", ())):
        names.extend((key, at("edits", i, part)) for part in ("flag", "to", "value") if part in edit
                     for key in placeholders(str(edit[part])))
        if "each" in edit:
            names.append((edit["each"], at("edits", i, "each")))
    for i, case in enumerate(data.get("cases", ())):
        for part in ("facts", "negative"):
            names.extend((key, at("cases", i, part, key)) for key in case.get(part) or {})
        names.extend((key, at("cases", i, "evidence", j)) for j, key in enumerate(case.get("evidence", ())))
    return names


def _load_tree(path: Path, data: dict[str, Any], node: Any, pbset: PlaybookSet, errors: list[str],
               names: list[tuple[str, str]]) -> None:
    symptom = data["symptom"]
    if path.stem != symptom:
        errors.append(f"{path}:{line_of(node, ['symptom'])}: symptom '{symptom}' must match the file name "
                      f"'{path.stem}'")
        return
    if symptom in pbset.playbooks:
        errors.append(f"{path}: symptom '{symptom}' is already defined in {pbset.playbooks[symptom].source}")
        return
    errors.extend(_semantic_errors(data, node, path))
    for location, cond in _conditions(data, []):
        where = f"{path}:{line_of(node, location)}"
        names.append((cond["fact"], where))
        if "ref" in cond:
            names.append((cond["ref"], where))
    for cause_id, location in _causes_in(data["tree"], ["tree"]):
        if cause_id not in pbset.causes:
            errors.append(f"{path}:{line_of(node, location)}: cause '{cause_id}' is not defined in a "
                          f"{CAUSES_DIR}/{cause_id}.yaml (built-in or beside this playbook)")
    pbset.playbooks[symptom] = Playbook(
        symptom=symptom, title=data["title"], tree=data["tree"], description=data.get("description", "").strip(),
        aliases=tuple(data.get("aliases", ())), applies_when=data.get("applies_when"), source=str(path),
    )


def _generate_log_nodes(pbset: PlaybookSet) -> list[str]:
    """Put each cause's log-signature node into its symptom's tree (lognodes.py); errors for bad references."""
    from doctor.playbook import lognodes

    errors: list[str] = []
    by_symptom: dict[str, list[dict[str, Any]]] = {}
    for cause in pbset.causes.values():
        if not cause.log_signatures:
            continue
        symptom = cause.log_node.get("symptom", lognodes.DEFAULT_SYMPTOM)
        missing = [c for c in cause.log_node.get("yields_to", ()) if c not in pbset.causes]
        if symptom not in pbset.playbooks:  # the default tree is absent only in a set without the built-ins
            if "symptom" in cause.log_node:
                errors.append(f"{cause.source}: log_node.symptom: no symptom tree '{symptom}'")
        elif missing:
            errors.append(f"{cause.source}: log_node.yields_to: no such cause {', '.join(missing)}")
        else:
            by_symptom.setdefault(symptom, []).append(lognodes.log_node(cause.id, cause.log_node))
            # a refusal the log names answers a second question too ("does it run on these GPUs?"): the same
            # node in each tree ``log_node.also`` names
            for other in cause.log_node.get("also", ()):
                if other not in pbset.playbooks:
                    errors.append(f"{cause.source}: log_node.also: no symptom tree '{other}'")
                else:
                    by_symptom.setdefault(other, []).append(lognodes.log_node(cause.id, cause.log_node))
    for symptom, playbook in list(pbset.playbooks.items()):
        nodes = by_symptom.get(symptom, [])
        if nodes or any(n.get("generate") for n in playbook.tree):
            pbset.playbooks[symptom] = Playbook(**{**asdict(playbook), "tree": lognodes.place(playbook.tree, nodes)})
    return errors


def _schema_errors(data: Any, rules: dict[str, Any], node: Any, path: Path) -> list[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(rules)
    out = []
    for error in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
        # oneOf failures are vague; the most specific sub-error names the real offending key.
        best = jsonschema.exceptions.best_match([error]) if error.context else error
        location = list(best.absolute_path)
        key = ".".join(str(p) for p in location) or "(top level)"
        out.append(f"{path}:{line_of(node, location)}: {key}: {best.message}")
    return out


def _semantic_errors(data: dict[str, Any], node: Any, path: Path) -> list[str]:
    """What the schema cannot say: regexes compile, ops have their value (fact names: the registry's check)."""
    from doctor.playbook.schema import VALUE_OPS

    out: list[str] = []
    for location, cond in _conditions(data, []):
        where = f"{path}:{line_of(node, location)}"

        if cond["op"] in VALUE_OPS and "value" not in cond and "ref" not in cond:
            out.append(f"{where}: op '{cond['op']}' needs a 'value' or a 'ref'")
        if cond["op"] == "matches":
            try:
                re.compile(str(cond.get("value", "")))
            except re.error as exc:
                out.append(f"{where}: value: not a valid regular expression: {exc}")
    return out


def _conditions(obj: Any, location: list[Any]) -> Iterable[tuple[list[Any], dict[str, Any]]]:
    if isinstance(obj, dict):
        if "fact" in obj and "op" in obj:
            yield location, obj
            return
        for key, value in obj.items():
            yield from _conditions(value, [*location, key])
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _conditions(value, [*location, index])


def _causes_in(nodes: list[dict[str, Any]], location: list[Any]) -> Iterable[tuple[str, list[Any]]]:
    for index, node in enumerate(nodes):
        if "cause" in node:
            yield node["cause"], [*location, index, "cause"]
        if "then" in node:
            yield from _causes_in(node["then"], [*location, index, "then"])
