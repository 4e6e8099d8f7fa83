"""``playbook show --format json`` (schema ``llmdoctor.playbook/1``): one playbook, cause or the traps as data.

The same document the MCP tool ``playbook_show`` returns, so an assistant reads the trees and causes exactly as
the YAML defines them.
"""

from __future__ import annotations

from dataclasses import asdict

from doctor.errors import InputError
from doctor.playbook.loader import PlaybookSet

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "llmdoctor.playbook/1"


class ShownDocument:
    """What ``emit_document`` renders: ``to_dict()`` gives the versioned JSON."""

    def __init__(self, pbset: PlaybookSet, ident: str) -> None:
        self.doc = show_document(pbset, ident)

    def to_dict(self) -> dict[str, Any]:
        return self.doc


def show_document(pbset: PlaybookSet, ident: str) -> dict[str, Any]:
    if ident == "traps":
        return {"schema": SCHEMA, "kind": "traps", "traps": [asdict(t) for t in pbset.traps]}
    playbook = pbset.find(ident)
    if playbook is not None:
        causes = sorted(c for c, symptoms in symptoms_by_cause(pbset).items() if playbook.symptom in symptoms)
        return {"schema": SCHEMA, "kind": "playbook", "symptom": playbook.symptom, "title": playbook.title,
                "description": playbook.description, "aliases": list(playbook.aliases),
                "applies_when": playbook.applies_when, "tree": playbook.tree, "causes": causes,
                "source": playbook.source}
    cause = pbset.causes.get(ident)
    if cause is None:
        raise InputError(f"{ident}: no such playbook, alias or cause (see `llmdoctor playbook list`)")
    return {"schema": SCHEMA, "kind": "cause", **asdict(cause), "evidence": list(cause.evidence)}


def symptoms_by_cause(pbset: PlaybookSet) -> dict[str, set[str]]:
    """cause id → the symptoms whose trees reach it (docs/causes.md, `playbook list` and `show`)."""
    out: dict[str, set[str]] = {}

    def walk(nodes: list[dict[str, Any]], symptom: str) -> None:
        for node in nodes:
            if "cause" in node:
                out.setdefault(node["cause"], set()).add(symptom)
            walk(node.get("then", []), symptom)

    for playbook in pbset.playbooks.values():
        walk(playbook.tree, playbook.symptom)
    return out
