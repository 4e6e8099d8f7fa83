"""The log as an input of `check` and `snapshot`: a file (or ``-``) read within the cap, or the excerpt a
snapshot recorded, both turned into facts with the log signatures of the causes loaded — the built-in
playbooks/causes/*.yaml and those of the user's ``--playbooks DIR``, so a cause of the user's names its lines too."""

from __future__ import annotations

from doctor.errors import InputError
from doctor.logs.parse import GUARD, LogReading, log_facts
from doctor.logs.read import LogText, joined, read_log

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from doctor.playbook.loader import PlaybookSet

    Signatures = dict[str, list[dict[str, Any]]]

#: A recorded excerpt holds the lines that gave facts; past this many it was not written by llmdoctor.
MAX_EXCERPT_LINES = 20_000


def signatures(pbset: PlaybookSet | None = None) -> Signatures:
    """cause id → its log signatures, from the causes of ``pbset`` (the run's playbooks; default: the built-in)."""
    if pbset is None:
        from doctor.playbook.loader import load_playbooks

        pbset = load_playbooks()
    from doctor.playbook.lognodes import DEFAULT_SYMPTOM

    # each signature carries the symptom its cause's log node explains: a line of a running server (a deprecation
    # warning, a preemption) is no explanation of a failed start (doctor/logs/parse.py _named)
    return {c.id: [dict(s, symptom=c.log_node.get("symptom", DEFAULT_SYMPTOM)) for s in c.log_signatures]
            for c in pbset.causes.values() if c.log_signatures}


def read_log_input(spec: str | None, sigs: Signatures | None = None, client_output: str | None = None) -> LogReading:
    """``--log FILE|-`` and/or ``--client-output FILE``: the facts, and the redacted excerpt a snapshot records.
    What a client got back (an API error body, the client library's traceback) quotes the engine's own message —
    the HTTP 400 of a request the server refused — so it is read with the log, after it, as one excerpt."""
    text = read_log(spec) if spec else None
    if client_output:
        client = read_log(client_output, "--client-output")
        text = joined(text, client) if text is not None else client
    if text is None:
        raise InputError("no --log or --client-output to read")
    return log_facts(text, signatures() if sigs is None else sigs)


def replay_excerpt(excerpt: dict[str, Any], sigs: Signatures | None = None) -> LogReading:
    """The facts of a recorded excerpt: the same parse over the same (already redacted) lines."""
    return log_facts(excerpt_text(excerpt), signatures() if sigs is None else sigs)


def excerpt_text(excerpt: Any, where: str = "extra.inputs.log") -> LogText:
    """A recorded excerpt checked and read back; one InputError naming the key when it is not one."""
    if not isinstance(excerpt, dict):
        raise InputError(f"{where}: expected an object")
    lines = excerpt.get("lines")
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise InputError(f"{where}.lines: expected a list of strings")
    if len(lines) > MAX_EXCERPT_LINES:
        raise InputError(f"{where}.lines: {len(lines)} lines, more than an llmdoctor excerpt holds "
                         f"({MAX_EXCERPT_LINES})")
    for key in ("total_bytes", "skipped_bytes"):
        value = excerpt.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise InputError(f"{where}.{key}: expected a number of bytes")
    label = excerpt.get("label")
    return LogText(label if isinstance(label, str) else "--log (recorded)",
                   tuple(line.replace(GUARD, "") for line in lines),
                   excerpt.get("total_bytes", 0), excerpt.get("skipped_bytes", 0))
