"""Finding: the uniform result every analyzer returns (lint, check, plan, report).

A finding is a cause (stable kebab-case id: playbooks/causes/<id>.yaml) that the facts support, with the
chain of evidence that led to it, how sure we are, and the exact fix. Renderers only ever see these.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from doctor.humanize import readable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The generated causes documentation: one ``### cause-id`` heading per cause, so ``#cause-id`` links a cause
#: (alert runbooks, SARIF rules, JUnit reports).
CAUSE_DOCS = "https://github.com/llmdoctor-project/llmdoctor/blob/main/docs/causes.md"
#: Ordered from least to most harmful; ``--fail-on`` compares against this order.
SEVERITIES = ("info", "warning", "critical")
#: ``high``: rests on a direct observation (metric, NVML, active probe); ``medium``: configuration of a
#: running or handed-over deployment; ``low``: the cause is one of several that fit.
CONFIDENCES = ("low", "medium", "high")


def severity_rank(severity: str) -> int:
    return SEVERITIES.index(severity)


def confidence_rank(confidence: str) -> int:
    return CONFIDENCES.index(confidence)


@dataclass(frozen=True)
class Evidence:
    """One tested fact: ``launch.tp = 8 (argv --tp-size) gt 1 → true``."""

    fact: str
    value: Any
    source: str
    test: str
    observed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "fact": self.fact,
            "value": self.value,
            "source": self.source,
            "test": self.test,
            "observed": self.observed,
        }

    def sentence(self) -> str:
        return f"{self.fact} = {_short(self.value)} ({self.source}) {self.test}".rstrip()


@dataclass
class Finding:
    """One conclusion: a cause that holds, how sure, the evidence that led to it and the fix."""

    id: str
    severity: str
    confidence: str
    title: str
    what: str = ""
    why: str = ""
    fix: str = ""
    ref: str = ""
    symptom: str | None = None
    evidence: list[Evidence] = field(default_factory=list)

    def sort_key(self) -> tuple[int, int, str]:
        """Most severe first, then most certain, then by id for a stable order."""
        return (-severity_rank(self.severity), -confidence_rank(self.confidence), self.id)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "symptom": self.symptom,
            "severity": self.severity,
            "confidence": self.confidence,
            "title": self.title,
            "what": self.what,
            "why": self.why,
            "evidence": [e.to_dict() for e in self.evidence],
            "fix": self.fix,
            "ref": self.ref,
        }


#: The hint of an undecided branch whose missing fact no further input would give (the inputs that would say
#: were given and do not): renderers show the fact's reason instead.
NOT_SAID = "the inputs given do not say"


@dataclass(frozen=True)
class Unchecked:
    """A branch a playbook could not decide because facts were unknown: what, why, and how to learn it."""

    symptom: str
    cause: str
    missing: tuple[str, ...]
    reason: str
    hint: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "symptom": self.symptom,
            "cause": self.cause,
            "missing": list(self.missing),
            "reason": self.reason,
            "hint": self.hint,
        }


def worst_severity(findings: list[Finding]) -> str | None:
    if not findings:
        return None
    return max((f.severity for f in findings), key=severity_rank)


def _short(value: Any, limit: int = 80) -> str:
    return readable(value, limit)
