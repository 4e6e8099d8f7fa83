"""Fleet-wide facts the store works out ahead of time: ``llmdoctor rules --report`` and how a report finds them.

At ten thousand instances each fleet-wide fact costs the store a pass over a day of every instance's series
(bench/bench_report_fleet.py: 1-4 s a fact); a report asks ~20 of them. Recording rules move that work to the
store's rule evaluator, off the report's path: each rule records exactly one of the report's fleet-wide queries
(collect.fleet_queries: the same text, tags included), every ``--every``, as ``llmdoctor:report:<fact>`` with
two labels:

* ``llmdoctor_query``: a digest of the query's text. The report reads a recorded series only where the digest
  is the one of the query it would send itself (same selector, window, trend, step and llmdoctor's metric
  names): a rule written for another window or by another release is never mistaken for this one, it is
  simply not used;
* ``llmdoctor_every``: the rule group's interval, how far back the report looks for the last evaluation.

A report first asks which digests the store holds near its end (one label-values call: index only, no samples
read), then reads each recorded fact as ``last_over_time(<name>{llmdoctor_query="<digest>"}[<every>])``: one
sample per instance. Everything else (a fact not recorded, a store without the rules, the detail facts and
charts of the worst instances) is asked as before. The value is the query's at the last evaluation, so the
window ends up to ``every`` before the report's end; the report says so in a note and in each fact's source.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.report.client import PromClient

PREFIX = "llmdoctor:report:"
QUERY_LABEL = "llmdoctor_query"
EVERY_LABEL = "llmdoctor_every"
GROUP = "llmdoctor-report"


def record_name(key: str) -> str:
    return PREFIX + key.replace(".", "_")


def digest(query: str) -> str:
    """What names a query's text in its recorded series (16 hex digits of SHA-256)."""
    return hashlib.sha256(query.encode()).hexdigest()[:16]


def rules_document(queries: list[tuple[str, str]], every: str) -> dict[str, Any]:
    """One rule group recording every fleet-wide query (a Prometheus rules file's body)."""
    rules = [{"record": record_name(key), "expr": query,
              "labels": {QUERY_LABEL: digest(query), EVERY_LABEL: every}} for key, query in queries]
    return {"groups": [{"name": GROUP, "interval": every, "rules": rules}]}


@dataclass
class Recorded:
    """The recorded fleet-wide queries a store holds: their digests, and the interval they are evaluated at."""

    digests: frozenset[str]
    every: str
    #: the facts read from their recorded series in this run (for the report's note)
    used: list[str] = field(default_factory=list)

    def name(self, key: str) -> str:
        return record_name(key)

    def series(self, key: str, query: str) -> str | None:
        """The query that reads ``query``'s recorded answer, or None when the store does not record that text."""
        tag = digest(query)
        if tag not in self.digests:
            return None
        self.used.append(key)  # taken back if the recording holds no answer (collect._recorded_or)
        return f'last_over_time({record_name(key)}{{{QUERY_LABEL}="{tag}"}}[{self.every}])'


def discover(client: PromClient, start: float) -> Recorded | None:
    """Which recorded queries the store holds between ``start`` and the report's end (None: none, or a store
    that cannot say; the report then asks every query itself)."""
    from doctor.report.client import QueryError
    from doctor.report.promql import parse_duration

    match = {"match[]": f'{{__name__=~"{PREFIX}.+"}}', "start": f"{start:.3f}", "end": f"{client.end:.3f}"}
    try:
        digests = client.label_values("recorded facts", QUERY_LABEL, match)
        everies = client.label_values("recorded facts' interval", EVERY_LABEL, match) if digests else []
    except QueryError:
        return None
    valid = []
    for every in everies:
        try:
            valid.append((parse_duration(every, EVERY_LABEL), every))
        except Exception:  # noqa: BLE001 - a label value that is not a duration: not our rule
            continue
    if not digests or not valid:
        return None
    return Recorded(frozenset(digests), max(valid)[1])
