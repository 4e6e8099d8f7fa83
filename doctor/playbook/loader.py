"""Loading and validating playbooks: the built-in trees plus any directories the user adds.

A playbook directory holds one ``<symptom>.yaml`` per symptom, and optionally ``causes.yaml`` (the causes
catalog: each cause defined once) and ``traps.yaml`` (engine telemetry known to mislead). The built-in
directory ships with the package; users add theirs with ``--playbooks DIR``. Every file is checked against
the JSON Schema in :mod:`doctor.playbook.schema`, and then across files (every cause a tree names exists,
no symptom or cause is defined twice, every regular expression compiles), with errors naming file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from doctor.errors import InputError
from doctor.yamlsafe import MAX_YAML_BYTES, line_of, load_yaml

CAUSES_FILE = "causes.yaml"
#: One file per cause (playbooks/causes/<cause-id>.yaml), loaded with the causes catalog.
CAUSES_DIR = "causes"
TRAPS_FILE = "traps.yaml"
#: Top-level fact namespaces a condition may read (docs/facts.md); a typo here would make a node unknown forever.
NAMESPACES = ("model", "launch", "engine", "expect", "gpu", "metrics", "server", "capacity", "fit", "workload",
              "active", "process", "probe", "log")


@dataclass(frozen=True)
class Cause:
    """One cause, defined once in causes.yaml: what it is, why it matters, the fix per engine, the seed ref."""

    id: str
    title: str
    severity: str
    what: str
    why: str
    fix: dict[str, str]
    ref: str
    evidence: tuple[str, ...] = ()
    source: str = ""
    #: server-log lines that name this cause by themselves: ({pattern, engine, seen}, ...)
    log_signatures: tuple[dict[str, str], ...] = ()
    #: what the engine does (launch-failure causes): effect and, per engine, the file:line in its wheel
    behaviour: dict[str, str] = field(default_factory=dict)


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


@dataclass
class PlaybookSet:
    """Every loaded playbook, cause and trap: what the engine walks."""

    playbooks: dict[str, Playbook] = field(default_factory=dict)
    causes: dict[str, Cause] = field(default_factory=dict)
    traps: list[Trap] = field(default_factory=list)

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
    pbset, errors = _load_dirs([builtin_dir(), *extra] if builtin else extra)
    if errors:
        raise InputError(errors[0] + (f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""))
    return pbset


@lru_cache(maxsize=1)
def _load_builtin() -> PlaybookSet:
    # The shipped trees are schema-checked by the test suite and `llmdoctor playbook validate`; at run time
    # only the cheap cross-checks run (the JSON Schema pass costs ~0.3 s of every command's start-up), and the
    # result is kept between runs as plain data (doctor.datacache: ~40 ms of YAML saved per run).
    from doctor.datacache import cached

    def build() -> dict[str, Any]:
        pbset, errors = _load_dirs([builtin_dir()], schema=False)
        if errors:  # a broken shipped playbook is our bug, but it must still read as one line
            raise InputError(errors[0])
        return {"playbooks": [asdict(p) for p in pbset.playbooks.values()],
                "causes": [asdict(c) for c in pbset.causes.values()], "traps": [asdict(t) for t in pbset.traps]}

    # the loader's own file is a source too: its dataclasses decide the shape of the cached data
    data = cached("playbooks", [*_playbook_files(builtin_dir()), Path(__file__)], build)
    return PlaybookSet(playbooks={p["symptom"]: Playbook(**p) for p in data["playbooks"]},
                       causes={c["id"]: Cause(**{**c, "evidence": tuple(c["evidence"]),
                                                 "log_signatures": tuple(c["log_signatures"])})
                               for c in data["causes"]},
                       traps=[Trap(**t) for t in data["traps"]])


def _playbook_files(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.yaml")) + sorted(directory.glob("*.yml")) + \
        sorted((directory / CAUSES_DIR).glob("*.yaml"))


def validate_dirs(dirs: Iterable[str | Path], *, builtin: bool = True) -> list[str]:
    """Every problem in these directories (with the built-ins loaded first, as at run time)."""
    extra = [Path(d) for d in dirs]
    _pbset, errors = _load_dirs([builtin_dir(), *extra] if builtin else extra)
    return errors


def _load_dirs(dirs: list[Path], *, schema: bool = True) -> tuple[PlaybookSet, list[str]]:
    pbset = PlaybookSet()
    errors: list[str] = []
    for directory in dirs:
        if not directory.is_dir():
            errors.append(f"{directory}: not a directory of playbooks")
            continue
        files = _playbook_files(directory)
        if not files:
            errors.append(f"{directory}: no *.yaml playbooks in it")
        # Causes first, so trees in the same directory can name causes defined beside them.
        for path in sorted(files, key=lambda p: (p.name != CAUSES_FILE and p.parent.name != CAUSES_DIR,
                                                  p.name != TRAPS_FILE, p.name)):
            try:
                _load_file(path, pbset, errors, schema=schema)
            except InputError as exc:
                errors.append(str(exc))
    return pbset, errors


def _load_file(path: Path, pbset: PlaybookSet, errors: list[str], *, schema: bool = True) -> None:
    from doctor.inio import read_capped

    data, node = load_yaml(read_capped(path, limit=MAX_YAML_BYTES, label=str(path)), str(path))
    kind = {CAUSES_FILE: "causes", TRAPS_FILE: "traps"}.get(path.name, "playbook")
    if path.parent.name == CAUSES_DIR:  # one cause per file (issue 20's layout): read as a one-cause catalog
        if not isinstance(data, dict) or data.get("id") != path.stem:
            errors.append(f"{path}: a cause file needs 'id: {path.stem}' (its file name)")
            return
        body = {k: v for k, v in data.items() if k not in ("id", "cases")}  # cases: run by the test suite
        data, kind = {"causes": {path.stem: body}}, "causes"
    if schema:
        from doctor.playbook import schema as schemas

        rules = {"causes": schemas.CAUSES_SCHEMA, "traps": schemas.TRAPS_SCHEMA,
                 "playbook": schemas.PLAYBOOK_SCHEMA}[kind]
        problems = _schema_errors(data, rules, node, path)
        if problems:
            errors.extend(problems)
            return
    if kind == "causes":
        for cause_id, body in data["causes"].items():
            where = f"{path}:{line_of(node, ['causes', cause_id])}"
            if cause_id in pbset.causes:
                errors.append(f"{where}: cause '{cause_id}' is already defined in {pbset.causes[cause_id].source}")
                continue
            pbset.causes[cause_id] = Cause(
                id=cause_id, title=body["title"], severity=body["severity"], what=body["what"].strip(),
                why=body["why"].strip(), fix={k: v.strip() for k, v in body["fix"].items()}, ref=body["ref"],
                evidence=tuple(body.get("evidence", ())),
                source=where, log_signatures=tuple(body.get("log_signatures", ())),
                behaviour=dict(body.get("behaviour") or {}),
            )
            for index, sig in enumerate(body.get("log_signatures", ())):
                if "pattern" not in sig:  # an error-catalog entry (doctor/logs/catalog_map.py)
                    continue
                try:
                    re.compile(sig["pattern"])
                except re.error as exc:
                    errors.append(f"{path}:{line_of(node, ['causes', cause_id, 'log_signatures', index])}: "
                                  f"log_signatures pattern: not a valid regular expression: {exc}")
    elif kind == "traps":
        for item in data["traps"]:
            pbset.traps.append(Trap(item["id"], item["metric"], item.get("engine", "any"), item["why"].strip(),
                                    item["instead"].strip(), item.get("ref", "")))
    else:
        symptom = data["symptom"]
        if path.stem != symptom:
            errors.append(f"{path}:{line_of(node, ['symptom'])}: symptom '{symptom}' must match the file name "
                          f"'{path.stem}'")
            return
        if symptom in pbset.playbooks:
            errors.append(f"{path}: symptom '{symptom}' is already defined in {pbset.playbooks[symptom].source}")
            return
        errors.extend(_semantic_errors(data, node, path))
        for cause_id, location in _causes_in(data["tree"], ["tree"]):
            if cause_id not in pbset.causes:
                errors.append(f"{path}:{line_of(node, location)}: cause '{cause_id}' is not defined in a "
                              f"{CAUSES_FILE} (built-in or beside this playbook)")
        pbset.playbooks[symptom] = Playbook(
            symptom=symptom, title=data["title"], tree=data["tree"], description=data.get("description", "").strip(),
            aliases=tuple(data.get("aliases", ())), applies_when=data.get("applies_when"), source=str(path),
        )


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
    """What the schema cannot say: regexes compile, facts live in known namespaces, ops have their value."""
    out: list[str] = []
    for location, cond in _conditions(data, []):
        where = f"{path}:{line_of(node, location)}"
        namespace = cond["fact"].split(".")[0]
        if namespace not in NAMESPACES:
            out.append(f"{where}: fact '{cond['fact']}': unknown namespace '{namespace}' "
                       f"(one of: {', '.join(NAMESPACES)})")
        from doctor.playbook.schema import VALUE_OPS

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
