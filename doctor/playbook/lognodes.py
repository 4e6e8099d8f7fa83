"""The tree nodes that name a cause from the server log, generated from the causes' ``log_signatures``.

A cause file that carries log signatures needs a node ``log.causes contains <id>`` in the tree of the symptom it
explains (launch-failure unless its ``log_node.symptom`` says otherwise); writing that node by hand was a second
place to keep in step. Here it is made from the cause file: at the tree's ``generate: log-signatures`` node (or at
its end), one node per cause, in load order (built-in causes by id, then each user directory's). Precedence is
data in the cause file: ``log_node.yields_to`` names causes whose own signature, when also in the log, explains
the same lines better (``cuda-graph-capture-oom`` before ``startup-out-of-memory``), ``log_node.when`` adds a
condition and ``log_node.note`` the words a finding shows for it.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The value of a tree's ``generate`` node: where the log-signature nodes go.
MARKER = "log-signatures"
DEFAULT_SYMPTOM = "launch-failure"


def log_node(cause_id: str, spec: dict[str, Any]) -> dict[str, Any]:
    """The node for one cause with log signatures (``spec``: its ``log_node`` mapping, maybe empty)."""
    named: dict[str, Any] = {"fact": "log.causes", "op": "contains", "value": cause_id}
    tests = [named] + [{"fact": "log.causes", "op": "not_contains", "value": other}
                       for other in spec.get("yields_to", ())]
    if "when" in spec:
        tests.append(spec["when"])
    node: dict[str, Any] = {"when": named if len(tests) == 1 else {"all": tests}}
    if "note" in spec:
        node["note"] = spec["note"]
    node["cause"] = cause_id
    return node


def place(tree: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``tree`` with ``nodes`` at its ``generate: log-signatures`` node, or appended when it has none."""
    for index, node in enumerate(tree):
        if node.get("generate") == MARKER:
            return [*tree[:index], *nodes, *tree[index + 1:]]
    return [*tree, *nodes]
