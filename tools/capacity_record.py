"""Regenerate the memory model's error record: doctor/model/capacity_record.json and its table in docs/plan.md.

    python tools/capacity_record.py          # write both
    python tools/capacity_record.py --check  # exit 1 when either is stale (the test suite runs the same check)
    python tools/capacity_record.py --batch 2  # one blind batch alone: its per-stratum table, nothing written

The rows are the full predictions of tests/data/kv_datapoints.yaml (tests/test_memory_datapoints.py evaluates
them with llmdoctor's own model), each with its stratum; `plan`, `inspect`, `lint` and `check` read the JSON to
print a capacity's band (doctor/model/band.py) without predicting anything again.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from doctor.model.band import _LABELS, RECORD_PATH, STRATA, percentile, stratum_of  # noqa: E402

PLAN_DOC = ROOT / "docs" / "plan.md"
START, END = "<!-- capacity-record:start (python tools/capacity_record.py) -->", "<!-- capacity-record:end -->"
_TITLES = {"engine": "engine", "gpu_family": "GPU family", "moe": "dense/MoE", "attention": "attention",
           "quantization": "quantization"}


def rows(batch: int | None = None) -> list[dict[str, object]]:
    """One row per full prediction: id, batch, stratum and signed error (``batch``: that batch's points only)."""
    import test_memory_datapoints as record

    out = []
    for point in record.datapoints(batch):
        if "full" not in point["checks"]:
            continue
        card, facts = record._card_and_facts(point)
        result = next(r for r in record.evaluate(point) if r.check == "full")
        gpu = record._gpu(point)
        quant = point["flags"].get("quantization") or facts.get("model.quantization")
        row = {"id": point["id"], "batch": point.get("batch", 1),
               **stratum_of(point["engine"], gpu.sm, facts.get("model.moe"), facts.get("model.attention"), quant),
               "error": round(result.error, 4)}
        logged = point["logged"].get("weights_gib")
        if logged:  # the weights the engine logged: the record of the weights estimate (model-does-not-fit)
            from doctor.model.fit import weights_per_gpu

            predicted = (weights_per_gpu(facts, record._layout(point)) or 0) / record.GIB
            row["weights_error"] = round((predicted - logged) / logged, 4)
        out.append(row)
    return out


def record_json(runs: list[dict[str, object]]) -> str:
    """The data file, one run a line (diffs show which run moved)."""
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False) for r in runs)
    return (f'{{"generated_by": "python tools/capacity_record.py", "tolerance": {record_tolerance()},\n'
            f' "runs": [\n{body}\n]}}\n')


def record_tolerance() -> float:
    import test_memory_datapoints as record

    return record.TOLERANCE


def table(runs: list[dict[str, object]]) -> str:
    """The per-stratum Markdown table: n, share within ±15 %, median and 90th-percentile absolute error."""
    tolerance = record_tolerance()
    lines = ["| stratum | value | n | within ±15 % | median abs. error | 90th pct abs. error |",
             "|---|---|---:|---:|---:|---:|"]

    def row(title: str, value: str, some: list[dict[str, object]], field: str = "error") -> None:
        errors = [abs(float(r[field])) for r in some]  # type: ignore[arg-type]
        if not errors:  # a blind batch whose logs give no weights has no weights row
            return
        within = sum(e <= tolerance for e in errors)
        lines.append(f"| {title} | {value} | {len(errors)} | {within} ({within / len(errors):.0%}) | "
                     f"{statistics.median(errors):.1%} | {percentile(errors, 0.9):.1%} |")

    row("all", "all", runs)
    for key in STRATA:
        values = sorted({str(r[key]) for r in runs}, key=lambda v: (-sum(r[key] == v for r in runs), v))
        for value in values:
            row(_TITLES[key], _LABELS.get(value, value), [r for r in runs if r[key] == value])
    row("weights (predicted vs logged)", "all", [r for r in runs if r.get("weights_error") is not None],
        "weights_error")
    return "\n".join(lines)


def plan_doc(runs: list[dict[str, object]]) -> str:
    text = PLAN_DOC.read_text(encoding="utf-8")
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    if not rest:
        raise SystemExit(f"{PLAN_DOC}: the marker {START!r} is missing")
    return f"{head}{START}\n{table(runs)}\n{END}{tail}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the generated files are stale")
    parser.add_argument("--batch", type=int, metavar="N",
                        help="measure blind batch N alone (tests/data/kv_datapoints_batch<N>.yaml): print its "
                             "per-stratum table and write nothing; run it before changing the model for the batch")
    args = parser.parse_args()
    if args.batch is not None:
        runs = rows(args.batch)
        if not runs:
            print(f"no full predictions in batch {args.batch}", file=sys.stderr)
            return 2
        print(table(runs))
        return 0
    runs = rows()
    wanted = {RECORD_PATH: record_json(runs), PLAN_DOC: plan_doc(runs)}
    stale = [path for path, text in wanted.items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    if args.check:
        for path in stale:
            print(f"{path.relative_to(ROOT)} is stale: run python tools/capacity_record.py")
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path], encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
