"""Running a cause file's cases: scenario facts in, verdict out.

Each case lists the facts a source could produce for a situation; run through the derivations and the trees
(with its ``symptom`` as --symptom, or none: the trees' own entry conditions) they must produce the cause,
citing the ``evidence`` facts, and with ``negative`` applied (overrides; null removes a fact) they must not. The
test suite runs the built-in causes' cases, and ``llmdoctor playbook validate DIR`` a user's, so a user's cause
is checked the way a shipped one is.
"""

from __future__ import annotations

from collections.abc import Iterable

from doctor.facts import Facts
from doctor.playbook.loader import Cause, PlaybookSet

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SOURCE = "scenario (the cause file's cases)"
#: Facts whose null is a value ("the command does not set it"), so a negative's null sets them rather than
#: removing them.
NULL_IS_A_VALUE = ("launch.kv_cache_dtype", "launch.attention_backend", "launch.block_size", "launch.quantization",
                   "launch.tool_call_parser", "launch.reasoning_parser")


def scenario_facts(values: dict[str, Any], pbset: PlaybookSet) -> Facts:
    """The case's facts, marked observed where the registry says the fact is observed, then derived on."""
    from doctor.derive import derive_all

    facts = Facts()
    registry = pbset.registry
    for key, value in values.items():
        spec = registry.spec(key)
        facts.set(key, value, SOURCE, observed=spec is not None and spec.learnt == "observed")
    return derive_all(facts)


def negative_values(case: dict[str, Any]) -> dict[str, Any]:
    """The case's facts with its ``negative`` overrides applied."""
    values = dict(case["facts"])
    for key, value in (case.get("negative") or {}).items():
        if value is None and key not in NULL_IS_A_VALUE:
            values.pop(key, None)
        else:
            values[key] = value
    return values


def case_problems(pbset: PlaybookSet, cause: Cause, case: dict[str, Any]) -> list[str]:
    """What is wrong with one case's verdict ([] when it holds both ways)."""
    from doctor.playbook.engine import diagnose

    symptom = case.get("symptom")
    if symptom is not None and pbset.find(symptom) is None:
        return [f"symptom '{symptom}': no such playbook"]
    found = {f.id: f for f in diagnose(pbset, scenario_facts(case["facts"], pbset),
                                       [symptom] if symptom else None).findings}
    finding = found.get(cause.id)
    if finding is None:
        return [f"the facts do not lead to {cause.id} (found: {', '.join(sorted(found)) or 'nothing'})"]
    out = []
    cited = {e.fact for e in finding.evidence}
    if not set(case["evidence"]) <= cited:
        out.append(f"the finding cites {sorted(cited)}, not {sorted(set(case['evidence']) - cited)}")
    for key in ("severity", "confidence"):
        if key in case and getattr(finding, key) != case[key]:
            out.append(f"{key} is {getattr(finding, key)}, not {case[key]}")
    if not finding.fix or "?>" in finding.fix:
        out.append(f"the fix has an unfilled placeholder: {finding.fix!r}")
    if "negative" in case or "negative_symptom" in case:
        negative = negative_values(case)
        neg_symptom = None if case.get("negative_symptom") == "none" else symptom
        if negative == case["facts"] and neg_symptom == symptom:
            out.append("the negative case changes nothing")
        elif cause.id in {f.id for f in diagnose(pbset, scenario_facts(negative, pbset),
                                                 [neg_symptom] if neg_symptom else None).findings}:
            out.append(f"the negative case still leads to {cause.id}")
    return out


def cases_problems(pbset: PlaybookSet, causes: Iterable[Cause]) -> list[str]:
    """Every failing case of these causes, as ``FILE:LINE: case N: problem`` lines."""
    return [f"{cause.source}: case {index + 1}{' (' + case['name'] + ')' if 'name' in case else ''}: {problem}"
            for cause in causes for index, case in enumerate(cause.cases)
            for problem in case_problems(pbset, cause, case)]
