"""Read which lower-layer versions each engine release requires into ``doctor/engines/pins.json``.

    python tools/gen_engine_pins.py                   # every release of tools/catalog_versions.txt
    python tools/gen_engine_pins.py --only vllm       # one engine
    python tools/gen_engine_pins.py --reuse           # keep the releases pins.json already holds; read the others

The source is each release wheel's own METADATA (its ``Requires-Dist`` lines): from the cached wheel when
``--wheel-dir`` holds it, else the METADATA file PyPI serves beside the wheel (PEP 658), fetched by pip itself with
``pip install --dry-run --no-deps --report`` (pip checks it against the hash the index gives; the wheel is not
downloaded). Only the packages whose own messages the lower error table reads or that a diagnosis names
(``PACKAGES``) are kept, each with its specifier, environment marker and the extra that brings it (SGLang puts
its server's dependencies under the ``srt`` extra).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from doctor.engines.pins import PACKAGES  # noqa: E402
from tools.catalog_gen.wheel import find_wheel  # noqa: E402
from tools.gen_catalog import shipped_versions  # noqa: E402

OUT = ROOT / "doctor" / "engines" / "pins.json"
DEFAULT_WHEEL_DIR = Path.home() / ".cache" / "llmdoctor-wheels"
PLATFORMS = ["manylinux1_x86_64", "manylinux2010_x86_64", "manylinux2014_x86_64", "manylinux_2_24_x86_64",
             "manylinux_2_28_x86_64", "manylinux_2_31_x86_64", "manylinux_2_34_x86_64", "manylinux_2_35_x86_64",
             "manylinux_2_39_x86_64"]
PYTHONS = ["3.10", "3.11", "3.12", "3.9", "3.8"]
_REQ = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(\(?[^;]*?\)?)\s*(?:;\s*(.*))?$")
_EXTRA = re.compile(r"""\s*(?:and\s+)?extra\s*==\s*['"]([^'"]+)['"]\s*(?:and\s+)?""")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_requires(lines: list[str]) -> dict[str, list[dict]]:
    """Requires-Dist lines -> {package: [{spec, extra, marker}]}, only the packages of ``PACKAGES``."""
    out: dict[str, list[dict]] = {}
    for line in lines:
        m = _REQ.match(line)
        if not m:
            continue
        name = PACKAGES.get(canonical(m.group(1)))
        if name is None:
            continue
        marker = m.group(4) or ""
        extra = _EXTRA.search(marker)
        rest = _EXTRA.sub(" ", marker).strip() if extra else marker.strip()
        spec = m.group(3).strip().strip("()").replace(" ", "")
        out.setdefault(name, []).append({"spec": spec, "extra": canonical(extra.group(1)) if extra else "",
                                         "marker": rest})
    return out


def from_wheel(wheel: Path) -> tuple[list[str], str]:
    """(Requires-Dist lines, where they were read) of a cached wheel."""
    with zipfile.ZipFile(wheel) as zf:
        member = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(member).decode("utf-8", errors="replace")
    lines = [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Requires-Dist:")]
    return lines, f"{wheel.name}:{member}"


def from_index(dist: str, version: str) -> tuple[list[str], str]:
    """(Requires-Dist lines, the wheel they belong to) from the METADATA PyPI serves beside the wheel (PEP 658),
    fetched by pip's resolver; the first Python version whose wheel exists is taken."""
    last = ""
    for python in PYTHONS:
        with tempfile.TemporaryDirectory(prefix="llmdoctor-pins-") as tmp:
            report = Path(tmp) / "report.json"
            cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed",
                   "--quiet", "--report", str(report), "--only-binary", ":all:", "--python-version", python,
                   "--target", str(Path(tmp) / "t")]
            for platform in PLATFORMS:
                cmd += ["--platform", platform]
            proc = subprocess.run([*cmd, f"{dist}=={version}"], capture_output=True, text=True)
            if proc.returncode == 0 and report.is_file():
                item = json.loads(report.read_text(encoding="utf-8"))["install"][0]
                url = item["download_info"]["url"]
                sha = item["download_info"].get("archive_info", {}).get("hashes", {}).get("sha256", "")
                return list(item["metadata"].get("requires_dist") or []), f"{url.rsplit('/', 1)[-1]} sha256:{sha}"
            last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    raise RuntimeError(f"{dist}=={version}: {last}")


def read(engine: str, version: str, wheel_dir: Path) -> dict:
    wheel = find_wheel(wheel_dir, engine, version)
    lines, source = from_wheel(wheel) if wheel is not None else from_index(engine, version)
    return {"source": source, "requires": parse_requires(lines)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["vllm", "sglang"])
    parser.add_argument("--reuse", action="store_true", help="keep the releases pins.json already holds")
    parser.add_argument("--wheel-dir", type=Path, default=DEFAULT_WHEEL_DIR)
    parser.add_argument("--jobs", type=int, default=4, help="pip processes at once (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    old = json.loads(args.out.read_text(encoding="utf-8")) if args.out.is_file() else {}
    # --only reads one engine again and keeps the other's releases as they are
    engines = {e: dict(old.get("engines", {}).get(e, {})) if args.reuse or (args.only and e != args.only) else {}
               for e in ("vllm", "sglang")}
    todo = [(e, v) for e, v in shipped_versions() if (not args.only or e == args.only) and v not in engines[e]]
    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {pool.submit(read, e, v, args.wheel_dir): (e, v) for e, v in todo}
        for future, (engine, version) in futures.items():
            try:
                engines[engine][version] = future.result()
                print(f"read {engine} {version}: {sorted(engines[engine][version]['requires'])}", flush=True)
            except Exception as exc:  # noqa: BLE001 - name every release that fails
                print(f"FAILED {engine} {version}: {exc}", file=sys.stderr, flush=True)
                failed += 1
    order = {(e, v): i for i, (e, v) in enumerate(shipped_versions())}
    doc = {"schema": "llmdoctor.pins/1",
           "generated_by": "python tools/gen_engine_pins.py",
           "packages": sorted(set(PACKAGES.values())),
           "engines": {e: {v: engines[e][v] for v in sorted(engines[e], key=lambda v, e=e: order.get((e, v), 1e9))}
                       for e in ("vllm", "sglang")}}
    args.out.write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"{args.out}: {sum(len(v) for v in doc['engines'].values())} releases"
          + (f"; {failed} failed (named above: rerun with --reuse to read only those)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
