"""Read every engine release's error and warning templates into ``doctor/engines/errors/<engine>.json.gz``.

    python tools/gen_errors.py --all --read-dir /tmp/error-reads     # every release, both engines + lower layers
    python tools/gen_errors.py --all --engine sglang                 # one engine (or: --engine lower)
    python tools/gen_errors.py --all --reuse-table                   # read only releases the tables lack
    python tools/gen_errors.py vllm 0.33.0 --out /tmp/v.json         # one release's read, for review
    python tools/gen_errors.py --coverage                            # docs/error-catalog.md from the tables

Each wheel comes from ``pip download --no-deps`` (tools/catalog_gen/wheel.py) and is read from the zip; no
engine code is imported or run. A file's scan is cached by its content hash across releases (most files do
not change from one release to the next), and each release's read is saved in ``--read-dir`` so an
interrupted run resumes. A wheel this run downloaded is deleted once read. The lower layers (transformers,
…) are read from the pinned wheels in tools/errors_lower.txt. See tools/README.md.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from tools.catalog_gen import error_history  # noqa: E402
from tools.catalog_gen.wheel import WheelSource, download_wheel, find_wheel, sha256  # noqa: E402
from tools.gen_catalog import shipped_versions  # noqa: E402

OUT_DIR = ROOT / "doctor" / "engines" / "errors"
DOC = ROOT / "docs" / "error-catalog.md"
CURATED_FILE = ROOT / "tools" / "errors_curated.yaml"
LOWER_FILE = ROOT / "tools" / "errors_lower.txt"
PACKAGES = {"vllm": "vllm", "sglang": "sglang"}


def lower_pins() -> list[tuple[str, str, str]]:
    """(distribution, version, import package and the sub-packages left out) of each lower-layer wheel read, from
    tools/errors_lower.txt."""
    out = []
    for line in LOWER_FILE.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            dist, version, *package = line.split()
            out.append((dist, version, " ".join(package)))
    return out


def read_one(engine: str, dist: str, version: str, package: str, wheel_dir: Path, cache: dict,
             read_dir: Path | None) -> tuple[dict, dict]:
    """(release header, read) of one wheel; from ``read_dir`` when an earlier run saved it."""
    saved = read_dir / f"{engine}-{dist}-{version}.json" if read_dir else None
    if saved is not None and saved.is_file():
        doc = json.loads(saved.read_text(encoding="utf-8"))
        return doc["header"], doc["read"]
    had = find_wheel(wheel_dir, dist, version) is not None
    wheel = download_wheel(wheel_dir, dist, version)
    try:
        read = error_history.read_release(engine, WheelSource(wheel), package, cache)
        header = {"package": dist, "wheel": wheel.name, "sha256": sha256(wheel)}
    finally:
        if not had:
            wheel.unlink(missing_ok=True)
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps({"header": header, "read": read}), encoding="utf-8")
    return header, read


def targets(engine: str) -> list[tuple[str, str, str]]:
    if engine == "lower":
        return lower_pins()
    return [(engine, version, PACKAGES[engine]) for eng, version in shipped_versions() if eng == engine]


def curated_read() -> tuple[str, dict, dict]:
    """tools/errors_curated.yaml as one more 'release' of the lower catalog: templates no wheel holds."""
    import re

    import yaml

    doc = yaml.safe_load(CURATED_FILE.read_text(encoding="utf-8"))
    templates, sites = {}, []
    for item in doc["templates"]:
        parts: list = []
        pos = 0
        for m in re.finditer(r"\{(\w+)(?::(int|float))?\}", item["text"]):
            if m.start() > pos:
                parts.append(item["text"][pos:m.start()])
            parts.append({"hole": m.group(1), "type": m.group(2) or "str"})
            pos = m.end()
        if pos < len(item["text"]):
            parts.append(item["text"][pos:])
        tid = error_history.template_id("lower", parts)
        templates[tid] = parts
        sites.append([tid, item["source"], 0, item["layer"], f"seen: {item['seen']}", "curated", item["type"],
                      False])
    counts = {"files": 1, "parsed": 1, "skipped": 0, "too_short": 0}
    return "curated", {"package": "curated", "file": "tools/errors_curated.yaml"}, \
        {"templates": templates, "sites": sites, "counts": counts}


def shipped_reads(engine: str, out_dir: Path) -> dict[str, tuple[dict, dict]]:
    """version -> (release header, read) of every release the table in ``out_dir`` already holds."""
    path = out_dir / f"{engine}.json.gz"
    if not path.is_file():
        return {}
    table = json.loads(gzip.decompress(path.read_bytes()))
    return {version: (header, read) for version, header, read in error_history.reads_of(table)}


def write_table(engine: str, reads: list[tuple[str, dict, dict]], out_dir: Path) -> Path:
    if engine == "lower":
        reads = [*reads, curated_read()]
    table = error_history.build(engine, reads)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{engine}.json.gz"
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(gzip.compress(error_history.dump(table), compresslevel=9, mtime=0))
    tmp.replace(out)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:5]))
    parser.add_argument("engine", nargs="?", choices=["vllm", "sglang"])
    parser.add_argument("version", nargs="?")
    parser.add_argument("--all", action="store_true", help="every release of tools/catalog_versions.txt")
    parser.add_argument("--engine", dest="only", choices=["vllm", "sglang", "lower"], help="with --all: one only")
    parser.add_argument("--wheel-dir", type=Path, default=None, help="where wheels are found or downloaded")
    parser.add_argument("--read-dir", type=Path, default=None, help="save each release's read here; reuse it")
    parser.add_argument("--reuse-table", action="store_true",
                        help="take the releases the shipped table already holds from it (lossless); read only "
                             "the others from their wheels")
    parser.add_argument("--out", type=Path, default=None, help="ENGINE VERSION: write its read here")
    parser.add_argument("--coverage", action="store_true", help="write docs/error-catalog.md from the tables")
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR, help="where the tables go (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.coverage:
        from tools.catalog_gen.error_coverage import render

        DOC.write_text(render() + "\n", encoding="utf-8")
        print(f"{DOC}")
        return 0
    if not args.all and not (args.engine and args.version):
        parser.error("give ENGINE VERSION, or --all")
    temp = Path(tempfile.mkdtemp(prefix="llmdoctor-wheels-")) if args.wheel_dir is None else None
    wheel_dir = args.wheel_dir or temp
    try:
        if not args.all:
            header, read = read_one(args.engine, args.engine, args.version, PACKAGES[args.engine], wheel_dir, {},
                                    None)
            text = json.dumps({"header": header, "read": read}, indent=1)
            if args.out:
                args.out.write_text(text, encoding="utf-8")
            else:
                sys.stdout.write(text + "\n")
            return 0
        failed = 0
        for engine in ("vllm", "sglang", "lower"):
            if args.only and engine != args.only:
                continue
            cache: dict = {}
            reads = []
            shipped = shipped_reads(engine, args.out_dir) if args.reuse_table else {}
            for dist, version, package in targets(engine):
                started = time.monotonic()
                label = version if engine != "lower" else f"{dist}-{version}"
                if label in shipped:
                    reads.append((label, *shipped[label]))
                    continue
                try:
                    header, read = read_one(engine, dist, version, package, wheel_dir, cache, args.read_dir)
                except (Exception, SystemExit) as exc:  # noqa: BLE001 - name every release that fails
                    print(f"FAILED {engine} {dist} {version}: {type(exc).__name__}: {exc}", file=sys.stderr,
                          flush=True)
                    failed += 1
                    continue
                reads.append((label, header, read))
                print(f"read {engine} {dist} {version}: {len(read['sites'])} sites, {len(read['templates'])} "
                      f"templates, {read['counts']['parsed']}/{read['counts']['files']} files parsed, "
                      f"{time.monotonic() - started:.1f}s", flush=True)
            if reads and not failed:
                out = write_table(engine, reads, args.out_dir)
                print(f"{out}: {len(reads)} releases, {out.stat().st_size // 1024} kB", flush=True)
        return 1 if failed else 0
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
