"""Per-engine drivers: where each engine builds its server parser, and what else the catalog reads.

The drivers only say *where to look* (entry points, registry names, the settings whose defaults the
linter needs); everything the catalog says about flags is what the interpreter read from that
version's source. Structural knowledge that differs by version is detected, not assumed: e.g. SGLang
>= 0.5.2x assembles ``ServerArgs`` from namespace classes listed in ``_INPUT_NAMESPACES``, so when that
list exists its classes' fields are added to ``ServerArgs``.
"""

from __future__ import annotations

import ast
from typing import Any

from tools.catalog_gen import entrypoints, scan
from tools.catalog_gen.argspec import ParserSink, SubparsersSink, flag_entry, json_list
from tools.catalog_gen.interp import ClassObj, FieldObj, FunctionObj, Interp, ModuleObj, Unknown
from tools.catalog_gen.wheel import WheelSource

#: `python -m` launchers people use; the catalog records which ones this version still has.
VLLM_ENTRY_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server", "vllm.entrypoints.cli.main")
#: launchers whose ``__main__`` block builds a parser of its own (tools/catalog_gen/entrypoints.py)
VLLM_LAUNCH_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
SGLANG_ENTRY_MODULES = ("sglang.launch_server", "sglang.cli.main", "sglang_router.launch_server")
SGLANG_LAUNCH_MODULES = ("sglang.launch_server",)


def build(engine: str, src: WheelSource) -> dict[str, Any]:
    if engine == "vllm":
        return _vllm(src)
    if engine == "sglang":
        return _sglang(src)
    raise SystemExit(f"unknown engine {engine!r} (vllm or sglang)")


# ---------------------------------------------------------------------------------------------
# shared
# ---------------------------------------------------------------------------------------------
def _flags(sink: ParserSink, renames: dict[str, str] | None = None) -> tuple[list[dict[str, Any]], list[str]]:
    flags: list[dict[str, Any]] = []
    positionals: list[str] = []
    seen: set[str] = set()
    for rec in sink.calls:
        entry = flag_entry(rec, "")
        if entry is None:
            positionals.extend(n for n in rec.names if isinstance(n, str))
            continue
        if any(o in seen for o in entry["options"]):
            continue  # registered on both branches of an unknowable `if`: keep the first
        seen.update(entry["options"])
        field = rec.kwargs.get("_field")
        if isinstance(field, FieldObj):
            entry["field"] = f"{field.owner.name}.{field.name}"
            entry["field_source"] = f"{field.owner.module.path}:{field.lineno}"
            values = _enum_values(field.type)
            if values and "choices" not in entry:
                entry["values"] = values
                entry["values_case_insensitive"] = True
        if renames and entry["dest"] in renames:
            entry["argparse_dest"] = entry["dest"]
            entry["dest"] = renames[entry["dest"]]
        flags.append(entry)
    flags.sort(key=lambda f: f["options"][0])
    return flags, positionals


def _enum_values(tp: Any) -> list[str] | None:
    """Member names, then member values, of an Enum class inside a field's type
    (``AttentionBackendEnum | None``). Engines accept one or the other depending on their
    validators (vLLM maps attention backend names with ``Enum[value.upper()]``, pydantic takes an
    IntEnum's values), so both count as valid: never a false "invalid value"."""
    import typing

    stack = [tp]
    while stack:
        t = stack.pop()
        if isinstance(t, ClassObj) and t.is_enum:
            members = t.members()
            values = [str(m.value) for m in members if isinstance(m.value, (int, str)) and m.value != ""
                      and not isinstance(m.value, bool)]
            names = [m.name for m in members]
            return names + [v for v in values if v not in names]
        stack.extend(typing.get_args(t) if not isinstance(t, (ClassObj, Unknown)) else [])
    return None


def _present(src: WheelSource, modules: tuple[str, ...]) -> list[str]:
    return [m for m in modules if src.has_module(m)]


def _flag(flags: list[dict[str, Any]], dest: str) -> dict[str, Any] | None:
    return next((f for f in flags if f["dest"] == dest), None)


def _call_kwargs_in(fn: FunctionObj | Any, callee: str) -> dict[str, Any] | None:
    """Literal keyword arguments of the first ``callee(...)`` call inside a function's source."""
    if not isinstance(fn, FunctionObj):
        return None
    for node in ast.walk(fn.node):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(callee):
            out = {}
            for k in node.keywords:
                if k.arg:
                    try:
                        out[k.arg] = ast.literal_eval(k.value)
                    except ValueError:
                        out[k.arg] = ast.unparse(k.value)
            return out
    return None


def _class_mentions(cls: Any, text: str) -> int | None:
    """Line of the first mention of ``text`` in a class's source, or None."""
    if not isinstance(cls, ClassObj):
        return None
    for node in ast.walk(cls.node):
        if hasattr(node, "lineno") and text in ast.unparse(node) and not isinstance(node, ast.ClassDef):
            return node.lineno
    return None


def _find_class(src: WheelSource, interp: Interp, package: str, name: str) -> ClassObj | None:
    for mod in src.modules(package):
        if f"class {name}" in src.text(mod):
            value = interp.module(mod)
            if isinstance(value, ModuleObj):
                cls = value.get(name)
                if isinstance(cls, ClassObj):
                    return cls
    return None


def _prefix_default(flag: dict[str, Any] | None, field_default: Any, overrides: list[dict[str, Any]],
                    invert: bool) -> Any:
    """Effective prefix-caching default: the flag's, else the config field's, else the value the
    engine assigns when the flag was left unset (``if x.enable_prefix_caching is None: ... = True``)."""
    for candidate in ((flag or {}).get("default"), field_default):
        if isinstance(candidate, bool):
            return (not candidate) if invert else candidate
    for o in overrides:
        if isinstance(o["value"], bool) and any(c.endswith("is None") for c in o["when"]):
            return (not o["value"]) if invert else o["value"]
    return None


# ---------------------------------------------------------------------------------------------
# vLLM
# ---------------------------------------------------------------------------------------------
def _vllm(src: WheelSource) -> dict[str, Any]:
    interp = Interp(src, overrides={
        # help texts are the config fields' docstrings, which vLLM only reads when --help is given
        "vllm.engine.arg_utils.NEEDS_HELP": True,
    })
    interp.handlers.update({
        "*.get_attr_docs": lambda it, args, kw: args[0].attr_doc() if isinstance(args[0], ClassObj) else {},
        "vllm.engine.arg_utils.get_kwargs": lambda it, args, kw: _vllm_get_kwargs(it, args, kw),
        "*.load_general_plugins": lambda it, args, kw: None,
    })
    made = entrypoints.install_constructors(interp)
    launchers: dict[str, dict[str, Any]] = {}
    serve = _vllm_serve_parser(src, interp)
    if serve is not None:
        sink, entry, init_kwargs = serve
        flags, positionals = _flags(sink)
        if "model_tag" not in positionals and _vllm_scripts_model_tag(src):
            positionals.insert(0, "model_tag")
            entry = f"{src.path('vllm.scripts')}:main → {entry}"
        launchers["vllm serve"] = {"entry": entry, "flags": flags, "positionals": positionals}
    for module in VLLM_LAUNCH_MODULES:
        read = entrypoints.read(src, interp, made, module)
        if read is not None:
            mod_flags, mod_positionals = _flags(read[0])
            launchers[module] = {"entry": read[1], "flags": mod_flags, "positionals": mod_positionals}
    if not launchers:
        raise SystemExit("could not find a vLLM server parser (vllm serve, or a launcher's __main__ block)")
    # the parser the catalog's flags are read from: `vllm serve` where it exists, else the OpenAI server
    main_name = next(n for n in ("vllm serve", *VLLM_LAUNCH_MODULES) if n in launchers)
    if serve is None:
        entry, positionals, init_kwargs = launchers[main_name]["entry"], launchers[main_name]["positionals"], {}
    flags = _merge_launchers(launchers, main_name)

    # --quantization has no argparse choices (plugins may add methods); the engine checks the
    # value against QUANTIZATION_METHODS when it builds ModelConfig.
    quant = _flag(flags, "quantization")
    qmod = interp.module("vllm.model_executor.layers.quantization")
    if quant is not None and isinstance(qmod, ModuleObj):
        methods, ok = json_list(qmod.get("QUANTIZATION_METHODS"))
        if ok and methods:
            quant["values"] = methods
            quant["values_source"] = f"{qmod.path}:QUANTIZATION_METHODS"

    # Some versions set `choices` from the parser registry at runtime (filled by import-time
    # decorators): statically that list is empty, so use the registry the scan found.
    tool = scan.registry_names(src, "ToolParserManager", "_TOOL_PARSERS_TO_REGISTER")
    reasoning = scan.registry_names(src, "ReasoningParserManager", "_REASONING_PARSERS_TO_REGISTER")
    for dest, registry in (("tool_call_parser", tool), ("reasoning_parser", reasoning)):
        flag = _flag(flags, dest)
        if flag is not None and flag.get("choices") == []:
            flag["choices"] = sorted(registry)
            flag["choices_from"] = f"{dest.replace('_call', '')}s registry"
        elif flag is not None and not registry and flag.get("choices"):
            # before the registries (vLLM 0.6.0/0.6.1) the parser names were the flag's literal choices
            registry.update(_choices_as_registry(flag))

    fap = _find_class(src, interp, "vllm.utils", "FlexibleArgumentParser")
    abbrev = _allow_abbrev(init_kwargs, fap)
    underscore_line = _class_mentions(fap, '.replace("_", "-")') or _class_mentions(fap, ".replace('_', '-')")
    # 0.13+: "-O3" / "-O 3" are rewritten to "--optimization-level 3" before argparse sees them
    o_line = _class_mentions(fap, "'--optimization-level'") or _class_mentions(fap, '"--optimization-level"')
    dotted_line = _class_mentions(fap, "split('.')") or _class_mentions(fap, 'split(".")')

    ov = scan.overrides(src, {"enable_prefix_caching", "gpu_memory_utilization"}, "vllm")
    not_supported = scan.false_returns(src, "vllm.config.model", "ModelConfig.is_prefix_caching_supported")
    cache_cls = _find_class(src, interp, "vllm.config", "CacheConfig")
    cache_field = cache_cls.field("enable_prefix_caching") if cache_cls else None
    pc_flag = _flag(flags, "enable_prefix_caching")
    mem_flag = _flag(flags, "gpu_memory_utilization")
    return {
        "parser": {
            "prog": "vllm serve" if serve is not None else f"python -m {main_name}",
            "entry": entry,
            "allow_abbrev": abbrev[0],
            "allow_abbrev_source": abbrev[1],
            "underscores_as_dashes": underscore_line is not None,
            "underscores_source": f"{fap.module.path}:{underscore_line}" if fap and underscore_line else None,
            "dotted_json_args": dotted_line is not None,
            "o_shorthand": "--optimization-level" if o_line is not None else None,
            "positionals": positionals,
            "model_flag": "--model",
            "entry_modules": _present(src, VLLM_ENTRY_MODULES),
            "launchers": {name: {"entry": lau["entry"], "positionals": lau["positionals"]}
                          for name, lau in sorted(launchers.items())},
        },
        "flags": flags,
        "tool_parsers": dict(sorted(tool.items())),
        "reasoning_parsers": dict(sorted(reasoning.items())),
        "metrics": scan.metrics(src, interp, "vllm"),
        "defaults": {
            "prefix_caching": {
                "dest": "enable_prefix_caching",
                "default": _prefix_default(pc_flag, cache_field.default if cache_field else None,
                                           ov["enable_prefix_caching"], invert=False),
                "field_source": (f"{cache_field.owner.module.path}:{cache_field.lineno}" if cache_field else None),
                "engine_overrides": ov["enable_prefix_caching"],
                "not_supported_when": not_supported,
            },
            "mem_fraction": {
                "dest": "gpu_memory_utilization",
                "default": (mem_flag or {}).get("default"),
                "source": (mem_flag or {}).get("field_source") or (mem_flag or {}).get("source"),
                "engine_overrides": ov["gpu_memory_utilization"],
            },
        },
    }


def _vllm_get_kwargs(interp: Interp, args: list[Any], kwargs: dict[str, Any]) -> Any:
    """Run vLLM's own ``get_kwargs`` and tag each field's kwargs with the field it came from."""
    module = interp.module("vllm.engine.arg_utils")
    fn = module.get("get_kwargs") if isinstance(module, ModuleObj) else None
    if not isinstance(fn, FunctionObj):
        return Unknown("get_kwargs")
    result = interp.call_function(fn, args, kwargs, use_handlers=False)
    cls = args[0] if args else None
    if isinstance(result, dict) and isinstance(cls, ClassObj):
        for name, kw in result.items():
            field = cls.field(name)
            if isinstance(kw, dict) and field is not None:
                kw["_field"] = field
    return result


def _vllm_serve_parser(src: WheelSource, interp: Interp) -> tuple[ParserSink, str, dict[str, Any]] | None:
    """The parser `vllm serve` uses: ServeSubcommand.subparser_init, else (vLLM 0.5.2–0.7.2, ``vllm/scripts.py``)
    make_arg_parser on the subparser; None before `vllm serve` existed."""
    serve = interp.module("vllm.entrypoints.cli.serve")
    cls = serve.get("ServeSubcommand") if isinstance(serve, ModuleObj) else None
    if isinstance(cls, ClassObj):
        subparsers = SubparsersSink(interp)
        method = cls.getattr_("subparser_init")
        if isinstance(method, FunctionObj):
            interp.call(method, [interp.call(cls, [], {}), subparsers], {})
            if "serve" in subparsers.parsers and subparsers.parsers["serve"].calls:
                sink = subparsers.parsers["serve"]
                return sink, f"{serve.path}:ServeSubcommand.subparser_init", sink.init_kwargs
    if not src.has_module("vllm.scripts"):
        return None
    for name in ("vllm.entrypoints.common.cli_args", "vllm.entrypoints.openai.cli_args"):
        mod = interp.module(name)
        if isinstance(mod, ModuleObj) and isinstance(mod.get("make_arg_parser"), FunctionObj):
            sink = ParserSink(interp)
            interp.call(mod.get("make_arg_parser"), [sink], {})
            return sink, f"{mod.path}:make_arg_parser", {}
    return None


def _merge_launchers(launchers: dict[str, dict[str, Any]], main_name: str) -> list[dict[str, Any]]:
    """One flag list for every launcher of the release: the main parser's flags, then the flags only another
    launcher has. A flag not every launcher accepts names those that do in ``launchers`` (absent: all do), so a
    demo-server command with ``--chat-template`` is told its launcher lacks it."""
    accepted = {name: {o for f in lau["flags"] for o in f["options"]} for name, lau in launchers.items()}
    merged: dict[str, dict[str, Any]] = {}
    for name in (main_name, *sorted(n for n in launchers if n != main_name)):
        for flag in launchers[name]["flags"]:
            merged.setdefault(flag["options"][0], dict(flag))
    for flag in merged.values():
        by = sorted(name for name, options in accepted.items() if flag["options"][0] in options)
        if len(by) < len(launchers):
            flag["launchers"] = by
    return sorted(merged.values(), key=lambda f: f["options"][0])


def _vllm_scripts_model_tag(src: WheelSource) -> bool:
    """vLLM < 0.7.3 builds `vllm serve` in ``vllm/scripts.py``: a ``model_tag`` positional added there, then
    ``make_arg_parser`` on that subparser."""
    if not src.has_module("vllm.scripts"):
        return False
    tree = src.tree("vllm.scripts")
    return tree is not None and any(
        isinstance(n, ast.Call) and ast.unparse(n.func).endswith("add_argument") and n.args
        and isinstance(n.args[0], ast.Constant) and n.args[0].value == "model_tag" for n in ast.walk(tree))


def _allow_abbrev(init_kwargs: dict[str, Any], parser_cls: ClassObj | None) -> tuple[bool, str]:
    """argparse prefix matching: on unless the parser is built with, or its class forces, allow_abbrev=False."""
    if "allow_abbrev" in init_kwargs and isinstance(init_kwargs["allow_abbrev"], bool):
        return init_kwargs["allow_abbrev"], "parser construction"
    line = _class_mentions(parser_cls, "allow_abbrev") if parser_cls else None
    if line is not None:
        return False, f"{parser_cls.module.path}:{line}"
    where = f" ({parser_cls.module.path}: no allow_abbrev)" if parser_cls else ""
    return True, "argparse default" + where


# ---------------------------------------------------------------------------------------------
# SGLang
# ---------------------------------------------------------------------------------------------
def _sglang(src: WheelSource) -> dict[str, Any]:
    interp = Interp(src)
    module = interp.module("sglang.srt.server_args")
    if not isinstance(module, ModuleObj):
        raise SystemExit("sglang.srt.server_args not found in the wheel")
    server_args = module.get("ServerArgs")
    if not isinstance(server_args, ClassObj):
        raise SystemExit("ServerArgs not found in sglang.srt.server_args")
    namespaces = module.get("_INPUT_NAMESPACES")
    if isinstance(namespaces, list):
        # recent versions keep the fields in arg_groups/fields/*.py and rebuild ServerArgs at import
        # time with msgspec.defstruct from the classes listed in _INPUT_NAMESPACES
        server_args.extra_field_classes = [c for c in namespaces if isinstance(c, ClassObj)]
        server_args.extra_bases = [interp.external("msgspec").getattr_("Struct")]

    sink = ParserSink(interp)
    add = server_args.getattr_("add_cli_args")
    if not isinstance(add, FunctionObj):
        raise SystemExit("ServerArgs.add_cli_args not found")
    interp.call(add, [sink], {})
    flags, positionals = _flags(sink, renames=_sglang_renames(server_args))
    # every SGLang launcher builds its parser with ServerArgs.add_cli_args: record where, and check it
    launchers = {}
    made = entrypoints.install_constructors(interp)
    for launcher in SGLANG_LAUNCH_MODULES:
        read = entrypoints.read(src, interp, made, launcher)
        if read is not None:
            own, own_positionals = _flags(read[0], renames=_sglang_renames(server_args))
            if {o for f in own for o in f["options"]} != {o for f in flags for o in f["options"]}:
                raise SystemExit(f"{launcher} builds a parser other than ServerArgs.add_cli_args: read it as its "
                                 f"own launcher (tools/catalog_gen/engines.py _merge_launchers)")
            launchers[launcher] = {"entry": read[1], "positionals": own_positionals}

    prepare = module.get("prepare_server_args")
    init_kwargs = _call_kwargs_in(prepare, "ArgumentParser") or {}
    abbrev = ("allow_abbrev" not in init_kwargs or init_kwargs["allow_abbrev"] is not False,
              f"{module.path}:prepare_server_args ArgumentParser({', '.join(f'{k}=' for k in init_kwargs)})")
    serve_cli = src.has_module("sglang.cli.serve")
    positional_model = serve_cli and "_normalize_positional_model_path" in src.text("sglang.cli.serve")

    tool_flag = _flag(flags, "tool_call_parser")
    reasoning_flag = _flag(flags, "reasoning_parser")
    ov = scan.overrides(src, {"disable_radix_cache", "mem_fraction_static"}, "sglang.srt")
    pc_flag = _flag(flags, "disable_radix_cache")
    mem_flag = _flag(flags, "mem_fraction_static")
    radix_field = server_args.field("disable_radix_cache")
    return {
        "parser": {
            "prog": "sglang serve" if serve_cli else "python -m sglang.launch_server",
            "entry": f"{module.path}:ServerArgs.add_cli_args",
            "allow_abbrev": abbrev[0],
            "allow_abbrev_source": abbrev[1],
            "underscores_as_dashes": False,
            "underscores_source": None,
            "dotted_json_args": False,
            "o_shorthand": None,
            "positionals": positionals,
            "serve_positional_model": positional_model,
            "model_flag": "--model-path",
            "entry_modules": _present(src, SGLANG_ENTRY_MODULES),
            "launchers": launchers,
        },
        "flags": flags,
        "tool_parsers": _choices_as_registry(tool_flag),
        "reasoning_parsers": _choices_as_registry(reasoning_flag),
        "metrics": scan.metrics(src, interp, "sglang"),
        "defaults": {
            "prefix_caching": {
                "dest": "disable_radix_cache",
                "inverted": True,
                "default": _prefix_default(pc_flag, radix_field.default if radix_field else None,
                                           ov["disable_radix_cache"], invert=True),
                "field_source": (pc_flag or {}).get("source"),
                "engine_overrides": ov["disable_radix_cache"],
                "not_supported_when": [],
            },
            "mem_fraction": {
                "dest": "mem_fraction_static",
                "default": (mem_flag or {}).get("default"),
                "source": (mem_flag or {}).get("source"),
                "engine_overrides": ov["mem_fraction_static"],
            },
        },
    }


def _sglang_renames(server_args: ClassObj) -> dict[str, str]:
    """``args.tp_size = args.tensor_parallel_size`` in ``from_cli_args``: argparse dest → field."""
    fn = server_args.getattr_("from_cli_args")
    node = fn.func.node if hasattr(fn, "func") else getattr(fn, "node", None)
    renames: dict[str, str] = {}
    if node is None:
        return renames
    for st in ast.walk(node):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Attribute) \
                and isinstance(st.value, ast.Attribute):
            renames[st.value.attr] = st.targets[0].attr
    return renames


def _choices_as_registry(flag: dict[str, Any] | None) -> dict[str, str]:
    if not flag or not flag.get("choices"):
        return {}
    return {str(c): flag["source"] for c in sorted(flag["choices"], key=str) if c not in ("auto", None)}

