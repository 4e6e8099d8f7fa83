"""The user's own measured KV capacities: measured beats computed, and feeds the band.

The published record (capacity_record.json) says how far llmdoctor's predictions landed on public runs of a
stratum; a user's own runs of one model on one GPU and engine say more about that deployment. `llmdoctor
calibrate add SNAPSHOT…` replays each snapshot as `check` does and keeps the pair it yields — the KV tokens the
engine allocated (``capacity.measured_tokens``) and those llmdoctor computes for the same model, GPU, layout and
settings (``capacity.expected_tokens``) — in one JSON file of the user's data directory. `plan`, `lint` and
`check` then print the band of a capacity of that model, GPU and engine from those runs' errors, and say so.

The file is the user's: written atomically, never touched by anything but `calibrate`. ``LLMDOCTOR_DATA_DIR``
moves it (default ``$XDG_DATA_HOME/llmdoctor``, else ``~/.local/share/llmdoctor``).
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "llmdoctor.calibration/1"
FILE_NAME = "calibration.json"
#: A pair whose measured side is this far from the computed one is not a calibration of the memory model but a
#: different deployment (another GPU share, an override the facts missed): `calibrate add` refuses it.
MAX_RATIO = 4.0


def calibration_path() -> Path:
    """Where the user's calibration file lives (it may not exist yet). Asked up to three times a lint with --config
    and --gpu: the path is worked out once per value of the variables it follows."""
    env = os.environ
    return _calibration_path(env.get("LLMDOCTOR_DATA_DIR"), env.get("XDG_DATA_HOME"), env.get("HOME"))


@lru_cache(maxsize=8)
def _calibration_path(configured: str | None, data_home: str | None, _home: str | None) -> Path:
    """``_home`` only keys the memo: Path.home() and expanduser() read $HOME (the password database without it,
    which does not change under a running process)."""
    if configured and configured.strip():
        return Path(configured).expanduser() / FILE_NAME
    base = data_home or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / "llmdoctor" / FILE_NAME


def model_ids(*names: object) -> tuple[str, ...]:
    """The names one model goes by, normalised so that a config file, a Hub id and a served path meet:
    ``fixtures/configs/Qwen__Qwen3-8B.json``, ``Qwen__Qwen3-8B`` and ``Qwen/Qwen3-8B`` are all ``qwen/qwen3-8b``;
    a local path (``/models/Qwen3-8B``) is its last component, ``qwen3-8b``."""
    out: list[str] = []
    for name in names:
        if not isinstance(name, str) or not name.strip():
            continue
        text = name.strip().rstrip("/")
        hub = re.fullmatch(r"[\w.-]+/[\w.-]+", text)
        if not hub:  # a path (or an HF cache folder): its last component
            text = re.sub(r"\.json$", "", text.split("/")[-1])
            text = re.sub(r"^models--", "", text).replace("--", "/", 1) if text.startswith("models--") else text
            text = text.replace("__", "/", 1)
        if text and text.lower() not in out:
            out.append(text.lower())
    return tuple(out)


@dataclass(frozen=True)
class Run:
    """One measured pair: what the engine allocated against what llmdoctor computed for the same launch."""

    models: tuple[str, ...]
    gpu: str
    engine: str
    version: str | None
    tp: int | None
    measured: int
    expected: int
    measured_source: str
    source: str
    added: str
    llmdoctor: str

    @property
    def error(self) -> float:
        """The prediction's error against the measurement, as the record signs it: (computed − measured) / measured."""
        return (self.expected - self.measured) / self.measured

    @property
    def key(self) -> tuple[Any, ...]:
        """Two adds of the same measurement keep one run."""
        return (self.models, self.gpu, self.engine, self.version, self.tp, self.measured, self.expected)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "models": list(self.models), "error": round(self.error, 4)}

    @classmethod
    def from_dict(cls, entry: dict[str, Any]) -> Run:
        return cls(tuple(entry["models"]), str(entry["gpu"]), str(entry["engine"]), entry.get("version"),
                   entry.get("tp"), int(entry["measured"]), int(entry["expected"]),
                   str(entry.get("measured_source", "")), str(entry.get("source", "")), str(entry.get("added", "")),
                   str(entry.get("llmdoctor", "")))


def run_from_facts(facts: Any, source: str) -> Run | str:
    """The pair a `check` run's facts hold, or why they hold none that calibrates the memory model."""
    from doctor import __version__

    measured = measured_fact(facts)
    if measured is None:
        return ("no measured KV capacity: neither /server_info, the cache_config_info / max_total_num_tokens "
                "metric nor a start-up log line gives the pool size (take the snapshot with --log server.log)")
    overrides = facts.get("capacity.kv_override")
    if overrides:
        return (f"the KV size was set by hand ({_override_text(overrides)}, {facts.fact('capacity.kv_override').source}): "
                "the pool measures that setting, not the memory model")
    if facts.get("launch.device") == "cpu":
        return "the server runs on CPU: its pool is sized by the CPU KV space setting, not by GPU memory"
    expected = facts.get("capacity.expected_tokens")
    if not isinstance(expected, int) or expected <= 0:
        why = facts.unknown_reason("fit.kv_tokens_per_group")
        return ("no computed capacity to compare the measured one with" + (f" ({why})" if why else "") +
                ": give the model's --config and the --gpu when taking the snapshot")
    measured = int(measured.value)
    models = model_ids(facts.get("model.name"), facts.get("launch.model"), facts.get("server.model"))
    gpu, engine = facts.get("gpu.name"), facts.get("launch.engine") or facts.get("server.engine")
    for what, value in (("the model", models), ("the GPU", gpu), ("the engine", engine)):
        if not value:
            return f"{what} is not known, so the pair would match nothing: give it when taking the snapshot"
    if not 1 / MAX_RATIO <= measured / expected <= MAX_RATIO:
        return (f"the measured {measured:,} tokens are {measured / expected:.2f}× the computed {expected:,}: another "
                "deployment than the inputs describe (a shared GPU, a setting the snapshot missed), not a calibration")
    tp = facts.get("launch.tp")
    version = facts.get("launch.version") or facts.get("server.version")
    return Run(models, str(gpu), str(engine), str(version) if version else None, tp if isinstance(tp, int) else None,
               measured, expected, str(measured_fact(facts).source), source,
               datetime.now(timezone.utc).isoformat(timespec="seconds"), __version__)


def measured_fact(facts: Any) -> Any:
    """The KV tokens the engine itself reported, in the order derive_capacity reads them (None: none)."""
    for key in ("capacity.measured_tokens", "server.max_total_tokens", "metrics.kv_capacity_tokens",
                "log.kv_cache_tokens"):
        fact = facts.fact(key)
        if fact is not None and isinstance(fact.value, int) and not isinstance(fact.value, bool) and fact.value > 0:
            return fact
    return None


def _override_text(overrides: Any) -> str:
    if isinstance(overrides, list):
        return ", ".join(str(o.get("flag") or o.get("name") or o) if isinstance(o, dict) else str(o)
                         for o in overrides)
    return str(overrides)


def load(path: Path | None = None) -> tuple[Run, ...]:
    """The user's runs (none when the file does not exist); a damaged file is one clear error naming it."""
    path = path or calibration_path()
    try:
        stat = path.stat()
    except OSError:
        return ()
    return _load(str(path), stat.st_mtime_ns, stat.st_size)


@lru_cache(maxsize=4)
def _load(path: str, _mtime_ns: int, _size: int) -> tuple[Run, ...]:
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a calibration file ({exc}); move it away or run llmdoctor calibrate "
                         "clear") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("runs"), list):
        raise InputError(f"{path}: schema: expected {SCHEMA!r} with a runs list")
    for i, entry in enumerate(doc["runs"]):
        _check_entry(path, i, entry)
    try:
        return tuple(Run.from_dict(entry) for entry in doc["runs"])
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{path}: runs: an entry lacks {exc}") from None


def _check_entry(path: str, i: int, entry: Any) -> None:
    """The numbers of one stored run, as every input's (doctor/bounds.py): the file is the user's to edit, and an
    expected 0 divided by zero, 10^23 printed a band of ±10^20 %. A pair further apart than ``calibrate add``
    accepts is no calibration either."""
    from doctor.bounds import problem

    if not isinstance(entry, dict):
        raise InputError(f"{path}: runs[{i}]: expected an object")
    for key, kind in (("measured", "kv_tokens"), ("expected", "kv_tokens"), ("tp", "gpu_count")):
        value = entry.get(key)
        why = problem(kind, value) if value is not None or key != "tp" else None
        if why is not None:
            raise InputError(f"{path}: runs[{i}].{key}: {why}")
    measured, expected = entry["measured"], entry["expected"]
    if not 1 / MAX_RATIO <= measured / expected <= MAX_RATIO:
        raise InputError(f"{path}: runs[{i}].measured and runs[{i}].expected: {measured:,} vs {expected:,} are "
                         f"more than {MAX_RATIO:g}x apart, not a calibration (calibrate add refuses such a pair)")


def save(runs: tuple[Run, ...] | list[Run], path: Path | None = None) -> Path:
    """Write the file atomically (the directory is created, private to the user)."""
    from doctor.outio import write_atomic

    path = path or calibration_path()
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{path.parent}: cannot create the data directory: {exc.strerror or exc}") from None
    body = ",\n".join("  " + json.dumps(run.to_dict(), ensure_ascii=False) for run in runs)
    write_atomic(path, f'{{"schema": "{SCHEMA}",\n "runs": [\n{body}\n]}}\n' if runs else
                 f'{{"schema": "{SCHEMA}", "runs": []}}\n')
    return path


def add(new: list[Run], path: Path | None = None) -> tuple[list[Run], list[Run]]:
    """Append the runs not already in the file; (added, already there)."""
    existing = list(load(path))
    keys = {run.key for run in existing}
    added, duplicates = [], []
    for run in new:
        (duplicates if run.key in keys else added).append(run)
        keys.add(run.key)
    if added:
        save(existing + added, path)
    return added, duplicates


def matching(models: tuple[str, ...], gpu: str | None, engine: str | None) -> list[Run]:
    """The user's runs of this model on this GPU and engine."""
    if not models or not gpu or not engine:
        return []
    wanted = set(models)
    return [run for run in load() if run.engine == engine and run.gpu.lower() == str(gpu).lower()
            and wanted & set(run.models)]


def bias_text(runs: list[Run]) -> str:
    """How the measured side sat against the computed one on these runs: "measured 3% below the computed"."""
    shares = [run.measured / run.expected - 1 for run in runs]
    mean = sum(shares) / len(shares)
    releases = sorted({f"{run.engine} {run.version}" + (f" TP{run.tp}" if run.tp else "") for run in runs if run.version})
    on = f" on {', '.join(releases[:3])}{' …' if len(releases) > 3 else ''}" if releases else ""
    if abs(mean) < 0.005:
        return f"measured as computed{on}"
    return f"measured {math.ceil(abs(mean) * 100)}% {'below' if mean < 0 else 'above'} the computed{on}"
