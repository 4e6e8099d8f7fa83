"""Evaluating playbook conditions over Facts, in three-valued logic, recording every test.

Conditions are data (fact, operator, value; all/any/not), never code: there is no ``eval`` anywhere.
A fact that is unknown (a probe failed, an input was not given) makes a test *unknown*, not false, so a
tree can say what it could not check instead of silently taking the "no" branch.

Three-valued rules (Kleene): ``all`` is false if any part is false, else unknown if any part is unknown;
``any`` is true if any part is true, else unknown if any part is unknown; ``not`` keeps unknown.

This is the one condition language of the project's data: the symptom trees, the ``when:`` of the flag
semantics (doctor/engines/semantics.yaml, where a case applies only when its condition is true — unknown does
not apply), the ``as:`` of the server_info field table (doctor/probes/server_fields.yaml), and the release
rules (a rule ``since`` a release holds until the next rule's ``since``: :func:`release_spans` says so as
conditions, :func:`newest_holding` picks the rule; a history run ``since``…``until`` of the generated catalogs is
:func:`release_run`), the engines' value ranges (doctor/engines/refusals.yaml) and the model-family table's
matching (each family's ``match`` lists are conditions, and precedence among the families whose condition holds
is data, a ``rank``: :func:`best_holding`). ``set`` means one thing everywhere: known, and neither null nor
false (docs/playbooks.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from doctor.facts import Facts
from doctor.findings import Evidence
from doctor.humanize import readable
from doctor.versions import version_key

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Tri = bool | None  # True, False, or None for unknown


@dataclass
class Outcome:
    """The value of a condition plus what it rested on."""

    value: Tri
    #: tests that came out true along the way (the evidence chain of a finding)
    support: list[Evidence] = field(default_factory=list)
    #: fact keys whose absence made the result unknown
    missing: list[str] = field(default_factory=list)
    #: the longest stretch a true ``matches`` test matched (what the ``longest_match`` rank compares)
    matched: str = ""


#: The one false outcome: a false test carries no evidence and nothing mutates it (most tests of a run are
#: false, and a dataclass with two list fields is not free to build ~100,000 times a lint loop).
_FALSE = Outcome(False)


def evaluate(cond: dict[str, Any], facts: Facts) -> Outcome:
    if "all" in cond:
        parts = []
        for part in cond["all"]:  # one false part decides: the rest would change nothing (no evidence is kept)
            outcome = evaluate(part, facts)
            if outcome.value is False:
                return _FALSE
            parts.append(outcome)
        if any(p.value is None for p in parts):
            return Outcome(None, missing=_flatten(p.missing for p in parts if p.value is None))
        return Outcome(True, support=_flatten(p.support for p in parts), matched=_longest(parts))
    if "any" in cond:
        parts = [evaluate(c, facts) for c in cond["any"]]
        true_parts = [p for p in parts if p.value is True]
        if true_parts:
            return Outcome(True, support=_flatten(p.support for p in true_parts), matched=_longest(true_parts))
        if any(p.value is None for p in parts):
            return Outcome(None, missing=_flatten(p.missing for p in parts if p.value is None))
        return _FALSE
    if "not" in cond:
        inner = evaluate(cond["not"], facts)
        if inner.value is None:
            return Outcome(None, missing=inner.missing)
        if inner.value is True:
            return _FALSE
        # The negation of a false test is evidence too: "no EP flag" is part of the moe-without-ep chain.
        return Outcome(True, support=_negated_support(cond["not"], facts))
    return _test(cond, facts)


Compiled = Callable[[Facts], Outcome]


def compile_condition(cond: dict[str, Any]) -> Compiled:
    """``cond`` as a function of the facts giving exactly what ``evaluate(cond, facts)`` gives (value, support,
    missing, matched), with its shape read once: which connective or test it is, the fact, the operator, the
    operand. The symptom trees are walked for every lint of a long-running process (MCP, ``serve``, a fleet
    check): their ~400 conditions a lint then cost no dictionary lookups to tell ``all`` from a test. The
    condition must not change afterwards (the trees are loaded once and only read)."""
    if "all" in cond:
        return _compile_all([compile_condition(part) for part in cond["all"]])
    if "any" in cond:
        return _compile_any([compile_condition(part) for part in cond["any"]])
    if "not" in cond:
        return _compile_not(cond["not"], compile_condition(cond["not"]))
    return _compile_test(cond)


def _compile_all(parts_of: list[Compiled]) -> Compiled:
    def run(facts: Facts) -> Outcome:
        parts = []
        for part_of in parts_of:
            outcome = part_of(facts)
            if outcome.value is False:
                return _FALSE
            parts.append(outcome)
        if any(p.value is None for p in parts):
            return Outcome(None, missing=_flatten(p.missing for p in parts if p.value is None))
        return Outcome(True, support=_flatten(p.support for p in parts), matched=_longest(parts))
    return run


def _compile_any(parts_of: list[Compiled]) -> Compiled:
    def run(facts: Facts) -> Outcome:
        parts = [part_of(facts) for part_of in parts_of]
        true_parts = [p for p in parts if p.value is True]
        if true_parts:
            return Outcome(True, support=_flatten(p.support for p in true_parts), matched=_longest(true_parts))
        if any(p.value is None for p in parts):
            return Outcome(None, missing=_flatten(p.missing for p in parts if p.value is None))
        return _FALSE
    return run


def _compile_not(inner_cond: dict[str, Any], inner_of: Compiled) -> Compiled:
    def run(facts: Facts) -> Outcome:
        inner = inner_of(facts)
        if inner.value is None:
            return Outcome(None, missing=inner.missing)
        if inner.value is True:
            return _FALSE
        return Outcome(True, support=_negated_support(inner_cond, facts))
    return run


def _compile_test(cond: dict[str, Any]) -> Compiled:
    key, op = cond["fact"], cond["op"]
    if op in _WORD_OPS:
        def word(facts: Facts) -> Outcome:
            return _word_test(op, key, facts.fact(key))
        return word
    if "ref" in cond:
        def against_ref(facts: Facts) -> Outcome:
            fact = facts.fact(key)
            if fact is None:
                return Outcome(None, missing=[key])
            return _value_test(cond, op, key, fact, facts)
        return against_ref
    expected = cond.get("value")

    def against_value(facts: Facts) -> Outcome:
        fact = facts.fact(key)
        if fact is None:
            return Outcome(None, missing=[key])
        if not _compare(op, fact.value, expected):  # most tests of a run end here, with nothing to word
            return _FALSE
        return _value_test(cond, op, key, fact, facts)
    return against_value


def blocked_by(cond: dict[str, Any]) -> frozenset[str]:
    """The facts whose absence alone keeps ``cond`` from holding: with any one of them unknown, ``evaluate`` gives
    false, or unknown with that fact among the missing. A walk that knows such a fact cannot be learnt in this run
    (lint reads no server log) can leave the node out unread: either way nothing would be recorded
    (doctor.playbook.engine prunes the trees by it, once per set of absent facts)."""
    return _absence(cond)[0]


def _absence(cond: dict[str, Any]) -> tuple[frozenset[str], frozenset[str]]:
    """(facts whose absence makes ``cond`` false or unknown-naming-them, facts whose absence makes it true or
    unknown-naming-them): the second is what a ``not`` turns into the first. An empty ``all``/``any`` gets
    nothing (conservative)."""
    if "all" in cond or "any" in cond:
        parts = [_absence(part) for part in cond["all" if "all" in cond else "any"]]
        if not parts:
            return frozenset(), frozenset()
        unions = (frozenset().union(*(p[0] for p in parts)), frozenset().union(*(p[1] for p in parts)))
        meets = (frozenset.intersection(*(p[0] for p in parts)), frozenset.intersection(*(p[1] for p in parts)))
        # all: one part false or unknown-naming-k decides (Kleene), so any part's facts count; any: every part must
        return (unions[0], meets[1]) if "all" in cond else (meets[0], unions[1])
    if "not" in cond:
        false_if, true_if = _absence(cond["not"])
        return true_if, false_if
    key, op = cond["fact"], cond["op"]
    if op == "exists":  # absent: false
        return frozenset((key,)), frozenset()
    if op == "missing":  # absent: true
        return frozenset(), frozenset((key,))
    # every other test of an absent fact is unknown, naming it (a ``ref`` is named only when the fact is known)
    return frozenset((key,)), frozenset((key,))


def release_spans(fact: str, sinces: list[str]) -> list[dict[str, Any]]:
    """The conditions a list of release rules (oldest ``since`` first) stands for: rule *i* holds from its
    ``since`` until the next rule's, the last one from its ``since`` on."""
    spans = []
    for i, since in enumerate(sinces):
        start = {"fact": fact, "op": "version_ge", "value": since}
        if i + 1 < len(sinces):
            start = {"all": [start, {"fact": fact, "op": "version_lt", "value": sinces[i + 1]}]}
        spans.append(start)
    return spans


def release_run(fact: str, since: str, until: str) -> dict[str, Any]:
    """The condition a run of a release history stands for (the catalogs' ``since``…``until``: the first and the
    last release read with one value, both included)."""
    return {"all": [{"fact": fact, "op": "version_ge", "value": since},
                    {"fact": fact, "op": "version_le", "value": until}]}


def in_run(version: str, since: str, until: str) -> bool:
    """Whether ``version`` falls in the run ``since``…``until`` (a version that is not one falls in none)."""
    return evaluate(release_run("launch.version", since, until), _at(version)).value is True


def _at(version: str) -> Facts:
    facts = Facts()
    facts.set("launch.version", version, "the release a history run is looked up for")
    return facts


def newest_holding(conditions: list[dict[str, Any]], facts: Facts) -> int | None:
    """The index of the last condition that is not false: the one that holds, or, when the facts leave them all
    unknown (the engine version was not given), the newest, which is the rules' hedge. None when all are false
    (a version older than every rule)."""
    for index in range(len(conditions) - 1, -1, -1):
        if evaluate(conditions[index], facts).value is not False:
            return index
    return None


#: How :func:`best_holding` ranks the conditions that hold: the first in the data's order, or the one whose
#: ``matches`` test matched the longest stretch of its fact (the data's order breaks ties).
RANKS = ("first", "longest_match")


def best_holding(conditions: list[dict[str, Any] | None], facts: Facts, rank: str) -> tuple[int, Outcome] | None:
    """The index and outcome of the true condition that ``rank`` puts first (a None condition never holds),
    or None when no condition is true: precedence among rules as data, not as a matcher of its own."""
    best: tuple[int, Outcome] | None = None
    for index, cond in enumerate(conditions):
        if cond is None:
            continue
        outcome = evaluate(cond, facts)
        if outcome.value is not True:
            continue
        if rank == "first":
            return index, outcome
        if best is None or len(outcome.matched) > len(best[1].matched):
            best = (index, outcome)
    return best


def _longest(parts: list[Outcome]) -> str:
    longest = ""
    for part in parts:
        if len(part.matched) > len(longest):
            longest = part.matched
    return longest


#: the tests that take no operand (the rest compare the fact with a ``value`` or a ``ref``)
_WORD_OPS = frozenset(("exists", "missing", "set", "unset", "is_true", "is_false", "empty", "nonempty", "truthy",
                       "all_zero"))


def _test(cond: dict[str, Any], facts: Facts) -> Outcome:
    key, op = cond["fact"], cond["op"]
    fact = facts.fact(key)
    if op in _WORD_OPS:
        return _word_test(op, key, fact)
    if fact is None:
        return Outcome(None, missing=[key])
    return _value_test(cond, op, key, fact, facts)


def _word_test(op: str, key: str, fact: Any) -> Outcome:
    if op == "exists":
        return _result(fact is not None, key, fact, "is known")
    if op == "missing":
        return _result(fact is None, key, fact, "is unknown")
    if fact is None:
        return Outcome(None, missing=[key])
    value = fact.value
    if op in ("set", "unset"):
        is_set = value is not None and value is not False
        return _result(is_set if op == "set" else not is_set, key, fact, "is set" if op == "set" else "is not set")
    if op in ("is_true", "is_false"):
        # Named is_true/is_false, not true/false: YAML would read a bare `true` as a boolean. A null value is
        # neither: "unset" is its own test, so `is_false` on null never fires a "flag is off" branch.
        truth = None if value is None else bool(value)
        return _result(truth is (op == "is_true"), key, fact, op.replace("_", " "))
    if op in ("empty", "nonempty"):
        empty = value is None or (hasattr(value, "__len__") and len(value) == 0)
        return _result(empty if op == "empty" else not empty, key, fact, f"is {op}")
    if op == "truthy":  # an environment variable's spelling of "on" (engines read "1", "true", "yes", "on")
        return _result(str(value).strip().lower() in _TRUTHY, key, fact, "spells true")
    # all_zero: a number, or a mapping of numbers (vLLM --limit-mm-per-prompt), that is all 0
    return _result(_all_zero(value), key, fact, "is all zero")


def _value_test(cond: dict[str, Any], op: str, key: str, fact: Any, facts: Facts) -> Outcome:
    value = fact.value
    ref = None
    if "ref" in cond:
        ref = facts.fact(cond["ref"])
        if ref is None:
            return Outcome(None, missing=[cond["ref"]])
        expected = ref.value
    else:
        expected = cond.get("value")
    ok = _compare(op, value, expected)
    if not ok:  # false, or not comparable: no evidence to word (most tests of a run end here)
        return _FALSE
    shown = f"{cond['ref']} ({_fmt(expected)})" if ref is not None else _fmt(expected)
    outcome = _result(ok, key, fact, f"{_OP_WORDS[op]} {shown}")
    if op == "matches":
        outcome.matched = re.search(expected, value).group(0)  # type: ignore[union-attr] - it matched just now
    if ref is not None:  # the fact compared against is evidence too, with its own source
        outcome.support.append(Evidence(ref.key, ref.value, ref.source, f"(compared with {key})", ref.observed))
    return outcome


_OP_WORDS = {
    "eq": "==", "ne": "!=", "gt": ">", "ge": ">=", "lt": "<", "le": "<=", "in": "in", "not_in": "not in",
    "contains": "contains", "not_contains": "does not contain", "matches": "matches",
    "version_lt": "older than", "version_ge": "at least", "version_le": "at most",
}


def _compare(op: str, value: Any, expected: Any) -> bool | None:
    """Compare; None when the values cannot be compared (a type mismatch is 'no', never a crash)."""
    try:
        if op == "eq":
            return value == expected
        if op == "ne":
            return value != expected
        if op in ("gt", "ge", "lt", "le"):
            if not _is_number(value) or not _is_number(expected):
                return None
            return {"gt": value > expected, "ge": value >= expected,
                    "lt": value < expected, "le": value <= expected}[op]
        if op in ("in", "not_in"):
            if not isinstance(expected, (list, tuple, set, str)):
                return None
            inside = value in expected
            return inside if op == "in" else not inside
        if op in ("contains", "not_contains"):
            if not isinstance(value, (list, tuple, set, str, dict)):
                return None
            inside = expected in value
            return inside if op == "contains" else not inside
        if op == "matches":
            return isinstance(value, str) and isinstance(expected, str) and re.search(expected, value) is not None
        if op in ("version_lt", "version_ge", "version_le"):
            have, need = version_key(value), version_key(expected)
            if have is None or need is None:  # "latest", "nightly": not comparable, so not older either
                return None
            return have < need if op == "version_lt" else have >= need if op == "version_ge" else have <= need
    except TypeError:
        return None
    return None


#: How an engine's environment variable says "on" (vllm/envs.py, sglang/srt/environ.py), case and spaces ignored.
_TRUTHY = ("1", "true", "yes", "on")


def _all_zero(value: Any) -> bool:
    if isinstance(value, dict):
        return bool(value) and all(_all_zero(v) for v in value.values())
    return _is_number(value) and value == 0


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _result(ok: bool, key: str, fact: Any, test: str) -> Outcome:
    if not ok:
        return _FALSE
    if fact is None:  # "missing" came out true: the absence is the evidence
        return Outcome(True, support=[Evidence(key, None, "not known", test)])
    return Outcome(True, support=[Evidence(key, fact.value, fact.source, test, fact.observed)])


def _negated_support(cond: dict[str, Any], facts: Facts) -> list[Evidence]:
    """Evidence for a false condition under `not`: the leaf tests that came out false, shown negated."""
    if "fact" in cond:
        if _test(cond, facts).value is not False:
            return []
        fact = facts.fact(cond["fact"])
        shown = cond["ref"] if "ref" in cond else _fmt(cond["value"]) if "value" in cond else ""
        test = _NEGATED.get(cond["op"]) or f"not {_OP_WORDS.get(cond['op'], cond['op'].replace('_', ' '))} {shown}".rstrip()
        if fact is None:
            return [Evidence(cond["fact"], None, "unknown", test)]
        return [Evidence(cond["fact"], fact.value, fact.source, test, fact.observed)]
    if "not" in cond:
        return evaluate(cond["not"], facts).support
    return _flatten(_negated_support(c, facts) for c in cond.get("all") or cond.get("any") or [])


#: Negated word tests read as English: "is not true", not "not is true".
_NEGATED = {"is_true": "is not true", "is_false": "is not false", "set": "is not set", "unset": "is set",
            "empty": "is not empty", "nonempty": "is empty", "truthy": "does not spell true",
            "all_zero": "is not all zero"}


def _fmt(value: Any) -> str:
    """A condition's operand as people write it: ``(mha, gqa)``, not ``['mha', 'gqa']``; ``mla``, not ``'mla'``."""
    if isinstance(value, (list, tuple)):
        return "(" + ", ".join(readable(v) for v in value) + ")"
    return readable(value)


def _flatten(lists: Any) -> list[Any]:
    out: list[Any] = []
    for items in lists:
        out.extend(items)
    return out
