"""The launch command for one engine version, spelled from that version's catalog and read back by the parser.

Option names come from the catalog entry of each destination (rules.yaml ``spelling`` only picks among the
aliases that version lists), so a flag the version lacks cannot appear; the argv is then parsed by
doctor/engines/command.py exactly like a pasted command, which is what `lint` and the verdict check.
"""

from __future__ import annotations

import json

from doctor.plan.flags import FlagChoice
from doctor.plan.rules import rules

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.engines.catalog import Catalog
    from doctor.engines.command import LaunchCommand


def option_name(engine: str, catalog: Catalog, dest: str) -> str:
    spec = catalog.flag(dest)
    if spec is None:
        raise KeyError(dest)
    preferred = rules()["spelling"].get(engine) or []
    return next((o for o in preferred if o in spec.options), spec.name)


def build_argv(engine: str, catalog: Catalog, model: str, flags: list[FlagChoice]) -> list[str]:
    if engine == "vllm":
        argv = ["vllm", "serve", model]
    else:
        argv = ["python3", "-m", "sglang.launch_server", option_name(engine, catalog, "model_path"), model]
    for flag in flags:
        argv.append(option_name(engine, catalog, flag.dest))
        if flag.value is not True:
            value = flag.value
            argv.append(json.dumps(value) if isinstance(value, (dict, list)) else str(value))
    return argv


def launch_command(engine: str, catalog: Catalog, version: str, model: str, flags: list[FlagChoice]) -> LaunchCommand:
    """Build and parse the command for engine ``version`` (the parsed form renders it, redacted, one flag per
    line)."""
    from doctor.engines.command import parse_command

    return parse_command(build_argv(engine, catalog, model, flags), engine_version=version)
