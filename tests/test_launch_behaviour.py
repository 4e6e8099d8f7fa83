"""Every cause the launch-failure tree can reach says what the engine does about it — refuses to start, crashes on
the first request, runs degraded — with the file:line of the engine's wheel, and its severity follows: a refusal
to start is critical, a degraded run is not (tests/realengine reproduces the refusals the CPU engine can show)."""

from __future__ import annotations

import re
from typing import Any

from doctor.playbook.loader import load_playbooks

_FILE_LINE = re.compile(r"[a-z0-9_/]+\.py:\d+")  # a module name may hold digits (deepseek_v2.py)


def _causes(nodes: list[dict[str, Any]], severity: str | None = None) -> list[tuple[str, str | None, bool]]:
    """(cause, the severity a node sets on the path, whether that node says why in a note)."""
    out = []
    for node in nodes:
        if "cause" in node:
            out.append((node["cause"], node.get("severity", severity), "note" in node))
        out += _causes(node.get("then", []), node.get("severity", severity))
    return out


def test_every_launch_failure_cause_says_what_the_engine_does() -> None:
    pbset = load_playbooks()
    reached = _causes(pbset.playbooks["launch-failure"].tree)
    assert len({c for c, _, _ in reached}) >= 20
    for cause_id, _, _ in reached:
        behaviour = pbset.causes[cause_id].behaviour
        assert behaviour.get("effect"), f"{cause_id}: no behaviour.effect"
        assert "vllm" in behaviour or "sglang" in behaviour, cause_id
        for engine in ("vllm", "sglang"):
            if engine in behaviour and behaviour["effect"] != "runs":
                assert _FILE_LINE.search(behaviour[engine]), f"{cause_id}: {engine} behaviour cites no file:line"


def test_severity_follows_what_the_engine_does() -> None:
    pbset = load_playbooks()
    for cause_id, node_severity, explained in _causes(pbset.playbooks["launch-failure"].tree):
        cause = pbset.causes[cause_id]
        effect = cause.behaviour["effect"]
        if effect == "refuses-to-start":
            assert cause.severity == "critical", f"{cause_id}: refuses to start but {cause.severity}"
            # a node may lower it only saying why (e.g. the config is not the served checkpoint's: uncertain)
            assert node_severity in (None, "critical") or explained, f"{cause_id}: lowered without a note"
        elif effect in ("runs-degraded", "runs"):
            # a node may raise it only saying why (the log shows this run refused: mem-fraction-low's quoted fraction)
            assert (node_severity or cause.severity) != "critical" or explained, f"{cause_id}: {effect} but critical"


def test_the_docs_show_it() -> None:
    from doctor.render.docs import causes_markdown

    text = causes_markdown(load_playbooks())
    assert "**What the engine does.** refuses to start — vLLM: vllm/entrypoints/launchers/cli_args.py:522-524" in text
