"""The catalog generator (tools/catalog_gen): its static interpreter, scans and determinism.

The interpreter tests run on small *scenario* modules written here (not engine code): each one
reproduces a construct the real engines use (dataclass fields → argparse kwargs, ``if`` on an
unknowable condition, ``Literal`` choices, BooleanOptionalAction, registries, metric definitions),
packed into a throw-away wheel. The regeneration test runs the real generator on a real wheel
when one is in the wheel cache, and skips with the reason otherwise.
"""

from __future__ import annotations

import json
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from conftest import WHEEL_DIR, unavailable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.catalog_gen import scan  # noqa: E402
from tools.catalog_gen.argspec import ParserSink, flag_entry  # noqa: E402
from tools.catalog_gen.interp import ClassObj, Interp, ModuleObj, Unknown  # noqa: E402
from tools.catalog_gen.wheel import WheelSource, find_wheel  # noqa: E402
from tools.gen_catalog import dump, generate  # noqa: E402

# A scenario package, not engine code: the shapes the engines use, in miniature.
SCENARIO = {
    "eng/__init__.py": "",
    "eng/config.py": '''
        from dataclasses import dataclass, field
        from typing import Literal, TYPE_CHECKING
        if TYPE_CHECKING:
            from eng.heavy import Methods
        else:
            Methods = str
        CacheDType = Literal["auto", "fp8", "fp8_e4m3"]

        @dataclass
        class CacheConfig:
            cache_dtype: CacheDType = "auto"
            """Data type for kv cache storage."""
            enable_prefix_caching: bool = True
            """Whether to enable prefix caching."""
            block_size: int | None = None
            sizes: list[int] = field(default_factory=list)
            quantization: Methods | None = None
        ''',
    "eng/args.py": '''
        import argparse, sys
        from eng.config import CacheConfig
        from dataclasses import fields

        def get_kwargs(cls):
            out = {}
            for f in fields(cls):
                kw = {"default": f.default}
                hint = f.type
                if hint is bool:
                    kw["action"] = argparse.BooleanOptionalAction
                elif getattr(hint, "__origin__", None) is not None and str(hint).startswith("typing.Literal"):
                    kw["choices"] = sorted(hint.__args__)
                    kw["type"] = str
                out[f.name] = kw
            return out

        class Args:
            @staticmethod
            def add_cli_args(parser):
                kw = get_kwargs(CacheConfig)
                group = parser.add_argument_group(title="Cache")
                group.add_argument("--kv-cache-dtype", **kw["cache_dtype"])
                group.add_argument("--enable-prefix-caching", **kw["enable_prefix_caching"])
                if "--help" in sys.argv:
                    group.add_argument("--only-in-help", type=int)
                group.add_argument("--tensor-parallel-size", "-tp", type=int, default=1, help="TP size.")
                parser.add_argument("--old-flag", action="store_true", help="[DEPRECATED] Use --new-flag.")
                return parser
        ''',
    "eng/parsers.py": '''
        class ToolParserManager:
            @classmethod
            def register_module(cls, name):
                return lambda c: c

        @ToolParserManager.register_module(["alpha", "beta"])
        class A: ...

        _TOOL_PARSERS_TO_REGISTER = {"gamma": ("g", "G")}
        ''',
    "eng/metrics.py": '''
        from prometheus_client import Gauge, Counter
        class Logger:
            def __init__(self):
                labelnames = ["model_name", "engine"]
                self.g = Gauge(name="eng:kv_usage", documentation="KV usage.", labelnames=labelnames)
                self.c = Counter(name="eng:preemptions", documentation="Preemptions.",
                                 labelnames=labelnames + ["reason"])
        ''',
}


@pytest.fixture()
def scenario(tmp_path: Path) -> WheelSource:
    wheel = tmp_path / "eng-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, body in SCENARIO.items():
            zf.writestr(name, textwrap.dedent(body))
    return WheelSource(wheel)


def test_interpreter_reads_fields_and_runs_add_cli_args(scenario: WheelSource) -> None:
    interp = Interp(scenario)
    module = interp.module("eng.args")
    assert isinstance(module, ModuleObj)
    cls = module.get("Args")
    sink = ParserSink(interp)
    interp.call(cls.getattr_("add_cli_args"), [sink], {})
    entries = {e["options"][0]: e for e in (flag_entry(r, "") for r in sink.calls) if e}
    kv = entries["--kv-cache-dtype"]
    assert kv["choices"] == ["auto", "fp8", "fp8_e4m3"] and kv["default"] == "auto" and kv["group"] == "Cache"
    line = next(i for i, text in enumerate(textwrap.dedent(SCENARIO["eng/args.py"]).splitlines(), 1)
                if '"--kv-cache-dtype"' in text)
    assert kv["source"] == f"eng/args.py:{line}"
    pc = entries["--enable-prefix-caching"]
    assert pc["options"] == ["--enable-prefix-caching", "--no-enable-prefix-caching"]
    assert pc["action"] == "BooleanOptionalAction" and not pc["takes_value"] and pc["default"] is True
    assert "--only-in-help" in entries  # an `if` on sys.argv is unknowable: both branches count
    tp = entries["--tensor-parallel-size"]
    assert tp["dest"] == "tensor_parallel_size" and tp["type"] == "int" and "-tp" in tp["options"]
    old = entries["--old-flag"]
    assert old["deprecated"] and old["replacement"] == "--new-flag"


def test_interpreter_follows_type_checking_and_marks_unknowns(scenario: WheelSource) -> None:
    interp = Interp(scenario)
    cfg = interp.module("eng.config").get("CacheConfig")
    assert isinstance(cfg, ClassObj) and cfg.is_record
    names = [f.name for f in cfg.fields()]
    assert names == ["cache_dtype", "enable_prefix_caching", "block_size", "sizes", "quantization"]
    assert cfg.field("cache_dtype").doc == "Data type for kv cache storage."
    quant = cfg.field("quantization").type  # TYPE_CHECKING is False at runtime: Methods = str
    assert str in quant.__args__
    assert isinstance(interp.module("eng.heavy"), Unknown)  # not in the wheel
    assert cfg.getattr_("cache_dtype") == "auto"


def test_registry_and_metric_scans(scenario: WheelSource) -> None:
    names = scan.registry_names(scenario, "ToolParserManager", "_TOOL_PARSERS_TO_REGISTER")
    assert set(names) == {"alpha", "beta", "gamma"}
    assert names["alpha"].startswith("eng/parsers.py:")
    metrics = {m["name"]: m for m in scan.metrics(scenario, Interp(scenario), "eng")}
    assert metrics["eng:kv_usage"]["type"] == "gauge"
    assert metrics["eng:kv_usage"]["labels"] == ["model_name", "engine"]
    assert metrics["eng:preemptions"]["labels"] == ["model_name", "engine", "reason"]
    assert metrics["eng:preemptions"]["exposed"] == ["eng:preemptions_total"]


def test_regenerating_a_real_catalog_gives_the_committed_file() -> None:
    """Determinism and faithfulness: the shipped sglang 0.4.10 catalog is what the generator reads."""
    wheel = find_wheel(WHEEL_DIR, "sglang", "0.4.10")
    if wheel is None:
        unavailable(f"sglang 0.4.10 wheel not in {WHEEL_DIR} (set LLMDOCTOR_WHEEL_DIR; tools/README.md; .ci/run fills it)")
    committed_path = ROOT / "doctor" / "engines" / "catalogs" / "sglang-0.4.10.json"
    committed = json.loads(committed_path.read_text())
    fresh = generate("sglang", "0.4.10", wheel, date=committed["header"]["generated"])
    assert fresh["header"]["sha256"] == committed["header"]["sha256"]
    assert dump(fresh) == committed_path.read_text()
