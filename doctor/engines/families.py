"""The model-family parser table: which tool-call and reasoning parser each model family needs, per engine.

"The model doesn't use tools" is, more often than not, a launch command without the family's
``--tool-call-parser`` (or with another family's), and "the answer is full of <think>" is a missing or wrong
``--reasoning-parser``. Parser names are per engine and per family (vLLM ``deepseek_v3`` vs SGLang
``deepseekv3``, vLLM ``openai`` vs SGLang ``gpt-oss``), so this knowledge lives in one reviewable data file,
``families.yaml``, with the source of every entry; this module only loads, matches and turns it into facts.

Matching is most-specific-first (the seed's "New Model Diagnosis Procedure", step 4): the repo id or
directory name decides when it names a family (``Qwen3-Coder`` is not generic Qwen3 although both are
``qwen3_moe``), then ``architectures``, then ``model_type``. Config-only matches say which sibling families
share that model_type, because GLM-4.5 and GLM-4.7 (``glm4_moe``) need different tool parsers. That order, and
"the longest name match wins", are data (the table's ``matching`` tiers), and every test is a condition run by
the playbooks' evaluator (doctor/playbook/conditions.py): this module has no matcher of its own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.redact import redact_text
from doctor.versions import version_at_least, version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ENGINES = ("vllm", "sglang")
DATA_FILE = Path(__file__).with_name("families.yaml")
_LABEL = "families.yaml"

_FAMILY_KEYS = {"id", "title", "extends", "match", "reasoning", "thinking_toggle", "thinking_default",
                "vllm", "sglang", "sources", "notes", "variants"}
_MATCH_KEYS = {"names", "model_types", "architectures", "also_model_types"}
_TIER_KEYS = {"by", "fact", "op", "rank", "says", "alternatives"}
_VARIANT_KEYS = {"id", "names", "reasoning", "thinking_toggle", "thinking_default", "vllm", "sglang",
                 "sources", "notes"}
_SPEC_KEYS = {"name", "since", "registered", "since_why", "why", "earlier", "also"}
_SOURCE_KEYS = {"vllm", "sglang", "model"}
_HASH = re.compile(r"^[0-9a-f]{16,}$")


# -- the table's types ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParserSpec:
    """One engine's parser for one job (tool calls or reasoning) in one family.

    ``since`` is the first release whose wheel registers ``name`` (bisected over the PyPI wheels), or, where
    ``since_why`` says so, the first release in which that parser handles this family's output correctly.
    ``earlier`` lists the names to use on releases older than ``since`` (renamed or stand-in parsers),
    ``also`` names that work as well (aliases), ``why`` says why there is no parser at all.
    """

    name: str | None
    since: str | None = None
    registered: str | None = None
    since_why: str | None = None
    why: str | None = None
    earlier: tuple[tuple[str, str], ...] = ()
    also: tuple[str, ...] = ()

    def at(self, version: str | None) -> tuple[str | None, str | None]:
        """The (name, since) to expect on engine ``version`` (None or unparseable: the current name)."""
        if not self.earlier or self.name is None or version is None or version_key(version) is None:
            return self.name, self.since  # one name for every release (older ones: the upgrade target)
        from doctor.playbook.conditions import newest_holding, release_spans

        named = [*self.earlier, (self.name, self.since)]  # release rules: each name from its since to the next
        facts = Facts()
        facts.set("launch.version", version, "engine version")
        index = newest_holding(release_spans("launch.version", [since for _, since in named]), facts)
        return named[index] if index is not None else (self.name, self.since)  # older than any: upgrade to since

    def accepted(self, version: str | None = None) -> tuple[str, ...]:
        """Every name that parses this family correctly: the one expected at ``version`` (all current and
        earlier names when the version is unknown) and the aliases in ``also``."""
        if version is None or version_key(version) is None:
            names = ([self.name] if self.name else []) + [name for name, _ in self.earlier]
        else:
            names = [name for name in [self.at(version)[0]] if name]
        return tuple(dict.fromkeys([*names, *self.also]))


@dataclass(frozen=True)
class EngineSpec:
    """The tool-call and reasoning parsers one engine needs for a family."""

    tool: ParserSpec
    reasoning: ParserSpec


@dataclass(frozen=True)
class Family:
    """A model family and what each engine needs to parse its tool calls and reasoning."""

    id: str
    title: str
    engines: Mapping[str, EngineSpec]
    reasoning: bool
    thinking_toggle: str | None
    thinking_default: bool | None
    sources: Mapping[str, tuple[str, ...]]
    notes: tuple[str, ...] = ()
    variant: str | None = None
    matched_by: str | None = None
    alternatives: tuple[str, ...] = ()

    def _engine(self, engine: str) -> EngineSpec:
        if engine not in self.engines:
            raise InputError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
        return self.engines[engine]

    def tool_spec(self, engine: str) -> ParserSpec:
        return self._engine(engine).tool

    def reasoning_spec(self, engine: str) -> ParserSpec:
        return self._engine(engine).reasoning

    def tool_parser(self, engine: str) -> str | None:
        return self.tool_spec(engine).name

    def reasoning_parser(self, engine: str) -> str | None:
        return self.reasoning_spec(engine).name

    def tool_parser_since(self, engine: str) -> str | None:
        return self.tool_spec(engine).since

    def reasoning_parser_since(self, engine: str) -> str | None:
        return self.reasoning_spec(engine).since

    @property
    def needs_auto_tool_choice(self) -> bool:
        """vLLM answers ``tool_choice: auto`` only with ``--enable-auto-tool-choice`` and a tool parser
        (vllm 0.33.0 vllm/renderers/online_renderer.py:274; without the flag the parser is never built,
        vllm/parser/parser_manager.py:34). SGLang has no such flag."""
        return self.tool_parser("vllm") is not None

    def source(self, engine: str) -> str:
        """The first source for ``engine``'s choice (the family's model card when the engine has none)."""
        for key in (engine, "model"):
            if self.sources.get(key):
                return self.sources[key][0]
        return _LABEL


# -- loading and validation -----------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _table(path: str | None = None) -> dict[str, Any]:
    """The validated ``matching`` section and raw entries (``extends`` resolved) of ``families.yaml``; the
    shipped table is kept parsed between runs (doctor.datacache)."""
    if path:
        return _load_families(Path(path))
    from doctor.datacache import cached

    return cached("engines.families", [DATA_FILE, Path(__file__)], lambda: _load_families(DATA_FILE))


def load_families(path: str | None = None) -> tuple[dict[str, Any], ...]:
    """The validated raw entries of ``families.yaml`` (``extends`` resolved), in file order."""
    return _table(path)["families"]


def _load_families(file: Path) -> dict[str, Any]:
    from doctor.yamlsafe import parse_packaged

    label = file.name
    data = parse_packaged(file, label)
    if not isinstance(data, dict) or not isinstance(data.get("families"), list):
        raise InputError(f"{label}: families: missing or not a list")
    matching = _check_matching(data.get("matching"), label)
    raw = data["families"]
    by_id: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(raw):
        where = f"{label}: families[{index}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            raise InputError(f"{where}: id: missing")
        if entry["id"] in by_id:
            raise InputError(f"{where}: id: {entry['id']!r} appears twice")
        unknown = set(entry) - _FAMILY_KEYS
        if unknown:
            raise InputError(f"{where}: {sorted(unknown)[0]}: unknown key (engines are {', '.join(ENGINES)})")
        by_id[entry["id"]] = entry
    resolved = tuple(_resolve(by_id, entry["id"], label, ()) for entry in raw)
    _validate(resolved, label)
    return {"matching": matching, "families": resolved, "conditions": _conditions(matching, resolved)}


def _check_matching(matching: Any, label: str) -> dict[str, Any]:
    """The ``matching`` section: tiers in precedence order, the variants' test and the siblings' test, each a
    condition's fact and op (the value being each item of the family's list named by ``by``) and a rank."""
    from doctor.playbook.conditions import RANKS
    from doctor.playbook.schema import VALUE_OPS

    if not isinstance(matching, dict) or not isinstance(matching.get("tiers"), list) or not matching["tiers"]:
        raise InputError(f"{label}: matching.tiers: missing or not a list")
    tests = [(f"tiers[{i}]", t) for i, t in enumerate(matching["tiers"])]
    tests += [(key, matching.get(key)) for key in ("variants", "alternatives")]
    for where, test in tests:
        if (not isinstance(test, dict) or set(test) - _TIER_KEYS or test.get("by") not in _MATCH_KEYS
                or not isinstance(test.get("fact"), str) or test.get("op") not in VALUE_OPS
                or test.get("rank", "first") not in RANKS):
            raise InputError(f"{label}: matching.{where}: needs by (one of {', '.join(sorted(_MATCH_KEYS))}), "
                             f"fact, op and a rank of {', '.join(RANKS)}")
    return matching


def _resolve(by_id: dict[str, dict[str, Any]], fid: str, label: str, seen: tuple[str, ...]) -> dict[str, Any]:
    """Apply ``extends``: the child inherits every key it does not set (``match`` excepted); engine maps
    merge per job (a child that sets only ``vllm.tool`` keeps the parent's ``vllm.reasoning``); sources
    merge per key, the child's first."""
    entry = by_id[fid]
    parent_id = entry.get("extends")
    if parent_id is None:
        return dict(entry)
    if parent_id not in by_id or parent_id in seen:
        raise InputError(f"{label}: {fid}: extends: {parent_id!r} is unknown or circular")
    parent = _resolve(by_id, parent_id, label, (*seen, fid))
    merged = {k: v for k, v in parent.items() if k not in ("id", "title", "match", "extends")}
    return _overlay(merged, entry)


def _overlay(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: engine maps merge per job, sources per key and notes by concatenation (``top``'s
    first, so its own source is the one cited); every other key is replaced."""
    merged = dict(base)
    for key, value in top.items():
        if key in ENGINES and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        elif key == "sources" and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {k: list(dict.fromkeys([*value.get(k, []), *merged[key].get(k, [])]))
                           for k in {*merged[key], *value}}
        elif key == "notes":
            merged[key] = list(value or []) + list(merged.get("notes") or [])
        else:
            merged[key] = value
    return merged


def _validate(entries: tuple[dict[str, Any], ...], label: str) -> None:
    claimed: dict[tuple[str, str], str] = {}
    for entry in entries:
        where = f"{label}: {entry['id']}"
        if not isinstance(entry.get("title"), str):
            raise InputError(f"{where}: title: missing")
        match = entry.get("match") or {}
        if not isinstance(match, dict) or set(match) - _MATCH_KEYS:
            raise InputError(f"{where}: match: only {', '.join(sorted(_MATCH_KEYS))} are allowed")
        for pattern in match.get("names") or []:
            _compile(pattern, f"{where}: match.names")
        for kind in ("model_types", "architectures"):
            for value in match.get(kind) or []:
                other = claimed.setdefault((kind, value), entry["id"])
                if other != entry["id"]:
                    raise InputError(f"{where}: match.{kind}: {value!r} is already claimed by {other}"
                                     " (list it under also_model_types instead)")
        _validate_body(entry, where)
        for index, variant in enumerate(entry.get("variants") or []):
            vwhere = f"{where}: variants[{index}]"
            if not isinstance(variant, dict) or set(variant) - _VARIANT_KEYS or "id" not in variant:
                raise InputError(f"{vwhere}: needs an id and only {', '.join(sorted(_VARIANT_KEYS))}")
            for pattern in variant.get("names") or []:
                _compile(pattern, f"{vwhere}: names")
            if not variant.get("names"):
                raise InputError(f"{vwhere}: names: missing")
            _validate_body(_with_variant(entry, variant), vwhere)


def _validate_body(entry: dict[str, Any], where: str) -> None:
    if not isinstance(entry.get("reasoning"), bool):
        raise InputError(f"{where}: reasoning: must be true or false")
    if entry.get("thinking_default") not in (True, False, None):
        raise InputError(f"{where}: thinking_default: must be true, false or null")
    if not entry["reasoning"] and (entry.get("thinking_toggle") or entry.get("thinking_default") is not None):
        raise InputError(f"{where}: thinking_toggle: a non-reasoning family has no thinking switch")
    sources = entry.get("sources")
    if not isinstance(sources, dict) or set(sources) - _SOURCE_KEYS or not all(
            isinstance(v, list) and v and all(isinstance(s, str) for s in v) for v in sources.values()):
        raise InputError(f"{where}: sources: a mapping of {', '.join(sorted(_SOURCE_KEYS))} to non-empty lists")
    for engine in ENGINES:
        if engine not in sources and "model" not in sources:
            raise InputError(f"{where}: sources.{engine}: missing (say where the {engine} choice comes from)")
        spec = entry.get(engine)
        if not isinstance(spec, dict) or set(spec) != {"tool", "reasoning"}:
            raise InputError(f"{where}: {engine}: needs exactly tool and reasoning")
        for job in ("tool", "reasoning"):
            _check_spec(spec[job], f"{where}: {engine}.{job}")


def _check_spec(spec: Any, where: str) -> None:
    if not isinstance(spec, dict) or set(spec) - _SPEC_KEYS or "name" not in spec:
        raise InputError(f"{where}: needs name and only {', '.join(sorted(_SPEC_KEYS))}")
    if spec["name"] is None:
        if not spec.get("why"):
            raise InputError(f"{where}.why: a family without a parser must say why")
        return
    if not isinstance(spec["name"], str) or version_key(str(spec.get("since"))) is None:
        raise InputError(f"{where}.since: missing or not a version")
    if not spec.get("registered"):
        raise InputError(f"{where}.registered: missing (the wheel file:line that registers {spec['name']})")
    for item in spec.get("earlier") or []:
        if (not isinstance(item, dict) or set(item) != {"name", "since"}
                or version_key(str(item["since"])) is None
                or version_at_least(str(item["since"]), str(spec["since"]))):
            raise InputError(f"{where}.earlier: each needs name and a since older than {spec['since']}")


def _compile(pattern: Any, where: str) -> re.Pattern[str]:
    try:
        return re.compile(str(pattern), re.IGNORECASE)
    except re.error as exc:
        raise InputError(f"{where}: {pattern!r}: not a valid regular expression: {exc}") from None


# -- building Family objects ----------------------------------------------------------------------------
def _spec(raw: dict[str, Any]) -> ParserSpec:
    return ParserSpec(
        name=raw["name"],
        since=str(raw["since"]) if raw.get("since") is not None else None,
        registered=raw.get("registered"),
        since_why=raw.get("since_why"),
        why=raw.get("why"),
        earlier=tuple((item["name"], str(item["since"])) for item in raw.get("earlier") or []),
        also=tuple(raw.get("also") or []),
    )


def _with_variant(entry: dict[str, Any], variant: dict[str, Any]) -> dict[str, Any]:
    return _overlay(entry, {k: v for k, v in variant.items() if k not in ("id", "names")})


def _build(entry: dict[str, Any], variant: dict[str, Any] | None = None) -> Family:
    body = entry if variant is None else _with_variant(entry, variant)
    return Family(
        id=entry["id"],
        title=entry["title"],
        engines={e: EngineSpec(_spec(body[e]["tool"]), _spec(body[e]["reasoning"])) for e in ENGINES},
        reasoning=body["reasoning"],
        thinking_toggle=body.get("thinking_toggle"),
        thinking_default=body.get("thinking_default"),
        sources={k: tuple(v) for k, v in body["sources"].items()},
        notes=tuple(body.get("notes") or ()),
        variant=variant["id"] if variant else None,
    )


@functools.lru_cache(maxsize=4)
def families(path: str | None = None) -> tuple[Family, ...]:
    """Every family of the table at its defaults (no variant), in file order."""
    return tuple(_build(entry) for entry in load_families(path))


def family(fid: str, variant: str | None = None, path: str | None = None) -> Family:
    """A family by id (and optionally one of its variants)."""
    for entry in load_families(path):
        if entry["id"] == fid:
            if variant is None:
                return _build(entry)
            for item in entry.get("variants") or []:
                if item["id"] == variant:
                    return _build(entry, item)
            raise InputError(f"{_LABEL}: {fid}: no variant {variant!r}")
    raise InputError(f"{_LABEL}: no family {fid!r}")


# -- matching ---------------------------------------------------------------------------------------------
def _name_candidates(name: str) -> list[str]:
    """Where to look for a family name, best first: the model's own name, then the whole path.

    A Hugging Face cache path (``…/models--Qwen--Qwen3-8B/snapshots/<sha>``) names the repo in a
    ``models--ORG--NAME`` component; a trailing snapshot hash or slash names nothing.
    """
    text = name.strip().replace("\\", "/").rstrip("/")
    cache = re.search(r"models--([^/]+?)--([^/]+)", text)
    if cache:
        return [cache[2], f"{cache[1]}/{cache[2]}"]
    parts = [p for p in text.split("/") if p and not _HASH.match(p) and p != "snapshots"]
    if not parts:
        return []
    return [parts[-1], "/".join(parts)] if len(parts) > 1 else [parts[-1]]


def _condition(test: dict[str, Any], items: Any) -> dict[str, Any] | None:
    """A family's ``match`` list (or a variant's ``names``) as one condition: any item, tested by ``test``'s
    op on its fact; None for an empty list. Name patterns are case-insensitive."""
    if not items:
        return None
    values = [f"(?i){item}" if test["op"] == "matches" else item for item in items]
    leaves = [{"fact": test["fact"], "op": test["op"], "value": value} for value in values]
    return leaves[0] if len(leaves) == 1 else {"any": leaves}


def _conditions(matching: dict[str, Any], entries: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """Each family's match lists as conditions, kept with the parsed table: per tier (in precedence order) one
    condition per family in file order, the variants' per family, and the siblings' (``alternatives``)."""
    variants, alternatives = matching["variants"], matching["alternatives"]
    return {
        "tiers": [[_condition(tier, (e.get("match") or {}).get(tier["by"])) for e in entries]
                  for tier in matching["tiers"]],
        "variants": [[_condition(variants, v.get(variants["by"])) for v in e.get("variants") or []]
                     for e in entries],
        "alternatives": [_condition(alternatives, (e.get("match") or {}).get(alternatives["by"])) for e in entries],
    }


def _values(tier: dict[str, Any], name: str | None, architectures: Any, model_type: str | None) -> list[str]:
    """The values of the tier's fact to try, best first."""
    if tier["by"] == "names":
        return _name_candidates(name) if isinstance(name, str) and name.strip() else []
    if tier["by"] == "architectures":
        archs = [architectures] if isinstance(architectures, str) else architectures
        return [a for a in archs if isinstance(a, str)] if isinstance(archs, (list, tuple)) else []
    return [model_type] if isinstance(model_type, str) and model_type else []


def _subject(fact: str, value: str) -> Facts:
    facts = Facts()
    facts.set(fact, value, "the model being matched")
    return facts


def match_family(*, architectures: list[str] | None, model_type: str | None, name: str | None,
                 path: str | None = None) -> Family | None:
    """The family of a model, most specific evidence first: the repo id / directory name, then
    ``architectures``, then ``model_type`` (the table's ``matching`` tiers). None when nothing in the table fits.

    ``Qwen/Qwen3-Coder-480B-A35B-Instruct`` → qwen3-coder (although its model_type is the generic
    ``qwen3_moe``); ``nvidia/GLM-5.2-NVFP4`` → glm-5. The returned family's ``matched_by`` says what decided,
    and ``alternatives`` lists the sibling families a config-only match cannot tell apart.
    """
    archs = tuple(architectures) if isinstance(architectures, list) else architectures
    try:  # a run asks about the same model several times (plan: each engine's parsers, the checks)
        return _match(archs, model_type, name, path)
    except TypeError:  # an unhashable value in a malformed config.json: match it unremembered
        return _match.__wrapped__(archs, model_type, name, path)


@functools.lru_cache(maxsize=32)
def _match(architectures: Any, model_type: Any, name: Any, path: str | None) -> Family | None:
    from doctor.playbook.conditions import best_holding

    table = _table(path)
    entries, matching, conditions_of = table["families"], table["matching"], table["conditions"]
    variants, siblings, sibling_test = conditions_of["variants"], conditions_of["alternatives"], matching["alternatives"]
    for tier, conditions in zip(matching["tiers"], conditions_of["tiers"], strict=True):
        for value in _values(tier, name, architectures, model_type):
            facts = _subject(tier["fact"], value)
            hit = best_holding(conditions, facts, tier.get("rank", "first"))
            if hit is None:
                continue
            index, outcome = hit
            variant_hit = best_holding(variants[index], facts, "first") if variants[index] else None
            variant = entries[index]["variants"][variant_hit[0]] if variant_hit else None
            how = tier["says"].format(matched=outcome.matched, name=redact_text(name or ""), value=value)
            if variant is not None:
                how += f" (variant {variant['id']})"
            others: tuple[str, ...] = ()
            if tier.get("alternatives") and isinstance(model_type, str):
                kin = _subject(sibling_test["fact"], model_type)
                others = tuple(e["id"] for e, cond in zip(entries, siblings, strict=True)
                               if cond is not None and best_holding([cond], kin, "first"))
                if others:
                    how += f" (shared with {', '.join(others)}: only the repo name tells them apart)"
            return replace(_build(entries[index], variant), matched_by=how, alternatives=others)
    return None


# -- facts ------------------------------------------------------------------------------------------------
def _undeprecated(engine: str, job: str, name: str | None, version: str | None) -> tuple[str, str] | None:
    """(replacement, why) when ``name`` is deprecated on ``version`` (on the newest release read when the
    version is unknown: llmdoctor then spells flags as the newest release does), else None."""
    from doctor.engines.catalog import available, version_key
    from doctor.engines.upgrade import deprecated_parser

    if not name:
        return None
    try:
        release = version if version and version_key(version) else available(engine)[-1]
    except ValueError:   # a tag that is not a version (nightly, latest): the newest release's names
        release = available(engine)[-1]
    found = deprecated_parser(engine, "tool_parsers" if job == "tool_parser" else "reasoning_parsers", name, release)
    if found is None:
        return None
    return found["replacement"], (f"{engine} {release} deprecates {name} for {found['replacement']} "
                                  f"({found['source']})")



def expected_facts(family: Family, engine: str, version: str | None) -> Facts:
    """What the launch command should say for ``family`` on ``engine`` (at ``version`` when known).

    Writes ``model.family`` and the ``expect.*`` keys of docs/facts.md. On a version older than a parser's
    ``since`` the name that version had is expected (vLLM 0.10.0: ``glm4_moe``, later ``glm45``); when the
    version had none, the current name stays expected and ``*_since`` is the upgrade target.
    """
    spec = family.engines.get(engine)
    if spec is None:
        raise InputError(f"engine: {engine!r} is not one of {', '.join(ENGINES)}")
    facts = Facts()
    label = f"{_LABEL} {family.id}" + (f" ({family.variant})" if family.variant else "")
    facts.set("model.family", family.id, family.matched_by or label)
    facts.set("model.family_variant", family.variant, family.matched_by or label)
    facts.set("model.family_alternatives", list(family.alternatives), family.matched_by or label)
    cited = f"{label}: {family.source(engine)}"
    for job, parser in (("tool_parser", spec.tool), ("reasoning_parser", spec.reasoning)):
        name, since = parser.at(version)
        renamed = _undeprecated(engine, job, name, version)
        if renamed is not None:   # never suggest a name the release deprecates: the engine's own replacement
            name, why = renamed
            facts.set(f"expect.{job}", name, f"{cited}; {why}")
        else:
            facts.set(f"expect.{job}", name, cited)
        since_source = f"{engine} wheel registry: {parser.registered}" if name == parser.name and \
            parser.registered else cited
        if parser.since_why and name == parser.name:
            since_source += f" ({parser.since_why})"
        facts.set(f"expect.{job}_since", since, since_source)
        facts.set(f"expect.{job}_accepted", list(dict.fromkeys([*parser.accepted(version), *([name] if name else [])])),
                  cited)
        if parser.name is None:
            facts.set(f"expect.{job}_why_none", parser.why, cited)
    if engine == "vllm":
        facts.set("expect.auto_tool_choice", family.needs_auto_tool_choice,
                  f"{label}: vllm 0.33.0 vllm/renderers/online_renderer.py:274")
    facts.set("expect.reasoning_model", family.reasoning, label)
    facts.set("expect.thinking_toggle", family.thinking_toggle, label)
    facts.set("expect.thinking_default", family.thinking_default, label)
    return facts
