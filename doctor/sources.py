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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doctor.errors import InputError
from doctor.facts import Facts

if TYPE_CHECKING:
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
    #: a log excerpt a snapshot recorded (doctor.logs.parse), read instead of ``log``
    log_excerpt: dict[str, Any] | None = None
    #: generation_config.json content recorded with ``config_json`` (a replayed snapshot)
    generation_config_json: dict[str, Any] | None = None
    #: replaying a snapshot: the served model's files on this machine are not the ones the run saw
    replay: bool = False
    #: the user's --playbooks directories: their causes' log signatures read the log as the built-ins' do
    playbook_dirs: tuple[str, ...] = ()


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
                    generation: dict[str, Any] | None = None) -> tuple[Any, Facts]:
    """Find a model (path, directory, HF cache, the Hub unless offline, example:NAME — or ``raw`` content named
    ``spec``; doctor/model/resolve.py) and describe it as facts, its weights sized for the ``served`` checkpoint.
    The KV facts follow the launch: the engine's layout and the forced KV dtype, or — for DSA models, whose
    precision the engine picks — what that engine picks on this GPU; for MLA models, the layout of the engine
    release (``engine_version``: vLLM cached every head before 0.7.1, doctor/model/memory.py). ``generation``: a
    recorded generation_config.json (a replayed snapshot), used instead of the model directory's.
    """
    from doctor.model.resolve import model_card

    sized = model_card(spec, raw=raw, offline=offline, served_name=served, launch_quantization=launch_quantization)
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
                                  str(facts.get("model.kv_dtype"))))
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
    """What `--kv-cache-dtype auto` becomes for a DSA model on this engine and GPU (doctor/plan/rules.yaml)."""
    from doctor.plan.rules import rules

    auto = rules()["dsa_auto_kv"].get(engine)
    if not auto:
        return "auto"
    return auto["at_or_above"] if sm >= auto.get("min_sm", 10**6) else auto["below"]


def online_fp8_facts(card: Any, facts: Facts) -> Facts:
    """`--quantization fp8` on a 16-bit checkpoint: the engine quantizes while loading, so the GPUs hold FP8."""
    out = Facts()
    if card is None or facts.get("model.quantization") is not None or facts.get("launch.quantization") != "fp8" \
            or facts.get("model.same_checkpoint") is False:  # then the served checkpoint was sized already
        return out
    from doctor.model.weights import plan_weights

    weights = plan_weights(card, "fp8", model_path=None)
    out.set("model.weight_bytes", weights.total_bytes, f"{weights.source} (--quantization fp8)")
    out.set("model.expert_weight_bytes", weights.expert_bytes, f"{weights.source} (--quantization fp8)")
    return out


#: --dtype spellings that mean 32-bit floats (vllm 0.32.0 vllm/config/model.py:2369 maps "float" and "float32")
FLOAT32_DTYPES = ("float32", "float")


def float32_facts(card: Any, facts: Facts) -> Facts:
    """`--dtype float32` on an unquantized checkpoint: the engine holds every weight in 4 bytes, and its KV too
    unless --kv-cache-dtype says otherwise (``auto`` follows the model's dtype)."""
    out = Facts()
    dtype = str(facts.get("launch.flags.dtype") or "").lower()
    if card is None or dtype not in FLOAT32_DTYPES or facts.get("model.quantization") is not None:
        return out
    weights, per_token = facts.get("model.weight_bytes"), facts.get("model.kv_bytes_per_token")
    if isinstance(weights, int) and card.dtype in ("bfloat16", "float16"):
        out.set("model.weight_bytes", weights * 2, f"derived: {card.dtype} weights held in float32 (--dtype {dtype})")
    if isinstance(per_token, int) and str(facts.get("launch.kv_cache_dtype") or "auto") == "auto" \
            and facts.get("model.kv_dtype") in ("bf16", "fp16"):
        why = f"derived: KV in float32, the model's dtype (--dtype {dtype}, --kv-cache-dtype auto)"
        out.set("model.kv_bytes_per_token", per_token * 2, why)
        growing = facts.get("model.kv_bytes_per_token_growing")
        if isinstance(growing, (int, float)):
            out.set("model.kv_bytes_per_token_growing", growing * 2, why)
        out.set("model.kv_dtype", "fp32", f"--dtype {dtype} with --kv-cache-dtype auto")
    return out


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


def family_facts(facts: Facts) -> Facts:
    """The model family (by name, architectures, model_type) and the parsers it expects on this engine."""
    from doctor.engines.families import expected_facts, match_family

    name = facts.get("launch.model") or facts.get("server.model_path") or facts.get("model.name")
    found = match_family(architectures=facts.get("model.architectures") or facts.get("server.architectures"),
                         model_type=facts.get("model.model_type") or facts.get("server.model_type"),
                         name=name)
    out = Facts()
    if found is None:
        out.error("expect", f"no model family matches {name or 'this model'} (doctor/engines/families.yaml)")
        return out
    engine = facts.get("launch.engine")
    if engine is None:
        out.set("model.family", found.id, "doctor/engines/families.yaml")
        out.error("expect", "the engine is not known, so neither are its parser names")
    else:
        out = expected_facts(found, engine, _orderable_version(facts.get("launch.version")))
    if "model.architectures" not in facts and (found.matched_by or "").startswith("name "):
        from doctor.model.names import NAME_ONLY

        for key in ("model.family", "model.family_variant", "model.family_alternatives"):
            if key in out:  # no config to confirm it: the name alone decided
                out.set(key, out.get(key), f"{NAME_ONLY} ({found.matched_by}); low confidence: no config.json")
    return out


def parser_since_facts(command: LaunchCommand) -> Facts:
    """For parsers the command names but its engine version lacks: the first release that registers them."""
    from doctor.engines.catalog import registered_runs, registered_since

    out = Facts()
    for dest, attr, key in (("tool_call_parser", "tool_parsers", "launch.tool_parser_since"),
                            ("reasoning_parser", "reasoning_parsers", "launch.reasoning_parser_since")):
        name = command.get(dest)
        if not name or name == "auto":
            continue
        if name in getattr(command.catalog, attr):
            out.set(key, None, f"engine catalogs: {name!r} is registered in {command.engine} "
                               f"{command.catalog.version}")
            out.set(key.replace("_since", "_registered"), True, f"engine catalogs: {name!r} is registered in "
                    f"{command.engine} {command.catalog.version}")
            continue
        since = registered_since(command.engine, attr, name, command.catalog.version)
        out.set(key, since, f"engine catalogs: first {command.engine} release registering {name!r}"
                if since else f"engine catalogs: no {command.engine} release registers {name!r}")
        if since is None:
            out.set(key.replace("_since", "_registered"),
                    *_registered(command, attr, name, registered_runs(command.engine, attr, name)))
    return out


def _registered(command: LaunchCommand, attr: str, name: str, runs: list[tuple[str, str]]) -> tuple[bool | None, str]:
    """(registered, source) for a parser name the command's release lacks and no later release adds.

    A release that was read (or one between two) lacks it: False, whatever older releases had. With the version
    unknown: whether any release read has it. Older or newer than every release read: a name no release read has
    may be the unread release's own, so unknown (None)."""
    from doctor.engines.catalog import available

    engine, cat = command.engine, command.catalog
    what = attr.replace("_", " ")[:-1]
    releases = available(engine)
    had = f"; {engine} {runs[0][0]}–{runs[-1][1]} had it" if runs else f"; no {engine} release read " \
        f"({releases[0]}–{releases[-1]}) has it"
    if cat.coverage == "unknown":
        return bool(runs), f"engine catalogs: {name!r} is {'' if runs else 'not '}a {what} of any {engine} release " \
                           f"read ({releases[0]}–{releases[-1]})"
    if cat.coverage in ("older", "newer") and not runs:
        return None, f"engine catalogs: {name!r} is not a {what} of any release read; {cat.note}"
    return False, f"engine catalogs: {name!r} is not a registered {what} of {engine} {cat.version}{had}"


def parser_token_facts(facts: Facts, card: Any) -> Facts:
    """launch.tool_parser_tokens_missing: tokens the tool parser's constructor needs (doctor/engines/
    parser_tokens.yaml, read from the engine's wheel) that the served tokenizer lacks — vLLM then refuses to
    start. Read only for the parsers listed, from the model directory's tokenizer files; unknown otherwise."""
    out = Facts()
    parser, engine = facts.get("launch.tool_call_parser"), facts.get("launch.engine")
    if not parser or engine != "vllm":
        return out
    if card is None:
        out.error("launch.tool_parser_tokens_missing", "the served tokenizer is not at hand (no model directory: "
                                                        "pass --config DIR of the served model)")
        return out
    from doctor.engines.catalog import version_key
    from doctor.yamlsafe import load_packaged

    table = load_packaged(Path(__file__).with_name("engines") / "parser_tokens.yaml").get(engine) or {}
    read = sorted(table, key=version_key)
    entry = (table.get(read[-1]) or {}).get(parser) if read else None
    if entry is None:
        out.set("launch.tool_parser_tokens_missing", [], f"{parser} is not among the parsers that need tokens "
                                                         "(doctor/engines/parser_tokens.yaml)")
        return out
    config = Path(card.source)  # the config.json the card was read from (resolve.py: local, HF cache or Hub)
    if config.name != "config.json" or not config.is_file():
        out.error("launch.tool_parser_tokens_missing", f"the served tokenizer is not at hand (the config "
                                                        f"{card.source} is not in a model directory)")
        return out
    vocab = _tokenizer_vocab(config.parent)
    if vocab is None:
        out.error("launch.tool_parser_tokens_missing", f"no readable tokenizer.json or tokenizer_config.json in "
                                                        f"{config.parent}")
        return out
    missing = [t for t in entry["tokens"] if t not in vocab]
    out.set("launch.tool_parser_tokens_missing", missing,
            f"{config.parent.name}/tokenizer files vs tokens {parser} needs ({engine} {read[-1]} "
            f"{entry['source']})")
    return out


#: tokenizer.json of a large vocabulary is a few MB; past this it is not one.
_TOKENIZER_BYTES = 64 * 1024 * 1024


def _tokenizer_vocab(directory: Path) -> set[str] | None:
    """Every token string of the tokenizer in ``directory`` (vocabulary and added tokens), or None."""
    import json

    from doctor.inio import read_text_capped

    tokens: set[str] = set()
    found = False
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.json", "added_tokens.json"):
        path = directory / name
        if not path.is_file():
            continue
        try:
            data = json.loads(read_text_capped(path, limit=_TOKENIZER_BYTES, label=str(path)))
        except (InputError, ValueError, RecursionError):
            continue
        if not isinstance(data, dict):
            continue
        found = True
        model = data.get("model") if isinstance(data.get("model"), dict) else {}
        for source in (model.get("vocab"), data if name in ("vocab.json", "added_tokens.json") else None):
            if isinstance(source, dict):
                tokens.update(k for k in source if isinstance(k, str))
            elif isinstance(source, list):  # unigram vocabularies: [[piece, score], ...]
                tokens.update(p[0] for p in source if isinstance(p, list) and p and isinstance(p[0], str))
        for item in data.get("added_tokens") or []:
            if isinstance(item, dict) and isinstance(item.get("content"), str):
                tokens.add(item["content"])
        for item in (data.get("added_tokens_decoder") or {}).values():
            if isinstance(item, dict) and isinstance(item.get("content"), str):
                tokens.add(item["content"])
    return tokens if found else None


def spelling_facts(command: LaunchCommand) -> Facts:
    """How this engine version spells what fixes ask for, when the spelling changed across versions.

    SGLang 0.5.22+ deprecates `--dp-size N --enable-dp-attention` for `--attn-dp-size N` (its help text says so),
    so a fix must use the spelling of the catalog the command was read with — or, with the version unknown, the
    spelling every release accepts.
    """
    out = Facts()
    if command.engine == "vllm":  # release history: --cuda-graph-sizes 0.9.0–0.12.0, --cudagraph-capture-sizes 0.11.1 on
        modern = command.catalog.resolve("--cudagraph-capture-sizes") is not None
        out.set("engine.cudagraph_sizes_flag", "--cudagraph-capture-sizes" if modern else "--cuda-graph-sizes",
                f"engine catalog vllm {command.catalog.version}")
    if command.engine == "sglang":
        tp = command.get("tp_size") or "N"
        cat = command.catalog
        if cat.coverage == "unknown":
            # version unknown: the spelling every release accepts (deprecated, not refused, from 0.5.20 on)
            legacy = cat.flag("enable_dp_attention")
            modern = cat.resolve("--attn-dp-size")
            out.set("engine.dp_attention_flags", f"--enable-dp-attention --dp-size {tp} (newer releases prefer "
                    f"--attn-dp-size {tp})" if modern is not None and legacy is not None and not legacy.rejected
                    else f"--attn-dp-size {tp}" if modern is not None else f"--enable-dp-attention --dp-size {tp}",
                    "engine catalogs sglang: the spelling every release read accepts (version unknown)")
        else:
            modern = cat.resolve("--attn-dp-size") is not None
            out.set("engine.dp_attention_flags", f"--attn-dp-size {tp}" if modern else
                    f"--enable-dp-attention --dp-size {tp}", f"engine catalog sglang {cat.version}")
        # 0.5.14+ splits the CUDA graph batch cap per phase (--cuda-graph-max-bs-decode; --cuda-graph-max-bs last in
        # 0.5.19, per the release history); with the version unknown
        # the newest spelling, and the fix says from which release it holds (catalog.annotate_since)
        per_phase = cat.resolve("--cuda-graph-max-bs-decode") is not None
        out.set("engine.cuda_graph_max_bs_flag", "--cuda-graph-max-bs-decode" if per_phase else "--cuda-graph-max-bs",
                f"engine catalog sglang {cat.version}")
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
        from doctor.hardware.spec import UnknownGpu  # lazy: a lint without --gpu never loads the catalog

        try:
            gpu = gpu_facts_for(inputs.gpu, inputs.gpu_mem)
        except UnknownGpu as exc:
            source = f"--gpu {inputs.gpu}"
            gpu = Facts()
            gpu.set("gpu.known", False, f"{source}: not in the GPU catalog")
            gpu.set("gpu.count", exc.count, source)
            gpu.error("gpu", str(exc))
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

    dirs = inputs.playbook_dirs
    reading = (replay_excerpt(inputs.log_excerpt, dirs) if inputs.log_excerpt is not None
               else read_log_input(inputs.log, dirs))
    return reading.facts


def log_engine_facts(facts: Facts) -> None:
    """The engine and release a log names, when no launch command could be read: fixes then speak its flags."""
    for key, source in (("launch.engine", "log.engine"), ("launch.version", "log.version")):
        fact = facts.fact(source)
        if fact is not None and fact.value and key not in facts:
            facts.set(key, fact.value, fact.source)
    facts.error("launch", facts.unknown_reason("log.launch_command") or
                "no launch command (pass --command; the log did not print the engine's arguments)")


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
    if inputs.log or inputs.log_excerpt:
        facts.update(log_input_facts(inputs), overwrite=False)
    text, origin, version = inputs.command, inputs.command_from, inputs.engine_version
    if text is None:  # no --command: the one the server reports, the listening process's argv, the log's
        for key in ("server.launch_command", "process.argv", "log.launch_command"):
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
            if origin == "--command":
                raise
            facts.error("launch", f"{origin} is not a launch command llmdoctor can read: {exc}")
        else:
            gathered.command = command
            # What a server reports of its resolved configuration beats what its command line says.
            facts.update(launch, overwrite="server.engine" not in facts)
            facts.update(parser_since_facts(command), overwrite=False)
            facts.update(spelling_facts(command), overwrite=False)
            gathered.notes.extend(placeholder_notes(command))
    elif inputs.engine_version:
        facts.set("launch.version", inputs.engine_version, "--engine-version")
    if text is None and facts.get("log.engine"):  # no command, but the log says which engine (and release)
        log_engine_facts(facts)
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
                engine_version=_orderable_version(facts.get("launch.version")),
                generation=inputs.generation_config_json)
            facts.update(model, overwrite=False)
            facts.update(online_fp8_facts(gathered.card, facts))
            facts.update(float32_facts(gathered.card, facts))
            from doctor.model.memory import non_kv_facts

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
    facts.update(family_facts(facts), overwrite=False)

    if "gpu.name" not in facts and not facts.unknown_reason("gpu"):
        facts.error("gpu", "no GPU given")
    facts.update(workload_facts(inputs.workload), overwrite=False)
    return gathered


def _config_from_launch(facts: Facts) -> str | None:
    """The model the server loads: a path, a repo id in the HF cache or on the Hub (doctor/model/resolve.py)."""
    return facts.get("launch.model") or facts.get("server.model_path")


def _orderable_version(version: Any) -> str | None:
    from doctor.versions import version_key

    return str(version) if version and version_key(version) is not None else None


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
