"""Read which model architectures a vLLM release runs with pipeline parallelism into
``doctor/engines/pp_architectures.json``.

    python tools/gen_pp_architectures.py [--wheel-dir DIR] [--version 0.33.0]

vLLM refuses ``--pipeline-parallel-size`` above 1 for an architecture whose model class does not implement the
``SupportsPP`` interface (vllm/config/model.py:1569-1576 in 0.33.0, through the registry's ``is_pp_supported_model``,
vllm/model_executor/models/registry.py:1506-1512). The registry maps each architecture name to a module and a class
(``_VLLM_MODELS`` and the dictionaries it joins, registry.py); a class supports PP when ``SupportsPP`` is among its
bases, directly or through another model class (``class Llama4ForCausalLM(LlamaForCausalLM)``). This reads the
release wheel's source with ``ast`` — nothing is imported — and keeps, per architecture, the file:line of its class.

    python tools/gen_pp_architectures.py --history [--read-dir DIR]

writes ``doctor/engines/architectures.json`` instead: for every release of tools/catalog_versions.txt, which
architectures the engine's own registry holds, so that a refusal ("Model architectures [...] are not supported") can
be told apart: a release older than the one that registers the architecture, or a release that has it and failed to
import its module. vLLM's registry is the dictionary ``_VLLM_MODELS`` joins in vllm/model_executor/models/registry.py
(0.6.4 on), ``_MODELS`` in vllm/model_executor/models/__init__.py (0.2.1-0.6.3), ``_MODEL_REGISTRY`` in
vllm/model_executor/model_loader.py (0.2.0); SGLang's is every top-level module of sglang/srt/models/ with an
``EntryClass`` (keyed by the class's ``__name__``: sglang/srt/models/registry.py:118-147 in 0.5.23), and before
0.1.10 the ``arch == "…"`` tests of sglang/srt/managers/router/model_runner.py. Each release's read (architecture →
file:line) is saved in ``--read-dir``, so a rerun downloads only the releases it lacks; a downloaded wheel is deleted
once read.
"""

from __future__ import annotations

import argparse
import ast
import json
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "doctor" / "engines" / "pp_architectures.json"
HISTORY_OUT = ROOT / "doctor" / "engines" / "architectures.json"
VERSIONS = ROOT / "tools" / "catalog_versions.txt"
DEFAULT_WHEEL_DIR = Path.home() / ".cache" / "llmdoctor-wheels"
MODELS = "vllm/model_executor/models/"
REGISTRY = MODELS + "registry.py"


def _dicts(source: str) -> dict[str, ast.Dict]:
    """The module-level dictionary literals of a file, by the name they are assigned to."""
    dicts: dict[str, ast.Dict] = {}
    for node in ast.parse(source).body:
        target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                  else node.target if isinstance(node, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict):
            dicts[target.id] = node.value
    return dicts


def _entries(dicts: dict[str, ast.Dict], top: str) -> dict[str, tuple[ast.expr, int]]:
    """Architecture name → (its value, the line of its key) in dictionary ``top``, the dictionaries it joins
    (``{**_TEXT_GENERATION_MODELS, …}``) read in place, in order (a later key replaces an earlier one, as in Python)."""
    found: dict[str, tuple[ast.expr, int]] = {}
    value = dicts.get(top)
    for key, item in zip(value.keys, value.values, strict=True) if value else ():
        if key is None and isinstance(item, ast.Name) and item.id in dicts and item.id != top:
            found.update(_entries(dicts, item.id))
        elif isinstance(key, ast.Constant) and isinstance(key.value, str):
            found[key.value] = (item, key.lineno)
    return found


def _registry(source: str) -> dict[str, tuple[str, str]]:
    """Architecture name → (module, class) from the dictionaries ``_VLLM_MODELS`` joins (``{**_TEXT_GENERATION_MODELS,
    …}``), each ``{"Arch": ("module", "Class"), …}``."""
    return {arch: (item.elts[0].value, item.elts[1].value)
            for arch, (item, _) in _entries(_dicts(source), "_VLLM_MODELS").items()
            if isinstance(item, ast.Tuple) and len(item.elts) == 2 and all(isinstance(e, ast.Constant) for e in item.elts)}


#: where vLLM's registry lives, newest layout first: (file, the dictionary that joins the rest)
VLLM_REGISTRIES = ((REGISTRY, "_VLLM_MODELS"), (MODELS + "__init__.py", "_MODELS"),
                   ("vllm/model_executor/model_loader.py", "_MODEL_REGISTRY"))
SGLANG_MODELS = "sglang/srt/models/"
SGLANG_OLD_RUNNER = "sglang/srt/managers/router/model_runner.py"


def vllm_registered(read: Callable[[str], str | None]) -> dict[str, str]:
    """Architecture → "file:line" of its key in the release's registry (``read(path)`` gives a file's text or None)."""
    for path, top in VLLM_REGISTRIES:
        source = read(path)
        entries = _entries(_dicts(source), top) if source else {}
        if entries:
            return {arch: f"{path}:{line}" for arch, (_, line) in sorted(entries.items())}
    return {}


def _entry_names(tree: ast.Module) -> list[tuple[str, int]]:
    """The ``__name__`` of each class a SGLang model module's ``EntryClass`` lists, with the line that lists it: a
    name bound by ``from … import A as B`` or ``B = A`` is A's (SGLang keys its registry by ``__name__``)."""
    aliases: dict[str, str] = {}
    entries: list[ast.expr] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            aliases.update({a.asname: a.name for a in node.names if a.asname})
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name == "EntryClass":
                entries = [node.value]
            elif isinstance(node.value, ast.Name):
                aliases[name] = node.value.id
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id == "EntryClass":
            entries.append(node.value)
    out = []
    for entry in entries:
        for elt in entry.elts if isinstance(entry, (ast.List, ast.Tuple)) else [entry]:
            name = elt.id if isinstance(elt, ast.Name) else elt.attr if isinstance(elt, ast.Attribute) else None
            seen: set[str] = set()
            while name in aliases and name not in seen:
                seen.add(name)
                name = aliases[name]
            if name:
                out.append((name, elt.lineno))
    return out


def sglang_registered(read: Callable[[str], str | None], names: list[str]) -> dict[str, str]:
    """Architecture → "file:line" of the ``EntryClass`` element (or, before 0.1.10, the ``arch == "…"`` test) that
    registers it; ``names`` are the wheel's member paths."""
    found: dict[str, str] = {}
    for path in sorted(names):
        rest = path[len(SGLANG_MODELS):] if path.startswith(SGLANG_MODELS) else ""
        if not rest.endswith(".py") or "/" in rest or rest == "__init__.py":
            continue  # the registry imports the package's top-level modules only (pkgutil.iter_modules)
        try:
            tree = ast.parse(read(path) or "")
        except SyntaxError:
            continue
        for name, line in _entry_names(tree):
            found.setdefault(name, f"{path}:{line}")
    if not found and (runner := read(SGLANG_OLD_RUNNER)):
        for node in ast.walk(ast.parse(runner)):
            if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == "arch"
                    and len(node.comparators) == 1 and isinstance(node.comparators[0], ast.Constant)):
                found.setdefault(str(node.comparators[0].value), f"{SGLANG_OLD_RUNNER}:{node.lineno}")
    return dict(sorted(found.items()))


def read_registered(engine: str, wheel: Path) -> dict[str, str]:
    """Architecture → "file:line" that registers it, in one release wheel of ``engine``."""
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        present = set(names)

        def read(path: str) -> str | None:
            return zf.read(path).decode("utf-8", errors="replace") if path in present else None

        return vllm_registered(read) if engine == "vllm" else sglang_registered(read, names)


def _module_of(node: ast.ImportFrom, package: str) -> str | None:
    """The models module an import names (``from .llama import …`` inside ``package``, or ``from
    vllm.model_executor.models.llama import …``), dotted below the models package, else None."""
    if node.level == 1 and node.module:
        return f"{package}.{node.module}" if package else node.module
    prefix = MODELS.replace("/", ".")
    if node.level == 0 and node.module and node.module.startswith(prefix):
        return node.module[len(prefix):]
    return None


def _classes(sources: dict[str, str], packages: set[str]) -> dict[tuple[str, str], tuple[list[tuple[str, str]], int]]:
    """(module, class) → (its bases as (module, name), line), a base's module taken from the file's own classes or
    its imports from another models module (else the same module)."""
    out: dict[tuple[str, str], tuple[list[tuple[str, str]], int]] = {}
    for module, source in sources.items():
        tree = ast.parse(source)
        package = module if module in packages else module.rpartition(".")[0]
        imported = {alias.asname or alias.name: _module_of(node, package)
                    for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and _module_of(node, package)
                    for alias in node.names}
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = []
                for base in node.bases:
                    name = base.id if isinstance(base, ast.Name) else base.attr if isinstance(base, ast.Attribute) else None
                    if name:
                        bases.append((imported.get(name, module), name))
                out[(module, node.name)] = (bases, node.lineno)
    return out


def supports_pp(key: tuple[str, str], classes: dict, seen: set | None = None) -> bool:
    """Whether ``SupportsPP`` is among the class's bases, through other model classes."""
    seen = seen if seen is not None else set()
    if key in seen or key not in classes:
        return False
    seen.add(key)
    return any(base[1] == "SupportsPP" or supports_pp(base, classes, seen) for base in classes[key][0])


def _dotted(name: str) -> str:
    """vllm/model_executor/models/transformers/causal.py → "transformers.causal" (a package's __init__ → its name)."""
    return name[len(MODELS):-3].removesuffix("/__init__").replace("/", ".")


def read_wheel(path: Path) -> tuple[dict[str, str], list[str]]:
    """Architecture → "vllm/model_executor/models/<module>.py:<line>" for those whose class supports PP, and the
    architectures whose class is not a plain class of that package (``vllm.models.*`` modules that pick a class per
    platform at import time): left out, so nothing is claimed about them."""
    with zipfile.ZipFile(path) as wheel:
        names = {_dotted(n): n for n in wheel.namelist() if n.startswith(MODELS) and n.endswith(".py")}
        sources = {module: wheel.read(name).decode("utf-8") for module, name in names.items()}
        registry = _registry(wheel.read(REGISTRY).decode("utf-8"))
    packages = {module for module, name in names.items() if name.endswith("/__init__.py")}
    classes = _classes(sources, packages)
    supported = {arch: f"{names[module]}:{classes[(module, cls)][1]}"
                 for arch, (module, cls) in sorted(registry.items())
                 if (module, cls) in classes and supports_pp((module, cls), classes)}
    return supported, sorted(arch for arch, key in registry.items() if key not in classes)


#: transformers' auto classes for the models serving engines generate with: model type → architecture
TRANSFORMERS_AUTO = "transformers/models/auto/modeling_auto.py"
TRANSFORMERS_MAPPINGS = ("MODEL_FOR_CAUSAL_LM_MAPPING_NAMES", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES")


def model_types(source: str, known: set[str]) -> dict[str, list[str]]:
    """Model type → the architectures transformers' auto mappings give it (``("glm4_moe_lite",
    "Glm4MoeLiteForCausalLM")``), kept where an engine registers the architecture: a refusal that names only the
    model type ("has model type `glm4_moe_lite` but Transformers does not recognize this architecture") is then
    read against the engines' registries."""
    out: dict[str, set[str]] = {}
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in TRANSFORMERS_MAPPINGS and isinstance(node.value, ast.Call) and node.value.args
                and isinstance(node.value.args[0], (ast.List, ast.Tuple))):
            for pair in node.value.args[0].elts:
                if (isinstance(pair, ast.Tuple) and len(pair.elts) == 2
                        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in pair.elts)
                        and pair.elts[1].value in known):
                    out.setdefault(pair.elts[0].value, set()).add(pair.elts[1].value)
    return {t: sorted(a) for t, a in sorted(out.items())}


def _transformers_pin() -> str:
    """The transformers release the lower-layer error catalog reads (tools/errors_lower.txt)."""
    rows = (line.split() for line in (ROOT / "tools" / "errors_lower.txt").read_text(encoding="utf-8").splitlines())
    return next(row[1] for row in rows if len(row) >= 2 and row[0] == "transformers")


def catalog_releases() -> list[tuple[str, str]]:
    """(engine, version) of every release tools/catalog_versions.txt lists, in its order (oldest first per engine)."""
    rows = (line.split() for line in VERSIONS.read_text(encoding="utf-8").splitlines())
    return [(row[0], row[1]) for row in rows if len(row) == 2 and not row[0].startswith("#")]


def history(reads: dict[str, list[tuple[str, dict[str, str]]]]) -> dict[str, dict[str, list[list[str | None]]]]:
    """Architecture → engine → its runs [since, until, file:line at since]: ``until`` is the last release of the run
    that registers it, null while the newest release read still does; an architecture dropped and registered again
    has two runs. ``reads``: per engine, (version, architecture → file:line) oldest first."""
    out: dict[str, dict[str, list[list[str | None]]]] = {}
    for engine, releases in reads.items():
        open_runs: dict[str, list[str | None]] = {}
        for version, registered in releases:
            for arch in list(open_runs):
                if arch not in registered:
                    open_runs.pop(arch)
            for arch, where in registered.items():
                if arch not in open_runs:
                    open_runs[arch] = [version, None, where]
                    out.setdefault(arch, {}).setdefault(engine, []).append(open_runs[arch])
                open_runs[arch][1] = version
        newest = releases[-1][0]
        for arch in open_runs:
            if open_runs[arch][1] == newest:
                open_runs[arch][1] = None
    return {arch: dict(sorted(engines.items())) for arch, engines in sorted(out.items())}


def _read_release(engine: str, version: str, wheel_dir: Path, read_dir: Path | None) -> tuple[str, dict[str, str]]:
    """(wheel name, architecture → file:line) of one release: from ``read_dir`` when it was read before, else from its
    wheel in ``wheel_dir`` or one pip downloads (deleted once read)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from catalog_gen.wheel import download_wheel, find_wheel

    saved = read_dir / f"{engine}-{version}.json" if read_dir else None
    if saved and saved.is_file():
        doc = json.loads(saved.read_text(encoding="utf-8"))
        return doc["wheel"], doc["architectures"]
    wheel = find_wheel(wheel_dir, engine, version)
    scratch = None
    if wheel is None:
        scratch = Path(tempfile.mkdtemp(prefix=f"arch-{engine}-"))
        wheel = download_wheel(scratch, engine, version)
    try:
        registered = read_registered(engine, wheel)
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    if saved:
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps({"wheel": wheel.name, "architectures": registered}, indent=0) + "\n",
                         encoding="utf-8")
    return wheel.name, registered


def write_history(wheel_dir: Path, read_dir: Path | None) -> dict:
    """Read every catalog release and write doctor/engines/architectures.json; the document written."""
    sys.path.insert(0, str(ROOT / "tools"))
    from catalog_gen.wheel import download_wheel, find_wheel

    reads: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for engine, version in catalog_releases():
        _, registered = _read_release(engine, version, wheel_dir, read_dir)
        if not registered:
            raise SystemExit(f"{engine} {version}: no model registry found in its wheel (tools/gen_pp_architectures.py)")
        reads.setdefault(engine, []).append((version, registered))
    table = history(reads)
    pin = _transformers_pin()
    wheel = find_wheel(wheel_dir, "transformers", pin)
    scratch = None
    if wheel is None:
        scratch = Path(tempfile.mkdtemp(prefix="arch-transformers-"))
        wheel = download_wheel(scratch, "transformers", pin)
    try:
        with zipfile.ZipFile(wheel) as zf:
            types = model_types(zf.read(TRANSFORMERS_AUTO).decode("utf-8"), set(table))
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    doc = {"schema": "llmdoctor.architectures/1",
           "generated_by": "python tools/gen_pp_architectures.py --history (the wheels of tools/catalog_versions.txt)",
           "releases": {engine: [version for version, _ in releases] for engine, releases in reads.items()},
           "architectures": table,
           "model_types": {"read": f"transformers-{pin} {TRANSFORMERS_AUTO}", "types": types}}
    HISTORY_OUT.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True).replace('},"', '},\n"') + "\n",
                           encoding="utf-8")
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel-dir", type=Path, default=DEFAULT_WHEEL_DIR)
    ap.add_argument("--version", default="0.33.0", help="the vLLM release to read (its wheel in --wheel-dir)")
    ap.add_argument("--history", action="store_true",
                    help="write doctor/engines/architectures.json: the releases that register each architecture")
    ap.add_argument("--read-dir", type=Path, help="with --history: each release's read, saved and reused")
    args = ap.parse_args(argv)
    if args.history:
        doc = write_history(args.wheel_dir, args.read_dir)
        size = HISTORY_OUT.stat().st_size
        print(f"{HISTORY_OUT.relative_to(ROOT)}: {len(doc['architectures'])} architectures, "
              f"{sum(map(len, doc['releases'].values()))} releases, {size // 1024} KiB")
        return 0
    wheels = sorted(args.wheel_dir.glob(f"vllm-{args.version}-*.whl"))
    if not wheels:
        print(f"no vllm-{args.version} wheel in {args.wheel_dir} (tools/fetch_test_wheels.sh)", file=sys.stderr)
        return 2
    doc = {"schema": "llmdoctor.pp-architectures/1",
           "generated_by": f"python tools/gen_pp_architectures.py --version {args.version} (from {wheels[0].name})",
           "vllm": {"version": args.version}}
    doc["vllm"]["architectures"], doc["vllm"]["unresolved"] = read_wheel(wheels[0])
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{OUT.relative_to(ROOT)}: {len(doc['vllm']['architectures'])} architectures")
    return 0


if __name__ == "__main__":
    sys.exit(main())
