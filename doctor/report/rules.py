"""Prometheus alerting rules generated from the playbooks, so an alert and ``llmdoctor check`` agree.

A tree node becomes an alert when every condition on its path can be said in PromQL: each fact it reads has
an expression in promql.yaml (recorded once as ``llmdoctor:<fact>``), and each operator has a PromQL form
(``ge`` → ``>=``, ``is_true`` → the series is present or ``== 1``). The translation is mechanical:

* the path is the tree's entry condition (``applies_when``), every ancestor's ``when``, the node's own
  ``when``, and "none of the earlier ``stop`` siblings held" (``unless``);
* ``all`` → ``and``; ``any`` → ``or`` over the branches that translate (dropping a branch only makes the
  alert fire in fewer cases than the tree, never in more); ``not`` → ``llmdoctor:launch_engine unless …``;
* a node that needs any fact PromQL cannot see (a launch flag, the model config) is skipped and listed.

So a user's own playbook with such conditions exports the same way. Differences from the trees, on
purpose: in PromQL a fact that cannot be read is simply absent, so ``not`` of an unreadable fact holds (the
tree would say "unknown").

An alert exists only for a path whose cause ``check`` would name from the same series. A playbook's entry
threshold alone (low-cache-hit: ``metrics.prefix_hit_rate < 0.3``) is not such a path: 0 hits in 96 lookups
of traffic that shares no prefix is healthy, and every cause of that tree needs a launch flag or the model
config, which Prometheus does not have. Such trees are listed as skipped, never paged on.

Each alert carries ``runbook_url`` (the cause's section of the generated docs/causes.md, under a configurable
base) and, as before, ``runbook``: the ``llmdoctor check`` command that diagnoses the instance.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from doctor.findings import CAUSE_DOCS, severity_rank
from doctor.playbook.loader import Playbook, PlaybookSet
from doctor.report.promql import Catalog, LabelFact, Params, format_duration, join_or

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PREFIX = "llmdoctor:"
_COMPARE = {"gt": ">", "ge": ">=", "lt": "<", "le": "<=", "eq": "==", "ne": "!="}
#: The universe ``not`` subtracts from: every instance that exposed engine metrics within the lookback.
UNIVERSE = "launch.engine"
#: Where ``runbook_url`` points by default: the generated causes documentation. Override with
#: ``llmdoctor rules --runbook-base URL``.
DEFAULT_RUNBOOK_BASE = CAUSE_DOCS


@dataclass(frozen=True)
class RuleOptions:
    params: Params = field(default_factory=Params)
    for_s: float = 600.0
    min_severity: str = "warning"
    runbook_base: str = DEFAULT_RUNBOOK_BASE


@dataclass
class Translation:
    """A condition in PromQL (None when it cannot be), the facts it reads, words for people."""

    expr: str | None
    text: str
    reads: frozenset[str] = frozenset()
    missing: tuple[str, ...] = ()
    #: the condition is only "this fact is present" (implied by any other test of the same fact)
    presence_of: str | None = None
    #: it compares a fact against a number (an observed threshold, not a property of the setup)
    threshold: bool = False
    #: bool facts tested false that have an absent() companion in promql.yaml
    absent_of: frozenset[str] = frozenset()
    #: the parts of a conjunction (so nested ``all``s flatten into one ``and`` chain)
    conjuncts: tuple[Translation, ...] = ()


@dataclass
class Skipped:
    symptom: str
    cause: str | None
    why: str

    def line(self) -> str:
        return f"{self.symptom} › {self.cause or '(entry)'}: {self.why}"


@dataclass
class Generated:
    records: list[dict[str, Any]]
    alerts: list[dict[str, Any]]
    skipped: list[Skipped]

    def document(self) -> dict[str, Any]:
        return {"groups": [{"name": "llmdoctor-facts", "rules": self.records},
                           {"name": "llmdoctor-alerts", "rules": self.alerts}]}

    def prometheus_rule(self, name: str, namespace: str | None, labels: dict[str, str]) -> dict[str, Any]:
        """The same groups as a Prometheus Operator ``PrometheusRule`` (its ``spec`` is a rules file)."""
        metadata: dict[str, Any] = {"name": name}
        if namespace:
            metadata["namespace"] = namespace
        metadata["labels"] = {"app.kubernetes.io/name": "llmdoctor", **labels}
        return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "metadata": metadata,
                "spec": self.document()}


def record_name(key: str) -> str:
    return PREFIX + key.replace(".", "_")


class Translator:
    """Conditions → PromQL over recorded facts; collects which facts (and helpers) need recording."""

    def __init__(self, catalog: Catalog, params: Params) -> None:
        self.catalog = catalog
        self.params = params
        self.labels = {f.key: f for f in catalog.label_facts if f.type == "bool"}
        self.recorded: dict[str, str] = {}  # entry key → its expression, dependencies first
        self.deps: dict[str, set[str]] = {}  # entry key → the entries its expression references

    # -- recording rules ------------------------------------------------------------------------------------
    def record(self, key: str) -> str:
        """The record name of entry ``key``, recording it (and what it references) first."""
        if key not in self.recorded:
            refs: set[str] = set()

            def ref(name: str, _params: Params) -> str:
                refs.add(name)
                return self.record(name)

            self.recorded[key] = self.catalog.chain(key, self.params, ref)
            self.deps[key] = refs
        return record_name(key)

    def needed(self, reads: set[str]) -> list[str]:
        """The recorded entries behind ``reads`` (and what they reference), in recording order."""
        todo, seen = list(reads), set()
        while todo:
            key = todo.pop()
            if key in self.recorded and key not in seen:
                seen.add(key)
                todo.extend(self.deps[key])
        return [key for key in self.recorded if key in seen]

    # -- conditions -------------------------------------------------------------------------------------------
    def condition(self, cond: dict[str, Any]) -> Translation:
        if "all" in cond:
            return self.conjunction([self.condition(c) for c in cond["all"]])
        if "any" in cond:
            parts = [self.condition(c) for c in cond["any"]]
            ok = [p for p in parts if p.expr is not None]
            if not ok:
                return Translation(None, "", missing=_missing(parts))
            expr = ok[0].expr if len(ok) == 1 else " or ".join(f"({p.expr})" for p in ok)
            text = ok[0].text if len(ok) == 1 else "(" + " or ".join(p.text for p in ok) + ")"
            if len(ok) == 1:
                return ok[0]
            return Translation(expr, text, frozenset().union(*(p.reads for p in ok)),
                               threshold=any(p.threshold for p in ok),
                               absent_of=frozenset().union(*(p.absent_of for p in ok)))
        if "not" in cond:
            inner = self.condition(cond["not"])
            if inner.expr is None:
                return inner
            universe = self.record(UNIVERSE)
            return Translation(f"{universe} unless ({inner.expr})", f"not ({inner.text})", inner.reads | {UNIVERSE})
        return self._test(cond)

    def conjunction(self, parts: list[Translation]) -> Translation:
        if any(p.expr is None for p in parts):
            return Translation(None, "", missing=_missing(parts))
        flat: list[Translation] = []
        for part in (q for p in parts for q in (p.conjuncts or (p,))):
            if part.expr not in {f.expr for f in flat}:
                flat.append(part)
        # "kv_usage is known" adds nothing next to "kv_usage >= 0.95"
        kept = [p for p in flat if p.presence_of is None
                or not any(p.presence_of in q.reads for q in flat if q is not p and q.presence_of is None)]
        if len(kept) == 1:
            return kept[0]
        return Translation(" and ".join(f"({p.expr})" for p in kept), " and ".join(p.text for p in kept),
                           frozenset().union(*(p.reads for p in kept)), threshold=any(p.threshold for p in kept),
                           absent_of=frozenset().union(*(p.absent_of for p in kept)), conjuncts=tuple(kept))

    def _test(self, cond: dict[str, Any]) -> Translation:
        key, op = cond["fact"], cond["op"]
        text = f"{key} {_COMPARE.get(op, op.replace('_', ' '))}" + (
            f" {cond['value']}" if "value" in cond else f" {cond['ref']}" if "ref" in cond else "")
        if key in self.labels:
            return self._label_test(self.labels[key], op, text)
        entry = self.catalog.entries.get(key)
        if op == "missing" and entry is None:  # a fact Prometheus never holds is always missing there
            return Translation(self.record(UNIVERSE), text, frozenset({UNIVERSE}))
        if entry is None or not entry.is_fact or entry.kind == "list":
            return Translation(None, "", missing=(key,))
        name = self.record(key)
        reads = frozenset({key})
        if op == "exists":
            return Translation(name, text, reads, presence_of=key)
        if entry.kind == "flag" and op == "is_true":
            return Translation(name, text, reads)
        if entry.kind == "bool" and op in ("is_true", "is_false"):
            absent = frozenset({key}) if op == "is_false" and entry.absent else frozenset()
            return Translation(f"{name} == {1 if op == 'is_true' else 0}", text, reads, absent_of=absent)
        if entry.kind == "number" and op in _COMPARE:
            if "ref" in cond:
                other = self.catalog.entries.get(cond["ref"])
                if other is None or other.kind != "number":
                    return Translation(None, "", missing=(cond["ref"],))
                return Translation(f"{name} {_COMPARE[op]} {self.record(cond['ref'])}", text,
                                   reads | {cond["ref"]}, threshold=True)
            value = cond.get("value")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return Translation(f"{name} {_COMPARE[op]} {value:g}", text, reads, threshold=True)
        return Translation(None, "", missing=(f"{key} ({op})",))

    def _label_test(self, fact: LabelFact, op: str, text: str) -> Translation:
        values = {"is_true": fact.true, "is_false": fact.false, "exists": None}
        if op not in values:
            return Translation(None, "", missing=(f"{fact.key} ({op})",))
        extra = f'{fact.label}="{values[op]}"' if values[op] is not None else ""
        alternatives = self.catalog.label_selector(fact, self.params, extra)
        expr = join_or([f"group by (instance) ({a.expr})" for a in alternatives], ("instance",))
        return Translation(expr, text, frozenset({fact.key}), presence_of=fact.key if op == "exists" else None)


def _missing(parts: list[Translation]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(m for p in parts for m in p.missing))


# -- trees → alerts -----------------------------------------------------------------------------------------------
@dataclass
class _Candidate:
    symptom: str
    cause: str
    severity: str
    translation: Translation


def generate(pbset: PlaybookSet, catalog: Catalog, options: RuleOptions) -> Generated:
    """Every translatable node of every playbook as an alert, over the recorded facts they read."""
    tr = Translator(catalog, options.params)
    candidates: list[_Candidate] = []
    skipped: list[Skipped] = []
    for playbook in sorted(pbset.playbooks.values(), key=lambda p: p.symptom):
        entry = tr.condition(playbook.applies_when) if playbook.applies_when else None
        if entry is not None and entry.expr is None:
            skipped.append(Skipped(playbook.symptom, None, "entry condition needs " + ", ".join(entry.missing)))
            continue
        before = len(candidates)
        _walk(playbook, playbook.tree, [entry] if entry else [], tr, pbset, options, candidates, skipped)
        if entry is not None and entry.threshold and len(candidates) == before:
            skipped.append(Skipped(playbook.symptom, None, f"the entry threshold ({entry.text}) alone names no "
                                   "cause: every cause of this tree needs facts Prometheus cannot see"))
    alerts = _alerts(candidates, pbset, options, tr)
    reads = set().union(*(c.translation.reads for c in candidates))
    records = [{"record": record_name(key), "expr": tr.recorded[key]} for key in tr.needed(reads)]
    return Generated(records, alerts, skipped)


def _walk(playbook: Playbook, nodes: list[dict[str, Any]], path: list[Translation], tr: Translator,
          pbset: PlaybookSet, options: RuleOptions, out: list[_Candidate], skipped: list[Skipped]) -> None:
    stops: list[dict[str, Any]] = []
    for node in nodes:
        own = [tr.condition(node["when"])] if "when" in node else []
        guards = [tr.condition({"not": w}) for w in stops]
        conds = path + own + guards
        if "cause" in node:
            severity = node.get("severity", pbset.causes[node["cause"]].severity)
            translation = tr.conjunction(conds) if conds else None
            if translation is None or translation.expr is None:
                missing = translation.missing if translation else ("a condition (the node always holds)",)
                skipped.append(Skipped(playbook.symptom, node["cause"], "needs " + ", ".join(missing)))
            elif severity_rank(severity) < severity_rank(options.min_severity):
                skipped.append(Skipped(playbook.symptom, node["cause"], f"{severity} is below --min-severity"))
            else:
                out.append(_Candidate(playbook.symptom, node["cause"], severity, translation))
        else:
            _walk(playbook, node["then"], conds, tr, pbset, options, out, skipped)
        if node.get("stop"):
            if "when" not in node:
                break
            stops.append(node["when"])


def _alerts(candidates: list[_Candidate], pbset: PlaybookSet, options: RuleOptions, tr: Translator
            ) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[Translation]] = {}
    for c in candidates:
        groups.setdefault((c.cause, c.severity, c.symptom), []).append(c.translation)
    names: dict[str, int] = {}
    for cause, _sev, _sym in groups:
        names[_camel(cause)] = names.get(_camel(cause), 0) + 1
    out = []
    for (cause, severity, symptom), parts in groups.items():
        name = "LLMDoctor" + _camel(cause)
        if names[_camel(cause)] > 1:
            name += _camel(symptom) + severity.title()
        expr = parts[0].expr if len(parts) == 1 else " or ".join(f"({p.expr})" for p in parts)
        text = " or ".join(p.text for p in parts)
        title = _plain_title(pbset.causes[cause].title)
        out.append(_alert(name, str(expr), severity, symptom, cause, title, text, options))
        for key in sorted(frozenset().union(*(p.absent_of for p in parts))):
            absent = _absent_alert(name, key, cause, severity, symptom, title, tr, options)
            if absent is not None:
                out.append(absent)
    return out


def _absent_alert(name: str, key: str, cause: str, severity: str, symptom: str, title: str, tr: Translator,
                  options: RuleOptions) -> dict[str, Any] | None:
    """A companion for "``key`` is false" when no target is left to be false: promql.yaml's ``absent``.

    absent() keeps only the selector's equality matchers as labels, so without one it would say nothing
    about *these* targets; then no companion is written."""
    sel = options.params.selector
    expr = tr.catalog.absent_expr(key, options.params)
    if expr is None or not sel.has_equality():
        return None
    rule = _alert(name + "Absent", expr, severity, symptom, cause, title,
                  f"{key} is false for every target: none matches {sel.text}", options)
    rule["annotations"]["summary"] = f"{title}: no target matches {sel.text}"
    rule["annotations"]["runbook"] = f"llmdoctor check --endpoint <instance> --symptom {symptom}"
    return rule


def _alert(name: str, expr: str, severity: str, symptom: str, cause: str | None, title: str, text: str,
           options: RuleOptions) -> dict[str, Any]:
    labels = {"severity": severity, "symptom": symptom}
    if cause:
        labels["cause"] = cause
    where = f"playbook {symptom}" + (f" › {cause}" if cause else "")
    return {
        "alert": name,
        "expr": expr,
        "for": format_duration(options.for_s),
        "labels": labels,
        "annotations": {
            "summary": f"{{{{ $labels.instance }}}}: {title}",
            "description": f"{where}: {text}",
            "runbook_url": runbook_url(options.runbook_base, cause or symptom),
            "runbook": f"llmdoctor check --endpoint {{{{ $labels.instance }}}} --symptom {symptom}",
        },
    }


def runbook_url(base: str, anchor: str) -> str:
    """``base#anchor``: the cause's heading in docs/causes.md (a base with its own ``#…`` is replaced)."""
    return base.split("#", 1)[0] + "#" + anchor


def _camel(text: str) -> str:
    return "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", text) if part)


def _plain_title(title: str) -> str:
    """A cause title has no facts to fill in an alert: its placeholders read as "…"."""
    return re.sub(r"\{[^{}]*\}", "…", title)


def rules_yaml(generated: Generated | None, header: str, document: dict[str, Any] | None = None) -> str:
    import yaml

    if document is None:
        assert generated is not None
        document = generated.document()
    body = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=1 << 16)
    return "".join(f"# {line}\n".replace("# \n", "#\n") for line in header.splitlines()) + body
