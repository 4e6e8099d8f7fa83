"""A judged sample of the error catalogs' mapping: is the cause a start-up refusal is mapped to the right one?

The coverage report (docs/error-catalog.md) counts how many start-up refusals are mapped and by which route; it
cannot say whether the cause is right. tools/mapping_sample.yaml holds a sample read by hand against each site's
source in the newest wheels, with a verdict per template; this module draws the sample, prints the sheets to
judge, and sums the verdicts per route for the report.

    python -m tools.catalog_gen.mapping_sample vllm          # the sample's sheets (source from the wheel cache)
    python -m tools.catalog_gen.mapping_sample --check       # templates whose mapping moved since judged

The sampling frame is the newest release's templates with a site that raises, or logs at error level, in a
start-up module by file (doctor/logs/catalog_map.py ``STARTUP``), so a rule that narrows what counts as start-up
(``SERVING``) does not move the sample: such a template's route becomes ``not-startup``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import zipfile
from pathlib import Path
from typing import Any

import yaml

from doctor.logs import catalog as cat
from doctor.logs.catalog_map import how_mapped, site_startup, startup_class

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = ROOT / "tools" / "mapping_sample.yaml"
#: right: the cause is what the site refuses and its fix is where to act; wrong-cause: a start-up refusal sent to
#: another cause; not-startup: the line is not a start-up refusal (it runs while serving, in a command of its own,
#: or is logged and recovered from) but was read as one; internal: the subsystem is right but the check is the
#: engine's own invariant, so no setting fixes it.
VERDICT_KINDS = ("right", "wrong-cause", "not-startup", "internal")
ROUTES = ("message", "setting", "subsystem", "stage", "not-startup", "unmapped")


def _refusal(site: dict[str, Any]) -> bool:
    return site["kind"] == "raise" or site["type"] in ("error", "critical")


def _live(catalog: cat.Catalog, entry: dict[str, Any]) -> list[dict[str, Any]]:
    at, order = len(catalog.releases) - 1, catalog._order
    return [s for s in entry.get("sites", ()) if order[s["since"]] <= at <= order[s["until"]] and _refusal(s)]


def frame(engine: str) -> list[str]:
    """The template ids sampled from (see the module's docstring), sorted."""
    catalog = cat.load(engine)
    return sorted(tid for tid, entry in catalog.templates.items()
                  if any(startup_class(engine, s["file"]) for s in _live(catalog, entry)))


def draw(engine: str, size: int = 60, seed: int = 22) -> list[str]:
    return random.Random(seed).sample(frame(engine), size)


def current(engine: str, tid: str) -> tuple[str | None, str]:
    """(cause, route) the rules give the template now; route ``not-startup`` when no site is reached at start-up."""
    catalog = cat.load(engine)
    entry = catalog.templates[tid]
    sites = [s for s in _live(catalog, entry) if site_startup(engine, s)]
    if not sites:
        return None, "not-startup"
    cause, route = how_mapped(engine, tid, entry, sites)
    return cause, route or "unmapped"


def load() -> dict[str, Any]:
    return yaml.safe_load(VERDICTS.read_text(encoding="utf-8"))


def tallies(doc: dict[str, Any], when: str) -> dict[str, dict[str, dict[str, int]]]:
    """engine -> route -> verdict -> count, ``when`` 'before' (as first judged) or 'now'."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for tid, item in doc["templates"].items():
        engine = tid.split("-", 1)[0]
        route, verdict = item["route"], item["verdict"]
        if when == "before" and "before" in item:
            route, verdict = item["before"]["route"], item["before"]["verdict"]
        counts = out.setdefault(engine, {}).setdefault(route, dict.fromkeys(VERDICT_KINDS, 0))
        counts[verdict] += 1
    return out


def moved(doc: dict[str, Any]) -> list[str]:
    """The judged templates whose mapping differs from the recorded one (each needs judging again)."""
    out = []
    for tid, item in doc["templates"].items():
        now = current(tid.split("-", 1)[0], tid)
        if now != (item.get("cause"), item["route"]):
            out.append(f"{tid}: recorded {item.get('cause')} [{item['route']}], now {now[0]} [{now[1]}]")
    return out


def sheet(engine: str, tid: str, wheel: Path | None) -> str:
    """One template to judge: its text, cause and route, and each start-up site with its source lines."""
    catalog = cat.load(engine)
    entry = catalog.templates[tid]
    cause, route = current(engine, tid)
    out = [f"### {tid} -> {cause} [{route}]", "TEXT: " + cat.template_text(entry["parts"])]
    source = zipfile.ZipFile(wheel) if wheel else None
    at = len(catalog.releases) - 1
    for site in _live(catalog, entry)[:3]:
        line = site["line"]
        line = line[at - catalog._order[site["since"]]] if isinstance(line, list) else line
        out.append(f"  {site['file']}:{line} {site['function']} {site['kind']} {site['type']} "
                   f"if {site.get('guard', '')!r}")
        if source is not None:
            text = source.read(site["file"]).decode(errors="replace").splitlines()
            out += [f"    {n + 1:5d}{'>' if n + 1 == line else ' '} {text[n]}"
                    for n in range(max(0, line - 8), min(len(text), line + 3))]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", nargs="?", choices=["vllm", "sglang"])
    parser.add_argument("--check", action="store_true", help="list judged templates whose mapping moved")
    args = parser.parse_args(argv)
    doc = load()
    if args.check:
        out = moved(doc)
        print("\n".join(out) or "every judged template maps as recorded")
        return 1 if out else 0
    if not args.engine:
        parser.error("give ENGINE or --check")
    wheel_dir = Path(os.environ.get("LLMDOCTOR_WHEEL_DIR", Path.home() / ".cache" / "llmdoctor-wheels"))
    release = cat.load(args.engine).releases[-1]
    wheel = next(iter(sorted(wheel_dir.glob(f"{args.engine}-{release}-*.whl"))), None)
    for tid in [t for t in doc["templates"] if t.startswith(args.engine + "-")]:
        print(sheet(args.engine, tid, wheel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
