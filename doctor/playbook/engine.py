"""Running playbooks over facts: walk each tree, turn the leaves it reaches into findings.

Semantics of a tree (a list of nodes):

* every node's ``when`` is evaluated in order (a node without ``when`` always holds);
* a node that holds either names a ``cause`` (a finding is made, citing every test that held on the path
  from the root) or has ``then`` children, walked the same way;
* ``stop: true`` on a node that held skips its remaining siblings (an ordered decision: "parser missing"
  makes "parser wrong" moot);
* a node whose ``when`` is unknown records an :class:`~doctor.findings.Unchecked` for every cause below it,
  with the facts that were missing, why (the probe's error) and how to learn them.

Confidence: a finding resting on at least one observed fact (a metric, NVML, an active probe) is ``high``;
otherwise the node's own ``confidence`` or ``medium`` — configuration alone can only suggest a cause — and
``low`` when a fact it rests on was guessed — the fact registry's ``learnt`` for it (playbooks/facts/), or what
its producer said of this value (a model's name read with no config found: doctor/model/names.py) — or
when the node itself says ``confidence: low`` (an observation that fits, but does not decide).
"""

from __future__ import annotations

import re
from collections import namedtuple
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property

from doctor.facts import Facts
from doctor.findings import NOT_SAID, Evidence, Finding, Unchecked, confidence_rank
from doctor.playbook.conditions import Compiled, blocked_by, compile_condition, evaluate
from doctor.playbook.loader import Cause, Playbook, PlaybookSet
from doctor.playbook.registry import Registry
from doctor.playbook.reported import reported as symptoms_reported
from doctor.playbook.template import render

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.playbook.unexplained import Unexplained

#: How to learn an unknown fact, by key or namespace: what the user can add to the command line.
HINTS = {
    "launch.version": "pass --engine-version V (or run an image whose tag names the version)",
    "launch.quantization_matches": "pass --config of the served checkpoint (its config.json has the quantization)",
    "model": "pass --config PATH|REPO (the model's config.json)",
    "expect": "pass --config PATH|REPO so the model family (and its parsers) is known",
    "launch": "pass --command '<the launch command>' or --endpoint of the running server",
    "engine": "pass --command (engine) and --engine-version",
    "gpu": "pass --gpu NAME[:COUNT], or run on the GPU host (NVML), or --nvidia-smi FILE",
    "metrics": "pass --endpoint of a server with /metrics (SGLang needs --enable-metrics) or --metrics FILE",
    "server": "pass --endpoint or --server-info FILE",
    "capacity": "pass --endpoint (measured KV capacity) with --config and --gpu",
    "fit": "pass --config and --gpu (and --context N for the tokens per request)",
    "workload": "describe the workload: --context N, --users N, --reproducible",
    "active": "re-run with --active (sends a few small requests to the server)",
    "process": "run on the server's host, or pass --pid",
    "probe": "see the probe errors above",
    "log": "pass --log FILE (the server's log; '-' reads standard input)",
}


@dataclass
class Diagnosis:
    """The playbooks' verdict: findings, and what could not be checked (and why)."""

    findings: list[Finding] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)
    #: symptoms whose trees ran
    ran: list[str] = field(default_factory=list)
    #: reported symptoms no cause explains: the unplaced log lines and what is still possible (never silent)
    unexplained: Unexplained | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": [f.to_dict() for f in self.findings],
            "unchecked": [u.to_dict() for u in self.unchecked],
            "playbooks_run": list(self.ran),
            "unexplained": self.unexplained.to_dict() if self.unexplained is not None else None,
        }


def diagnose(pbset: PlaybookSet, facts: Facts, symptoms: Iterable[str] | None = None, *,
             unreachable: Iterable[str] = (), unchecked: bool = True) -> Diagnosis:
    """Run the named symptoms' trees, or every tree whose ``applies_when`` holds (unknown counts as no).

    ``unreachable`` names fact namespaces or keys this command cannot gather at all (``lint`` has no server,
    so no ``metrics`` or ``active`` facts): branches unknown only for want of those are not listed as unchecked.
    ``unchecked=False`` skips collecting those lines at all (a third of a diagnosis' time: a fleet check of
    thousands of targets shows findings only).
    """
    diagnosis = Diagnosis()
    reported = [_require(pbset, s) for s in symptoms or ()]
    # What the user reports is a fact too: "the flags are right, look elsewhere" branches only make sense
    # when someone actually sees the symptom.
    facts.set("workload.reported", [p.symptom for p in reported], "--symptom" if reported else "no --symptom given")
    if reported:
        selected = reported
    else:
        selected = [p for p in pbset.playbooks.values() if p.entry is None or p.entry(facts).value is True]
    walk = _Walk(facts, pbset, tuple(unreachable), record=unchecked)
    for playbook in selected:
        diagnosis.ran.append(playbook.symptom)
        steps = playbook.steps.for_run(facts, walk.unreachable)
        if steps is None:
            walk.nodes(playbook.tree, playbook, [])
        else:
            walk.steps(steps, playbook, [])
    # most severe first, then most certain; among equals a stage cause (log_node.stage: named only by where in
    # start-up the engine raised, device-init-failed and its kin) after the causes that say what failed, then by id
    # (asked of the causes found only: the loaded set builds each cause when first read, doctor.playbook.loader)
    stages = {cid for cid in walk.found if pbset.causes[cid].log_node.get("stage")}
    diagnosis.findings = sorted(walk.found.values(), key=lambda f: (*f.sort_key()[:2], f.id in stages, f.id))
    # A cause already diagnosed elsewhere needs no "could not check" line.
    diagnosis.unchecked = [u for (_, cause), u in walk.unchecked.items() if cause not in walk.found]
    reported = symptoms_reported(facts, diagnosis.ran)
    if reported:
        from doctor.playbook.unexplained import explain

        diagnosis.unexplained = explain(facts, reported, diagnosis.findings, diagnosis.unchecked, pbset)
    return diagnosis


def _require(pbset: PlaybookSet, symptom: str) -> Playbook:
    from doctor.errors import InputError

    playbook = pbset.find(symptom)
    if playbook is None:
        known = ", ".join(sorted(pbset.playbooks))
        raise InputError(f"--symptom {symptom}: no such playbook (known: {known})")
    return playbook


@dataclass
class _Walk:
    """One diagnosis: the findings and unchecked branches collected over every tree it walks."""

    facts: Facts
    pbset: PlaybookSet
    #: namespaces/keys this command cannot gather: branches unknown only for want of them are not recorded
    unreachable: tuple[str, ...]
    #: collect the unchecked branches (False: findings only)
    record: bool = True
    found: dict[str, Finding] = field(default_factory=dict)
    unchecked: dict[tuple[str, str], Unchecked] = field(default_factory=dict)
    #: why each missing fact is unknown, and the hint to learn it: the facts do not change during a walk, and
    #: the same few missing facts stop dozens of branches (a report asks them for every instance of a fleet)
    _known: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    #: whether each missing fact lies in ``unreachable``: asked for every undecided branch (~85 a lint)
    _beyond: dict[str, bool] = field(default_factory=dict)

    def nodes(self, nodes: list[dict[str, Any]], playbook: Playbook, chain: list[Evidence]) -> None:
        """Walk a tree as loaded (its first walk in this process: Tree.for_run)."""
        for node in nodes:
            outcome = evaluate(node["when"], self.facts) if "when" in node else None
            if outcome is not None and outcome.value is None:
                self._record_unknown(node, None, playbook, outcome.missing)
                continue
            if outcome is not None and outcome.value is False:
                continue
            path = chain + (outcome.support if outcome else [])
            if "cause" in node:
                self._found(node, playbook, path)
            else:
                self.nodes(node["then"], playbook, path)
            if node.get("stop"):
                break

    def steps(self, steps: tuple[Step, ...], playbook: Playbook, chain: list[Evidence]) -> None:
        """Walk a compiled, pruned tree: what :meth:`nodes` does, each node's reading done once per process."""
        for when, node, then, stop, causes, _ in steps:
            outcome = when(self.facts) if when is not None else None
            if outcome is not None and outcome.value is None:
                self._record_unknown(node, causes, playbook, outcome.missing)
                continue
            if outcome is not None and outcome.value is False:
                continue
            path = chain + (outcome.support if outcome else [])
            if "cause" in node:
                self._found(node, playbook, path)
            else:
                self.steps(then, playbook, path)
            if stop:
                break

    def _found(self, node: dict[str, Any], playbook: Playbook, path: list[Evidence]) -> None:
        finding = _finding(self.pbset.causes[node["cause"]], node, playbook, path, self.facts, self.pbset.registry)
        previous = self.found.get(finding.id)
        if previous is None or confidence_rank(finding.confidence) > confidence_rank(previous.confidence):
            self.found[finding.id] = finding

    def _record_unknown(self, node: dict[str, Any], causes: tuple[str, ...] | None, playbook: Playbook,
                        missing: list[str]) -> None:
        # A branch that needs a fact this run cannot gather at all (lint has no /metrics; a CPU server has no
        # GPU) stays undecided whatever else is added: no "could not check" line asks for the rest.
        if not self.record or any(self._out_of_reach(k) for k in missing):
            return
        for cause_id in _causes_below(node) if causes is None else causes:
            key = (playbook.symptom, cause_id)
            if key not in self.unchecked:
                self.unchecked[key] = _unchecked(playbook.symptom, cause_id, missing, self._why, node)

    def _out_of_reach(self, key: str) -> bool:
        beyond = self._beyond.get(key)
        if beyond is None:
            beyond = self._beyond[key] = _under(key, self.unreachable)
        return beyond

    def _why(self, key: str) -> tuple[str | None, str | None]:
        """(why ``key`` is unknown, how to learn it), worked out once per walk."""
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = (self.facts.unknown_reason(key), _hint(key, self.facts))
        return known


class Step(namedtuple("Step", "when node then stop causes blocked_by")):
    """One node of a tree as the walk reads it: its ``when`` compiled, its children compiled, the causes below it
    (what an undecided branch could not check), all worked out once per loaded playbook (Playbook.steps)."""

    __slots__ = ()

    when: Compiled | None
    node: dict[str, Any]
    then: tuple[Step, ...]
    stop: bool
    causes: tuple[str, ...]
    #: facts whose absence keeps ``when`` from holding (doctor.playbook.conditions.blocked_by)
    blocked_by: frozenset[str]


def compile_tree(nodes: list[dict[str, Any]]) -> tuple[Step, ...]:
    """A tree (its nodes' semantics: the module's docstring) as :class:`Step` s."""
    return tuple(Step(compile_condition(node["when"]) if "when" in node else None, node,
                      () if "cause" in node else compile_tree(node["then"]), bool(node.get("stop")),
                      tuple(_causes_below(node)), blocked_by(node["when"]) if "when" in node else frozenset())
                 for node in nodes)


class Tree:
    """A playbook's tree for walking (Playbook.steps): as loaded on its first walk, compiled and pruned after.

    A run that cannot learn some facts at all (lint has no server log, no /metrics) walks many nodes that can only
    come out false or unknown for want of them, and an unknown resting on an unreachable fact is not recorded
    (_Walk._record_unknown): such nodes change nothing. The tree without them is worked out once per set of
    absent unreachable facts and kept, so each run of a long-running process (MCP, ``serve``, a fleet check)
    walks only the nodes that can matter; the findings and unchecked lines are the same as the whole tree's.
    Compiling costs about what two walks do (~80 k instructions a node), so a process that walks the tree once or
    twice (a one-shot command; ``plan`` diagnoses twice) reads the nodes as loaded, and only a third walk compiles.
    """

    #: how many prunings (and reachability sets) a tree keeps: runs of one command repeat a handful
    KEEP = 64
    #: walks of the tree as loaded before it is compiled
    AS_LOADED = 2

    def __init__(self, nodes: list[dict[str, Any]]) -> None:
        self.nodes = nodes
        self._walks = 0
        self._beyond: dict[tuple[str, ...], frozenset[str]] = {}
        self._pruned: dict[frozenset[str], tuple[Step, ...]] = {}

    @cached_property
    def steps(self) -> tuple[Step, ...]:
        return compile_tree(self.nodes)

    @cached_property
    def _keys(self) -> frozenset[str]:
        return frozenset(k for step in _every(self.steps) for k in step.blocked_by)

    def for_run(self, facts: Facts, unreachable: tuple[str, ...]) -> tuple[Step, ...] | None:
        """The steps worth walking over ``facts`` when ``unreachable`` cannot be gathered; None on the first
        AS_LOADED walks (walk the nodes as loaded)."""
        if self._walks < self.AS_LOADED:
            self._walks += 1
            return None
        beyond = self._beyond.get(unreachable)
        if beyond is None:
            beyond = frozenset(k for k in self._keys if _under(k, unreachable))
            _keep(self._beyond, unreachable, beyond, self.KEEP)
        absent = frozenset(k for k in beyond if facts.fact(k) is None)
        steps = self._pruned.get(absent)
        if steps is None:
            steps = _prune(self.steps, absent)
            _keep(self._pruned, absent, steps, self.KEEP)
        return steps


def _every(steps: tuple[Step, ...]) -> Iterable[Step]:
    for step in steps:
        yield step
        yield from _every(step.then)


def _prune(steps: tuple[Step, ...], absent: frozenset[str]) -> tuple[Step, ...]:
    if not absent:
        return steps
    return tuple(step._replace(then=_prune(step.then, absent)) for step in steps if not step.blocked_by & absent)


def _keep(memo: dict[Any, Any], key: Any, value: Any, most: int) -> None:
    if len(memo) >= most:  # an unusual stream of runs: start over rather than grow without bound
        memo.clear()
    memo[key] = value


def _guessed(key: str, facts: Facts, registry: Registry) -> bool:
    """Whether this fact was guessed: as its producer said of the value, else as the registry says of the key."""
    fact = facts.fact(key)
    learnt = fact.learnt if fact is not None and fact.learnt else None
    return learnt == "guessed" if learnt else registry.guessed(key)


def _finding(cause: Cause, node: dict[str, Any], playbook: Playbook, evidence: list[Evidence],
             facts: Facts, registry: Registry) -> Finding:
    evidence = _dedupe(evidence)
    confidence = "high" if any(e.observed for e in evidence) else node.get("confidence", "medium")
    if node.get("confidence") == "low":  # the node says the inference is weak: observed facts do not make it sure
        confidence = "low"
    if confidence != "high" and any(_guessed(e.fact, facts, registry) for e in evidence):
        confidence = "low"  # e.g. read from the model's name alone (doctor/model/names.py), no config behind it
    what = render(cause.what, facts)
    fix = render(node["fix"], facts) if "fix" in node else render_fix(cause, facts)
    seen = facts.get(f"log.seen.{cause.id.replace('-', '_')}")
    if seen and _UNFILLED.search(what):  # named by the server log alone: its line is the account
        what = f'The server log shows it: "{seen}"'
    if seen and _UNFILLED.search(fix):
        fix = _UNFILLED.sub("(those in the log line)", fix)
    return Finding(
        id=cause.id,
        symptom=playbook.symptom,
        severity=node.get("severity", cause.severity),
        confidence=confidence,
        title=render(cause.title, facts),
        what=what,
        why=render(cause.why, facts),
        fix=fix,
        ref=cause.ref,
        evidence=evidence,
    )


#: A placeholder render() could not fill (doctor.playbook.template marks them ``<key?>``).
_UNFILLED = re.compile(r"<[a-z][\w.]*\?>")


def render_fix(cause: Cause, facts: Facts) -> str:
    """The fix for the engine in use, or every engine's when the engine is not known."""
    engine = facts.get("launch.engine") or facts.get("engine.name")
    if engine in cause.fix:
        text = cause.fix[engine]
        if "any" in cause.fix:
            text = f"{text}\n{cause.fix['any']}"
    elif "any" in cause.fix:
        text = cause.fix["any"]
    else:
        names = {"vllm": "vLLM", "sglang": "SGLang"}
        text = "\n".join(f"{names[e]}: {t}" for e, t in cause.fix.items())
    text = render(text, facts)
    if engine in ("vllm", "sglang") and "launch.version" not in facts:
        # the version is unknown: say from which release each flag the fix names is valid
        from doctor.engines.catalog import annotate_since

        text = annotate_since(engine, text)
    return text


#: Inputs that, once given, make their namespace's hint moot: the fact is missing because the input does not
#: say, not because it was not given (a config.json without the field, an --active run whose probe could not
#: tell). Keyed by namespace; the value names the facts that prove the input was given.
_GIVEN_BY = {
    "model": ("model.name", "model.architectures"),
    "expect": ("model.name", "model.architectures"),
    "gpu": ("gpu.name",),
    "metrics": ("metrics.available",),
    "server": ("server.engine",),
    "process": ("process.pid",),
    # launch.engine alone is not the command: the server's /version or a log names the engine too, and the
    # flags are still unread. The catalog release is set only when a launch command was parsed.
    "launch": ("launch.catalog_version",),
}


def _given(namespace: str, facts: Facts) -> bool:
    if namespace == "active":  # --active ran: a probe that could not tell left its reason, not a missing flag
        return bool(facts.under("active")) or any(k == "active" or k.startswith("active.") for k in facts.errors)
    if namespace == "fit":  # its hint asks for --config and --gpu: moot once both are known
        return _given("model", facts) and _given("gpu", facts)
    return any(facts.get(k) not in (None, False) for k in _GIVEN_BY.get(namespace, ()))


def _hint(key: str, facts: Facts) -> str | None:
    namespace = key.split(".")[0]
    if key in HINTS:  # a hint for this very fact names the input that gives it (--engine-version)
        return HINTS[key]
    if _given(namespace, facts):
        return None
    if namespace == "launch" and _given("server", facts):  # the server answered; its command is what is missing
        return "pass --command '<the server's launch command>', or run check on the server's host (its process)"
    if namespace == "capacity" and _given("fit", facts):  # config and GPU known: only the live server is missing
        return "pass --endpoint of the running server (its measured KV capacity)"
    if namespace == "fit" and (_given("model", facts) or _given("gpu", facts)):  # ask only for the other one
        return HINTS["gpu"] if _given("model", facts) else HINTS["model"]
    return HINTS.get(key, HINTS.get(namespace, "provide the missing input"))


def _unchecked(symptom: str, cause: str, missing: list[str], why: Callable[[str], tuple[str | None, str | None]],
               node: dict[str, Any]) -> Unchecked:
    missing_keys = tuple(dict.fromkeys(missing))
    known = [why(k) for k in missing_keys]
    reasons = [r for r, _ in known if r]
    reason = reasons[0] if reasons else "not gathered"
    hints = [h for _, h in known if h]
    hint = node.get("hint") or "; ".join(dict.fromkeys(hints)) or NOT_SAID
    return Unchecked(symptom, cause, missing_keys, reason, hint)


def _under(key: str, prefixes: tuple[str, ...]) -> bool:
    return any(key == p or key.startswith(p + ".") for p in prefixes)


def _causes_below(node: dict[str, Any]) -> list[str]:
    if "cause" in node:
        return [node["cause"]]
    out: list[str] = []
    for child in node.get("then", []):
        out.extend(_causes_below(child))
    return out


def _dedupe(evidence: list[Evidence]) -> list[Evidence]:
    seen: set[tuple[str, str]] = set()
    out = []
    for item in evidence:
        key = (item.fact, item.test)
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out
