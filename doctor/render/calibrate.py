"""`llmdoctor calibrate add` and `show` for people: the ``llmdoctor.calibrate/1`` document as lines."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _pair_line(run: dict[str, Any]) -> str:
    where = f"{run['models'][0]} on {run['gpu']} ({run['engine']} {run['version'] or 'version unknown'}" + (
        f", TP{run['tp']})" if run.get("tp") else ")")
    return f"{where}: measured {run['measured']:,} KV tokens, computed {run['expected']:,} ({run['error']:+.1%})"


def added_text(result: dict[str, Any]) -> str:
    """`calibrate add`: each source kept, already kept or refused (with why), and the file they went to."""
    lines = [f"added    {_pair_line(run)}" for run in result["added"]]
    lines += [f"already  {_pair_line(run)}" for run in result["already"]]
    lines += [f"refused  {item['source']}: {item['reason']}" for item in result["refused"]]
    if result["added"] or result["already"]:
        lines.append(f"file     {result['file']} (llmdoctor calibrate show)")
    return "\n".join(lines)


def shown_text(result: dict[str, Any]) -> str:
    """`calibrate show`: the runs by model, GPU and engine, each group with the band plan and lint take."""
    if not result["groups"]:
        return f"no runs yet in {result['file']}: add one with llmdoctor calibrate add SNAPSHOT"
    lines = [f"calibration file {result['file']}"]
    for group in result["groups"]:
        lines.append(f"{group['model']} on {group['gpu']}, {group['engine']}: {group['band']['text']}")
        lines += [f"  {_pair_line(run)}  — {run['source']}, added {run['added']}" for run in group["runs"]]
    return "\n".join(lines)
