"""The catalog generator (tools/catalog_gen): its static interpreter, scans and determinism.

The interpreter tests run on small *scenario* modules written here (not engine code): each one
reproduces a construct the real engines use (dataclass fields → argparse kwargs, ``if`` on an
unknowable condition, ``Literal`` choices, BooleanOptionalAction, registries, metric definitions),
packed into a throw-away wheel. The regeneration tests run the real generator on real (small) SGLang
wheels from LLMDOCTOR_WHEEL_DIR (.ci/run downloads them), and skip with the reason when absent (fail under CI).
"""

from __future__ import annotations

import json
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from conftest import WHEEL_DIR, find_wheel_file, unavailable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from doctor.engines.history import view  # noqa: E402
from tools.catalog_gen import history, scan  # noqa: E402
from tools.catalog_gen.argspec import ParserSink, flag_entry  # noqa: E402
from tools.catalog_gen.interp import ClassObj, Interp, ModuleObj, Unknown  # noqa: E402
from tools.catalog_gen.wheel import WheelSource  # noqa: E402
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


def _real_wheel(engine: str, version: str) -> Path:
    """A real wheel from LLMDOCTOR_WHEEL_DIR (.ci/run downloads SGLang 0.4.0 and 0.4.3 there, 0.5 and 0.8 MB)."""
    wheel = find_wheel_file(engine, version)
    if wheel is None:
        unavailable(f"{engine} {version} wheel not in {WHEEL_DIR} (set LLMDOCTOR_WHEEL_DIR; tools/README.md; "
                    ".ci/run fills it)")
    return wheel


def test_regenerating_the_first_release_gives_the_committed_history_byte_for_byte() -> None:
    """Determinism and faithfulness: SGLang 0.1.3 (the oldest on PyPI, 0.1 MB wheel), the first release in the
    history table, read again by the generator, is exactly the table's view of it — every flag, default, launcher,
    file:line."""
    table = json.loads((ROOT / "doctor" / "engines" / "catalogs" / "sglang.json").read_text())
    release = table["releases"][0]
    assert release["version"] == "0.1.3"
    wheel = _real_wheel("sglang", "0.1.3")
    fresh = generate("sglang", "0.1.3", wheel, date=release["generated"])
    assert fresh["header"]["sha256"] == release["sha256"]
    assert dump(fresh) == dump(view(table, "0.1.3"))


def test_each_vllm_launcher_is_read_from_its_own_main_block() -> None:
    """vLLM 0.3.3 (38 MB wheel): a fresh read of its three-launcher era (no `vllm serve` yet) gives the table's
    flags, with the demo server's parser read from vllm/entrypoints/api_server.py's __main__ block."""
    table = json.loads((ROOT / "doctor" / "engines" / "catalogs" / "vllm.json").read_text())
    fresh = generate("vllm", "0.3.3", _real_wheel("vllm", "0.3.3"))
    seen = view(table, "0.3.3")
    assert history.semantic(fresh["flags"]) == history.semantic(seen["flags"])
    launchers = fresh["parser"]["launchers"]
    assert set(launchers) == {"vllm.entrypoints.api_server", "vllm.entrypoints.openai.api_server"}
    assert launchers["vllm.entrypoints.api_server"]["entry"] == "vllm/entrypoints/api_server.py:93"  # parse_args()
    demo_only_lacks = {f["options"][0] for f in fresh["flags"] if f.get("launchers") == ["vllm.entrypoints.openai.api_server"]}
    assert {"--api-key", "--chat-template", "--lora-modules", "--served-model-name"} <= demo_only_lacks


def test_a_later_release_reads_the_same_as_its_view() -> None:
    """A release in the middle of the table (SGLang 0.4.3, 0.8 MB): same flags, choices, defaults, parsers and
    metrics as a fresh read; items that took their form in 0.4.3 carry its own file:line."""
    table = json.loads((ROOT / "doctor" / "engines" / "catalogs" / "sglang.json").read_text())
    wheel = _real_wheel("sglang", "0.4.3")
    fresh = generate("sglang", "0.4.3", wheel)
    seen = view(table, "0.4.3")

    def strip(catalog: dict) -> dict:
        body = {k: v for k, v in catalog.items() if k != "header"}
        body["tool_parsers"], body["reasoning_parsers"] = sorted(body["tool_parsers"]), sorted(body["reasoning_parsers"])
        body["parser"] = {k: v for k, v in body["parser"].items() if not k.endswith("_source")}
        return history.semantic(body)

    assert strip(fresh) == strip(seen)
    fresh_flags = {f["options"][0]: f for f in fresh["flags"]}
    own = [f for f in seen["flags"] if "evidence_from" not in f]
    assert own, "0.4.3 changed some flags"
    for flag in own:
        assert flag["source"] == fresh_flags[flag["options"][0]]["source"]


def test_history_runs_split_on_a_changed_choice_not_on_moved_lines() -> None:
    """Scenario catalogs (not engine data): a moved source line extends a run; a new choice starts one."""
    def catalog(version: str, line: int, choices: list[str]) -> dict:
        return {"header": {"schema": "llmdoctor.catalog/1", "version": version, "wheel": f"e-{version}.whl",
                           "sha256": "0" * 64, "generated": "2026-01-01"},
                "parser": {"allow_abbrev": True, "allow_abbrev_source": f"e.py:{line}"},
                "flags": [{"options": ["--x"], "dest": "x", "choices": choices, "source": f"e.py:{line}"}],
                "tool_parsers": {"a": f"p.py:{line}"}, "reasoning_parsers": {}, "metrics": [], "defaults": {}}
    reads = [catalog("1.0", 10, ["a"]), catalog("1.1", 12, ["a"]), catalog("1.2", 15, ["a", "b"])]
    table = history.build("e", reads)
    assert [(r["since"], r["until"]) for r in table["flags"]["--x"]] == [("1.0", "1.1"), ("1.2", "1.2")]
    assert [(r["since"], r["until"]) for r in table["tool_parsers"]["a"]] == [("1.0", "1.2")]
    assert table["parser"]["allow_abbrev_source"] == [{"since": "1.0", "until": "1.2", "value": "e.py:10"}]
    assert view(json.loads(history.dump(table)), "1.1")["flags"][0] == {**reads[0]["flags"][0], "evidence_from": "1.0"}
