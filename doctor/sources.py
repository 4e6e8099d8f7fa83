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
#: generation_config.json beside a config is a few hundred bytes; past this it is not one.
_GENERATION_CONFIG_BYTES = 1024 * 1024


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
    nvidia_smi: str | None = None  # path
    metrics: str | None = None  # path of a /metrics scrape
    server_info: str | None = None  # path of a /server_info (or /get_server_info) JSON body
    workload: Workload = field(default_factory=Workload)


@dataclass
class Gathered:
    """Facts plus the parsed objects renderers want (the command's flags, the model card)."""

    facts: Facts
    command: LaunchCommand | None = None
    card: Any = None
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------------------ single inputs
def command_facts(text: str | list[str], engine_version: str | None = None,
                  engine: str | None = None) -> tuple[LaunchCommand, Facts]:
    from doctor.engines.command import parse_command
    from doctor.engines.launch_facts import launch_facts

    command = parse_command(text, engine_version=engine_version, engine=engine)
    return command, launch_facts(command)


def model_facts_for(spec: str, *, kv_cache_dtype: str | None, engine: str | None, gpu_sm: int | None = None,
                    raw: dict[str, Any] | None = None) -> tuple[Any, Facts]:
    """Load a config (path, directory, HF-cache repo id, example:NAME — or ``raw`` content named ``spec``) and
    describe the model as facts. The KV facts follow the launch: the engine's layout and the forced KV dtype,
    or — for DSA models, whose precision the engine picks — what that engine picks on this GPU.
    """
    from doctor.model.config import LoadedConfig, load_config

    loaded = LoadedConfig(None, spec, raw) if raw is not None else load_config(spec)
    # Only now the analysis (~40 ms of imports): a live check often finds no config on this machine.
    from doctor.model.architecture import analyze
    from doctor.model.facts import model_facts
    from doctor.model.kvcache import normalize_kv_dtype

    card = analyze(loaded.raw, name=loaded.name, source=str(loaded.path or spec))
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
    if loaded.path is not None:
        facts.update(generation_defaults(loaded.path.parent / "generation_config.json"))
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
    if card is None or facts.get("model.quantization") is not None or facts.get("launch.quantization") != "fp8":
        return out
    from doctor.plan.weights import plan_weights

    weights = plan_weights(card, "fp8", model_path=None)
    out.set("model.weight_bytes", weights.total_bytes, f"{weights.source} (--quantization fp8)")
    out.set("model.expert_weight_bytes", weights.expert_bytes, f"{weights.source} (--quantization fp8)")
    return out


def generation_defaults(path: Path) -> Facts:
    """The model's sampling defaults (generation_config.json): vLLM applies them to requests that set none."""
    import json

    from doctor.inio import read_text_capped

    out = Facts()
    try:
        data = json.loads(read_text_capped(path, limit=_GENERATION_CONFIG_BYTES, label=str(path))) \
            if path.is_file() else None
    except (InputError, ValueError, RecursionError):
        data = None
    if not isinstance(data, dict):
        out.error("model.default_temperature", f"no readable {path.name} next to config.json")
        return out
    temperature = data.get("temperature") if data.get("do_sample", True) is not False else 0
    if isinstance(temperature, (int, float)) and not isinstance(temperature, bool):
        out.set("model.default_temperature", float(temperature), f"{path.name}:temperature")
    else:
        out.set("model.default_temperature", None, f"{path.name}: no temperature")
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
        return out
    return expected_facts(found, engine, _orderable_version(facts.get("launch.version")))


def parser_since_facts(command: LaunchCommand) -> Facts:
    """For parsers the command names but its engine version lacks: the first release that registers them."""
    from doctor.engines.catalog import registered_since

    out = Facts()
    for dest, attr, key in (("tool_call_parser", "tool_parsers", "launch.tool_parser_since"),
                            ("reasoning_parser", "reasoning_parsers", "launch.reasoning_parser_since")):
        name = command.get(dest)
        if not name or name == "auto":
            continue
        if name in getattr(command.catalog, attr):
            out.set(key, None, f"engine catalogs: {name!r} is registered in {command.engine} "
                               f"{command.catalog.version}")
            continue
        since = registered_since(command.engine, attr, name, command.catalog.version)
        out.set(key, since, f"engine catalogs: first {command.engine} release registering {name!r}"
                if since else f"engine catalogs: no {command.engine} release registers {name!r}")
    return out


def spelling_facts(command: LaunchCommand) -> Facts:
    """How this engine version spells what fixes ask for, when the spelling changed across versions.

    SGLang 0.5.22+ deprecates `--dp-size N --enable-dp-attention` for `--attn-dp-size N` (its help text says so),
    so a fix must use the spelling of the catalog the command was read with — or, with the version unknown, the
    spelling every release accepts.
    """
    out = Facts()
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
            return out
        modern = cat.resolve("--attn-dp-size") is not None
        out.set("engine.dp_attention_flags", f"--attn-dp-size {tp}" if modern else
                f"--enable-dp-attention --dp-size {tp}", f"engine catalog sglang {cat.version}")
    return out


def gpu_facts_for(spec: str) -> Facts:
    from doctor.hardware.spec import gpu_facts, parse_gpu_spec

    return gpu_facts(parse_gpu_spec(spec), f"--gpu {spec}")


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
    text, origin, version = inputs.command, inputs.command_from, inputs.engine_version
    if text is None:  # no --command: the one the server reports, or the listening process's argv
        for key in ("server.launch_command", "process.argv"):
            if facts.get(key):
                text, origin = facts.get(key), key
                version = version or facts.get("server.version") or facts.get("launch.version")
                break
    if text is not None:
        try:
            command, launch = command_facts(text, version, engine=facts.get("server.engine"))
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
    elif inputs.engine_version:
        facts.set("launch.version", inputs.engine_version, "--engine-version")
    if "launch" not in _namespaces(facts):
        facts.error("launch", "no launch command (pass --command, or --endpoint of a server that reports it)")

    if inputs.nvidia_smi:
        facts.update(nvidia_smi_facts(inputs.nvidia_smi), overwrite=False)
    if inputs.gpu:
        facts.update(gpu_facts_for(inputs.gpu), overwrite=False)

    config_spec = inputs.config or _config_from_launch(facts)
    if config_spec:
        try:
            gathered.card, model = model_facts_for(config_spec, kv_cache_dtype=facts.get("launch.kv_cache_dtype"),
                                                   engine=facts.get("launch.engine"), gpu_sm=facts.get("gpu.sm"),
                                                   raw=inputs.config_json)
            facts.update(model, overwrite=False)
            facts.update(online_fp8_facts(gathered.card, facts))
            _same_checkpoint(facts, config_spec, from_launch=not inputs.config)
        except InputError as exc:
            if inputs.config:  # the user named it: that is an input error
                raise
            facts.error("model", f"model config not found locally ({exc})")
    else:
        facts.error("model", "no model config (pass --config PATH|REPO)")
    facts.update(family_facts(facts), overwrite=False)

    if "gpu.name" not in facts and not facts.unknown_reason("gpu"):
        facts.error("gpu", "no GPU given")
    facts.update(workload_facts(inputs.workload), overwrite=False)
    return gathered


def _same_checkpoint(facts: Facts, config_spec: str, *, from_launch: bool) -> None:
    """Is the config the served checkpoint's? A base model's config next to an NVFP4 repo says nothing about
    the served weights' quantization, so checkpoint-level comparisons must know."""
    served = facts.get("launch.model") or facts.get("server.model_path")
    if from_launch or not served:
        facts.set("model.same_checkpoint", True, "the config was found for the served model" if from_launch
                  else "no served model named: the config is taken as the checkpoint's")
        return

    def base(name: str) -> str:
        return name.replace("__", "/").rstrip("/").rsplit("/", 1)[-1].removesuffix(".json").lower()

    same = base(str(served)) == base(str(facts.get("model.name") or config_spec))
    facts.set("model.same_checkpoint", same, f"derived: --config {config_spec} vs served model {served}")


def _config_from_launch(facts: Facts) -> str | None:
    """The model the server loads, if its config can be found on this machine (a path or the HF cache)."""
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
