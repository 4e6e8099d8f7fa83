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
  |            | `ParallelConfig`; SGLang's argument group, `Parallel`), by dest and field name     |

A template id beats a selector; among selectors, what the message says (``words``) beats the setting its
condition names (``names``), which beats where it is raised; then more keys; then the cause id's order.
``names`` is how the start-up refusals are mapped by construction rather than one at a time: a template raised
under ``if self.tensor_parallel_size …`` (or saying "tensor parallel size") is about the parallel layout.
"""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any

#: Where a server is being set up, per catalog: (start-up class, file globs). A template raised or logged
#: in these files is reachable before the server serves (docs/error-catalog.md reports the share mapped).
STARTUP: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "vllm": (
        ("arguments", ("vllm/config.py", "vllm/config/*", "vllm/engine/arg_utils.py",
                       "vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/cli/*", "vllm/utils/argparse_utils.py",
                       "vllm/entrypoints/openai/api_server.py", "vllm/entrypoints/utils.py",
                       "vllm/entrypoints/launchers/*")),
        ("model-load", ("vllm/model_executor/model_loader/*", "vllm/transformers_utils/*",
                        "vllm/model_executor/models/registry.py", "vllm/model_executor/models/config.py",
                        "vllm/tokenizers/*", "vllm/multimodal/registry.py")),
        ("device-init", ("vllm/platforms/*", "vllm/worker/worker.py", "vllm/worker/worker_base.py",
                         "vllm/v1/worker/gpu_worker.py", "vllm/v1/worker/worker_base.py", "vllm/executor/*",
                         "vllm/v1/executor/*", "vllm/distributed/parallel_state.py",
                         "vllm/distributed/device_communicators/pynccl*.py")),
        ("kv-sizing", ("vllm/v1/core/kv_cache_utils.py", "vllm/v1/core/kv_cache_planning.py", "vllm/worker/cache_engine.py",
                       "vllm/core/block_manager*.py", "vllm/v1/core/kv_cache_manager.py")),
        ("parsers", ("vllm/entrypoints/openai/tool_parsers/abstract_tool_parser.py",
                     "vllm/entrypoints/openai/tool_parsers/__init__.py", "vllm/tool_parsers/__init__.py",
                     "vllm/tool_parsers/abstract_tool_parser.py", "vllm/reasoning/__init__.py",
                     "vllm/reasoning/abs_reasoning_parsers.py", "vllm/parser/parser_manager.py")),
    ),
    "sglang": (
        ("arguments", ("sglang/srt/server_args.py", "sglang/srt/server_args_config_parser.py",
                       "sglang/srt/arg_groups/*", "sglang/srt/configs/model_config.py",
                       "sglang/srt/configs/load_config.py", "sglang/srt/configs/device_config.py")),
        ("model-load", ("sglang/srt/model_loader/*", "sglang/srt/hf_transformers_utils.py",
                        "sglang/srt/utils/hf_transformers_utils.py", "sglang/srt/models/registry.py",
                        "sglang/srt/configs/*")),
        ("device-init", ("sglang/srt/model_executor/model_runner.py", "sglang/srt/distributed/parallel_state.py",
                         "sglang/srt/entrypoints/engine.py", "sglang/srt/managers/tp_worker.py",
                         "sglang/srt/managers/scheduler.py", "sglang/srt/platforms/*",
                         "sglang/srt/model_executor/model_runner_components/*")),
        ("kv-sizing", ("sglang/srt/mem_cache/memory_pool.py", "sglang/srt/mem_cache/memory_pool_host.py",
                       "sglang/srt/model_executor/model_runner_kv_cache_mixin.py")),
        ("parsers", ("sglang/srt/function_call/function_call_parser.py", "sglang/srt/reasoning_parser.py",
                     "sglang/srt/parser/reasoning_parser.py")),
    ),
    "lower": (),
}


def startup_class(catalog: str, file: str) -> str | None:
    """The start-up class of a site's file (``arguments``, ``model-load``, ...), or None."""
    for name, globs in STARTUP.get(catalog, ()):
        if any(fnmatchcase(file, g) for g in globs):
            return name
    return None


def is_startup(catalog: str, sites: Any) -> bool:
    return any(startup_class(catalog, s.file) for s in sites)


def _as_tuple(value: Any) -> tuple[str, ...]:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,)


@lru_cache(maxsize=64)
def _names_pattern(catalog: str, groups: tuple[str, ...], also: tuple[str, ...]) -> re.Pattern[str] | None:
    """One regex for the identifiers a ``names`` selector stands for: ``also`` and, for each flag of the engine's
    newest flag catalog whose field is in ``groups``, its dest and field name. An identifier matches as a whole
    word, its underscores also as blanks or hyphens (a message says "tensor parallel size", a hint
    "--tensor-parallel-size")."""
    names = set(also)
    if groups and catalog in ("vllm", "sglang"):
        from doctor.engines.catalog import load_catalog

        for spec in load_catalog(catalog).flags:
            group, _, field = (spec.field or "").partition(".")
            if group in groups:
                # a compound identifier only: a one-word field (``model``, ``method``, ``backend``) is also an
                # ordinary word of other messages
                names.update(n for n in (spec.dest, field) if n and "_" in n.strip("_"))
    if not names:
        return None
    body = "|".join(re.escape(n).replace("_", "[_ -]") for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![A-Za-z0-9_])(?:{body})(?![A-Za-z0-9_])", re.IGNORECASE)


def _names(catalog: str, value: Any) -> re.Pattern[str] | None:
    if isinstance(value, dict):
        return _names_pattern(catalog, tuple(value.get("groups", ())), tuple(value.get("also", ())))
    return _names_pattern(catalog, (), tuple(_as_tuple(value)))


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
    if "startup" in select and startup_class(catalog, file) not in _as_tuple(select["startup"]):
        return False
    if "names" in select:
        pattern = _names(catalog, select["names"])
        guard = site.get("guard", "") if isinstance(site, dict) else site.guard
        return pattern is not None and bool(pattern.search(text) or pattern.search(guard or ""))
    return True


def selects(catalog: str, select: dict[str, Any], entry: dict[str, Any], sites: Any = None) -> bool:
    """Whether a selector claims a template (``entry`` as stored in the catalog)."""
    text = " ".join(p for p in entry["parts"] if isinstance(p, str))
    if "words" in select:
        lowered = text.lower()
        if not all(str(w).lower() in lowered for w in _as_tuple(select["words"])):
            return False
    return any(_site_holds(catalog, select, s, text) for s in (sites if sites is not None else entry.get("sites", ())))


@lru_cache(maxsize=1)
def _signatures() -> tuple[dict[tuple[str, str], str], tuple[tuple[tuple[bool, bool, int], str, str, dict[str, Any]], ...]]:
    """(catalog, template id) → cause, and the selectors most specific first, from the playbooks."""
    from doctor.logs.source import signatures

    ids: dict[tuple[str, str], str] = {}
    selectors: list[tuple[tuple[bool, bool, int], str, str, dict[str, Any]]] = []
    for cause, sigs in sorted(signatures().items()):
        for sig in sigs:
            if "catalog" not in sig:
                continue
            if "template" in sig:
                ids.setdefault((sig["catalog"], sig["template"]), cause)
            elif "select" in sig:
                select = sig["select"]
                # the message's words say most, then the setting its condition names, then where it is raised
                rank = ("words" in select, "names" in select, len(select))
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
    for _n, cause, cat, select in selectors:
        if cat == catalog and selects(catalog, select, entry, sites):
            return cause, select
    return None, None
