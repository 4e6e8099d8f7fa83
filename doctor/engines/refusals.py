"""Values the engine refuses at start-up, found before it is started: a flag outside the range the engine's own
check accepts (``--gpu-memory-utilization 1.5``), a tensor-parallel size that does not split the model's heads
(TP 3 for 32 attention heads). The rules are data (refusals.yaml), each with the wheel's file:line; this module
compares the launch's numbers with them and writes ``launch.refused_values`` for the ``engine-refuses-value``
cause."""

from __future__ import annotations

import functools
from pathlib import Path

from doctor.facts import Facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DATA_FILE = Path(__file__).with_name("refusals.yaml")
#: how each engine spells its tensor-parallel flag in the message
TP_FLAG = {"vllm": "--tensor-parallel-size", "sglang": "--tp-size"}


@functools.lru_cache(maxsize=1)
def rules() -> dict[str, Any]:
    from doctor.datacache import cached
    from doctor.yamlsafe import parse_packaged

    return cached("engines.refusals", [DATA_FILE, Path(__file__)], lambda: parse_packaged(DATA_FILE, DATA_FILE.name))


def refused_values(facts: Facts) -> None:
    """``launch.refused_values``: each {flag, value, rule, site} the engine's own check refuses (empty when the
    launch is known and none is; unset when the engine is unknown)."""
    engine = facts.get("launch.engine")
    if engine not in TP_FLAG:
        return
    found: list[dict[str, Any]] = []
    inputs: list[str] = []
    from doctor.playbook.conditions import evaluate

    for rule in rules()["ranges"]:
        value = facts.get(f"launch.flags.{rule['flag']}")
        if rule["engine"] != engine or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue  # no number given: nothing the range could refuse
        inputs.append(f"launch.flags.{rule['flag']}")
        if evaluate(_accepted(rule), facts).value is not True:
            found.append({"flag": "--" + rule["flag"].replace("_", "-"), "value": value, "rule": rule["rule"],
                          "fix": rule["fix"], "site": rule["site"]})
    tp = facts.get("launch.tp")
    if isinstance(tp, int) and tp > 1:
        counts = {rule["fact"]: facts.get(rule["fact"]) for rule in rules()["divides"]}
        known = [rule for rule in rules()["divides"] if isinstance(counts[rule["fact"]], int)
                 and counts[rule["fact"]] >= 1]
        inputs += [rule["fact"] for rule in known]
        failed = [rule for rule in known if not _splits(tp, counts[rule["fact"]], rule)]
        if failed:  # one item for the flag, however many of the model's dimensions it fails to split
            valid = [size for size in range(1, 257)
                     if all(_splits(size, counts[rule["fact"]], rule) for rule in known)]
            found.append({"flag": TP_FLAG[engine], "value": tp,
                          "rule": "must divide the model's " + " and ".join(
                              f"{counts[rule['fact']]} {rule['what']}"
                              + (" (or be a multiple of them)" if rule.get("replicate_below") else "")
                              for rule in failed),
                          "fix": f"a size that splits the heads: {', '.join(map(str, valid[:8]))}",
                          "site": "; ".join(rule[engine] for rule in failed)})
    facts.set_default("launch.refused_values", found, f"derived: {', '.join(['launch.engine', 'launch.tp', *inputs])} "
                                                      "against the engines' own checks (doctor/engines/refusals.yaml)")


def _accepted(rule: dict[str, Any]) -> dict[str, Any]:
    """A range rule as the playbooks' condition (doctor/playbook/conditions.py): what the engine accepts, the flag's
    number above ``above`` and at most ``at_most``."""
    fact = f"launch.flags.{rule['flag']}"
    return {"all": [{"fact": fact, "op": "gt", "value": rule["above"]},
                    {"fact": fact, "op": "le", "value": rule["at_most"]}]}


def _splits(size: int, count: int, rule: dict[str, Any]) -> bool:
    """Does TP ``size`` split ``count`` heads evenly (or replicate them evenly, where the engine does)?"""
    if rule.get("replicate_below") and size >= count:
        return size % count == 0
    return count % size == 0
