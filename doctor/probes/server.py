"""The server probe: which engine and version answer, what model they serve, and how they were configured.

A running server is the most reliable account of its own configuration (the launch command may have been
edited since, or set by an operator's wrapper). What each engine offers, read from the engines' source:

* both: ``GET /v1/models``: ``owned_by`` is ``vllm`` or ``sglang`` (vllm/entrypoints/serve/engine/protocol.py:105,
  sglang/srt/entrypoints/openai/protocol.py:87), ``max_model_len``; vLLM's ``root`` is the model path
  (vllm/entrypoints/openai/models/serving.py:72) while SGLang's is the served name (http_server.py:2004);
* SGLang: ``GET /server_info`` (older ``/get_server_info``): every resolved server arg, the launch command,
  ``max_total_num_tokens``, one ``internal_states`` entry per DP rank and ``version``
  (sglang/srt/entrypoints/http_server.py:863); ``GET /model_info`` (http_server.py:812);
* vLLM: ``GET /version`` (vllm/entrypoints/serve/instrumentator/basic.py:53), and ``/server_info`` only in
  dev mode (vllm/entrypoints/serve/dev/server_info/api_router.py:43).

SGLang's /server_info carries ``api_key`` and the ``--api-key`` of its launch command in clear (it redacts only
watermark secrets: sglang/srt/sampling/watermarking/core.py:34,110), so every body is redacted before it is kept.
"""

from __future__ import annotations

import re

from doctor.facts import Facts
from doctor.probes.base import ProbeOptions, Target, auth_headers, load_data
from doctor.probes.http import HttpError, get
from doctor.redact import MASK, is_secret_name, redact_obj, redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME = "server"
_TEXT_KEPT = 500  # characters of a non-JSON body kept to explain an error

# The order matters: engine detection first (/v1/models), then each engine's own endpoints.
MODELS = "/v1/models"
SERVER_INFO = "/server_info"
SERVER_INFO_OLD = "/get_server_info"
MODEL_INFO = "/model_info"
VERSION = "/version"
VLLM_DEV_INFO = "/server_info?config_format=json"
#: The variables taken from a vLLM dev-mode /server_info's environment listing (as the process probe's).
_SERVER_ENV_PREFIXES = ("VLLM_", "NCCL_", "HF_", "LMCACHE_", "CUDA_VISIBLE_DEVICES", "PYTORCH_CUDA_ALLOC_CONF")


def fetch(target: Target, opts: ProbeOptions) -> dict[str, Any]:
    """GET the endpoints that say what the server is; stop at the first sign the server is unreachable."""
    headers = auth_headers(target, opts)
    requests: dict[str, dict[str, Any]] = {}

    def call(path: str) -> dict[str, Any] | None:
        """Record one exchange; None once the server proved unreachable (more requests would fail the same)."""
        record = _exchange(target.url(path), opts, headers)
        requests[path] = record
        return None if record.get("kind") in HttpError.UNREACHABLE else record

    raw: dict[str, Any] = {"endpoint": target.display(), "requests": requests}
    models = call(MODELS)
    if models is None:
        return raw
    owner = _owner(models.get("json"))
    if owner != "vllm":
        info = call(SERVER_INFO)
        if info is None:
            return raw
        if info.get("status") in (404, 405):
            info = call(SERVER_INFO_OLD)
            if info is None:
                return raw
        if _sglang_info(info.get("json")) is not None:
            call(MODEL_INFO)
            return raw
    if call(VERSION) is not None and owner == "vllm":
        call(VLLM_DEV_INFO)
    return raw


def _exchange(url: str, opts: ProbeOptions, headers: dict[str, str]) -> dict[str, Any]:
    """One GET as raw material: status, content type, time, and the redacted JSON or the error line."""
    try:
        response = get(url, timeout_s=opts.timeout_s, headers=headers, max_bytes=opts.max_body_bytes)
    except HttpError as exc:
        return {"url": url, "error": str(exc), "kind": exc.kind, "status": exc.status}
    record: dict[str, Any] = {"url": response.url, "status": response.status,
                              "content_type": response.content_type, "elapsed_ms": round(response.elapsed_ms, 3)}
    failure = response.status_error()
    if failure is None:
        try:
            record["json"] = redact_obj(response.json())
            return record
        except HttpError as exc:
            failure = exc
    record.update(error=str(failure), kind=failure.kind, text=redact_text(response.text()[:_TEXT_KEPT]))
    return record


def raw_from_body(text: str, source: str) -> dict[str, Any]:
    """A saved /server_info (or /get_server_info) body (``check --server-info FILE``) as the raw a live fetch
    records, so the same ``interpret`` reads it. A body that is not JSON is an error record, as live."""
    record: dict[str, Any] = {"url": source, "status": 200, "content_type": "application/json", "elapsed_ms": 0.0}
    try:
        import json

        record["json"] = redact_obj(json.loads(text))
    except ValueError as exc:
        record.update(error=f"{source}: not JSON ({exc})", kind="json", text=redact_text(text[:_TEXT_KEPT]))
    except RecursionError:
        record.update(error=f"{source}: JSON nested too deeply to be a server's answer", kind="json",
                      text=redact_text(text[:_TEXT_KEPT]))
    return {"endpoint": source, "requests": {SERVER_INFO: record}}


# -- interpretation (pure) ----------------------------------------------------------------------------

def interpret(raw: dict[str, Any]) -> Facts:
    facts = Facts()
    requests: dict[str, dict[str, Any]] = raw.get("requests") or {}
    if not requests:
        facts.error(NAME, "no request was made")
        return facts
    models = _json(requests, MODELS)
    sglang = _sglang_info(_json(requests, SERVER_INFO)) or _sglang_info(_json(requests, SERVER_INFO_OLD))
    vllm_dev = _vllm_dev_info(_json(requests, VLLM_DEV_INFO))
    version = _json(requests, VERSION)
    vllm_version = version.get("version") if isinstance(version, dict) else None
    if not isinstance(vllm_version, str):
        vllm_version = None
    owner = _owner(models)

    if sglang is not None:
        engine, engine_source = "sglang", "server_info version"
    elif owner in ("vllm", "sglang"):
        engine, engine_source = owner, "/v1/models owned_by"
    elif vllm_dev is not None:
        engine, engine_source = "vllm", "server_info vllm_config"
    elif vllm_version is not None:
        engine, engine_source = "vllm", "/version"  # only vLLM serves GET /version
    else:
        facts.error(NAME, _why_nothing(raw.get("endpoint", ""), requests))
        return facts

    facts.set("server.engine", engine, engine_source, observed=True)
    facts.set("launch.engine", engine, engine_source)
    if sglang is not None:
        _sglang_facts(facts, sglang, _json(requests, MODEL_INFO))
    elif vllm_version is not None:
        facts.set("server.version", vllm_version, "/version", observed=True)
        facts.set("launch.version", vllm_version, "/version")
    if vllm_dev is not None:
        _mapped_facts(facts, vllm_dev, "vllm")
        _vllm_env_facts(facts, vllm_dev)
    _models_facts(facts, models, engine, requests.get(MODELS, {}))
    return facts


def _vllm_env_facts(facts: Facts, info: dict[str, Any]) -> None:
    """``launch.env.*`` for the variables the server's environment really holds.

    ``vllm_env`` lists every variable vLLM knows *with its default* (~265 in 0.32: envs.py is read through
    ``getattr``, vllm/entrypoints/serve/dev/server_info/api_router.py:25-36), so it cannot say what the operator
    set. ``system_env.env_vars`` can: it is ``KEY=VALUE`` lines of ``os.environ`` for the names vLLM knows (and
    TORCH/NCCL/CUDA/OMP… prefixes), secrets left out by name (vllm/collect_env.py:703-731). Without it no
    variable is taken as set.
    """
    system = info.get("system_env")
    listed = system.get("env_vars") if isinstance(system, dict) else None
    if not isinstance(listed, str):
        facts.error("launch.env", "server_info lists vLLM's variables with their defaults but not which are set "
                                  "(no system_env.env_vars)")
        return
    for line in listed.splitlines():
        name, sep, value = line.partition("=")
        if sep and name.startswith(_SERVER_ENV_PREFIXES):
            facts.set(f"launch.env.{name}", MASK if is_secret_name(name) else value,
                      f"server_info system_env.env_vars {name}")


def _json(requests: dict[str, dict[str, Any]], path: str) -> Any:
    return (requests.get(path) or {}).get("json")


def _owner(models: Any) -> str | None:
    cards = models.get("data") if isinstance(models, dict) else None
    if isinstance(cards, list) and cards and isinstance(cards[0], dict):
        owner = cards[0].get("owned_by")
        return owner if isinstance(owner, str) else None
    return None


def _sglang_info(info: Any) -> dict[str, Any] | None:
    """SGLang's answer: its resolved server args at the top level, with ``version`` beside them."""
    if isinstance(info, dict) and "vllm_config" not in info and "version" in info and (
            "model_path" in info or "tp_size" in info):
        return info
    return None


def _vllm_dev_info(info: Any) -> dict[str, Any] | None:
    return info if isinstance(info, dict) and isinstance(info.get("vllm_config"), dict) else None


def _why_nothing(endpoint: str, requests: dict[str, dict[str, Any]]) -> str:
    """The one line for "no engine answered": unreachable, then needs a key, then not an LLM server."""
    tests = (lambda r: r.get("kind") in HttpError.UNREACHABLE,
             lambda r: r.get("status") in (401, 403),
             lambda r: r.get("kind") == "not_llm")
    for telling in tests:
        for record in requests.values():
            if telling(record):
                return str(record["error"])
    seen = "; ".join(f"{path}: {_short(record)}" for path, record in requests.items())
    return f"no vLLM or SGLang API answered at {endpoint} ({seen})"


def _short(record: dict[str, Any]) -> str:
    if record.get("status") and record.get("kind") == "status":
        return f"HTTP {record['status']}"
    if record.get("error"):
        return str(record["error"]).rpartition(": ")[2]
    return "answered, but not as vLLM or SGLang do"


def _sglang_facts(facts: Facts, info: dict[str, Any], model_info: Any) -> None:
    version = info.get("version")
    if isinstance(version, str):
        facts.set("server.version", version, "server_info version", observed=True)
        facts.set("launch.version", version, "server_info version")
    if isinstance(info.get("model_path"), str):
        facts.set("server.model_path", info["model_path"], "server_info model_path", observed=True)
    if isinstance(info.get("max_total_num_tokens"), int):
        facts.set("server.max_total_tokens", info["max_total_num_tokens"], "server_info max_total_num_tokens",
                  observed=True)
    if isinstance(info.get("launch_command"), str):
        facts.set("server.launch_command", info["launch_command"], "server_info launch_command", observed=True)
    states = info.get("internal_states")
    ranks = [_rank_memory(state) for state in states if isinstance(state, dict)] if isinstance(states, list) else []
    if ranks:
        facts.set("server.rank_memory", ranks, "server_info internal_states[].memory_usage", observed=True)
    _mapped_facts(facts, info, "sglang")
    if isinstance(model_info, dict):
        for key in ("model_type", "architectures"):
            if model_info.get(key) is not None:
                facts.set(f"server.{key}", model_info[key], f"/model_info {key}", observed=True)


def _rank_memory(state: dict[str, Any]) -> dict[str, Any]:
    """One DP rank's memory split, in bytes (SGLang reports GiB: memory_usage.py:30-33)."""
    usage = state.get("memory_usage") if isinstance(state.get("memory_usage"), dict) else {}
    gib = 1 << 30

    def _bytes(key: str) -> int | None:
        value = _finite(usage.get(key))
        return round(value * gib) if value is not None and abs(value) < 2**40 else None

    def _count(value: Any) -> int | None:
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return {"weight_bytes": _bytes("weight"), "kv_cache_bytes": _bytes("kvcache"),
            "token_capacity": _count(usage.get("token_capacity")),
            "max_running_requests": _count(state.get("effective_max_running_requests_per_dp")),
            "gen_tokens_per_s": _finite(state.get("last_gen_throughput"))}


def _finite(value: Any) -> float | int | None:
    """A number a fact can hold (JSON from Python servers may carry NaN and Infinity)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if math.isfinite(value) else None


def _mapped_facts(facts: Facts, answer: dict[str, Any], engine: str) -> None:
    """launch.* from the server's configuration, by the table in server_fields.yaml; values of the wrong type
    (a proxy or a patched server can answer anything) are no fact, with the reason."""
    table = load_data("server_fields.yaml")
    for row in table[engine]:
        found, value = _lookup(answer, row["field"])
        if not found:
            continue
        value = _transformed(row, value)
        source = f"server_info {row['field'].removeprefix('vllm_config.')}"
        expected = table["types"][row["fact"]]
        if value is not None and not _is_type(value, expected):
            facts.error(row["fact"], f"{source}: expected {_TYPE_NAMES[expected]}, got {_short_value(value)}")
            continue
        facts.set(row["fact"], float(value) if value is not None and expected == "fraction" else value, source)


def _transformed(row: dict[str, Any], value: Any) -> Any:
    """The field's value through the row's ``strip``, ``null_when`` and ``as`` (conditions on the value, in the
    playbooks' language, evaluated by its one evaluator)."""
    if "strip" in row and isinstance(value, str):
        value = value.removeprefix(row["strip"])
    if "null_when" in row and _holds(row["null_when"], value):
        return None
    if "as" in row:
        reads = _OPERAND.get(row["as"]["op"])
        if reads is not None and not isinstance(value, reads):
            return None  # a test of a bool on a number, or of a number on text: no answer
        return _holds(row["as"], value)
    return value


#: what a field must hold for a test on it to answer (``set`` reads any value)
_OPERAND: dict[str, Any] = {"is_true": bool, "is_false": bool,
                            **dict.fromkeys(("gt", "ge", "lt", "le"), (int, float))}


def _holds(condition: dict[str, Any], value: Any) -> bool:
    from doctor.playbook.conditions import evaluate

    field = Facts()
    field.set("field", value, "server_info")
    return evaluate({**condition, "fact": "field"}, field).value is True


_TYPE_NAMES = {"str": "text", "int": "a whole number", "bool": "true or false", "fraction": "a number in (0, 1]"}


def _is_type(value: Any, expected: str) -> bool:
    if isinstance(value, bool):
        return expected == "bool"
    if expected == "int":
        return isinstance(value, int)
    if expected == "fraction":
        return isinstance(value, (int, float)) and 0 < value <= 1
    return isinstance(value, {"str": str, "bool": bool}[expected])


def _short_value(value: Any) -> str:
    import json

    text = json.dumps(value, default=str)
    return redact_text(text if len(text) <= 40 else text[:37] + "...")


def _lookup(document: dict[str, Any], dotted: str) -> tuple[bool, Any]:
    value: Any = document
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _models_facts(facts: Facts, models: Any, engine: str, record: dict[str, Any]) -> None:
    cards = models.get("data") if isinstance(models, dict) else None
    base = next((c for c in cards if isinstance(c, dict) and not c.get("parent")), None) \
        if isinstance(cards, list) else None
    if base is None:
        if record.get("error"):
            facts.error("server.model", str(record["error"]))
        return
    if isinstance(base.get("id"), str):
        facts.set("server.model", base["id"], "/v1/models id", observed=True)
    if engine == "vllm" and isinstance(base.get("root"), str):
        facts.set("server.model_path", base["root"], "/v1/models root", observed=True)
        facts.set_default("launch.model", base["root"], "/v1/models root")
    if isinstance(base.get("max_model_len"), int):
        facts.set("server.max_model_len", base["max_model_len"], "/v1/models max_model_len", observed=True)


# -- system_fingerprint ---------------------------------------------------------------------------------

# vLLM's default "full" fingerprint: vllm-<version>[-tpN][-ppN][-dpN][-ep]-<hash8>
# (vllm/entrypoints/serve/utils/fingerprint.py:48-84). "hash" mode drops the parallel parts, so their
# absence proves nothing; "custom" is free text and does not match.
_FINGERPRINT = re.compile(
    r"^vllm-(?P<version>[0-9][^-\s]*)(?P<parallel>(?:-(?:tp\d+|pp\d+|dp\d+|ep))*)-(?P<hash>[0-9a-f]{8}|nohash)$")


def parse_system_fingerprint(text: str) -> dict[str, Any] | None:
    """vLLM's ``system_fingerprint`` (in completion responses) as {version, tp, pp, dp, ep}; None if not vLLM's."""
    match = _FINGERPRINT.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        return None
    parsed: dict[str, Any] = {"engine": "vllm", "version": match["version"]}
    for part in filter(None, match["parallel"].split("-")):
        if part == "ep":
            parsed["expert_parallel"] = True
        else:
            parsed[part[:2]] = int(part[2:])
    return parsed


def fingerprint_facts(text: str) -> Facts:
    """Facts an active probe can add from a completion's ``system_fingerprint`` (only what it proves)."""
    facts = Facts()
    parsed = parse_system_fingerprint(text)
    if parsed is None:
        return facts
    source = "system_fingerprint"
    facts.set("launch.engine", "vllm", source)
    facts.set("launch.version", parsed["version"], source)
    for key in ("tp", "pp", "dp", "expert_parallel"):
        if key in parsed:
            facts.set(f"launch.{key}", parsed[key], source)
    return facts
