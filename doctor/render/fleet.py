"""`check --targets` as a table for people and as Markdown (a CI job's summary, a chat message)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.commands.fleet import FleetRun


def fleet_text(fleet: FleetRun) -> str:
    from doctor.findings import worst_severity

    rows = [("target", "endpoint", "engine", "model", "state", "worst", "findings")]
    for r in fleet.results:
        if r.run is None:
            rows.append((r.spec.name, r.spec.shown, "", "", "input error", "", r.error or ""))
            continue
        doc = r.run.to_dict()
        findings = r.run.diagnosis.findings
        state = "ok" if r.reachable else "unreachable"
        rows.append((r.spec.name, r.spec.shown, f"{doc['engine'] or ''} {doc['engine_version'] or ''}".strip(),
                     str(doc["model"] or ""), state, worst_severity(findings) or "",
                     "; ".join(filter(None, [", ".join(f.id for f in findings) if r.reachable
                                             else (r.run.unreachable or ""), *r.notes]))))
    widths = [min(40, max(len(row[i]) for row in rows)) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(cell[:w].ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[-1]
             for row in rows]
    summary = fleet.to_dict()["summary"]
    lines.append(f"\n{summary['targets']} targets, {summary['reachable']} reachable, "
                 f"{summary['findings']} findings. Details: llmdoctor check --endpoint ENDPOINT")
    return "\n".join(lines)


def fleet_markdown(fleet: FleetRun) -> str:
    out = ["## llmdoctor fleet check", "", "| target | endpoint | engine | state | findings |", "|---|---|---|---|---|"]
    for r in fleet.results:
        if r.run is None:
            out.append(f"| {r.spec.name} | {r.spec.shown} | | input error | {r.error} |")
            continue
        doc = r.run.to_dict()
        state = "ok" if r.reachable else f"unreachable: {r.run.unreachable}"
        ids = ", ".join(f"`{f.id}` ({f.severity})" for f in r.run.diagnosis.findings) if r.reachable else ""
        ids = "; ".join(filter(None, [ids, *r.notes]))
        out.append(f"| {r.spec.name} | {r.spec.shown} | {doc['engine'] or ''} {doc['engine_version'] or ''} | "
                   f"{state} | {ids} |")
    return "\n".join(out) + "\n"
