"""What the parsed launch command says against its engine release's catalogs: the first release that registers a
parser the command names, and how that release spells the flags fixes ask for.

Input reading, not derivation: each reads the ``LaunchCommand`` (its flags and the catalog it was parsed with),
which is no fact, so ``gather`` (doctor/sources/offline.py) runs them as it reads the command.
"""

from __future__ import annotations

from doctor.facts import Facts

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.engines.command import LaunchCommand


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




def spelling_facts(command: LaunchCommand) -> Facts:
    """How this engine version spells what fixes ask for, when the spelling changed across versions.

    SGLang 0.5.22+ deprecates `--dp-size N --enable-dp-attention` for `--attn-dp-size N` (its help text says so),
    so a fix must use the spelling of the catalog the command was read with — or, with the version unknown, the
    spelling every release from 0.3.6 (the first with DP attention) accepts.
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
            # version unknown: the spelling every release from 0.3.6 accepts (deprecated, not refused, from 0.5.20 on)
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
