"""Read which model architectures a vLLM release runs with pipeline parallelism into
``doctor/engines/pp_architectures.json``.

    python tools/gen_pp_architectures.py [--wheel-dir DIR] [--version 0.33.0]

vLLM refuses ``--pipeline-parallel-size`` above 1 for an architecture whose model class does not implement the
``SupportsPP`` interface (vllm/config/model.py:1569-1576 in 0.33.0, through the registry's ``is_pp_supported_model``,
vllm/model_executor/models/registry.py:1506-1512). The registry maps each architecture name to a module and a class
(``_VLLM_MODELS`` and the dictionaries it joins, registry.py); a class supports PP when ``SupportsPP`` is among its
bases, directly or through another model class (``class Llama4ForCausalLM(LlamaForCausalLM)``). This reads the
release wheel's source with ``ast`` — nothing is imported — and keeps, per architecture, the file:line of its class.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "doctor" / "engines" / "pp_architectures.json"
DEFAULT_WHEEL_DIR = Path.home() / ".cache" / "llmdoctor-wheels"
MODELS = "vllm/model_executor/models/"
REGISTRY = MODELS + "registry.py"


def _registry(source: str) -> dict[str, tuple[str, str]]:
    """Architecture name → (module, class) from the dictionaries ``_VLLM_MODELS`` joins (``{**_TEXT_GENERATION_MODELS,
    …}``), each ``{"Arch": ("module", "Class"), …}``."""
    dicts: dict[str, ast.Dict] = {}
    for node in ast.parse(source).body:
        target = (node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1
                  else node.target if isinstance(node, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict):
            dicts[target.id] = node.value
    joined = dicts.get("_VLLM_MODELS")
    parts = ([v.id for k, v in zip(joined.keys, joined.values, strict=True) if k is None and isinstance(v, ast.Name)]
             if joined else [])
    found: dict[str, tuple[str, str]] = {}
    for part in parts:
        value = dicts[part]
        for key, item in zip(value.keys, value.values, strict=True):
            if (isinstance(key, ast.Constant) and isinstance(key.value, str) and isinstance(item, ast.Tuple)
                    and len(item.elts) == 2 and all(isinstance(e, ast.Constant) for e in item.elts)):
                found[key.value] = (item.elts[0].value, item.elts[1].value)
    return found


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel-dir", type=Path, default=DEFAULT_WHEEL_DIR)
    ap.add_argument("--version", default="0.33.0", help="the vLLM release to read (its wheel in --wheel-dir)")
    args = ap.parse_args(argv)
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
