"""Generate one engine catalog: ``python tools/gen_catalog.py ENGINE VERSION``.

Downloads the engine's wheel with ``pip download --no-deps`` (cached in --wheel-dir), reads its
Python sources statically (``tools/catalog_gen``: nothing is installed, imported or executed) and
writes ``doctor/engines/catalogs/ENGINE-VERSION.json`` with sorted keys, so regenerating gives a
reviewable diff. See tools/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from tools.catalog_gen import engines  # noqa: E402
from tools.catalog_gen.wheel import DEFAULT_CACHE, WheelSource, download_wheel, sha256  # noqa: E402

SCHEMA = "llmdoctor.catalog/1"
OUT_DIR = ROOT / "doctor" / "engines" / "catalogs"


def generate(engine: str, version: str, wheel: Path, *, date: str | None = None) -> dict:
    body = engines.build(engine, WheelSource(wheel))
    header = {
        "schema": SCHEMA,
        "engine": engine,
        "version": version,
        "generator": f"python tools/gen_catalog.py {engine} {version}",
        "wheel": wheel.name,
        "sha256": sha256(wheel),
        "generated": date or dt.date.today().isoformat(),
    }
    return {"header": header, **body}


def dump(catalog: dict) -> str:
    return json.dumps(catalog, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


VERSIONS_FILE = ROOT / "tools" / "catalog_versions.txt"


def shipped_versions() -> list[tuple[str, str]]:
    """The (engine, version) pairs listed in tools/catalog_versions.txt."""
    out = []
    for line in VERSIONS_FILE.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            engine, version = line.split()
            out.append((engine, version))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", nargs="?", choices=["vllm", "sglang"])
    parser.add_argument("version", nargs="?")
    parser.add_argument("--all", action="store_true", help="regenerate every version in tools/catalog_versions.txt")
    parser.add_argument("--wheel-dir", type=Path, default=DEFAULT_CACHE,
                        help=f"where wheels are cached / downloaded (default {DEFAULT_CACHE})")
    parser.add_argument("--out", type=Path, default=None, help="output file (default doctor/engines/catalogs/)")
    parser.add_argument("--date", default=None, help="generation date to record (default today)")
    args = parser.parse_args(argv)
    if args.all:
        targets = shipped_versions()
    elif args.engine and args.version:
        targets = [(args.engine, args.version)]
    else:
        parser.error("give ENGINE VERSION, or --all")
    for engine, version in targets:
        wheel = download_wheel(args.wheel_dir, engine, version)
        catalog = generate(engine, version, wheel, date=args.date)
        out = args.out if (args.out and len(targets) == 1) else OUT_DIR / f"{engine}-{version}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(dump(catalog), encoding="utf-8")
        print(f"{out}: {len(catalog['flags'])} flags, {len(catalog['tool_parsers'])} tool parsers, "
              f"{len(catalog['reasoning_parsers'])} reasoning parsers, {len(catalog['metrics'])} metrics")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
