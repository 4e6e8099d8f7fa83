"""Never silent: a reported symptom that no cause explains still gets an answer.

When someone reports a symptom (``--symptom``, an alert, or a log that shows the server failing to start) and no
tree reaches a cause for it, "no findings" would read as "healthy". Instead the diagnosis carries:

* the log's **unplaced lines**: every error and warning line the log reader kept (``log.errors``,
  ``log.error_lines``, ``log.warnings``) that no cause's log signature placed, quoted — with the engine's own
  source location when the error catalog knows the line (``doctor.logs.catalog.match_line``, where present);
* a short **differential**: the causes of that symptom the facts do not rule out — exactly the tree's nodes left
  undecided (a cause whose test was false is ruled out and not listed) — each with the facts whose absence kept it
  open and the one input that decides it. They are *possible*, never findings.

Everything is derived from the facts and the diagnosis, so a snapshot replays it. ``check`` exits
``EXIT_UNEXPLAINED`` (5) for it where it would otherwise exit 0 (doctor/errors.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from doctor.facts import Facts
from doctor.findings import NOT_SAID, Finding, Unchecked

if TYPE_CHECKING:
    from doctor.playbook.loader import PlaybookSet



@dataclass(frozen=True)
class UnplacedLine:
    """One error or warning line of the log that no rule placed."""

    level: str                 # "error" | "warning"
    line: str
    #: the engine's own source of this message, when the error catalog knows it ("vllm/x.py:12 (0.8.5–0.9.2)")
    source: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "line": self.line, "source": self.source}


@dataclass(frozen=True)
class Possible:
    """A cause of the symptom that the facts leave open, and what would decide it."""

    symptom: str
    cause: str
    title: str
    missing: tuple[str, ...]
    decided_by: str

    def to_dict(self) -> dict[str, Any]:
        return {"symptom": self.symptom, "cause": self.cause, "title": self.title, "label": "possible",
                "missing": list(self.missing), "decided_by": self.decided_by}


@dataclass
class Unexplained:
    """Reported symptoms without a cause: what reported them, the unplaced log lines, what is still possible."""

    symptoms: dict[str, str]                     # symptom -> what reported it
    lines: list[UnplacedLine] = field(default_factory=list)
    possible: list[Possible] = field(default_factory=list)

    def by_input(self) -> list[tuple[str, list[Possible]]]:
        """The differential grouped by the input that decides it, the input deciding the most first: one input
        (``--command``) often settles a dozen flag causes at once."""
        groups: dict[str, list[Possible]] = {}
        for p in self.possible:
            groups.setdefault(p.decided_by, []).append(p)
        return sorted(groups.items(), key=lambda g: -len(g[1]))

    def headline(self) -> str:
        parts = [f"{len(self.lines)} unplaced log line(s)" if self.lines else "",
                 f"{len(self.possible)} possible cause(s)" if self.possible else
                 "every known cause ruled out"]
        return (f"CAUSE NOT FOUND — {', '.join(self.symptoms)} reported, no known cause matches; "
                + ", ".join(p for p in parts if p))

    def to_dict(self) -> dict[str, Any]:
        return {"symptoms": [{"symptom": s, "reported_by": by} for s, by in self.symptoms.items()],
                "unplaced_lines": [u.to_dict() for u in self.lines],
                "possible": [p.to_dict() for p in self.possible]}


def explain(facts: Facts, reported: dict[str, str], findings: list[Finding], unchecked: list[Unchecked],
            pbset: PlaybookSet) -> Unexplained | None:
    """The never-silent answer for the ``reported`` symptoms (doctor.playbook.reported: symptom -> who reported it)
    no finding explains; None when there are none."""
    symptoms = {s: by for s, by in reported.items() if not any(f.symptom == s for f in findings)}
    if not symptoms:
        return None
    open_causes = [u for u in unchecked if u.symptom in symptoms]
    possible = [Possible(u.symptom, u.cause, _title(pbset, u.cause, facts), u.missing, _decider(u))
                for u in open_causes]
    return Unexplained(symptoms, unplaced_lines(facts), possible)


def unplaced_lines(facts: Facts) -> list[UnplacedLine]:
    """The log's error lines, then its warning lines, that no cause's log signature placed (deduplicated)."""
    placed = [str(m.get("line", "")) for m in facts.get("log.signatures") or []]
    engine = facts.get("log.engine") or facts.get("launch.engine")
    version = facts.get("log.version") or facts.get("launch.version")
    out: list[UnplacedLine] = []
    seen: set[str] = set()
    for level, key in (("error", "log.errors"), ("error", "log.error_lines"), ("warning", "log.warnings")):
        for line in facts.get(key) or []:
            text = str(line).strip()
            if not text or text in seen or any(text in p or (p and p in text) for p in placed):
                continue
            seen.add(text)
            out.append(UnplacedLine(level, text, _source(text, engine, version)))
    return out


def _source(line: str, engine: Any, version: Any) -> str | None:
    """Where the engine prints this line — ``file:line (since–until)`` — from the error catalog
    (``doctor.logs.catalog.match_line``, issue 22) when this build has it; None when it does not know the line."""
    try:
        from doctor.logs.catalog import match_line  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    try:
        match = match_line(line, engine if engine in ("vllm", "sglang") else None,
                           str(version) if version else None)
    except Exception:  # noqa: BLE001 - a catalog that cannot read one line must not take the answer down
        return None
    if match is None:
        return None
    sites = getattr(match, "sites", None) or []
    where = f"{sites[0].file}:{sites[0].line}" if sites else None
    since, until = getattr(match, "since", None), getattr(match, "until", None)
    span = f"{getattr(match, 'catalog', engine)} {since}–{until}" if since else None
    return " ".join(x for x in (where, f"({span})" if span else None) if x) or None


def _title(pbset: PlaybookSet, cause_id: str, facts: Facts) -> str:
    from doctor.playbook.template import render

    cause = pbset.causes.get(cause_id)
    return render(cause.title, facts) if cause is not None else cause_id


def _decider(u: Unchecked) -> str:
    """The one input that decides an open cause: the first hint the tree gave for its missing facts; where the
    tree said only that the inputs given do not say (the log named the engine, so ``launch`` counts as given),
    the input that supplies the first missing fact."""
    from doctor.playbook.engine import HINTS

    if u.hint and u.hint != NOT_SAID:
        return u.hint.split("; ")[0]
    for key in u.missing:
        hint = HINTS.get(key) or HINTS.get(key.split(".")[0])
        if hint:
            return hint
    return f"the facts {', '.join(u.missing)}"
