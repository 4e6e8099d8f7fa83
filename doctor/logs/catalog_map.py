"""Which cause an error-catalog template names, and which templates are reached while a server starts.

A cause claims templates in its ``log_signatures`` (one file per cause, playbooks/causes/):

- ``{catalog: vllm, template: vllm-ba2fc5bb06}`` — one template by id;
- ``{catalog: vllm, select: {...}}`` — a class of templates. Every key given must hold for at least one
  site of the template (``words`` for its text):

  | key        | holds when                                                                      |
  |------------|----------------------------------------------------------------------------------|
  | `module`   | the site's file matches one of the globs (`vllm/config/*.py`, `sglang/srt/*`)     |
  | `function` | the enclosing function (qualified, `ModelConfig.__post_init__`) matches a glob   |
  | `type`     | the exception class or log level is one of these (`ValueError`, `warning`)       |
  | `kind`     | `raise` or `log`                                                                 |
  | `startup`  | the site's start-up class (``STARTUP`` below) is one of these                    |
  | `words`    | every word appears in the template's literal text (case-insensitive)             |
  | `names`    | the site's guarding condition or the template's text names one of the engine's   |
  |            | settings: a list of identifiers, or `{groups: [...], also: [...]}` — the flags    |
  |            | whose field is in those groups of the engine's flag catalog (vLLM's config class, |
  |            | `ParallelConfig`; SGLang's argument group, `Parallel`; `groups: "*"`: every flag), |
  |            | by dest and field name. Outside the argument modules a condition names a setting  |
  |            | only as an attribute (`self.block_size`) and a message only as the identifier or   |
  |            | the flag: a bare `block_size` there is the function's own variable                |

A template id beats a selector; among selectors, what the message says (``words``, or a ``type`` of only import
errors: ``IMPORT_ERRORS``) beats the setting its
condition names (``names``; a named group before every flag), which beats the subsystem it is raised in
(``module``), which beats the start-up stage alone (``startup``); then more keys; then the cause id's order.
``names`` and ``module`` are how the start-up refusals are mapped by construction rather than one at a time: a
template raised under ``if self.tensor_parallel_size …`` (or saying "tensor parallel size") is about the parallel
layout; one raised in ``vllm/config/speculative.py`` is about speculative decoding (``how_mapped`` below).
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Where a server is being set up, per catalog: (start-up class, file globs). A template raised or logged
#: in these files is reachable before the server serves (docs/error-catalog.md reports the share mapped).
STARTUP: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "vllm": (
        ("arguments", ("vllm/config.py", "vllm/config/*", "vllm/engine/arg_utils.py",
                       "vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/cli/*", "vllm/utils/argparse_utils.py",
                       "vllm/entrypoints/openai/api_server.py", "vllm/entrypoints/utils.py",
                       "vllm/entrypoints/launchers/*",
                       # the same checks where the releases moved them (0.33.0 lines): serve's argument checks
                       # from launchers/cli_args.py (0.29.0-0.32.0) to common/cli_args.py (0.33.0:
                       # validate_parsed_serve_args :531, run by `vllm serve`, entrypoints/cli/serve.py:159;
                       # validate_api_server_args :615, by launchers/launcher.py:370); the start-up helpers
                       # (get_non_default_args :63, by launcher.py:368) from serve/utils/api_utils.py, a module
                       # of per-request helpers too, to common/startup.py (0.33.0); the data-parallel supervisor's
                       # argument checks (launchers/dp_supervisor.py from 0.29.0) at their first place (0.22.0-0.28.0)
                       "vllm/entrypoints/common/cli_args.py", "vllm/entrypoints/common/startup.py",
                       "vllm/entrypoints/openai/dp_supervisor.py")),
        ("model-load", ("vllm/model_executor/model_loader/*", "vllm/transformers_utils/*",
                        "vllm/model_executor/models/registry.py", "vllm/model_executor/models/config.py",
                        "vllm/tokenizers/*", "vllm/multimodal/registry.py",
                        # MultiModalRegistry's cache factories, moved out of it (0.31.0); built as the engine
                        # core and the renderer start (0.33.0: v1/engine/core.py:199, renderers/base.py:201)
                        "vllm/multimodal/cache/factories.py",
                        # before the model_loader package (0.2.0-0.4.1)
                        "vllm/model_executor/model_loader.py", "vllm/model_executor/weight_utils.py")),
        ("device-init", ("vllm/platforms/*", "vllm/worker/worker.py", "vllm/worker/worker_base.py",
                         "vllm/v1/worker/gpu_worker.py", "vllm/v1/worker/worker_base.py", "vllm/executor/*",
                         "vllm/v1/executor/*", "vllm/distributed/parallel_state.py",
                         "vllm/distributed/device_communicators/pynccl*.py",
                         # before vllm/distributed and vllm/executor (0.2.0-0.4.1)
                         "vllm/model_executor/parallel_utils/parallel_state.py", "vllm/engine/ray_utils.py")),
        ("kv-sizing", ("vllm/v1/core/kv_cache_utils.py", "vllm/v1/core/kv_cache_planning.py", "vllm/worker/cache_engine.py",
                       "vllm/core/block_manager*.py", "vllm/v1/core/kv_cache_manager.py")),
        ("parsers", ("vllm/entrypoints/openai/tool_parsers/abstract_tool_parser.py",
                     "vllm/entrypoints/openai/tool_parsers/__init__.py", "vllm/tool_parsers/__init__.py",
                     "vllm/tool_parsers/abstract_tool_parser.py", "vllm/reasoning/__init__.py",
                     "vllm/reasoning/abs_reasoning_parsers.py", "vllm/parser/parser_manager.py")),
    ),
    "sglang": (
        ("arguments", ("sglang/srt/server_args.py", "sglang/srt/server_args_config_parser.py",
                       # the --config file's parser, moved under utils/ (0.5.19; 0.5.23: server_args.py:685-688)
                       "sglang/srt/utils/server_args_config_parser.py",
                       "sglang/srt/arg_groups/*", "sglang/srt/configs/model_config.py",
                       "sglang/srt/configs/load_config.py", "sglang/srt/configs/device_config.py")),
        ("model-load", ("sglang/srt/model_loader/*", "sglang/srt/hf_transformers_utils.py",
                        "sglang/srt/utils/hf_transformers_utils.py", "sglang/srt/models/registry.py",
                        # hf_transformers_utils.py split into a package (0.5.11): config, tokenizer, processor loading
                        "sglang/srt/utils/hf_transformers/*",
                        "sglang/srt/configs/*")),
        ("device-init", ("sglang/srt/model_executor/model_runner.py", "sglang/srt/distributed/parallel_state.py",
                         "sglang/srt/entrypoints/engine.py", "sglang/srt/managers/tp_worker.py",
                         "sglang/srt/managers/scheduler.py", "sglang/srt/platforms/*",
                         "sglang/srt/model_executor/model_runner_components/*",
                         # the router (0.1.3-0.1.17) and controller (0.1.18-0.2.x) layouts' workers
                         "sglang/srt/managers/router/model_runner.py", "sglang/srt/managers/router/model_rpc.py",
                         "sglang/srt/managers/controller/model_runner.py",
                         "sglang/srt/managers/controller/tp_worker.py")),
        ("kv-sizing", ("sglang/srt/mem_cache/memory_pool.py", "sglang/srt/mem_cache/memory_pool_host.py",
                       "sglang/srt/model_executor/model_runner_kv_cache_mixin.py",
                       # the same sizing after the moves (0.5.23 lines): the KV pools' sizing out of the model
                       # runner's mixin (kv_cache_configurator.py from 0.5.16, built at model_runner.py:656), the
                       # scheduler's KV cache build (kv_cache_builder.py from 0.5.13, scheduler.py:575), the host
                       # pools out of memory_pool_host.py (pool_host/, 0.5.14-0.5.23; SERVING below, like it)
                       "sglang/srt/mem_cache/kv_cache_configurator.py", "sglang/srt/mem_cache/kv_cache_builder.py",
                       "sglang/srt/mem_cache/pool_host/*")),
        ("parsers", ("sglang/srt/function_call/function_call_parser.py", "sglang/srt/reasoning_parser.py",
                     "sglang/srt/parser/reasoning_parser.py")),
    ),
    "lower": (),
}


#: Start-up modules that also hold what runs while the server serves: the long-lived objects (the scheduler, the
#: workers, the KV pools and managers), whose methods past their construction run for each request or step, and
#: the code that works on each request (multimodal processors, chat encoders). Per catalog: (file globs, whether a
#: module-level function there runs at start-up). A site in these files is reached at start-up only from a
#: construction function (``CONSTRUCTION``) — or, where the flag says so, from a module-level one
#: (``run_scheduler_process``); the rest (``Scheduler.handle_rpc_request``, ``KVCacheManager.allocate_slots``,
#: ``MHATokenToKVPool.set_kv_buffer``, a processor's ``__call__`` or resize helper) is not a start-up refusal.
SERVING: dict[str, tuple[tuple[tuple[str, ...], bool], ...]] = {
    "vllm": (
        (("vllm/v1/worker/gpu_worker.py", "vllm/v1/core/kv_cache_manager.py"), True),
        # the certificate watcher: built as the server starts (launcher.py:243, 0.33.0), its file-change handler runs
        # while it serves (launchers/utils/ssl.py:58-70, _watch_files); at serve/utils/ssl.py (0.23.0-0.28.0), a
        # module outside STARTUP, it was never read as start-up
        (("vllm/entrypoints/launchers/utils/ssl.py",), False),
        (("vllm/transformers_utils/processors/*", "vllm/tokenizers/*_encoding.py"), False),
        # the model families' tokenizer classes: built while the model loads (from_pretrained, __init__), then asked
        # to encode, template and check each request — their other methods and their module's helpers
        # (0.33.0: mistral.py maybe_serialize_tool_calls, validate_request_params; deepseek_v41.py
        # _normalize_messages; kimi_audio.py KimiAudioTokenizer.apply_chat_template). Not Mistral's before the move
        # (transformers_utils/tokenizers/mistral.py, 0.6.0-0.11.0), whose module-level find_tokenizer_file runs as
        # the tokenizer loads
        (("vllm/tokenizers/mistral.py", "vllm/tokenizers/kimi_audio.py", "vllm/tokenizers/deepseek_v*.py",
          "vllm/tokenizers/alpamayo2_super.py"), False),
        # the API server's launcher: its functions set the server up (validate_api_server_args, serve_http); its
        # server class's accept loop (NoSignalServer._accept, 0.32.0+) runs while it serves
        (("vllm/entrypoints/launchers/launcher.py",), True),
    ),
    "sglang": (
        (("sglang/srt/managers/scheduler.py", "sglang/srt/managers/tp_worker.py",
          "sglang/srt/mem_cache/memory_pool.py", "sglang/srt/mem_cache/memory_pool_host.py",
          "sglang/srt/mem_cache/pool_host/*"), True),
    ),
}
#: The methods that build a long-lived object (its last name: ``Scheduler.init_tokenizer`` → ``init_tokenizer``).
CONSTRUCTION = ("__init__", "__post_init__", "__new__", "init*", "_init*", "initialize*", "_initialize*",
                "create*", "_create*", "build*", "_build*", "_detect*", "from_pretrained", "from_config",
                "load_model", "determine_available_memory", "compile_or_warm_up_model", "get_kv_cache_spec")


#: Modules under the start-up packages that a user runs as a command of their own, never reached while a server
#: starts: vLLM's batch runner; SGLang 0.5.23's expert-pack builder and validator (argparse and a ``__main__`` block:
#: sglang/srt/model_loader/expert_pack/build.py, validate.py). Not its ``expert_pack/prepare_*.py``:
#: ``--load-format expert_pack`` with a raw GGUF runs them as the server starts
#: (sglang/srt/model_loader/expert_pack_runtime.py:161-176 and :505-510, from the argument hook
#: sglang/srt/arg_groups/expert_pack_hook.py:96-108), so what they and the modules they import (kimi_ggml.py,
#: format.py) raise ends a start.
OFFLINE: dict[str, tuple[str, ...]] = {
    # `vllm run-batch` (run by vllm/entrypoints/cli/run_batch.py:28, 0.33.0): a batch job over a file, no server;
    # moved under launchers/ (0.29.0) beside the server's code, from openai/run_batch.py (outside STARTUP)
    "vllm": ("vllm/entrypoints/launchers/run_batch.py",),
    "sglang": ("sglang/srt/model_loader/expert_pack/build.py", "sglang/srt/model_loader/expert_pack/validate.py"),
}


#: Start-up modules whose objects are built for each request, so nothing in them, their construction included, runs
#: while a server starts: SGLang's FunctionCallParser (sglang/srt/function_call/function_call_parser.py), built from
#: the request's tools in the chat handlers (0.5.23: entrypoints/openai/serving_chat.py:1608, :1848) and from the
#: request's own parser name in /parse_function_call (entrypoints/http_server.py:1754); the server's
#: --tool-call-parser is checked against its registry by argparse (server_args.py:377-385). Its "Unsupported
#: tool_call_parser" answers a request, it does not stop a start.
PER_REQUEST: dict[str, tuple[str, ...]] = {
    "sglang": ("sglang/srt/function_call/function_call_parser.py",),
}


def serving_only(catalog: str, file: str, function: str) -> bool:
    """Whether a site in a start-up module is not reached while a server starts: it runs only while serving
    (``SERVING``, ``PER_REQUEST``), or in a command of its own (``OFFLINE``)."""
    if any(fnmatchcase(file, g) for g in (*OFFLINE.get(catalog, ()), *PER_REQUEST.get(catalog, ()))):
        return True
    for globs, module_level in SERVING.get(catalog, ()):
        if any(fnmatchcase(file, g) for g in globs):
            if "." not in function:
                return not module_level
            return not any(fnmatchcase(function.rsplit(".", 1)[1], c) for c in CONSTRUCTION)
    return False


def startup_class(catalog: str, file: str, function: str | None = None) -> str | None:
    """The start-up class of a site's file (``arguments``, ``model-load``, ...), or None; given the site's function,
    None also for what runs only while serving (``SERVING``)."""
    for name, globs in STARTUP.get(catalog, ()):
        if any(fnmatchcase(file, g) for g in globs):
            return None if function is not None and serving_only(catalog, file, function) else name
    return None


def site_startup(catalog: str, site: Any) -> str | None:
    """startup_class of one site (a catalog entry's dict or a Site)."""
    file, function = (site["file"], site["function"]) if isinstance(site, dict) else (site.file, site.function)
    return startup_class(catalog, file, function)


def is_startup(catalog: str, sites: Any) -> bool:
    return any(site_startup(catalog, s) for s in sites)


def _as_tuple(value: Any) -> tuple[str, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


@lru_cache(maxsize=8)
def setting_names(catalog: str, groups: tuple[str, ...] | None = None) -> dict[str, str]:
    """Identifier → the flag it is (``tensor_parallel_size`` → ``--tensor-parallel-size``): for each flag of the
    engine's newest flag catalog whose field is in ``groups`` (None: every group), its dest and field name.

    Compound identifiers only: a one-word field (``model``, ``method``, ``backend``) is also an ordinary word of
    other messages."""
    out: dict[str, str] = {}
    if catalog not in ("vllm", "sglang"):
        return out
    from doctor.engines.catalog import load_catalog

    for spec in load_catalog(catalog).flags:
        group, _, field = (spec.field or "").partition(".")
        if (groups is None or group in groups) and spec.options:
            for name in (spec.dest, field):
                if name and "_" in name.strip("_"):
                    out.setdefault(name, spec.options[0])
    return out


@lru_cache(maxsize=256)
def config_class_flags(catalog: str, file: str, function: str = "") -> tuple[str, ...]:
    """The flags of the config class a vLLM config module defines (``vllm/config/profiler.py`` → ProfilerConfig's
    fields and --profiler-config, by the module's name; the flag catalog records each flag's config field): what a
    refusal raised there,
    whose words name no flag, is about. In the one ``vllm/config.py`` of vLLM 0.2.0-0.10.0 the class is the
    function's (``CacheConfig.verify_with_parallel_config`` → cache). Empty for other files."""
    m = re.fullmatch(r"vllm/config/(\w+)\.py", file)
    cls = re.fullmatch(r"(\w+)Config\.\w.*", function) if file == "vllm/config.py" else None
    name = m.group(1) if m else re.sub(r"(?<!^)(?=[A-Z])", "_", cls.group(1)).lower() if cls else None
    if catalog != "vllm" or name is None:
        return ()
    from doctor.engines.catalog import load_catalog

    out = []
    for spec in load_catalog(catalog).flags:
        group = (spec.field or "").partition(".")[0]
        snake = re.sub(r"(?<!^)(?=[A-Z])", "_", group.removesuffix("Config")).lower()
        # the class's own fields, and the JSON flag that holds the whole class (--profiler-config)
        whole = spec.field == f"VllmConfig.{name}_config"
        if ((group.endswith("Config") and snake == name) or whole) and spec.options:
            out.append(spec.options[0])
    return tuple(dict.fromkeys(out))


def _alternation(names: Any, blank: bool) -> str:
    """The identifiers as one regex alternation; ``blank``: their underscores also as blanks."""
    sep = "[_ -]" if blank else "[_-]"
    return "|".join(re.escape(n).replace("_", sep) for n in sorted(names, key=len, reverse=True))


@lru_cache(maxsize=64)
def _names_patterns(catalog: str, groups: tuple[str, ...] | None,
                    also: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]] | None:
    """Three regexes for the identifiers a ``names`` selector stands for (``also`` and, by ``groups``, the flags of
    setting_names), from loosest to strictest:

    - ``prose``: as a whole word, its underscores also as blanks or hyphens ("tensor parallel size",
      "--tensor-parallel-size") — for the messages of the argument and config modules, which talk about settings;
    - ``spelt``: as the identifier or the flag (underscores or hyphens, no blanks) — for other messages, whose
      prose ("safetensors prefetch block size") is about their own variables;
    - ``attribute``: read off an object (``self.block_size``, ``args.tp_size``) — for conditions outside the
      argument modules, where a bare ``block_size`` is a local variable, not the setting."""
    names = set(also) | (set(setting_names(catalog, groups)) if groups != () else set())
    if not names:
        return None
    # a whole identifier or flag: not a piece of a longer one (``--weight-cache-master-port`` does not name
    # ``master_port``)
    edge, end = "(?<![A-Za-z0-9_])(?<![A-Za-z0-9]-)", "(?![A-Za-z0-9_])(?!-[A-Za-z0-9])"
    return (re.compile(rf"{edge}(?:{_alternation(names, True)}){end}", re.IGNORECASE),
            re.compile(rf"{edge}(?:{_alternation(names, False)}){end}", re.IGNORECASE),
            re.compile(rf"\.(?:{_alternation(names, False)}){end}"))


def _names(catalog: str, value: Any) -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]] | None:
    if isinstance(value, dict):
        groups = value.get("groups", ())
        return _names_patterns(catalog, None if groups == "*" else tuple(groups), tuple(value.get("also", ())))
    return _names_patterns(catalog, (), tuple(_as_tuple(value)))


def names_setting(catalog: str, value: Any, file: str, guard: str, text: str) -> bool:
    """Whether a site's condition or its template's text names one of the settings (see _names_patterns)."""
    patterns = _names(catalog, value)
    if patterns is None:
        return False
    prose, spelt, attribute = patterns
    if startup_class(catalog, file) == "arguments":
        return bool(prose.search(text) or spelt.search(guard))
    return bool(spelt.search(text) or attribute.search(guard))


def flags_named(catalog: str, file: str, guard: str, text: str) -> list[str]:
    """The engine's flags a site's condition or its template's text names (by the rules of ``names``), in the
    order they appear: what a setting cause's fix tells the user to change."""
    patterns = _names_patterns(catalog, None, ())
    if patterns is None:
        return []
    prose, spelt, attribute = patterns
    arguments = startup_class(catalog, file) == "arguments"
    found = [*(prose if arguments else spelt).finditer(text), *(spelt if arguments else attribute).finditer(guard)]
    by_key = {n.lower(): flag for n, flag in setting_names(catalog, None).items()}
    out = [by_key.get(re.sub(r"[ -]", "_", m.group(0).lstrip(".")).lower()) for m in found]
    return list(dict.fromkeys(f for f in out if f))


def _site_holds(catalog: str, select: dict[str, Any], site: Any, text: str = "") -> bool:
    file, function, kind, typ = (site["file"], site["function"], site["kind"], site["type"]) \
        if isinstance(site, dict) else (site.file, site.function, site.kind, site.type)
    if "module" in select and not any(fnmatchcase(file, g) for g in _as_tuple(select["module"])):
        return False
    if "function" in select and not any(fnmatchcase(function, g) for g in _as_tuple(select["function"])):
        return False
    if "type" in select and typ not in _as_tuple(select["type"]):
        return False
    if "kind" in select and kind not in _as_tuple(select["kind"]):
        return False
    if "startup" in select and startup_class(catalog, file, function) not in _as_tuple(select["startup"]):
        return False
    if "names" in select:
        guard = site.get("guard", "") if isinstance(site, dict) else site.guard
        return names_setting(catalog, select["names"], file, guard or "", text)
    return True


#: The words of a message that only points at another error ("WorkerProc failed to start.", "… please check the
#: stack trace above"): the line that names the cause is that other one, so a selector on the setting or the
#: subsystem (``names``, ``module``) does not claim it — only its own words or id can.
WRAPPER_WORDS = ("failed to start", "stack trace above", "root cause above", "error messages above", "hit an exception",
                 "exception in worker", "please check the logs")


def selects(catalog: str, select: dict[str, Any], entry: dict[str, Any], sites: Any = None) -> bool:
    """Whether a selector claims a template (``entry`` as stored in the catalog)."""
    return _claims(catalog, select, _Text(entry), sites if sites is not None else entry.get("sites", ()))


class _Text:
    """A template's literal text, lowered, and whether it only points at another error: worked out once per
    template, not once per selector tried on it."""

    def __init__(self, entry: dict[str, Any]) -> None:
        self.text = " ".join(p for p in entry["parts"] if isinstance(p, str))
        self.lowered = self.text.lower()
        self.wrapper = any(w in self.lowered for w in WRAPPER_WORDS)


def _claims(catalog: str, select: dict[str, Any], text: _Text, sites: Any) -> bool:
    if ("names" in select or "module" in select) and "words" not in select and text.wrapper:
        return False
    if "words" in select and not all(str(w).lower() in text.lowered for w in _as_tuple(select["words"])):
        return False
    return any(_site_holds(catalog, select, s, text.text) for s in sites)


@lru_cache(maxsize=1)
def _signatures() -> tuple[dict[tuple[str, str], str], tuple[tuple[tuple[bool, bool, bool, bool, int], str, str, dict[str, Any]], ...]]:
    """(catalog, template id) → cause, and the selectors most specific first, from the playbooks."""
    from doctor.logs.source import signatures

    ids: dict[tuple[str, str], str] = {}
    selectors: list[tuple[tuple[bool, bool, bool, bool, int], str, str, dict[str, Any]]] = []
    for cause, sigs in sorted(signatures().items()):
        for sig in sigs:
            if "catalog" not in sig:
                continue
            if "template" in sig:
                ids.setdefault((sig["catalog"], sig["template"]), cause)
            elif "select" in sig:
                select = sig["select"]
                # the message's words say most, then the setting its condition names (a named group before every
                # flag), then the subsystem it is raised in (its module), then the start-up stage alone
                names = select.get("names")
                narrow = isinstance(names, list) or (isinstance(names, dict) and names.get("groups") != "*")
                rank = (_says(select), "names" in select, "names" in select and narrow,
                        "module" in select or "function" in select, len(select))
                selectors.append((rank, cause, sig["catalog"], dict(select)))
    selectors.sort(key=lambda s: (tuple(-r for r in s[0]), s[1]))
    return ids, tuple(selectors)


def cause_for(catalog: str, tid: str, entry: dict[str, Any], sites: Any = None) -> str | None:
    """The cause a template maps to (by id, else by the most specific selector), or None: unmapped."""
    return mapping(catalog, tid, entry, sites)[0]


def mapping(catalog: str, tid: str, entry: dict[str, Any],
            sites: Any = None) -> tuple[str | None, dict[str, Any] | None]:
    """The cause and the selector that chose it (None when by template id, or unmapped)."""
    ids, selectors = _signatures()
    if (catalog, tid) in ids:
        return ids[(catalog, tid)], None
    best: tuple[Any, int, str, dict[str, Any]] | None = None
    text, on = _Text(entry), sites if sites is not None else entry.get("sites", ())
    for rank, cause, cat, select in selectors:
        if best is not None and rank != best[0]:
            break
        if cat == catalog and _claims(catalog, select, text, on):
            # of equally ranked selectors, the one whose module glob fits the site closest (speculative decoding's
            # ``vllm/config/speculative.py`` before every config module's ``vllm/config/*``)
            fit = _module_fit(select, on)
            if best is None or fit > best[1]:
                best = (rank, fit, cause, select)
    return (best[2], best[3]) if best else (None, None)


def _module_fit(select: dict[str, Any], sites: Any) -> int:
    """The literal length of the longest of a selector's module globs that matches one of the sites (0: none given)."""
    globs = _as_tuple(select.get("module", ()))
    files = [s["file"] if isinstance(s, dict) else s.file for s in sites]
    return max((len(g.replace("*", "")) for g in globs if any(fnmatchcase(f, g) for f in files)), default=0)


#: How specific a mapping is, from most to least (docs/error-catalog.md counts each).
SPECIFICITY = ("message", "setting", "subsystem", "stage")


@lru_cache(maxsize=1)
def stage_causes() -> frozenset[str]:
    """The causes that claim templates by their start-up stage alone (a selector with ``startup`` and no ``words``,
    ``names`` or ``module``): engine-config-rejected, model-load-failed, … — whatever else they also claim."""
    from doctor.logs.source import signatures

    return frozenset(cause for cause, sigs in signatures().items()
                     if any(_shape(s["select"]) == "stage" for s in sigs if "select" in s))


def how_mapped(catalog: str, tid: str, entry: dict[str, Any], sites: Any = None) -> tuple[str | None, str | None]:
    """(cause, specificity) of a template; specificity ``stage`` for a stage cause however it claimed it, None when
    unmapped."""
    cause, select = mapping(catalog, tid, entry, sites)
    if cause is None:
        return None, None
    return cause, "stage" if cause in stage_causes() else _shape(select)


#: Exceptions whose class is itself the message: a module could not be imported (or the engine's own check found
#: a package missing or too old, vllm/model_executor/model_loader/weight_utils.py, sglang/srt/model_loader/loader.py
#: raise ImportError for both), whatever the module that raised it is about.
IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError"})


def _says(select: dict[str, Any]) -> bool:
    """Whether a selector knows its cause from what the line says: its words, or an exception class that says it."""
    types = set(_as_tuple(select.get("type", ())))
    return "words" in select or bool(types) and types <= IMPORT_ERRORS


def _shape(select: dict[str, Any] | None) -> str:
    """How a selector (None: a template id) knows its cause (how_mapped: and the cause's own kind): by what the ``message`` says (an id, ``words``), by the
    ``setting`` its condition or text names (``names``), by the ``subsystem`` it is raised in (``module`` or
    ``function``: speculative decoding's config, the model loaders, the platforms), or by the start-up ``stage``
    alone (a ``startup`` class: argument validation, model loading, …), which names no specific fix."""
    if select is None or _says(select):
        return "message"
    if "names" in select:
        return "setting"
    if "module" in select or "function" in select:
        return "subsystem"
    return "stage" if "startup" in select else "subsystem"
