"""GPU health beyond memory errors: the clocks-event reasons that slow a GPU down, temperature against its
slowdown threshold, current against maximum clocks and PCIe link, NVLink links down, persistence mode — read
from one :class:`doctor.probes.gpu.GpuReading` whichever reader (NVML, nvidia-smi CSV or XML) filled it, and
decoded from DCGM's bitmask by the fleet report.

The reasons are NVML's clocks-event (formerly "throttle") reasons, nvmlClocksEventReason* / the
``clocks_event_reasons.*`` columns of ``nvidia-smi --query-gpu`` (bit values: NVML API reference,
https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksThrottleReasons.html). Idle, application and display
clock settings and sync boost are not faults; the others slow the GPU for a physical reason.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: bit -> (reason name, what it means, a fault?)
REASONS: dict[int, tuple[str, str, bool]] = {
    0x1: ("gpu_idle", "idle", False),
    0x2: ("applications_clocks_setting", "application clocks set below maximum", False),
    0x4: ("sw_power_cap", "software power cap: the board draws its power limit", True),
    0x8: ("hw_slowdown", "hardware slowdown (clocks halved or less: heat or power brake)", True),
    0x10: ("sync_boost", "sync boost group", False),
    0x20: ("sw_thermal_slowdown", "software thermal slowdown (the GPU or memory is over its target temperature)", True),
    0x40: ("hw_thermal_slowdown", "hardware thermal slowdown (over the slowdown temperature)", True),
    0x80: ("hw_power_brake_slowdown", "hardware power brake (the system's power supply asserted it)", True),
    0x100: ("display_clock_setting", "display clock setting", False),
}
FAULTY = {name for name, _, fault in REASONS.values() if fault}
#: a degree margin: a GPU this close to its max operating temperature (where software thermal slowdown holds it)
#: or its slowdown temperature (hardware slowdown), whichever is lower, is about to be slowed down
HOT_MARGIN_C = 5
#: PCIe replays one GPU may make in a report window before it is named: a healthy link replays now and then
#: (the recorded H100s of fixtures/gpu-faults show 43-120 since their last reset, over days), a failing one
#: hundreds an hour. NVLink counts no error on a healthy link: any growth is named.
PCIE_REPLAYS_MAX = 100
NVLINK_ERRORS_MAX = 0
#: the first action for each fault, in the Xid catalog's buckets (doctor/hardware/xid.yaml ``actions``), and
#: what it means for that fault: every fault a check names says what to do about it
ACTIONS: dict[str, tuple[str, str]] = {
    "power": ("service", "drain the node and have its power delivery serviced (PSU, power cables, the chassis "
                         "power budget): the brake is asserted from outside the GPU"),
    "thermal": ("service", "drain the node and have its cooling serviced (fans, inlet air, airflow)"),
    "power-cap": ("none", "nothing to repair: the board runs at its power limit (raise it with nvidia-smi -pl "
                          "if the limit was lowered)"),
    "pcie": ("service", "drain the node, then reseat the GPU or its riser and check the slot and the BIOS's PCIe "
                        "settings"),
    "nvlink": ("reset-gpu", "drain the GPU and reset it (nvidia-smi -r -i <index>); if the link stays down, "
                            "service it"),
    "pcie-replays": ("service", "drain the node, then reseat the GPU or its riser; a link that keeps replaying "
                                "needs the slot or the GPU serviced"),
    "nvlink-errors": ("reset-gpu", "drain the GPU and reset it (nvidia-smi -r -i <index>); errors that come back "
                                   "after the reset need the GPU or the NVLink bridge/baseboard serviced"),
    "hw-slowdown": ("service", "drain the node and have its cooling and power delivery serviced (HW slowdown "
                               "without a thermal or brake bit: heat, or power draw over the board's limit)"),
}


def reasons_from_mask(mask: int) -> list[str]:
    """The active reason names of an NVML/DCGM clocks-event bitmask."""
    return [name for bit, (name, _, _) in REASONS.items() if mask & bit]


def describe(name: str) -> str:
    return next((text for n, text, _ in REASONS.values() if n == name), name)


def faults(reading: Any) -> dict[str, dict[str, Any] | None]:
    """The health faults of one GPU reading, by kind (None: not this fault, or not known)."""
    index = reading.index
    out: dict[str, dict[str, Any] | None] = {}
    slowing = [r for r in reading.clocks_event_reasons or () if r in FAULTY]
    # SW power cap at full power is the board doing its job: a fault only with a clock well below max
    if slowing == ["sw_power_cap"] and not _clock_low(reading):
        slowing = []
    out["clocks"] = {"gpu": index, "reasons": ", ".join(describe(r) for r in slowing),
                     "sm_clock_mhz": reading.sm_clock_mhz, "sm_clock_max_mhz": reading.sm_clock_max_mhz,
                     **_action(_clocks_kind(slowing))} if slowing else None
    limits = [(name, c) for name, c in (("max operating", getattr(reading, "temp_max_operating_c", None)),
                                        ("slowdown", reading.temp_slowdown_c)) if c is not None]
    limit = min(limits, key=lambda item: item[1]) if limits else None
    hot = reading.temp_c is not None and limit is not None and reading.temp_c >= limit[1] - HOT_MARGIN_C
    out["hot"] = {"gpu": index, "temp_c": reading.temp_c, "limit": limit[0], "limit_c": limit[1],
                  "slowdown_c": reading.temp_slowdown_c, "shutdown_c": reading.temp_shutdown_c,
                  **_action("thermal")} if hot and limit else None
    narrow = reading.pcie_width is not None and reading.pcie_width_max and reading.pcie_width < reading.pcie_width_max
    # the link drops its generation at idle to save power: a lower generation counts only while the GPU works
    slow_gen = (reading.pcie_gen is not None and reading.pcie_gen_max and reading.pcie_gen < reading.pcie_gen_max
                and (reading.util or 0) >= 0.5)
    out["pcie"] = {"gpu": index, "gen": reading.pcie_gen, "gen_max": reading.pcie_gen_max,
                   "width": reading.pcie_width, "width_max": reading.pcie_width_max, **_action("pcie")} \
        if narrow or slow_gen else None
    out["nvlink"] = {"gpu": index, "links_down": ", ".join(str(n) for n in reading.nvlink_down),
                     **_action("nvlink")} if reading.nvlink_down else None
    out["persistence"] = {"gpu": index} if reading.persistence is False else None
    return out


def link_errors(index: int, replays: float | None, nvlink: float | None) -> dict[str, dict[str, Any] | None]:
    """The link faults of one GPU over a window (counts of the window, not since reset: a snapshot cannot tell
    a growing counter from an old one)."""
    return {"pcie_replays": {"gpu": index, "replays": int(replays), **_action("pcie-replays")}
            if replays is not None and replays > PCIE_REPLAYS_MAX else None,
            "nvlink_errors": {"gpu": index, "errors": int(nvlink), **_action("nvlink-errors")}
            if nvlink is not None and nvlink > NVLINK_ERRORS_MAX else None}


def _clocks_kind(slowing: list[str]) -> str:
    """The action a slowdown calls for: the power brake first (its cause is outside the GPU), then heat."""
    if "hw_power_brake_slowdown" in slowing:
        return "power"
    if {"hw_thermal_slowdown", "sw_thermal_slowdown"} & set(slowing):
        return "thermal"
    return "hw-slowdown" if "hw_slowdown" in slowing else "power-cap"


def _action(kind: str) -> dict[str, str]:
    action, text = ACTIONS[kind]
    return {"action": action, "action_text": text}


def _clock_low(reading: Any) -> bool:
    cur, top = reading.sm_clock_mhz, reading.sm_clock_max_mhz
    return bool(cur and top and cur < 0.8 * top)
