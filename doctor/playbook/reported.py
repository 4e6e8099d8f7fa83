"""Which symptoms were reported — by the user, an alert, or a log that shows a failed start.

Apart from doctor/playbook/unexplained.py so that a run where nothing was reported (most live checks) decides so
without importing the never-silent answer it would build.
"""

from __future__ import annotations

from doctor.facts import Facts

#: the symptom a log that shows a failed start reports by itself
LOG_SYMPTOM = "launch-failure"


def reported(facts: Facts, ran: list[str]) -> dict[str, str]:
    """Symptom -> who reported it: the user or an alert (``workload.reported``), or the log itself — a log with an
    error and no ready line is a failed start, when the launch-failure tree ran."""
    given = facts.fact("workload.reported")
    out = {s: given.source for s in (given.value if given is not None else None) or []}
    if LOG_SYMPTOM not in out and LOG_SYMPTOM in ran and facts.get("log.started") is False and facts.get("log.error"):
        out[LOG_SYMPTOM] = "the log (an error, and no line saying the server is ready)"
    return out
