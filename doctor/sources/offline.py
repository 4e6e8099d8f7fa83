"""Offline sources: the facts a user can hand over without a running server.

`lint`, `plan`, `check` (offline, or filling what live probes could not reach) and `report --targets` all read
the same inputs — a launch command, a model config, a GPU name, recorded files, a description of the
workload — so they all go through here. Each function turns one input into facts; ``gather`` puts them
together in the order their dependencies need (the command names the engine, the engine decides the KV
layout and the expected parser names), and derived facts and playbooks come after.

A missing optional input is not an error: its namespace is simply unknown and the trees say what they could
not check. A *given* input that is wrong (unreadable file, unknown GPU, garbage command) is an InputError.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.sources.card import float32_facts, online_fp8_facts, parser_token_facts
from doctor.sources.launch import parser_since_facts, spelling_facts
from doctor.versions import orderable_version

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from doctor.engines.command import LaunchCommand

#: Recorded files a user may pass are read with this cap: the live probes' body cap (doctor.probes.base), since a
#: saved /metrics or /server_info is one such body (a real /metrics of 64 DP ranks is a few MB).
MAX_INPUT_BYTES = 16 * 1024 * 1024


@dataclass
class Workload:
    """What the user says about the traffic; every field optional."""

    context: int | None = None
    users: int | None = None
    reproducible: bool = False
    text_only: bool = False
    temperature: float | None = None


@dataclass
class OfflineInputs:
    """What the user handed over without a server: a command, a config, a GPU, recorded files, a workload."""

    command: str | list[str] | None = None
    #: where the command came from; only one the user typed may fail the run (a process argv may be anything)
    command_from: str = "--command"
    engine_version: str | None = None
    config: str | None = None
    #: a config's content instead of a path (replayed snapshots carry it); ``config`` is then its name
    config_json: dict[str, Any] | None = None
    gpu: str | None = None
    #: --gpu-mem SIZE: the memory of each GPU, over the catalog's or NVML's (a 48 GB RTX 4090, an unknown GPU)
    gpu_mem: str | None = None
    nvidia_smi: str | None = None  # path
    metrics: str | None = None  # path of a /metrics scrape
    server_info: str | None = None  # path of a /server_info (or /get_server_info) JSON body
    workload: Workload = field(default_factory=Workload)
    #: never ask the Hugging Face Hub for a model not found locally (--offline; HF_HUB_OFFLINE does the same)
    offline: bool = False
    log: str | None = None  # path of the engine's server log ('-': standard input)
    #: path of what a client got back (an API error body, the client's traceback): read with the log, after it
    client_output: str | None = None
    #: a log excerpt a snapshot recorded (doctor.logs.parse), read instead of ``log``
    log_excerpt: dict[str, Any] | None = None
    #: generation_config.json content recorded with ``config_json`` (a replayed snapshot)
    generation_config_json: dict[str, Any] | None = None
    #: replaying a snapshot: the served model's files on this machine are not the ones the run saw
    replay: bool = False
    #: cause id → log signatures of the playbooks loaded (the user's --playbooks too); None: the built-in causes'
    log_signatures: dict[str, list[dict[str, Any]]] | None = None
    #: seconds a repo id's lookup may take (its own thread; doctor/model/resolve.py); None: no bound of its own
    hub_budget_s: float | None = None
    #: the command is one input among others (check with a log, a config, a symptom, …): one that names no launch
    #: llmdoctor can read (a wrapper such as `xinference launch`, a script of the user's own) is said in a note and
    #: the other inputs decide, instead of the run ending as bad input
    command_optional: bool = False


@dataclass
class Gathered:
    """Facts plus the parsed objects renderers want (the command's flags, the model card)."""

    facts: Facts
    command: LaunchCommand | None = None
    card: Any = None
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------ single inputs
def command_facts(text: str | list[str], engine_version: str | None = None,
                  engine: str | None = None, *, observed: bool = False) -> tuple[LaunchCommand, Facts]:
    """``observed``: the argv of a running process or what a server reports — ``${PORT}`` there is what the engine
    really received, not a placeholder (doctor/engines/placeholders.py reads pasted commands only)."""
    from doctor.engines.command import parse_command
    from doctor.engines.launch_facts import launch_facts

    command = parse_command(text, engine_version=engine_version, engine=engine, placeholders=not observed)
    return command, launch_facts(command)


def model_facts_for(spec: str, *, kv_cache_dtype: str | None, engine: str | None, gpu_sm: int | None = None,
                    raw: dict[str, Any] | None = None, offline: bool = False, served: str | None = None,
                    launch_quantization: str | None = None, engine_version: str | None = None,
                    generation: dict[str, Any] | None = None, budget_s: float | None = None,
                    flag: Callable[[str], Any] | None = None,
                    env: Callable[[str], Any] | None = None) -> tuple[Any, Facts]:
    """Find a model (path, directory, HF cache, the Hub unless offline, example:NAME — or ``raw`` content named
    ``spec``; doctor/model/resolve.py) and describe it as facts, its weights sized for the ``served`` checkpoint.
    The KV facts follow the launch: the engine's layout and the forced KV dtype, or — for DSA models, whose
    precision the engine picks — what that engine picks on this GPU; for MLA models, the layout of the engine
    release (``engine_version``: vLLM cached every head before 0.7.1, doctor/model/memory.py). ``generation``: a
    recorded generation_config.json (a replayed snapshot), used instead of the model directory's. ``flag(dest)``:
    the launch command's value of a flag that switches the release's layout (SGLang's --enable-mla / --disable-mla);
    ``env(name)``: of a variable of the launch environment that does (vLLM's VLLM_MLA_DISABLE).
    """
    from doctor.model.resolve import model_card

    sized = model_card(spec, raw=raw, offline=offline, served_name=served, launch_quantization=launch_quantization,
                       budget_s=budget_s)
    card = sized.card
    from doctor.model.facts import model_facts
    from doctor.model.kvcache import normalize_kv_dtype

    kv_dtype = "auto"
    if kv_cache_dtype:
        try:
            kv_dtype = normalize_kv_dtype(kv_cache_dtype)
        except InputError:  # an engine spelling inspect does not know: size at the checkpoint dtype
            kv_dtype = "auto"
    elif "dsa" in (card.attention, card.full_attention) and engine and gpu_sm is not None:
        kv_dtype = _dsa_auto_kv(engine, gpu_sm)
    try:
        facts = model_facts(card, kv_dtype=kv_dtype, engine=engine)
    except InputError:  # e.g. fp4 on a layout no engine supports: fall back to the checkpoint dtype
        facts = model_facts(card, kv_dtype="auto", engine=engine)
    from doctor.model.memory import group_padding_facts, release_kv_facts

    resolved = sized.resolved
    facts.update(release_kv_facts(card, resolved.config.raw, engine, engine_version,
                                  str(facts.get("model.kv_dtype")), flag, env))
    facts.update(group_padding_facts(card, facts, engine, engine_version))
    facts.set("model.resolved_from", resolved.origin, resolved.where)
    facts.set("model.same_checkpoint", sized.same_checkpoint, sized.same_source)
    if resolved.chat_template is not None:
        facts.set("model.chat_template", resolved.chat_template, resolved.chat_template_source)
    from doctor.engines.maxlen import derived_max_len

    limit = derived_max_len(resolved.config.raw)
    if limit is None:
        facts.error("model.max_len_derived", "config.json has none of the length keys vLLM reads")
    else:
        facts.set("model.max_len_derived", limit[0], f"{limit[1]} (vLLM's derived max_model_len)")
    if engine == "sglang":
        from doctor.engines.sglang_maxlen import sglang_context_len

        length, how = sglang_context_len(resolved.config.raw)
        facts.set("model.sglang_context_len", length, f"{how} (SGLang's derived context_length)")
    if generation is not None:
        facts.update(generation_defaults(generation, f"{spec} generation_config.json (recorded)"))
    elif resolved.origin != "given":
        facts.update(generation_defaults(resolved.generation, resolved.generation_source or "generation_config.json"))
    return card, facts


def _dsa_auto_kv(engine: str, sm: int) -> str:
    """What `--kv-cache-dtype auto` becomes for a DSA model on this engine and GPU (doctor/engines/dsa_kv.yaml)."""
    from doctor.engines.dsa_kv import dsa_auto_kv

    auto = dsa_auto_kv().get(engine)
    if not auto:
        return "auto"
    return auto["at_or_above"] if sm >= auto.get("min_sm", 10**6) else auto["below"]


def generation_defaults(data: dict[str, Any] | None, source: str) -> Facts:
    """The model's sampling defaults (generation_config.json): vLLM applies them to requests that set none."""
    out = Facts()
    name = source.rsplit("/", 1)[-1].rsplit(": ", 1)[-1]
    if not isinstance(data, dict):
        out.error("model.default_temperature", f"no readable {name} beside config.json")
        return out
    temperature = data.get("temperature") if data.get("do_sample", True) is not False else 0
    if isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
        out.set("model.default_temperature", float(temperature), f"{source}:temperature")
    else:
        out.set("model.default_temperature", None, f"{source}: no temperature")
    return out


def placeholder_notes(command: LaunchCommand) -> list[str]:
    """What the output says about placeholders: which values were unknown, which defaults were used."""
    unknown = [f"{p['flag']} {p['word']}" for p in command.placeholders if p["default"] is None]
    defaults = [f"{p['flag']} {p['word']} → {p['default']}" for p in command.placeholders if p["default"] is not None]
    notes = []
    if unknown:
        notes.append("placeholders (values unknown, the checks that need them are skipped): " + ", ".join(unknown))
    if defaults:
        notes.append("placeholders read as their defaults: " + ", ".join(defaults))
    return notes


def gpu_facts_for(spec: str, gpu_mem: str | None = None) -> Facts:
    """The gpu.* facts of ``--gpu`` (and ``--gpu-mem``); raises UnknownGpu for a name the catalog lacks without
    ``--gpu-mem``, which ``gather`` turns into unknown GPU facts."""
    from doctor.hardware.spec import gpu_facts, parse_gpu_spec

    memory = _gpu_mem_bytes(gpu_mem)
    return gpu_facts(parse_gpu_spec(spec, gpu_mem=memory, gpu_mem_text=gpu_mem), f"--gpu {spec}")


def _gpu_mem_bytes(gpu_mem: str | None) -> int | None:
    if gpu_mem is None:
        return None
    from doctor.model.units import parse_bytes

    return parse_bytes(gpu_mem, flag="--gpu-mem")


def _gpu_inputs(inputs: OfflineInputs, facts: Facts, notes: list[str]) -> None:
    """--gpu / --gpu-mem into facts. An unknown name does not stop lint/check: its facts stay unknown, with what to
    pass; an ambiguous one says which variant was assumed; --gpu-mem overrides any other memory source."""
    if inputs.gpu:
        from doctor.hardware.spec import (  # lazy: a lint without --gpu never loads it
            UnknownGpu,
            vendor_from_name,
        )

        try:
            gpu = gpu_facts_for(inputs.gpu, inputs.gpu_mem)
        except UnknownGpu as exc:
            source = f"--gpu {inputs.gpu}"
            gpu = Facts()
            gpu.set("gpu.known", False, f"{source}: not in the GPU catalog")
            gpu.set("gpu.count", exc.count, source)
            gpu.error("gpu", str(exc))
            vendor = vendor_from_name(exc.name, source)
            if vendor:  # an AMD GPU the catalog lacks still runs the ROCm stack: the vendor is what that decides
                gpu.set("gpu.vendor", *vendor)
            notes.append(f"{exc} — the GPU checks are skipped")
        facts.update(gpu, overwrite=False)
        if gpu.get("gpu.assumed"):
            notes.append(f"--gpu: {gpu.get('gpu.assumed')}")
    if inputs.gpu_mem:
        memory = _gpu_mem_bytes(inputs.gpu_mem)
        facts.set("gpu.memory_bytes", memory, f"--gpu-mem {inputs.gpu_mem}")


def nvidia_smi_facts(path: str) -> Facts:
    from doctor.probes.gpu import gpu_probe_facts, read_nvidia_smi

    return gpu_probe_facts(read_nvidia_smi(read_text(path, "--nvidia-smi"), f"nvidia-smi {path}"),
                           f"nvidia-smi {path}")


def metrics_file_facts(path: str) -> Facts:
    """A saved /metrics scrape, interpreted exactly as a live scrape (the probe's own interpret)."""
    from doctor.probes import metrics
    from doctor.probes.base import interpret_raw

    facts, error = interpret_raw(metrics, metrics.raw_from_text(read_text(path, "--metrics"), f"file {path}"))
    if error:
        raise InputError(f"--metrics {path}: {error}")
    return facts


def server_info_facts(path: str) -> Facts:
    """A saved /server_info body, interpreted exactly as a live answer."""
    from doctor.probes import server
    from doctor.probes.base import interpret_raw

    facts, error = interpret_raw(server, server.raw_from_body(read_text(path, "--server-info"), f"file {path}"))
    if error:
        raise InputError(f"--server-info {path}: {error}")
    return facts


def log_input_facts(inputs: OfflineInputs) -> Facts:
    """The engine's server log (or the excerpt a snapshot recorded) as ``log.*`` facts."""
    from doctor.logs.source import read_log_input, replay_excerpt

    sigs = inputs.log_signatures
    reading = (replay_excerpt(inputs.log_excerpt, sigs) if inputs.log_excerpt is not None
               else read_log_input(inputs.log, sigs, inputs.client_output))
    return reading.facts


def log_engine_facts(facts: Facts) -> None:
    """The engine and release a log names, when no launch command could be read: fixes then speak its flags."""
    for key, source in (("launch.engine", "log.engine"), ("launch.version", "log.version")):
        fact = facts.fact(source)
        if fact is not None and fact.value and key not in facts:
            facts.set(key, fact.value, fact.source)
    facts.error("launch", facts.unknown_reason("log.launch_command") or
                "no launch command (pass --command; the log did not print the engine's arguments)")


#: The engine's own runtime statistics a log prints (vLLM's "Engine 000:" line, SGLang's "Decode batch" line),
#: as the /metrics facts they equal; a scrape, when there is one, wins.
_LOG_STATS = {"running": "metrics.running", "waiting": "metrics.queued", "kv_usage": "metrics.kv_usage",
              "prefix_hit_rate": "metrics.prefix_hit_rate"}


def log_stats_facts(facts: Facts) -> None:
    """Fill the runtime facts /metrics would give from the last statistics the server logged (and SGLang's
    effective request cap), once every other input has spoken: what a scrape or the command says wins."""
    stats = facts.fact("log.stats")
    if stats is not None and isinstance(stats.value, dict):
        for field, key in _LOG_STATS.items():
            value = stats.value.get(field)
            if isinstance(value, (int, float)) and key not in facts:
                facts.set(key, value, f"{stats.source} ({field})", observed=True)
    cap = facts.fact("log.max_running_requests")  # SGLang's effective cap, as it printed it at start-up
    if cap is not None and "launch.max_num_seqs" not in facts:
        facts.set("launch.max_num_seqs", cap.value, cap.source)
    rocm = facts.fact("log.rocm")  # the GPU named nowhere else: the log's ROCm lines say it is AMD's
    if rocm is not None and "gpu.vendor" not in facts:
        facts.set("gpu.vendor", "amd", f"{rocm.source} ({rocm.value})")
    rate = facts.fact("log.spec_accept_rate")
    if rate is not None and "metrics.spec_accept_rate" not in facts:
        facts.set("metrics.spec_accept_rate", rate.value, rate.source, observed=True)


def engine_kwarg_facts(facts: Facts) -> None:
    """The engine arguments a launcher passed (log.engine_kwargs_unknown) against the flag catalogs' history (the
    argument's flag, ``--name-with-dashes``): ``launch.kwargs_too_new`` for those a later release has (the release
    given is older than the launcher expects), and, joining ``launch.removed_flags``, those only earlier releases
    had (the launcher is older than the release: vLLM's ``disable_log_requests``, dropped in 0.11.0). An argument the
    release itself has names neither: the release that refused it is not the one given (a mixed installation), and
    the engine's error stays unplaced. Either kind explains the TypeError, so it leaves
    ``log.catalog.unmapped_refusals``."""
    names = facts.get("log.engine_kwargs_unknown")
    engine = facts.get("launch.engine") or facts.get("log.engine")
    version = facts.get("launch.version")
    if not names or engine not in ("vllm", "sglang") or not version:
        return
    from doctor.engines.catalog import flag_runs, option_since, release_index
    from doctor.versions import version_at_least

    since = option_since(engine)
    source = f"{facts.fact('log.engine_kwargs_unknown').source} against the {engine} flag catalogs' history"
    found = [{"argument": name, "since": since[flag]} for name in names
             if (flag := "--" + name.replace("_", "-")) in since and not version_at_least(version, since[flag])]
    if found:
        facts.set("launch.kwargs_too_new", found, f"{source} (the first release with each argument's flag)")
    order = release_index(engine)
    releases = sorted(order, key=order.__getitem__)
    removed = []
    for name in names:
        runs = flag_runs(engine).get("--" + name.replace("_", "-"), []) if name not in {f["argument"] for f in found} else []
        if not runs or not version_at_least(version, runs[0][0]):
            continue
        current = next((r for r in runs if version_at_least(version, r[0]) and version_at_least(r[1], version)), None)
        if current is None:  # every release that had it is before the one given
            last = runs[-1][1]
            dropped = releases[order[last] + 1] if order[last] + 1 < len(releases) else last
            note = f"passed as the engine argument {name}; {engine} {dropped} dropped it (last in {last})"
        elif current[2].get("deprecated") and order.get(current[0], 0) > 0:
            # the release keeps the flag only as a deprecated spelling, and its argument class refused the keyword
            # (the TypeError): the argument itself is gone (vllm/engine/arg_utils.py:1752, 0.10.1-0.16.0,
            # --disable-log-requests, whose field became enable_log_requests)
            last, dropped = releases[order[current[0]] - 1], version
            note = (f"passed as the engine argument {name}; {engine} {current[0]} deprecated its flag and {version} "
                    f"refuses the argument")
        else:
            continue
        removed.append({"flag": "--" + name.replace("_", "-"), "since": runs[0][0], "last": last,
                        "dropped_in": dropped, "version_known": True, "note": note})
    if removed:
        facts.set("launch.removed_flags", [*(facts.get("launch.removed_flags") or []), *removed],
                  f"{source} (the last release with each argument's flag)")
    explained = {f["argument"] for f in found} | {r["flag"][2:].replace("-", "_") for r in removed}
    refusals = facts.fact("log.catalog.unmapped_refusals")
    if explained and refusals is not None and refusals.value:
        kept = [r for r in refusals.value
                if not any(f"unexpected keyword argument '{name}'" in str(r.get("message", "")) for name in explained)]
        facts.set("log.catalog.unmapped_refusals", kept, refusals.source)


def workload_facts(workload: Workload) -> Facts:
    out = Facts()
    if workload.context is not None:
        out.set("workload.context", workload.context, "--context")
    if workload.users is not None:
        out.set("workload.users", workload.users, "--users")
    out.set("workload.reproducible", workload.reproducible, "--reproducible" if workload.reproducible else
            "default (no --reproducible)")
    out.set("workload.text_only", workload.text_only, "--text-only" if workload.text_only else
            "default (no --text-only)")
    if workload.temperature is not None:
        out.set("workload.temperature", workload.temperature, "--temperature")
    return out


def _names_an_engine(argv: list[str]) -> bool:
    """Whether an observed process's argv starts an engine (``vllm serve``, ``-m sglang.launch_server``, …)."""
    from doctor.engines.shapes import find_launch

    try:
        return find_launch(argv).engine is not None
    except InputError:
        return False


def _program(argv: list[str]) -> str:
    """The process's program and its first words, for the one line that says why its argv was not read."""
    words = " ".join(str(word) for word in argv[:3])
    return words if len(words) <= 60 else words[:57] + "..."


# ------------------------------------------------------------------------------------------ all together
def gather(inputs: OfflineInputs, live: Facts | None = None) -> Gathered:
    """Every offline input as facts, on top of ``live`` facts (which win: they were observed just now)."""
    facts = Facts()
    if live is not None:
        facts.update(live)
    gathered = Gathered(facts)
    if inputs.server_info:
        facts.update(server_info_facts(inputs.server_info), overwrite=False)
    if inputs.metrics:
        facts.update(metrics_file_facts(inputs.metrics), overwrite=False)
    if inputs.log or inputs.log_excerpt or inputs.client_output:
        facts.update(log_input_facts(inputs), overwrite=False)
    text, origin, version = inputs.command, inputs.command_from, inputs.engine_version
    unread = False  # a --command given that names no launch llmdoctor reads (command_optional)
    if text is None:  # no --command: the one the server reports, the listening process's argv, the log's
        for key in ("server.launch_command", "process.argv", "log.launch_command"):
            if key == "process.argv" and facts.get(key) and not _names_an_engine(facts.get(key)):
                # What listens on the port may be a proxy, a gateway or a wrapper script: its own options are
                # not the engine's flags, and reading them as such makes up unknown flags.
                facts.error("launch", f"the process listening on the port ({_program(facts.get(key))}) is not a "
                                      "vLLM or SGLang launch: its command line is not read as engine flags")
                continue
            if facts.get(key):
                text, origin = facts.get(key), key
                version = version or facts.get("server.version") or facts.get("launch.version") or \
                    facts.get("log.version")
                break
    if text is not None:
        try:
            command, launch = command_facts(text, version, engine=facts.get("server.engine"),
                                            observed=origin != "--command")
        except InputError as exc:
            from doctor.engines.shapes import WHERE

            if origin == "--command" and not (inputs.command_optional and str(exc).startswith(WHERE)):
                raise
            facts.error("launch", f"{origin} is not a launch command llmdoctor can read: {exc}")
            if origin == "--command":
                unread = True
                from doctor.engines.shapes import other_subcommand

                sub = other_subcommand(text)
                if sub:
                    facts.set("launch.other_subcommand", sub, "--command: an engine sub-command other than serve")
                gathered.notes.append(f"{exc} — the command was not read (its flags are not checked); the other "
                                      "inputs were")
        else:
            gathered.command = command
            # What a server reports of its resolved configuration beats what its command line says.
            facts.update(launch, overwrite="server.engine" not in facts)
            facts.update(parser_since_facts(command), overwrite=False)
            facts.update(spelling_facts(command), overwrite=False)
            gathered.notes.extend(placeholder_notes(command))
    if (text is None or unread) and inputs.engine_version:
        facts.set("launch.version", inputs.engine_version, "--engine-version")
    if (text is None or unread) and facts.get("log.engine"):  # no command read, but the log names the engine
        log_engine_facts(facts)
    engine_kwarg_facts(facts)
    if "launch" not in _namespaces(facts):
        facts.error("launch", "no launch command (pass --command, or --endpoint of a server that reports it)")

    if inputs.nvidia_smi:
        facts.update(nvidia_smi_facts(inputs.nvidia_smi), overwrite=False)
    _gpu_inputs(inputs, facts, gathered.notes)

    config_spec = inputs.config or _config_from_launch(facts)
    if config_spec and inputs.replay and not inputs.config:
        # A snapshot that did not record the served model's config: the files at that path on this machine
        # may be another model (or absent), so they are not read in its place.
        facts.error("model", f"the snapshot does not carry the served model's config.json ({config_spec} is not "
                             "read here: it may not be the model the run saw); pass --config")
    elif config_spec:
        try:
            gathered.card, model = model_facts_for(
                config_spec, kv_cache_dtype=facts.get("launch.kv_cache_dtype"), engine=facts.get("launch.engine"),
                gpu_sm=facts.get("gpu.sm"), raw=inputs.config_json, offline=inputs.offline,
                served=facts.get("launch.model") or facts.get("server.model_path"),
                launch_quantization=facts.get("launch.quantization"),
                engine_version=orderable_version(facts.get("launch.version")),
                generation=inputs.generation_config_json, budget_s=inputs.hub_budget_s,
                flag=lambda dest: facts.get(f"launch.flags.{dest}"),
                env=lambda name: facts.get(f"launch.env.{name}"))
            facts.update(model, overwrite=False)
            facts.update(online_fp8_facts(gathered.card, facts))
            facts.update(float32_facts(gathered.card, facts))
            from doctor.model.memory import engine_pool_facts, non_kv_facts

            facts.update(engine_pool_facts(gathered.card, facts))
            facts.update(non_kv_facts(gathered.card, facts), overwrite=False)
            # a config handed over as content (a snapshot) has no tokenizer files beside it
            facts.update(parser_token_facts(facts, gathered.card if inputs.config_json is None else None),
                         overwrite=False)
        except InputError as exc:
            from doctor.model.names import name_facts
            from doctor.model.resolve import ModelNotResolved

            # A config the user named that is wrong is bad input; a repo found nowhere (gated, not on the Hub,
            # Hub unreachable, offline) is not: the run carries on with the model unknown, and says why.
            if inputs.config and not isinstance(exc, ModelNotResolved):
                raise
            facts.error("model", f"model config not found ({exc})")

            facts.update(name_facts(config_spec), overwrite=False)
    elif facts.unknown_reason("launch.model"):
        facts.error("model", f"{facts.unknown_reason('launch.model')}; pass --config PATH|REPO for the model checks")
    else:
        facts.error("model", "no model config (pass --config PATH|REPO)")

    if "gpu.name" not in facts and not facts.unknown_reason("gpu"):
        facts.error("gpu", "no GPU given")
    facts.update(workload_facts(inputs.workload), overwrite=False)
    log_stats_facts(facts)
    return gathered


def _config_from_launch(facts: Facts) -> str | None:
    """The model the server loads: a path, a repo id in the HF cache or on the Hub (doctor/model/resolve.py)."""
    return facts.get("launch.model") or facts.get("server.model_path")


def _namespaces(facts: Facts) -> set[str]:
    return {f.key.split(".")[0] for f in facts}


def read_command_file(path: str, flag: str) -> str:
    """A launch command from a file, or from standard input for ``-``: capped before reading, never empty."""
    from doctor.engines.shapes import MAX_COMMAND_CHARS

    if path == "-":
        from doctor.inio import decode_text, read_stdin_capped

        text = decode_text(read_stdin_capped(limit=MAX_COMMAND_CHARS), "standard input")
        where = f"{flag} - (standard input)"
    else:
        text = read_text(path, flag, limit=MAX_COMMAND_CHARS)
        where = f"{flag} {path}"
    if not text.strip():
        raise InputError(f"{where}: empty, no launch command in it")
    return text


def read_text(path: str, flag: str, *, limit: int = MAX_INPUT_BYTES) -> str:
    """A user's file as text: one clear line if it is missing, too large, binary or not UTF-8 (capped before
    it is read, so a wrong path to a weights file or a pipe that never ends fails at once)."""
    from doctor.inio import read_text_capped

    return read_text_capped(path, limit=limit, label=f"{flag} {path}")
