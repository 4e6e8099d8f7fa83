"""Findings as the files CI systems read: SARIF 2.1.0 (code scanning) and JUnit XML (test reports).

Why both: GitHub and GitLab show SARIF results as annotations on the lines of a pull request, while
Jenkins, GitLab's test tab and most other CI systems read JUnit. Each input that was checked is one
``Target`` (a file of a repository, with the line where its launch starts, or a command given on the command
line); a target's findings become SARIF results and JUnit failures at that place.

A SARIF run lists one rule per cause llmdoctor knows (not only those found), so the code-scanning UI can show
the rule's text and link for any result, and a rule's level follows the cause's severity. Whether a finding
fails the build is ``--fail-on``'s decision, as for every other format: in JUnit, findings below it are
reported as passing cases with the finding in their output, so the report shows them without failing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from xml.etree import ElementTree

from doctor.findings import CAUSE_DOCS, severity_rank

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.findings import Finding
    from doctor.playbook.loader import Cause

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
#: SARIF's three result levels for llmdoctor's three severities.
LEVELS = {"critical": "error", "warning": "warning", "info": "note"}


@dataclass(frozen=True)
class Target:
    """One checked input: where it is (``uri`` relative to the repository, ``line`` 1-based) and what was found."""

    label: str
    findings: tuple[Finding, ...]
    uri: str | None = None
    line: int | None = None
    #: set when the input could not be read at all (one line, as on stderr)
    error: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def cause_url(cause_id: str) -> str:
    """The cause's section of the generated docs/causes.md."""
    return f"{CAUSE_DOCS}#{cause_id}"


def sarif(targets: Iterable[Target], causes: dict[str, Cause], version: str) -> str:
    """A SARIF 2.1.0 log with one run of llmdoctor over every target."""
    rule_ids = sorted(causes)
    index = {cid: i for i, cid in enumerate(rule_ids)}
    rules = [_rule(causes[cid]) for cid in rule_ids]
    results = []
    notifications = []
    for target in targets:
        if target.error:
            notifications.append({"level": "error", "message": {"text": f"{target.label}: {target.error}"}})
        for finding in target.findings:
            result: dict[str, object] = {
                "ruleId": finding.id,
                "level": LEVELS[finding.severity],
                "message": {"text": _message(finding)},
                "properties": {"confidence": finding.confidence, "severity": finding.severity,
                               "symptom": finding.symptom, "fix": finding.fix},
            }
            if finding.id in index:
                result["ruleIndex"] = index[finding.id]
            if target.uri:
                region = {"startLine": target.line} if target.line else {}
                result["locations"] = [{"physicalLocation": {
                    "artifactLocation": {"uri": target.uri}, **({"region": region} if region else {})}}]
            results.append(result)
    document = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "llmdoctor", "version": version, "informationUri": CAUSE_DOCS,
                                "rules": rules}},
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
            "results": results,
        }],
    }
    return json.dumps(document, indent=2)


def _rule(cause: Cause) -> dict[str, object]:
    fix = "; ".join(f"{engine}: {text}" for engine, text in cause.fix.items())
    return {
        "id": cause.id,
        "name": "".join(part.capitalize() for part in cause.id.split("-")),
        "shortDescription": {"text": cause.title},
        "fullDescription": {"text": " ".join(cause.why.split()) or cause.title},
        "helpUri": cause_url(cause.id),
        "help": {"text": f"Fix: {' '.join(fix.split())}\nReference: {cause.ref}"},
        "defaultConfiguration": {"level": LEVELS[cause.severity]},
        "properties": {"severity": cause.severity},
    }


def _message(finding: Finding) -> str:
    what = " ".join(finding.what.split())
    text = f"{finding.title}. {what}" if what else finding.title
    return f"{text} Fix: {' '.join(finding.fix.split())}" if finding.fix else text


def junit(targets: Iterable[Target], fail_on: str) -> str:
    """A JUnit XML report: one test suite per target, one test case per finding (and one when none)."""
    threshold = None if fail_on == "never" else severity_rank(fail_on)
    suites = ElementTree.Element("testsuites", name="llmdoctor")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for target in targets:
        suite = ElementTree.SubElement(suites, "testsuite", name=target.label)
        counts = {"tests": 0, "failures": 0, "errors": 0}
        where = f"{target.uri}:{target.line}" if target.uri and target.line else (target.uri or target.label)
        if target.error:
            case = ElementTree.SubElement(suite, "testcase", classname=target.label, name="read input", file=where)
            ElementTree.SubElement(case, "error", message=target.error).text = target.error
            counts["tests"] += 1
            counts["errors"] += 1
        for finding in target.findings:
            case = ElementTree.SubElement(suite, "testcase", classname=target.label, name=finding.id, file=where)
            body = f"{_message(finding)}\nseverity {finding.severity}, confidence {finding.confidence}\n" \
                   f"{cause_url(finding.id)}"
            counts["tests"] += 1
            if threshold is not None and severity_rank(finding.severity) >= threshold:
                ElementTree.SubElement(case, "failure", message=finding.title, type=finding.severity).text = body
                counts["failures"] += 1
            else:
                ElementTree.SubElement(case, "system-out").text = body
        if not target.findings and not target.error:
            ElementTree.SubElement(suite, "testcase", classname=target.label, name="no findings", file=where)
            counts["tests"] += 1
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        suites.set(key, str(value))
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode")
