"""Read engine releases into catalogs: ``python tools/gen_catalog.py --all`` (or ``ENGINE VERSION`` for one).

Each release's wheel is fetched with ``pip download --no-deps`` and read statically
(``tools/catalog_gen``: nothing is installed, imported or executed). ``--all`` reads every release in
tools/catalog_versions.txt and writes one history table per engine, ``doctor/engines/catalogs/ENGINE.json``
(``tools/catalog_gen/history.py``: since/until per flag, parser, metric and default, each with its
file:line), which ``doctor.engines.catalog`` turns back into any release's view. ``ENGINE VERSION``
prints, or writes with --out, one release's full catalog for review. See tools/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from tools.catalog_gen import engines, history  # noqa: E402
from tools.catalog_gen.wheel import WheelSource, download_wheel, find_wheel, sha256  # noqa: E402

SCHEMA = "llmdoctor.catalog/1"
OUT_DIR = ROOT / "doctor" / "engines" / "catalogs"
VERSIONS_FILE = ROOT / "tools" / "catalog_versions.txt"


def generate(engine: str, version: str, wheel: Path, *, date: str | None = None) -> dict:
    """One release's full catalog, read from its wheel."""
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


def shipped_versions() -> list[tuple[str, str]]:
    """The (engine, version) pairs listed in tools/catalog_versions.txt, in file order."""
    out = []
    for line in VERSIONS_FILE.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            engine, version = line.split()
            out.append((engine, version))
    return out


def read_release(engine: str, version: str, wheel_dir: Path, *, date: str | None, keep_wheel: bool,
                 read_dir: Path | None) -> dict:
    """One release's catalog: from ``read_dir`` when an earlier run saved it there, else from its wheel.

    A wheel this call downloaded is deleted after reading unless ``keep_wheel`` (vLLM's are 250-475 MB);
    a wheel that was already in ``wheel_dir`` is left alone."""
    saved = read_dir / f"{engine}-{version}.json" if read_dir else None
    if saved is not None and saved.is_file():
        return json.loads(saved.read_text(encoding="utf-8"))
    had = find_wheel(wheel_dir, engine, version) is not None
    wheel = download_wheel(wheel_dir, engine, version)
    try:
        catalog = generate(engine, version, wheel, date=date)
    finally:
        if not had and not keep_wheel:
            wheel.unlink(missing_ok=True)
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(dump(catalog), encoding="utf-8")
    return catalog


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="examples:\n  python tools/gen_catalog.py --all --wheel-dir ~/wheels --keep-wheels\n"
               "  python tools/gen_catalog.py --all --engine sglang --read-dir /tmp/reads\n"
               "  python tools/gen_catalog.py vllm 0.13.0 --out /tmp/vllm-0.13.0.json",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("engine", nargs="?", choices=["vllm", "sglang"])
    parser.add_argument("version", nargs="?")
    parser.add_argument("--all", action="store_true",
                        help="read every release in tools/catalog_versions.txt and write the history tables")
    parser.add_argument("--engine", dest="only", choices=["vllm", "sglang"], help="with --all: one engine only")
    parser.add_argument("--wheel-dir", type=Path, default=None,
                        help="where wheels are looked for and downloaded (default: a temporary folder, removed after)")
    parser.add_argument("--keep-wheels", action="store_true", help="keep the wheels this run downloads")
    parser.add_argument("--read-dir", type=Path, default=None,
                        help="with --all: save each release's catalog here and reuse saved ones on the next run")
    parser.add_argument("--out", type=Path, default=None, help="ENGINE VERSION: output file (default stdout)")
    parser.add_argument("--date", default=None, help="generation date to record (default today)")
    args = parser.parse_args(argv)
    if not args.all and not (args.engine and args.version):
        parser.error("give ENGINE VERSION, or --all")
    temp = Path(tempfile.mkdtemp(prefix="llmdoctor-wheels-")) if args.wheel_dir is None else None
    wheel_dir = args.wheel_dir or temp
    try:
        if not args.all:
            catalog = read_release(args.engine, args.version, wheel_dir, date=args.date,
                                   keep_wheel=args.keep_wheels, read_dir=None)
            if args.out:
                args.out.write_text(dump(catalog), encoding="utf-8")
                print(f"{args.out}: {len(catalog['flags'])} flags, {len(catalog['tool_parsers'])} tool parsers, "
                      f"{len(catalog['reasoning_parsers'])} reasoning parsers, {len(catalog['metrics'])} metrics")
            else:
                sys.stdout.write(dump(catalog))
            return 0
        return _all(args, wheel_dir)
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


def _all(args: argparse.Namespace, wheel_dir: Path) -> int:
    failed = []
    for engine in ("vllm", "sglang"):
        if args.only and engine != args.only:
            continue
        reads = []
        for eng, version in shipped_versions():
            if eng != engine:
                continue
            try:
                reads.append(read_release(engine, version, wheel_dir, date=args.date, keep_wheel=args.keep_wheels,
                                          read_dir=args.read_dir))
            except (Exception, SystemExit) as exc:  # noqa: BLE001 - report every release that fails, then stop
                failed.append(f"{engine} {version}: {type(exc).__name__}: {exc}")
                print(f"FAILED {failed[-1]}", file=sys.stderr, flush=True)
                continue
            print(f"read {engine} {version}: {len(reads[-1]['flags'])} flags", flush=True)
        if failed:
            continue
        table = history.build(engine, reads)
        out = OUT_DIR / f"{engine}.json"
        out.write_text(history.dump(table), encoding="utf-8")
        print(f"{out}: {len(reads)} releases, {out.stat().st_size // 1024} kB")
    if failed:
        print(f"{len(failed)} release(s) could not be read; no history written for their engine:\n  "
              + "\n  ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
