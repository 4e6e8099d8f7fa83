"""`llmdoctor calibrate`: keep the KV capacities your own servers measured, so `plan` and `lint` band by them."""

from __future__ import annotations

import click

from doctor.cli.check_cmd import offline_options
from doctor.cli.common import format_option
from doctor.cli.flags import OfflineFlags
from doctor.cli.output import emit, emit_document
from doctor.errors import EXIT_FINDINGS, EXIT_OK, InputError
from doctor.render.calibrate import added_text, shown_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "llmdoctor.calibrate/1"

EPILOG = """\b
Examples:
  llmdoctor snapshot --endpoint localhost:8000 --log server.log --config Qwen/Qwen3-8B --gpu H100 -o s.json
  llmdoctor calibrate add s.json                      keep the pair that snapshot measured
  llmdoctor calibrate add --log server.log --command "vllm serve Qwen/Qwen3-8B --max-model-len 8192" \\
      --config Qwen/Qwen3-8B --gpu H100                a start-up log alone, with what it ran on
  llmdoctor calibrate show                             your runs, by model, GPU and engine
  llmdoctor plan Qwen/Qwen3-8B --gpu H100              the band now says "on N of your own runs"

\b
Each source is replayed as `llmdoctor check` reads it: the KV tokens the engine allocated (the start-up log's
"GPU KV cache size" / "KV Cache is allocated. #tokens", /server_info, or the pool-size metric) against those
llmdoctor computes for the same model, GPU, layout and settings. The pair is kept in the calibration file
($LLMDOCTOR_DATA_DIR, else $XDG_DATA_HOME/llmdoctor, else ~/.local/share/llmdoctor; written atomically);
`plan`, `lint` and `check` then take the band of that model, GPU and engine from your runs' errors instead of
the public record's. A pool sized by hand (--num-gpu-blocks-override, --kv-cache-memory, --max-total-tokens)
calibrates nothing and is refused. Exit codes: 0 every source kept (or already there); 1 a source gave no
pair (the reason is printed); 2 bad input.
"""


@click.group("calibrate", epilog=EPILOG)
def calibrate() -> None:
    """Keep your own servers' measured KV capacities; plan and lint band by them."""


ADD_EPILOG = """\b
Examples:
  llmdoctor calibrate add incident.json week2.json     snapshots taken with --log (and --config/--gpu)
  llmdoctor calibrate add --log server.log --config Qwen/Qwen3-8B --gpu H100
                                                      a start-up log: its own launch line gives the flags

\b
Exit codes: 0 every source kept (or already there); 1 a source gave no pair (why is printed: no pool size
measured, the pool set by hand, a CPU server, nothing computed); 2 bad input.
"""
SHOW_EPILOG = """\b
Examples:
  llmdoctor calibrate show                  your runs by model, GPU and engine, with the band plan takes
  llmdoctor calibrate show --format json    the same as llmdoctor.calibrate/1

\b
Exit codes: 0 listed (also when there are none); 2 a damaged calibration file.
"""
CLEAR_EPILOG = """\b
Example:
  llmdoctor calibrate clear --yes           start again (plan and lint band by the public record)

\b
Exit codes: 0 removed; 2 without --yes (nothing is removed).
"""


@calibrate.command("add", epilog=ADD_EPILOG)
@click.argument("snapshots", nargs=-1, type=click.Path(dir_okay=False))
@offline_options
@format_option("text", "json")
def add(snapshots: tuple[str, ...], given: OfflineFlags, fmt: str) -> int:
    """Add the measured/computed pair of each SNAPSHOT (or of a --log with the offline inputs)."""
    from doctor.commands.check import CheckOptions, run_check
    from doctor.model.calibration import add as add_runs
    from doctor.model.calibration import calibration_path, run_from_facts
    from doctor.sources.offline import Workload

    inputs = given.inputs(Workload(None, None, False, False, None))
    offline_given = any((inputs.command, inputs.config, inputs.gpu, inputs.metrics, inputs.server_info,
                         inputs.nvidia_smi, inputs.log))
    if snapshots and offline_given:
        raise InputError("give snapshots, or a --log with its offline inputs, not both: a snapshot carries its own")
    if not snapshots and not offline_given:
        raise InputError("nothing to add: pass snapshot files, or --log with --command/--config/--gpu "
                         "(see llmdoctor calibrate --help)")
    sources: list[tuple[str, CheckOptions]] = (
        [(path, CheckOptions(snapshot=path)) for path in snapshots] if snapshots else
        [(f"log {inputs.log}" if inputs.log else "offline inputs", CheckOptions(offline=inputs))])
    runs, refused = [], []
    for label, opts in sources:  # every snapshot is read (and a bad one named) before the file is touched
        found = run_from_facts(run_check(opts).facts, label)
        (refused.append((label, found)) if isinstance(found, str) else runs.append(found))
    added, already = add_runs(runs) if runs else ([], [])
    result = {"schema": SCHEMA, "file": str(calibration_path()), "added": [r.to_dict() for r in added],
              "already": [r.to_dict() for r in already],
              "refused": [{"source": label, "reason": why} for label, why in refused]}
    emit_document(fmt, _Doc(result), text=lambda: added_text(result))
    return EXIT_FINDINGS if refused else EXIT_OK


@calibrate.command("show", epilog=SHOW_EPILOG)
@format_option("text", "json")
def show(fmt: str) -> int:
    """List your runs by model, GPU and engine, with the band `plan` and `lint` take from them."""
    from doctor.model.calibration import calibration_path, load

    runs = load()
    result = {"schema": SCHEMA, "file": str(calibration_path()), "groups": _groups(runs)}
    emit_document(fmt, _Doc(result), text=lambda: shown_text(result))
    return EXIT_OK


@calibrate.command("clear", epilog=CLEAR_EPILOG)
@click.option("--yes", is_flag=True, help="Really remove every run (the file is deleted).")
def clear(yes: bool) -> int:
    """Forget every run (the calibration file is removed)."""
    from doctor.model.calibration import calibration_path, load

    path = calibration_path()
    try:
        count = f"{len(load())} run(s)"
    except InputError:  # a damaged file is what clear is for
        count = "a damaged file"
    if not yes:
        raise InputError(f"clear removes {count} from {path}: add --yes to do it")
    path.unlink(missing_ok=True)
    emit(f"removed {path} ({count})")
    return EXIT_OK


class _Doc:
    """A ready JSON document for emit_document."""

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc

    def to_dict(self) -> dict[str, Any]:
        return self.doc


def _groups(runs: tuple[Any, ...]) -> list[dict[str, Any]]:
    from doctor.model.band import own_band

    keys: dict[tuple[str, str, str], list[Any]] = {}
    for run in runs:
        keys.setdefault((run.models[0], run.gpu, run.engine), []).append(run)
    out = []
    for (model, gpu, engine), members in keys.items():
        band = own_band((model,), gpu, engine)
        out.append({"model": model, "gpu": gpu, "engine": engine, "runs": [r.to_dict() for r in members],
                    "band": band.to_dict() if band else None})
    return out
