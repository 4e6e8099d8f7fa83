"""Snapshots: the raw material of a live run, redacted, in one JSON file that replays offline.

A snapshot keeps what each probe *saw* (``raw``), not what llmdoctor concluded, so a postmortem, a bug
report or a test can replay it through the same ``interpret`` functions and get the same facts and
findings as the live run, and a later llmdoctor can draw better conclusions from an old snapshot.
The format is documented in docs/snapshot.md; ``schema`` is a public promise.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from doctor import __version__
from doctor.errors import InputError
from doctor.facts import Facts
from doctor.probes.base import ProbeResult, Target, interpret_raw
from doctor.redact import redact_obj

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "llmdoctor.snapshot/1"
#: Each probe's raw is capped by ProbeOptions.max_body_bytes (16 MiB), and /metrics keeps only the lines
#: it maps: a real snapshot is kilobytes to a few megabytes. Anything past this is not one of ours.
MAX_SNAPSHOT_BYTES = 32 * 1024 * 1024


def build_snapshot(target: Target, results: list[ProbeResult], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The snapshot document. ``extra`` (the command line, the symptom asked about, …) is redacted here;
    probe raws are redacted by the probes already."""
    return {
        "schema": SCHEMA,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "llmdoctor": __version__,
        "target": target.to_dict(),
        "probes": {result.name: result.to_snapshot() for result in results},
        "extra": redact_obj(extra or {}),
    }


def write_snapshot(path: str | os.PathLike[str], snap: dict[str, Any]) -> None:
    """Write atomically: a crash leaves the old file or the new one, never half of one."""
    from doctor.outio import write_atomic

    write_atomic(path, json.dumps(snap, indent=1, ensure_ascii=False) + "\n")


EXAMPLE_PREFIX = "example:"


def read_snapshot(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Load and check a snapshot; anything wrong is one InputError naming the file and the key.

    ``example:NAME`` reads a scenario snapshot bundled with the package (doctor/examples/snapshots/NAME.json).
    """
    from doctor.inio import read_text_capped

    file = _example(str(path)) if str(path).startswith(EXAMPLE_PREFIX) else Path(path)
    text = read_text_capped(file, limit=MAX_SNAPSHOT_BYTES, label=str(file), hint="a snapshot is JSON")
    try:
        snap = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{file}: not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(f"{file}: JSON nested too deeply to be a snapshot") from None
    _check(file, snap)
    return snap


def _example(spec: str) -> Path:
    folder = Path(__file__).resolve().parents[1] / "examples" / "snapshots"
    name = spec[len(EXAMPLE_PREFIX):]
    file = folder / f"{name}.json"
    if not name or "/" in name or not file.is_file():
        known = ", ".join(sorted(p.stem for p in folder.glob("*.json"))) or "none installed"
        raise InputError(f"{spec}: no such bundled snapshot (available: {known})")
    return file


def _check(file: Path, snap: Any) -> None:
    def fail(key: str, problem: str) -> None:
        raise InputError(f"{file}: {key}: {problem}")

    if not isinstance(snap, dict):
        fail("(top level)", "expected a JSON object")
    schema = snap.get("schema")
    if schema is None:
        fail("schema", f"missing: not an llmdoctor snapshot (expected {SCHEMA!r})")
    if schema != SCHEMA:
        newer = isinstance(schema, str) and schema.startswith("llmdoctor.snapshot/")
        fail("schema", f"{schema!r} is not {SCHEMA!r}" + (" (written by another llmdoctor version)" if newer else ""))
    target = snap.get("target")
    if not isinstance(target, dict):
        fail("target", "expected an object")
    for key, kind in (("scheme", str), ("host", str), ("port", int)):
        if not isinstance(target.get(key), kind) or isinstance(target.get(key), bool):
            fail(f"target.{key}", f"expected {'a number' if kind is int else 'a string'}")
    from doctor.bounds import problem

    if problem("port", target["port"]):
        fail("target.port", problem("port", target["port"]))
    probes = snap.get("probes")
    if not isinstance(probes, dict):
        fail("probes", "expected an object of probe name -> result")
    for name, entry in probes.items():
        key = f"probes.{name}"
        if not isinstance(entry, dict):
            fail(key, "expected an object")
        if not isinstance(entry.get("ok"), bool):
            fail(f"{key}.ok", "expected true or false")
        if entry.get("error") is not None and not isinstance(entry["error"], str):
            fail(f"{key}.error", "expected a string or null")
        if not isinstance(entry.get("elapsed_ms"), (int, float)) or isinstance(entry.get("elapsed_ms"), bool):
            fail(f"{key}.elapsed_ms", "expected a number")
        if problem("elapsed_ms", entry["elapsed_ms"]):
            fail(f"{key}.elapsed_ms", problem("elapsed_ms", entry["elapsed_ms"]))
        if not isinstance(entry.get("raw"), dict):
            fail(f"{key}.raw", "expected an object")
    extra = snap.get("extra", {})
    if not isinstance(extra, dict):
        fail("extra", "expected an object")
    inputs = extra.get("inputs")
    if inputs is not None:
        _check_inputs(inputs, fail)


#: The offline inputs a snapshot records (doctor.commands.check.snapshot_inputs) and what each may hold.
_INPUT_TYPES: dict[str, tuple[type, ...]] = {"command": (str, list), "engine_version": (str,), "gpu": (str,),
                                             "gpu_mem": (str,),
                                             "config_json": (dict,), "config_name": (str,), "workload": (dict,),
                                             "generation_config_json": (dict,), "config_served": (bool,),
                                             "log": (dict,)}
_WORKLOAD_TYPES: dict[str, tuple[type, ...]] = {"context": (int,), "users": (int,), "reproducible": (bool,),
                                                "text_only": (bool,), "temperature": (int, float)}


def _check_inputs(inputs: Any, fail: Any) -> None:
    """extra.inputs replays as if typed on the command line, so it must hold what a command line can."""
    if not isinstance(inputs, dict):
        fail("extra.inputs", "expected an object")
    for key, kinds in _INPUT_TYPES.items():
        value = inputs.get(key)
        if value is not None and not _is(value, kinds):
            fail(f"extra.inputs.{key}", f"expected {' or '.join(_KIND_NAMES[k] for k in kinds)} or null")
    command = inputs.get("command")
    if isinstance(command, list) and not all(isinstance(word, str) for word in command):
        fail("extra.inputs.command", "expected a list of strings")
    if inputs.get("log") is not None:
        from doctor.logs.source import excerpt_text

        try:
            excerpt_text(inputs["log"])
        except InputError as exc:
            fail("extra.inputs.log", str(exc).removeprefix("extra.inputs.log").lstrip(": "))
    from doctor.bounds import BOUNDS, problem

    for key, kinds in _WORKLOAD_TYPES.items():
        value = (inputs.get("workload") or {}).get(key)
        if value is None:
            continue
        if key in BOUNDS and problem(key, value):  # 1e30 users, context -5, temperature NaN: not a workload
            fail(f"extra.inputs.workload.{key}", problem(key, value))
        if not _is(value, kinds):
            fail(f"extra.inputs.workload.{key}", f"expected {' or '.join(_KIND_NAMES[k] for k in kinds)} or null")
    _check_gpu(inputs, fail)


def _check_gpu(inputs: dict[str, Any], fail: Any) -> None:
    """The recorded --gpu and --gpu-mem read as the flags are, the error naming the snapshot's key."""
    from doctor.hardware.spec import UnknownGpu, parse_gpu_spec
    from doctor.model.units import parse_bytes

    memory = None
    if inputs.get("gpu_mem") is not None:
        try:
            memory = parse_bytes(inputs["gpu_mem"], flag="extra.inputs.gpu_mem")
        except InputError as exc:
            fail("extra.inputs.gpu_mem", str(exc).removeprefix("extra.inputs.gpu_mem: "))
    if inputs.get("gpu") is not None:
        try:
            parse_gpu_spec(inputs["gpu"], gpu_mem=memory, gpu_mem_text=inputs.get("gpu_mem"))
        except UnknownGpu:
            pass  # replays as the run did: with the GPU facts unknown
        except InputError as exc:
            fail("extra.inputs.gpu", str(exc).removeprefix("--gpu: "))


_KIND_NAMES = {str: "a string", list: "a list", dict: "an object", int: "a number", float: "a number",
               bool: "true or false"}


def _is(value: Any, kinds: tuple[type, ...]) -> bool:
    """isinstance where true/false is not a number (JSON's booleans are Python ints)."""
    return isinstance(value, kinds) and (bool in kinds or not isinstance(value, bool))


def snapshot_target(snap: dict[str, Any]) -> Target:
    return Target.from_dict(snap["target"])


def replay(snap: dict[str, Any]) -> list[ProbeResult]:
    """Each probe's result again, from its raw material alone: the same ``interpret`` as the live run."""
    from doctor.probes.runner import PROBES, probe_module

    results = []
    for name, entry in snap["probes"].items():
        raw = entry["raw"]
        if name in PROBES:
            facts, error = interpret_raw(probe_module(name), raw)
        else:
            facts, error = Facts(), f"unknown probe {name!r} in the snapshot (written by a newer llmdoctor?)"
            facts.error(name, error)
        results.append(ProbeResult(name, error is None, error, float(entry["elapsed_ms"]), raw, facts))
    return results
