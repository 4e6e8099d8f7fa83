"""Health analyzers: the server's processes against the ranks its command asks for, the GPUs against the ranks,
and the GPU faults of every source (kernel log, NVML, the DCGM exporter in Prometheus) as one set of facts.

Read by the hung, launch-failure and slow-decode trees; the rules they apply live in doctor/hardware
(gpu_health.py, xid.py) and doctor/probes/process_roles.yaml.
"""

from __future__ import annotations

from doctor.derive.registry import analyzer
from doctor.facts import Facts


@analyzer(reads=("gpu.clock_reasons", "gpu.sm_clock", "gpu.temp_max", "gpu.slowdown_temp", "gpu.xid_last",
                 "gpu.row_remap_failure", "gpu.health_issues", "gpu.pcie_replays", "gpu.nvlink_errors"),
          produces=("gpu.clocks_slowed", "gpu.too_hot", "gpu.xid_dcgm", "gpu.health_issues",
                    "gpu.pcie_replays_growing", "gpu.nvlink_errors_growing"))
def derive_dcgm_gpu_faults(facts: Facts) -> None:
    """The GPU fault facts from the DCGM exporter's per-GPU lists (the report: doctor/report/promql.yaml
    gpu.xid_last, gpu.clock_reasons, gpu.temp_max, …), through the live probe's own rules
    (doctor/hardware/gpu_health.py faults, doctor/hardware/xid.py), so the same trees name the same causes:
    position i of each list is GPU i of the engine's host (ordered by DCGM's gpu label)."""
    lists = {k: facts.fact(f"gpu.{k}") for k in ("clock_reasons", "sm_clock", "temp_max", "slowdown_temp",
                                                  "xid_last", "row_remap_failure", "pcie_replays", "nvlink_errors")}
    if all(f is None for f in lists.values()):
        return
    from doctor.hardware.gpu_health import faults, link_errors, reasons_from_mask
    from doctor.hardware.xid import event
    from doctor.probes.gpu import GpuReading

    def at(key: str, i: int) -> int | None:
        fact = lists[key]
        return fact.value[i] if fact is not None and isinstance(fact.value, list) and i < len(fact.value) else None

    count = max(len(f.value) for f in lists.values() if f is not None and isinstance(f.value, list))
    readings = []
    for i in range(count):
        mask = at("clock_reasons", i)
        readings.append(GpuReading(index=i, name="", clocks_event_reasons=None if mask is None else
                                   reasons_from_mask(int(mask)), sm_clock_mhz=at("sm_clock", i),
                                   temp_c=at("temp_max", i), temp_slowdown_c=at("slowdown_temp", i)))
    found = [faults(r) for r in readings]
    for key, kind, fact in (("gpu.clocks_slowed", "clocks", lists["clock_reasons"]),
                            ("gpu.too_hot", "hot", lists["temp_max"])):
        if fact is not None and key not in facts:
            facts.set(key, [f[kind] for f in found if f[kind]], f"derived: {fact.source}", observed=True)
    links = [link_errors(i, at("pcie_replays", i), at("nvlink_errors", i)) for i in range(count)]
    for key, kind in (("gpu.pcie_replays_growing", "pcie_replays"), ("gpu.nvlink_errors_growing", "nvlink_errors")):
        fact = lists[kind]
        if fact is not None:
            facts.set(key, [f[kind] for f in links if f[kind]], f"derived: {fact.source}", observed=True)
    xids = lists["xid_last"]
    if xids is not None:
        facts.set("gpu.xid_dcgm", [event(int(code), f"GPU {i}", "DCGM_FI_DEV_XID_ERRORS (the last Xid of the window)")
                                   for i in range(count) if (code := at("xid_last", i))],
                  f"derived: {xids.source}", observed=True)
    failed = lists["row_remap_failure"]
    if failed is not None and "gpu.health_issues" not in facts:
        facts.set("gpu.health_issues", [f"GPU {i}: row remapping failed (the GPU needs service)"
                                        for i in range(count) if at("row_remap_failure", i)],
                  f"derived: {failed.source}", observed=True)


@analyzer(reads=("gpu.xid_live", "gpu.xid_dcgm", "log.xid_events"),
          produces=("gpu.xid_events", "gpu.xid_explains"))
def derive_xid_events(facts: Facts) -> None:
    """gpu.xid_events: the Xid events of the kernel log (log.xid_events), of NVML's event wait (gpu.xid_live)
    and of the DCGM exporter (gpu.xid_dcgm), one list for the trees (doctor/hardware/xid.py explains each)."""
    found = [(k, facts.fact(k)) for k in ("gpu.xid_live", "gpu.xid_dcgm", "log.xid_events")]
    events = [e for _, f in found if f is not None and isinstance(f.value, list) for e in f.value]
    if events:
        sources = " + ".join(f.source for _, f in found if f is not None)
        facts.set("gpu.xid_events", events, f"derived: {sources}", observed=True)
        facts.set("gpu.xid_explains", sorted({s for e in events for s in e.get("explains") or ()}),
                  "derived: the symptoms doctor/hardware/xid.yaml says these Xid codes cause", observed=True)


@analyzer(reads=("gpu.count", "launch.engine", "launch.flags.nnodes", "launch.flags.data_parallel_size_local",
                 "launch.tp", "launch.pp", "launch.dp", "launch.flags.enable_dp_attention",
                 "launch.env.CUDA_VISIBLE_DEVICES"),
          produces=("gpu.needed", "gpu.short_by"))
def derive_gpu_shortfall(facts: Facts) -> None:
    """gpu.needed: the GPUs the launch command asks for on this node (TP × PP × DP, where the server runs on one
    node), and gpu.short_by when fewer are present (NVML or nvidia-smi count, CUDA_VISIBLE_DEVICES applied)."""
    count, engine = facts.get("gpu.count"), facts.get("launch.engine")
    if not isinstance(count, int) or engine not in ("vllm", "sglang"):
        return
    if any(_number(facts.get(k)) > 1 for k in ("launch.flags.nnodes", "launch.flags.data_parallel_size_local")):
        return
    tp, pp, dp = (_number(facts.get(k)) or 1 for k in ("launch.tp", "launch.pp", "launch.dp"))
    if engine == "sglang" and facts.get("launch.flags.enable_dp_attention") is True:
        dp = 1
    visible = facts.get("launch.env.CUDA_VISIBLE_DEVICES")
    if isinstance(visible, str) and visible.strip():
        count = min(count, len([d for d in visible.split(",") if d.strip()]))
    needed = tp * pp * dp
    source = f"derived: launch.tp {tp} × launch.pp {pp} × launch.dp {dp} against {count} GPU(s) visible"
    facts.set("gpu.needed", needed, source)
    facts.set("gpu.short_by", max(0, needed - count), source)


#: The processes every server of an engine runs, whatever its flags: vLLM's engine core below the API server
#: (vllm/v1/engine/core.py:1411), SGLang's scheduler and detokenizer below the HTTP server
#: (scheduler.py:6294, detokenizer_manager.py:551; 0.5.23).
REQUIRED_ROLES = {"vllm": ("engine-core",), "sglang": ("worker", "detokenizer")}


@analyzer(reads=("process.workers", "launch.engine", "process.tree", "launch.tp", "launch.pp", "launch.dp",
                 "launch.flags.enable_dp_attention"),
          produces=("process.missing_roles", "process.expected_workers", "process.missing_workers"))
def derive_missing_workers(facts: Facts) -> None:
    """process.missing_roles (REQUIRED_ROLES not in the tree), process.expected_workers and
    process.missing_workers: one worker process per rank the launch command asks for (TP × PP, per data-parallel replica), against the rank workers alive in the server's process tree.

    Only where the tree shows the engine's process titles (none at all: titles not set, or not the engine's
    tree — nothing can be told). SGLang starts one scheduler process per rank even at TP 1 (scheduler.py:6294); vLLM runs a single-rank
    engine inside its engine-core process on a GPU (the uniprocessor executor), so its workers are counted only
    from TP × PP = 2 on (multiproc_executor.py). A deployment spread over several nodes has ranks this host
    cannot see: nothing is derived for it.
    """
    workers, engine = facts.get("process.workers"), facts.get("launch.engine")
    if not isinstance(workers, int) or engine not in ("vllm", "sglang"):
        return
    alive = {p.get("role") for p in facts.get("process.tree") or [] if isinstance(p, dict) and p.get("state") != "Z"}
    if not alive - {"other"}:  # no engine titles: vLLM without setproctitle (system_utils.py:185-188), a wrapper
        return
    facts.set("process.missing_roles", [r for r in REQUIRED_ROLES[engine] if r not in alive],
              f"derived: the {engine} processes every server runs (process_roles.yaml), against its tree")
    if any(_number(facts.get(k)) > 1 for k in ("launch.flags.nnodes", "launch.flags.data_parallel_size_local")):
        return
    tp, pp, dp = (_number(facts.get(k)) or 1 for k in ("launch.tp", "launch.pp", "launch.dp"))
    if engine == "vllm" and tp * pp < 2:
        return
    if engine == "sglang" and facts.get("launch.flags.enable_dp_attention") is True:
        dp = 1  # DP attention splits the TP ranks: the schedulers are TP × PP
    expected = tp * pp * dp
    source = (f"derived: launch.tp {tp} × launch.pp {pp} × launch.dp {dp} rank workers expected, "
              f"{workers} alive in the process tree")
    facts.set("process.expected_workers", expected, source)
    facts.set("process.missing_workers", max(0, expected - workers), source)


def _number(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0
