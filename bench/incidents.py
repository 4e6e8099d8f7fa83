"""The real-incident benchmark: how often `llmdoctor check` names the settled root cause of a public incident
it was never shown, given only what the incident's reporter had.

    python bench/incidents.py [--batch N] [--json] [--check-baseline FILE] [--write-baseline FILE] [-v]

Each case is one YAML file under bench/incidents/ (schema in bench/incidents/README.md): the thread's URL and
date, engine and version, the reporter's evidence (launch command, log excerpt, config repo id, GPU, /metrics)
and the cause ids the maintainers' settled answer corresponds to (`none-yet` where llmdoctor has no such
cause: always a miss; `healthy` for a false alarm, where no warning or critical finding is the right
answer). Every case runs as a fresh `python -m doctor check ... --format json` subprocess with
HF_HUB_OFFLINE=1 (never the Hub): a repo id is resolved to fixtures/configs/<org>__<name>.json when that
real config is there, else the case runs without a config (counted under "config unavailable").

Scored: top-1 (the first finding is an expected cause), top-3 (one of the first three is), per symptom and
per engine; false leads blamed (a case marked `false_lead` whose innocent suspects appear among the findings);
silent answers (no finding and no never-silent answer — unplaced lines and a differential — for a reported
symptom); and the confusion list (what was named first
instead, per expected cause). `--batch N` restricts the run to batch N — a new batch is measured blind, once, by
the lead, before anything is changed for it. `--check-baseline FILE` exits 1 when the worked batches' top-3 (the
baseline's batches) fell more than 2 points below the committed figure (.ci/run calls it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "bench" / "incidents"
FIXTURES = Path(os.environ.get("LLMDOCTOR_FIXTURES_DIR") or ROOT / "fixtures")
CONFIGS = FIXTURES / "configs"
NONE_YET = "none-yet"
#: expected for a false alarm: nothing was wrong, so no warning or critical finding is the right answer
HEALTHY = "healthy"
#: the tolerated drop of the worked part's top-3 before --check-baseline fails (percentage points)
TOLERANCE_POINTS = 2.0
REQUIRED = ("id", "url", "date", "engine", "symptom", "batch", "evidence", "root_cause", "expected")
#: what a case's evidence may hold (bench/incidents/README.md); any other key is a slip of the YAML (a log line
#: indented as a key of its own), and the runner would silently pass the evidence without it
EVIDENCE_KEYS = ("command", "config", "gpu", "log", "metrics", "client_output")


class CaseError(ValueError):
    """A case file that does not follow the schema (reported with its file name, exit 2)."""


@dataclass
class Case:
    """One incident as the runner needs it."""

    path: Path
    id: str
    engine: str
    version: str | None
    symptom: str
    batch: int
    evidence: dict
    expected: list[str]
    innocent: list[str]
    #: evidence keys a case holds that are not the reporter's own (another model's config standing in for one
    #: that is not among the fixtures, a GPU the thread does not name): never passed to check unless asked
    stand_ins: list[str] = field(default_factory=list)

    @property
    def is_false_lead(self) -> bool:
        return bool(self.innocent)


@dataclass
class Outcome:
    """What check said about one case."""

    case: Case
    named: list[str]
    severities: list[str]
    exit_code: int
    config_missing: bool
    error: str = ""
    #: check's never-silent answer (llmdoctor.check/1 `unexplained`): unplaced log lines quoted and a
    #: differential, for a reported symptom no cause explains
    unexplained: bool = False
    top1: bool = field(init=False)
    top3: bool = field(init=False)

    def __post_init__(self) -> None:
        if HEALTHY in self.case.expected:
            # a false alarm answered correctly: no warning or critical finding at all
            # a run that produced no report (bad input, nothing to check) is a miss, not a clean bill
            self.top1 = self.top3 = not self.error and not any(s in ("critical", "warning") for s in self.severities)
            return
        hit = set(self.case.expected) - {NONE_YET}
        self.top1 = bool(self.named) and self.named[0] in hit
        self.top3 = any(n in hit for n in self.named[:3])

    @property
    def silent(self) -> bool:
        if HEALTHY in self.case.expected:
            return False
        # silence as the issue defines it: a reported symptom answered with nothing — no finding, and neither the
        # unplaced error lines nor a differential (exit 5 with those is an answer, if not yet a cause)
        return not self.named and not self.unexplained

    @property
    def blamed(self) -> list[str]:
        return [n for n in self.named if n in self.case.innocent]


def load_case(path: Path) -> Case:
    """Read and validate one case file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise CaseError(f"{path}: not valid YAML ({exc.__class__.__name__})") from None
    if not isinstance(data, dict):
        raise CaseError(f"{path}: not a mapping")
    missing = [k for k in REQUIRED if k not in data]
    if missing:
        raise CaseError(f"{path}: missing field(s) {', '.join(missing)}")
    if data["id"] != path.stem:
        raise CaseError(f"{path}: id {data['id']!r} differs from the file name")
    expected = data["expected"]
    if isinstance(expected, str):
        expected = [expected]
    if not expected:
        raise CaseError(f"{path}: expected is empty (use none-yet)")
    evidence = data["evidence"] or {}
    if not isinstance(evidence, dict):
        raise CaseError(f"{path}: evidence is not a mapping")
    unknown = sorted(str(k) for k in evidence if k not in EVIDENCE_KEYS)
    if unknown:
        raise CaseError(f"{path}: evidence key(s) {', '.join(unknown)} not among {', '.join(EVIDENCE_KEYS)}")
    lead = data.get("false_lead") or {}
    return Case(
        path=path,
        id=data["id"],
        engine=str(data["engine"]),
        version=str(data["version"]) if data.get("version") else None,
        symptom=str(data["symptom"]),
        batch=int(data["batch"]),
        evidence=evidence,
        expected=[str(e) for e in expected],
        innocent=[str(c) for c in lead.get("innocent", [])],
        stand_ins=[str(k) for k in data.get("stand_ins") or []],
    )


def load_cases(batches: set[int] | None) -> list[Case]:
    """Every case file, in file-name order, restricted to the given batches."""
    cases = [load_case(p) for p in sorted(CASES.glob("*.yaml"))]
    return [c for c in cases if batches is None or c.batch in batches]


def config_path(repo: str) -> Path | None:
    """The real config.json of a repo id among the fixtures (the runner never asks the Hub)."""
    candidate = CONFIGS / (repo.replace("/", "__") + ".json")
    return candidate if candidate.is_file() else None


def run_case(case: Case, tmp: Path, *, stand_ins: bool = False) -> Outcome:
    """`llmdoctor check` on the case's evidence, offline, as a fresh process (without the stand-ins: the
    reporter did not have them)."""
    ev = {k: v for k, v in case.evidence.items() if stand_ins or k not in case.stand_ins}
    argv = [sys.executable, "-m", "doctor", "check", "--format", "json", "--offline", "--symptom", case.symptom]
    if case.version:
        argv += ["--engine-version", case.version]
    if ev.get("command"):
        argv += ["--command", str(ev["command"]).strip()]
    if ev.get("gpu"):
        argv += ["--gpu", str(ev["gpu"])]
    config_missing = False
    if ev.get("config"):
        found = config_path(str(ev["config"]))
        if found:
            argv += ["--config", str(found)]
        else:
            config_missing = True
    for key, flag in (("log", "--log"), ("metrics", "--metrics"), ("client_output", "--client-output")):
        if ev.get(key):
            f = tmp / f"{case.id}.{key}"
            f.write_text(str(ev[key]), encoding="utf-8")
            argv += [flag, str(f)]
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=str(ROOT), NO_COLOR="1")
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    try:
        report = json.loads(proc.stdout)
        named = [f["id"] for f in report.get("findings", [])]
        severities = [f.get("severity", "") for f in report.get("findings", [])]
        unexplained = bool(report.get("unexplained"))
        error = ""
    except json.JSONDecodeError:
        named, severities, unexplained = [], [], False
        error = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
    return Outcome(case, named, severities, proc.returncode, config_missing, error, unexplained)


def pct(n: int, d: int) -> float:
    return round(100.0 * n / d, 1) if d else 0.0


def score(outcomes: list[Outcome]) -> dict:
    """Aggregate figures: overall, per symptom, per engine; false leads, silence, confusion."""

    def block(group: list[Outcome]) -> dict:
        n = len(group)
        return {
            "n": n,
            "top1": sum(o.top1 for o in group),
            "top3": sum(o.top3 for o in group),
            "top1_pct": pct(sum(o.top1 for o in group), n),
            "top3_pct": pct(sum(o.top3 for o in group), n),
        }

    by_symptom: dict[str, list[Outcome]] = defaultdict(list)
    by_engine: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_symptom[o.case.symptom].append(o)
        by_engine[o.case.engine].append(o)
    leads = [o for o in outcomes if o.case.is_false_lead]
    confusion: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        if not o.top3:
            confusion[",".join(o.case.expected)][o.named[0] if o.named else "(silent)"] += 1
    return {
        "all": block(outcomes),
        "by_symptom": {k: block(v) for k, v in sorted(by_symptom.items())},
        "by_engine": {k: block(v) for k, v in sorted(by_engine.items())},
        "false_leads": {
            "n": len(leads),
            "blamed": sum(bool(o.blamed) for o in leads),
            "blamed_pct": pct(sum(bool(o.blamed) for o in leads), len(leads)),
            "cases": {o.case.id: o.blamed for o in leads if o.blamed},
        },
        "silent": sum(o.silent for o in outcomes),
        "silent_pct": pct(sum(o.silent for o in outcomes), len(outcomes)),
        "none_yet": sum(NONE_YET in o.case.expected for o in outcomes),
        "config_unavailable": sum(o.config_missing for o in outcomes),
        "errors": {o.case.id: o.error for o in outcomes if o.error},
        "confusion": {k: dict(v.most_common()) for k, v in sorted(confusion.items())},
        "cases": {
            o.case.id: {"expected": o.case.expected, "named": o.named[:5], "exit": o.exit_code, "top3": o.top3}
            for o in outcomes
        },
    }


def print_text(result: dict, verbose: bool) -> None:
    a = result["all"]
    print(f"incidents {a['n']}  top-1 {a['top1']} ({a['top1_pct']} %)  top-3 {a['top3']} ({a['top3_pct']} %)")
    for title, key in (("symptom", "by_symptom"), ("engine", "by_engine")):
        print(f"\nper {title}")
        for name, b in result[key].items():
            print(f"  {name:26} {b['n']:4}  top-1 {b['top1_pct']:5} %  top-3 {b['top3_pct']:5} %")
    fl = result["false_leads"]
    print(f"\nfalse leads blamed {fl['blamed']} of {fl['n']} ({fl['blamed_pct']} %)")
    for cid, names in fl["cases"].items():
        print(f"  {cid}: {', '.join(names)}")
    print(f"silent answers     {result['silent']} ({result['silent_pct']} %)")
    print(f"none-yet (no cause in llmdoctor) {result['none_yet']}; config unavailable offline "
          f"{result['config_unavailable']}; runner errors {len(result['errors'])}")
    for cid, err in result["errors"].items():
        print(f"  {cid}: {err}")
    print("\nconfusion (expected -> named first instead)")
    for exp, named in result["confusion"].items():
        print(f"  {exp}: " + ", ".join(f"{k} x{v}" for k, v in named.items()))
    if verbose:
        print("\ncases")
        for cid, c in result["cases"].items():
            mark = "ok  " if c["top3"] else "MISS"
            print(f"  {mark} {cid}: expected {','.join(c['expected'])}; named {','.join(c['named']) or '-'}")


def check_baseline(result: dict, path: Path) -> int:
    """Exit status for CI: 1 when top-3 fell more than TOLERANCE_POINTS below the committed baseline."""
    try:
        base = json.loads(path.read_text(encoding="utf-8"))
        want = float(base["top3_pct"])
    except (OSError, ValueError, KeyError, TypeError):
        print(f"{path}: not a baseline written by --write-baseline (needs top3_pct)", file=sys.stderr)
        return 2
    got = result["all"]["top3_pct"]
    if got < want - TOLERANCE_POINTS:
        print(f"incidents: top-3 {got} % on batches {base.get('batches')} fell below the baseline {want} % "
              f"by more than {TOLERANCE_POINTS} points", file=sys.stderr)
        return 1
    print(f"incidents: top-3 {got} % (baseline {want} %, tolerance {TOLERANCE_POINTS} points): ok")
    return 0


#: first releases of the "new" era for the quota on older releases
NEW_ERA = {"vllm": ((0, 8), "2025-03-18"), "sglang": ((0, 4, 5), "2025-04-07")}


def is_old_era(engine: str, version: str | None, date: str) -> bool:
    """Older than vLLM 0.8 / SGLang 0.4.5: by the version when given, else by the report date."""
    first, released = NEW_ERA.get(engine, ((0,), "0"))
    if version:
        parts = tuple(int(x) for x in re.findall(r"\d+", version)[:3])
        if parts:
            return parts < first
    return str(date) < released


def stats(batches: set[int] | None) -> dict:
    """The quota counts of the case files, without running llmdoctor."""
    rows = []
    for path in sorted(CASES.glob("*.yaml")):
        d = yaml.safe_load(path.read_text(encoding="utf-8"))
        if batches is None or int(d["batch"]) in batches:
            rows.append(d)
    n = len(rows)

    def share(k: int) -> dict:
        return {"n": k, "pct": pct(k, n)}

    return {
        "n": n,
        "by_batch": dict(sorted(Counter(int(d["batch"]) for d in rows).items())),
        "by_symptom": dict(Counter(d["symptom"] for d in rows).most_common()),
        "by_engine": dict(Counter(d["engine"] for d in rows).most_common()),
        "old_era": share(sum(is_old_era(d["engine"], d.get("version") and str(d["version"]), d["date"])
                             for d in rows)),
        "false_leads": share(sum(bool(d.get("false_lead")) for d in rows)),
        "with_log": share(sum(bool((d.get("evidence") or {}).get("log")) for d in rows)),
        "none_yet": share(sum(NONE_YET in (d["expected"] if isinstance(d["expected"], list) else [d["expected"]])
                              for d in rows)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", type=int, action="append", help="only this batch (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--check-baseline", type=Path, metavar="FILE",
                    help="exit 1 when top-3 drops more than 2 points below FILE's (its batches are run)")
    ap.add_argument("--write-baseline", type=Path, metavar="FILE", help="write the figures of this run to FILE")
    ap.add_argument("--stats", action="store_true",
                    help="print the cases' quota counts (symptom, engine, era, false leads, logs) and exit; runs nothing")
    ap.add_argument("--with-stand-ins", action="store_true",
                    help="also pass the evidence a case marks as standing in for what the reporter had (a similar "
                         "model's config, an assumed GPU): for comparison only, never the recorded figure")
    ap.add_argument("-v", "--verbose", action="store_true", help="also list every case's outcome")
    args = ap.parse_args(argv)
    batches = set(args.batch) if args.batch else None
    if args.check_baseline and not batches:
        try:
            batches = set(json.loads(args.check_baseline.read_text(encoding="utf-8"))["batches"])
        except (OSError, ValueError, KeyError, TypeError):
            print(f"{args.check_baseline}: not a baseline written by --write-baseline (needs batches)",
                  file=sys.stderr)
            return 2
    if args.stats:
        st = stats(batches)
        if args.json:
            print(json.dumps(st, indent=2))
        else:
            for k, v in st.items():
                print(f"{k:12} {v}")
        return 0
    try:
        cases = load_cases(batches)
    except CaseError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not cases:
        print(f"no cases under {CASES} for batches {sorted(batches or [])}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="llmdoctor-incidents-") as tmp:
        outcomes = [run_case(c, Path(tmp), stand_ins=args.with_stand_ins) for c in cases]
    result = score(outcomes)
    result["batches"] = sorted({c.batch for c in cases})
    if args.write_baseline:
        base = {"batches": result["batches"], "n": result["all"]["n"], "top3_pct": result["all"]["top3_pct"],
                "top1_pct": result["all"]["top1_pct"]}
        args.write_baseline.write_text(json.dumps(base, indent=2) + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_text(result, args.verbose)
    if args.check_baseline:
        return check_baseline(result, args.check_baseline)
    return 0


if __name__ == "__main__":
    sys.exit(main())
