"""Finding a model the user named, wherever it is: a local file or directory, the local Hugging Face cache,
then the Hugging Face Hub — its config.json, generation_config.json, tokenizer_config.json (whether it has a
chat template), hf_quant_config.json and the safetensors headers, never the weights.

Incidents arrive with a model id and no config; making the on-call engineer download config.json by hand is
the tool's job. The Hub is asked only when the local places have nothing, under short timeouts, and never
with ``--offline`` or ``HF_HUB_OFFLINE=1``. ``huggingface_hub`` is imported only then (it costs ~200 ms), and
it reads ``HF_ENDPOINT``, ``HF_TOKEN``, ``HF_HOME``/``HF_HUB_CACHE`` itself; what it downloads lands in the
user's Hugging Face cache, where the next run finds it without the network.

Every failure is one line naming the repo and the reason (gated without a token, not found, unreachable,
offline): ``inspect`` exits 2 with it, ``lint``/``check`` carry on with the model unknown and say why.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from doctor.errors import InputError
from doctor.model.checkpoint import CheckpointWeights, local_weights
from doctor.model.config import (
    EXAMPLE_PREFIX,
    LoadedConfig,
    hf_hub_cache,
    load_config,
    looks_like_repo_id,
    parse_config_text,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Seconds for one Hub request (metadata, a config file, a header range): an incident does not wait on the
#: Hub; huggingface_hub's own defaults are 10 s per request and more with its retries.
HUB_TIMEOUT = 5.0
#: Small files read beside config.json; past this they are not what they claim to be.
SIDE_FILE_BYTES = 4 * 1024 * 1024
_TRUE = {"1", "on", "yes", "true"}


class ModelNotResolved(InputError):
    """The model could not be found anywhere llmdoctor may look; the message is the one line to show."""


@dataclass(frozen=True)
class ResolvedModel:
    """A config found, where it was found, and what else the checkpoint says about itself."""

    config: LoadedConfig
    origin: str  # "example", "local", "HF cache", "Hub"
    where: str  # a path, or "repo@sha from ENDPOINT"
    directory: Path | None = None  # the folder holding the checkpoint's other files (local dir, cache snapshot)
    weights: CheckpointWeights | None = None
    weights_note: str = ""  # why there are no exact weights
    hf_quant: dict[str, Any] | None = None
    generation: dict[str, Any] | None = None
    generation_source: str = ""
    chat_template: bool | None = None
    chat_template_source: str = ""

    @property
    def side_files_read(self) -> bool:
        """The files beside config.json (hf_quant_config.json among them) were looked for: a checkpoint folder or
        a Hub repo, not a config file alone or content given without its folder (_with_side_files)."""
        path = self.config.path
        return self.directory is not None and path is not None and path.name == "config.json"


def offline_mode(offline: bool = False) -> bool:
    """``--offline``, or the environment huggingface_hub itself honours (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE)."""
    return offline or any(os.environ.get(k, "").strip().lower() in _TRUE
                          for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def resolve_model(spec: str, *, offline: bool = False, budget_s: float | None = None) -> ResolvedModel:
    """Find ``spec`` locally, in the HF cache, then on the Hub; raise ModelNotResolved with one line if not.

    ``budget_s``: a repo id is resolved in its own thread (``prefetch``, if not started already) and waited for
    this long from its start; past it, ModelNotResolved says so while the lookup carries on (``finish_lookups``
    lets it land in the caches for the next run). Without it the lookup is this call's, under HUB_TIMEOUT."""
    if spec.startswith(EXAMPLE_PREFIX):
        loaded = load_config(spec)
        return ResolvedModel(loaded, "example", str(loaded.path))
    path = Path(spec).expanduser()
    if path.exists() or not looks_like_repo_id(spec):
        loaded = load_config(spec)
        assert loaded.path is not None
        return _with_side_files(ResolvedModel(loaded, "local", str(loaded.path), loaded.path.parent))
    key = _key(spec, offline)
    remembered = _RESOLVED.get(key)
    if remembered is not None and time.monotonic() - remembered[0] < REMEMBER_S:
        return remembered[1]
    if budget_s is not None:
        return _within(_LOOKUPS.get(key) or _start(key, spec, offline), spec, budget_s)
    found = _resolve_repo(spec, offline)
    _RESOLVED[key] = (time.monotonic(), found)
    return found


def _key(spec: str, offline: bool) -> tuple[str, bool, str, str]:
    return (spec, offline_mode(offline), _endpoint(), str(hf_hub_cache()))


# -- a lookup of its own ---------------------------------------------------------------------------------------
class _Lookup:
    """One repo id being resolved: what the HF cache and the memo hold is read at once, and what only the Hub can
    add is asked in a daemon thread, beside the probes; what it found, or what it raised."""

    def __init__(self, spec: str, offline: bool) -> None:
        self.started = time.monotonic()
        self.found: ResolvedModel | None = None
        self.error: BaseException | None = None
        self._cached: ResolvedModel | None = None  # what the cache holds, for the Hub to complete
        self.thread = threading.Thread(target=self._run, args=(spec, offline), name=f"resolve-{spec}", daemon=True)
        try:
            local, complete = _locally(spec, offline)
        except BaseException as exc:  # noqa: BLE001 — handed to the thread that waits for it
            self.error = exc
            return
        if complete:
            self.found = local
            _RESOLVED[_key(spec, offline)] = (time.monotonic(), local)
            return
        self._cached = local
        _import_typing_whole()
        self.thread.start()

    def _run(self, spec: str, offline: bool) -> None:
        try:
            # the Hub may have been taken as down since _locally asked (a fleet's lookups run side by side)
            self.found = _not_asked(spec, self._cached) or _from_the_hub(spec, self._cached)
        except BaseException as exc:  # noqa: BLE001 — handed to the thread that waits for it
            self.error = exc
        else:
            _RESOLVED[_key(spec, offline)] = (time.monotonic(), self.found)

    def wait(self, timeout_s: float) -> bool:
        """Whether the lookup is done after waiting at most ``timeout_s`` (no wait when no thread was needed)."""
        if self.thread.ident is not None:
            self.thread.join(max(0.0, timeout_s))
        return not self.thread.is_alive()


def _import_typing_whole() -> None:
    """Import typing so that no thread ever sees it half made, before a thread imports huggingface_hub (which
    imports typing).

    An import puts a module in sys.modules before its body has run, and dataclasses reads typing.ClassVar from
    sys.modules for every field of every dataclass it defines: a dataclass defined in one thread while another
    imports typing fails (AttributeError). `check` never imports typing itself (doctor/__init__.py) and defines
    dataclasses as it imports while the probes run, so typing's body is run here first and the finished module
    published; a process that already has typing (every command but `check`'s fast path) returns at once."""
    if "typing" in sys.modules:
        return
    import importlib.util

    spec = importlib.util.find_spec("typing")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules.setdefault("typing", module)


#: Repo ids being (or already) resolved in threads of their own, by resolve_model's key.
_LOOKUPS: dict[tuple[str, bool, str, str], _Lookup] = {}


def _start(key: tuple[str, bool, str, str], spec: str, offline: bool) -> _Lookup:
    lookup = _LOOKUPS[key] = _Lookup(spec, offline)
    return lookup


def prefetch(spec: str | None, *, offline: bool = False) -> None:
    """Start resolving ``spec`` now, in its own thread, when it is a repo id (which may need the Hub): `check`
    calls this as soon as a probe names the served model, so that a Hub lookup runs beside the other probes."""
    if not spec or spec.startswith(EXAMPLE_PREFIX) or not looks_like_repo_id(spec) or Path(spec).expanduser().exists():
        return
    key = _key(spec, offline)
    if key not in _LOOKUPS and key not in _RESOLVED:
        _start(key, spec, offline)


def _within(lookup: _Lookup, spec: str, budget_s: float) -> ResolvedModel:
    if not lookup.wait(lookup.started + budget_s - time.monotonic()):
        late = f"the Hub ({_host(_endpoint())}) did not answer within {budget_s:g} s (what it answers is kept for " \
               "the next run)"
        cached = _from_cache(spec)  # the lookup was for the exact weights only: the config is here
        if cached is None:
            raise ModelNotResolved(f"{spec}: not in the Hugging Face cache, and {late}")
        return replace(cached, weights_note=f"safetensors headers from the Hub: {late}")
    if lookup.error is not None:
        raise lookup.error
    assert lookup.found is not None
    return lookup.found


def finish_lookups(limit_s: float = HUB_TIMEOUT) -> None:
    """Let the lookups still running finish (at most ``limit_s`` in all), so that what they find lands in the Hugging
    Face cache and the memo (doctor/model/hubmemo.py) for the next run; called once a run's answer is out."""
    deadline = time.monotonic() + limit_s
    for lookup in list(_LOOKUPS.values()):
        lookup.wait(deadline - time.monotonic())


def lookups_running() -> bool:
    return any(lookup.thread.is_alive() for lookup in _LOOKUPS.values())


#: A repo id resolved in this process -> (when, what). One run resolves the same model in several gathers (the
#: active probes' context, the diagnosis, a snapshot's served-model lookup), and a cached config without its
#: shards asks the Hub for every safetensors header each time; a long-lived `serve` forgets after REMEMBER_S.
_RESOLVED: dict[tuple[str, bool, str, str], tuple[float, ResolvedModel]] = {}
REMEMBER_S = 300.0


def _resolve_repo(spec: str, offline: bool) -> ResolvedModel:
    found, complete = _locally(spec, offline)
    return found if complete and found is not None else _from_the_hub(spec, found)


def _locally(spec: str, offline: bool) -> tuple[ResolvedModel | None, bool]:
    """What the HF cache and the memo hold for ``spec`` without the Hub, and whether that is the whole answer (when
    not, _from_the_hub completes it); offline and not cached is ModelNotResolved."""
    cached = _from_cache(spec)
    if cached is not None:
        if cached.weights is not None:
            return cached, True
        # the headers an earlier run read from the Hub for this revision: no import, no request, even offline
        recalled = _recalled(spec, cached, _revision(cached))
        if recalled is not None or offline_mode(offline):
            return recalled or cached, True
    elif offline_mode(offline):
        why = "--offline" if offline else "HF_HUB_OFFLINE"
        raise ModelNotResolved(f"{spec}: not a local path and not in the Hugging Face cache at {hf_hub_cache()}; "
                               f"offline ({why}), so the Hub was not asked")
    not_asked = _not_asked(spec, cached)
    return (not_asked, True) if not_asked is not None else (cached, False)


def _from_the_hub(spec: str, cached: ResolvedModel | None) -> ResolvedModel:
    """The Hub's part of a lookup (_locally said it is needed): the whole repo, or the exact weights of a config
    already cached."""
    return _from_hub(spec) if cached is None else _hub_weights(spec, cached)


def _not_asked(spec: str, cached: ResolvedModel | None) -> ResolvedModel | None:
    """The answer without asking when the Hub is taken as down (_down): the cached config, saying why it has no
    exact weights, or ModelNotResolved without one; None when the Hub may be asked."""
    endpoint = _endpoint()
    down = _down(endpoint)
    if down is None:
        return None
    if cached is None:
        raise ModelNotResolved(f"{spec}: the Hub ({_host(endpoint)}) did not answer {down}; "
                               "pass --config with a local config.json, or --offline")
    return replace(cached, weights_note=f"safetensors headers from the Hub: not asked: the Hub ({_host(endpoint)}) "
                                        f"did not answer {down}")


def _from_cache(repo: str) -> ResolvedModel | None:
    """The repo's snapshot in the local HF cache, with whatever of the checkpoint it holds; None if absent.
    A cached config.json that cannot be read is an error naming it, not a reason to ask the Hub."""
    snapshots = hf_hub_cache() / ("models--" + repo.replace("/", "--")) / "snapshots"
    if not any(snapshots.glob("*/config.json")):
        return None
    loaded = load_config(repo)
    assert loaded.path is not None
    return _with_side_files(ResolvedModel(loaded, "HF cache", str(loaded.path), loaded.path.parent))


# -- local folders ---------------------------------------------------------------------------------------------
def _with_side_files(found: ResolvedModel) -> ResolvedModel:
    """Exact weights and the small files beside config.json, when the folder has them."""
    directory = found.directory
    if directory is None or found.config.path is None or found.config.path.name != "config.json":
        return replace(found, weights_note="a config file alone: no checkpoint folder beside it")
    weights, note = local_weights(directory)
    generation, chat = _read_json(directory / "generation_config.json"), _read_json(directory /
                                                                                      "tokenizer_config.json")
    return replace(found, weights=weights, weights_note=note, hf_quant=_read_json(directory / "hf_quant_config.json"),
                   generation=generation, generation_source=str(directory / "generation_config.json"),
                   **_chat_template(chat, directory / "chat_template.jinja", str(directory)))


def _read_json(path: Path) -> dict[str, Any] | None:
    from doctor.inio import read_text_capped

    if not path.is_file():
        return None
    try:
        data = json.loads(read_text_capped(path, limit=SIDE_FILE_BYTES, label=str(path)))
    except (InputError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _chat_template(tokenizer_config: dict[str, Any] | None, jinja: Path | None, where: str) -> dict[str, Any]:
    if jinja is not None and jinja.is_file():
        return {"chat_template": True, "chat_template_source": f"{where}: chat_template.jinja"}
    if tokenizer_config is None:
        return {"chat_template": None, "chat_template_source": f"{where}: no tokenizer_config.json"}
    has = bool(tokenizer_config.get("chat_template"))
    return {"chat_template": has, "chat_template_source": f"{where}: tokenizer_config.json:chat_template"}


# -- the Hub ---------------------------------------------------------------------------------------------------
def _hub() -> tuple[Any, Any, str]:
    """huggingface_hub's client (imported only now) with short timeouts, and the endpoint it will use.

    The endpoint is read from HF_ENDPOINT now rather than from huggingface_hub's constants, which freeze the
    environment of their first import."""
    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", str(int(HUB_TIMEOUT)))
    os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", str(int(HUB_TIMEOUT)))
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # No telemetry in the user agent: it also spares a request (huggingface_hub 2.x fetches an "agent harnesses"
    # registry from the endpoint, up to 3 s, before the first real one: utils/_headers.py, utils/_detect_agent.py).
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    import huggingface_hub

    endpoint = _endpoint()
    return huggingface_hub, huggingface_hub.HfApi(endpoint=endpoint), endpoint


# Endpoints found unreachable in this process -> the reason. A fleet check or a bench resolves many models in one
# run; asking a Hub that did not answer again for each would cost a timeout per target.
_UNREACHABLE: dict[str, str] = {}
#: endpoint -> (when read, why) an earlier run's memo (doctor/model/hubmemo.py) takes the Hub as down; kept
#: RECALL_S so that a long-lived `serve` still sees the memo expire
_RECALLED_DOWN: dict[str, tuple[float, str]] = {}
RECALL_S = 60.0


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")


def _down(endpoint: str) -> str | None:
    """Why the Hub at ``endpoint`` is taken as down now: earlier in this run, or in a run of the last hour
    (doctor/model/hubmemo.py), so that neither huggingface_hub's import nor a timeout is paid again."""
    from doctor.model.hubmemo import UNREACHABLE_S, recalled_unreachable

    if endpoint in _UNREACHABLE:
        return f"earlier in this run ({_UNREACHABLE[endpoint]})"
    kept = _RECALLED_DOWN.get(endpoint)  # a lint of many files asks for every model it names: read once a minute
    if kept is not None and time.monotonic() - kept[0] < RECALL_S:
        return kept[1]
    recalled = recalled_unreachable(endpoint)
    if recalled is None:
        return None
    down = f"in a run less than {UNREACHABLE_S / 3600:g} h ago ({recalled})"
    _RECALLED_DOWN[endpoint] = (time.monotonic(), down)
    return down


def _mark_down(endpoint: str, exc: BaseException) -> None:
    from doctor.model.hubmemo import remember_unreachable

    _UNREACHABLE[endpoint] = type(exc).__name__
    remember_unreachable(endpoint, type(exc).__name__)


def _from_hub(repo: str) -> ResolvedModel:
    hub, api, endpoint = _hub()
    try:
        info = api.model_info(repo, timeout=HUB_TIMEOUT)
        files = {s.rfilename for s in info.siblings or ()}
        if "config.json" not in files:
            raise ModelNotResolved(f"{repo}: the repo on the Hub ({_host(endpoint)}) has no config.json")

        def download(name: str) -> Path:
            return Path(hub.hf_hub_download(repo, name, revision=info.sha, etag_timeout=HUB_TIMEOUT,
                                            endpoint=endpoint, cache_dir=hf_hub_cache()))

        config_path = download("config.json")
        from doctor.inio import read_text_capped
        from doctor.model.config import MAX_CONFIG_BYTES

        raw = parse_config_text(read_text_capped(config_path, limit=MAX_CONFIG_BYTES, label=f"{repo} config.json"),
                                f"{repo} config.json (Hub)")
        side = {name: _read_json(download(name)) for name in ("generation_config.json", "tokenizer_config.json",
                                                               "hf_quant_config.json") if name in files}
        if "chat_template.jinja" in files:
            chat = {"chat_template": True, "chat_template_source": f"Hub {repo}: chat_template.jinja"}
        else:
            chat = _chat_template(side.get("tokenizer_config.json"), None, f"Hub {repo}")
    except InputError:  # ModelNotResolved, or a config that is not valid JSON: the message names it
        raise
    except Exception as exc:  # noqa: BLE001 — every client failure becomes one line, classified below
        reason = _hub_failure(repo, endpoint, exc)
        if " is unreachable within " in reason:
            _mark_down(endpoint, exc)
        raise ModelNotResolved(reason) from None
    where = f"{repo}@{str(info.sha)[:12]} from {_host(endpoint)}"
    found = ResolvedModel(LoadedConfig(config_path, repo, raw), "Hub", where, config_path.parent,
                          hf_quant=side.get("hf_quant_config.json"), generation=side.get("generation_config.json"),
                          generation_source=f"Hub {repo}: generation_config.json", **chat)
    if not any(f.endswith(".safetensors") for f in files):
        return replace(found, weights_note=f"the repo {repo} has no safetensors files")
    return _hub_weights(repo, found, revision=info.sha)


def _hub_weights(repo: str, found: ResolvedModel, revision: str | None = None) -> ResolvedModel:
    """Exact weights from the Hub's safetensors headers (HTTP range requests: the headers, never the data),
    or as an earlier run read them for this revision (doctor/model/hubmemo.py: no import, no request)."""
    from doctor.model.hubmemo import forget_unreachable, remember_weights

    revision = revision or _revision(found)
    recalled = _recalled(repo, found, revision)
    if recalled is not None:
        return recalled
    _, api, endpoint = _hub()
    from doctor.model.checkpoint import Tensor, summarize

    try:
        meta = api.get_safetensors_metadata(repo, revision=revision)
    except Exception as exc:  # noqa: BLE001 — no exact weights is not an error: the estimate stays, with why
        reason = _hub_failure(repo, endpoint, exc)
        if " is unreachable within " in reason:
            _mark_down(endpoint, exc)
        return replace(found, weights_note=f"safetensors headers from the Hub: {reason}")
    tensors = [Tensor(name, info.dtype, info.data_offsets[1] - info.data_offsets[0])
               for file in meta.files_metadata.values() for name, info in file.tensors.items()]
    count = len(meta.files_metadata)
    where = f"Hub repo {repo}" + (f"@{revision[:12]}" if revision else "") + f", {count} file header" + \
        ("s" if count > 1 else "")
    weights = summarize(tensors, files=count, where=where)
    forget_unreachable(endpoint)
    if revision:
        remember_weights(endpoint, repo, revision, weights)
    return replace(found, weights=weights, weights_note="")


def _revision(found: ResolvedModel) -> str | None:
    """A cached snapshot's folder is named for its revision (the commit the files, and headers, are of)."""
    return found.directory.name if found.origin == "HF cache" and found.directory is not None else None


def _recalled(repo: str, found: ResolvedModel, revision: str | None) -> ResolvedModel | None:
    from doctor.model.hubmemo import recalled_weights

    weights = recalled_weights(_endpoint(), repo, revision) if revision else None
    return None if weights is None else replace(found, weights=weights, weights_note="")


def _host(endpoint: str) -> str:
    from doctor.redact import redact_text

    return redact_text(endpoint)


def _hub_failure(repo: str, endpoint: str, exc: BaseException) -> str:
    """One line for a failed Hub request: what happened and what to do, with no token in it."""
    from huggingface_hub import errors, get_token

    host = _host(endpoint)
    try:  # HF_TOKEN, or the token `hf auth login` saved
        token = bool(get_token())
    except Exception:  # noqa: BLE001 — an unreadable token file is no token
        token = False
    if isinstance(exc, errors.GatedRepoError):
        return (f"{repo}: gated on the Hub ({host}) and HF_TOKEN has no access to it (request access on its page)"
                if token else f"{repo}: gated on the Hub ({host}); accept its licence there and set HF_TOKEN, "
                              "or pass --config with its config.json")
    if isinstance(exc, errors.RepositoryNotFoundError):
        return f"{repo}: no such model on the Hub ({host})" + ("" if token else
                                                               " (or it is private: set HF_TOKEN)")
    if isinstance(exc, errors.RevisionNotFoundError):
        return f"{repo}: revision not found on the Hub ({host})"
    if isinstance(exc, errors.EntryNotFoundError):
        return f"{repo}: a file is missing from the repo on the Hub ({host})"
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return f"{repo}: offline (HF_HUB_OFFLINE), so the Hub was not asked"
    if isinstance(exc, errors.HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", None)
        return f"{repo}: the Hub ({host}) answered HTTP {status or '?'}"
    if isinstance(exc, (errors.LocalEntryNotFoundError, OSError)) or "Timeout" in type(exc).__name__ \
            or "Connect" in type(exc).__name__ or "Network" in type(exc).__name__:
        return f"{repo}: the Hub ({host}) is unreachable within {HUB_TIMEOUT:g} s ({type(exc).__name__}); " \
               "pass --config with a local config.json, or --offline"
    return f"{repo}: the Hub ({host}) could not be read ({type(exc).__name__})"


# -- the card, sized -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SizedModel:
    """What every command that takes a model gets: the card with its weights settled, how it was found, and
    whether the config is the served checkpoint's own."""

    card: Any  # doctor.model.card.ModelCard (not imported at start-up)
    resolved: ResolvedModel
    same_checkpoint: bool
    same_source: str


def model_card(spec: str, *, raw: dict[str, Any] | None = None, offline: bool = False,
               served_name: str | None = None, launch_quantization: str | None = None,
               budget_s: float | None = None) -> SizedModel:
    """Resolve ``spec`` (or take ``raw`` content named ``spec``), analyse it and settle its weights
    (doctor/model/weights.py ``sized_card``) for the served model ``served_name`` when one is named."""
    if raw is not None:
        resolved = ResolvedModel(LoadedConfig(None, spec, raw), "given", spec,
                                 weights_note="config content without its checkpoint folder")
    else:
        resolved = resolve_model(spec, offline=offline, budget_s=budget_s)
    # Only now the analysis (~40 ms of imports): a live check often finds no config at all.
    from doctor.model.architecture import analyze
    from doctor.model.weights import sized_card

    loaded = resolved.config
    card = analyze(loaded.raw, name=loaded.name, source=str(loaded.path or spec) if resolved.origin != "Hub"
                   else resolved.where)
    same, why = same_checkpoint(served_name, loaded.name or spec)
    card = sized_card(card, checkpoint=resolved.weights, hf_quant=resolved.hf_quant, same_checkpoint=same,
                      served_name=served_name, launch_quantization=launch_quantization,
                      hf_quant_unread=not resolved.side_files_read)
    if card.weight_source == "estimate" and same and resolved.weights_note:
        card = replace(card, weight_detail=f"{card.weight_detail} (not exact: {resolved.weights_note})")
    return SizedModel(card, resolved, same, why)


def same_checkpoint(served: str | None, config_name: str) -> tuple[bool, str]:
    """Is a config named ``config_name`` the served checkpoint's? Compared by the last path component, so
    ``/models/GLM-5.1`` and ``zai-org/GLM-5.1`` agree and ``nvidia/GLM-5.1-NVFP4`` does not."""
    if not served:
        return True, "no served model named: the config is taken as the checkpoint's"

    def base(name: str) -> str:
        return name.replace("__", "/").rstrip("/").rsplit("/", 1)[-1].removesuffix(".json").lower()

    same = base(str(served)) == base(config_name)
    return same, f"derived: config {config_name} vs served model {served}"
