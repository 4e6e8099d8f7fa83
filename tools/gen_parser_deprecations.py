"""Read every release's deprecated parser names from the engines' wheels into doctor/engines/catalogs/.

An engine that renames a parser keeps the old name working for a while and maps it to the new one in a
dict literal — SGLang 0.5.23: ``deprecated_tool_call_parsers = {"qwen25": "qwen", "glm45": "glm"}`` in
``sglang/srt/arg_groups/serving_hook.py``. llmdoctor must not suggest a name the release in use has
deprecated, and `lint --target-version` says when a command's parser is deprecated on the target. So each
release's wheel is read (never installed or imported): every module-level or function-level assignment to a
name containing both ``deprecat`` and ``parser`` whose value is a dict of string literals, with its file:line.
Consecutive releases that deprecate the same name with the same replacement are one run, as in the flag
history (tools/catalog_gen/history.py).

    python tools/gen_parser_deprecations.py                      # every release in tools/catalog_versions.txt
    python tools/gen_parser_deprecations.py --engine sglang --wheel-dir ~/.cache/llmdoctor-wheels
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from catalog_gen.wheel import WheelSource, download_wheel, find_wheel  # noqa: E402

OUT = HERE.parent / "doctor" / "engines" / "catalogs" / "parser_deprecations.json"
VERSIONS = HERE / "catalog_versions.txt"


def read_release(wheel: Path) -> dict[str, dict[str, dict[str, str]]]:
    """kind ("tool_parsers" / "reasoning_parsers") → deprecated name → {replacement, source}."""
    source = WheelSource(wheel)
    out: dict[str, dict[str, dict[str, str]]] = {}
    for module in source.modules():
        text = source.text(module)
        if "deprecat" not in text or "parser" not in text:
            continue
        tree = source.tree(module)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Dict):
                continue
            for target in node.targets:
                name = target.id if isinstance(target, ast.Name) else getattr(target, "attr", "")
                lowered = name.lower()
                if "deprecat" not in lowered or "parser" not in lowered:
                    continue
                kind = "reasoning_parsers" if "reasoning" in lowered else "tool_parsers"
                for key, value in zip(node.value.keys, node.value.values, strict=True):
                    if isinstance(key, ast.Constant) and isinstance(value, ast.Constant) \
                            and isinstance(key.value, str) and isinstance(value.value, str):
                        out.setdefault(kind, {})[key.value] = {
                            "replacement": value.value, "source": f"{source.path(module)}:{node.lineno}"}
    return out


def versions(engine: str) -> list[str]:
    return [line.split()[1] for line in VERSIONS.read_text().splitlines()
            if line.strip() and not line.startswith("#") and line.split()[0] == engine]


def build(engine: str, wheel_dir: Path | None) -> dict[str, dict[str, list[dict[str, str]]]]:
    """kind → name → [{since, until, replacement, source}] over every release read, oldest first."""
    runs: dict[str, dict[str, list[dict[str, str]]]] = {}
    previous = ""
    with tempfile.TemporaryDirectory() as scratch:
        for version in versions(engine):
            cache = wheel_dir or Path(scratch)
            kept = find_wheel(cache, engine, version) is not None
            wheel = download_wheel(cache, engine, version)
            found = read_release(wheel)
            if not kept and wheel_dir is None:
                wheel.unlink()
            for kind, names in found.items():
                for name, item in names.items():
                    history = runs.setdefault(kind, {}).setdefault(name, [])
                    last = history[-1] if history else None
                    if last and last["replacement"] == item["replacement"] and last["until"] == previous:
                        last["until"] = version
                    else:
                        history.append({"since": version, "until": version, **item})
            previous = version
    return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", choices=("vllm", "sglang"), action="append")
    parser.add_argument("--wheel-dir", type=Path, help="read (and keep) wheels here; default: a temporary folder")
    args = parser.parse_args(argv)
    data = json.loads(OUT.read_text()) if OUT.exists() else {}
    for engine in args.engine or ("vllm", "sglang"):
        data[engine] = build(engine, args.wheel_dir)
        print(f"{engine}: {sum(len(v) for v in data[engine].values())} deprecated parser names", file=sys.stderr)
    data["header"] = {"generator": "tools/gen_parser_deprecations.py", "releases": "tools/catalog_versions.txt"}
    OUT.write_text(json.dumps(dict(sorted(data.items())), indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
