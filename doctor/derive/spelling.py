"""How the engine release spells the flags fixes ask for, where the spelling changed across releases."""

from __future__ import annotations

from typing import TYPE_CHECKING

from doctor.facts import Facts

if TYPE_CHECKING:
    from doctor.engines.command import LaunchCommand


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
