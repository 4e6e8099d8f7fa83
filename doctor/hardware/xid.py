"""Xid events: the NVIDIA driver's fault reports, from the kernel log or NVML, explained from the catalog
(xid.yaml: NVIDIA's meaning and first action per code, cited there).

The kernel-log form is one line per event, ``NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the
bus.`` (dmesg, journalctl -k, /var/log/kern.log; older drivers omit ``PCI:`` and ``pid=``). The same parser
reads a live kernel log and a recorded one (fixtures/kernel-log).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: ``NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: …``; the message is what follows the code.
XID_LINE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)\): "
                      r"(\d+)(?:, pid=([^,\s]+))?(?:, name=[^,]*)?,?\s*(.*)$")
MESSAGE_KEPT = 160
#: the driver's other report of a lost GPU, without an Xid line and over several lines (R570: ``NVRM: The NVIDIA
#: GPU 0000:b3:00.0`` / ``NVRM: (PCI ID: …) installed in this system has`` / ``NVRM: fallen off the bus and is not
#: responding to commands.``): the same fault as Xid 79
FALLEN_OFF = re.compile(r"NVRM: The NVIDIA GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.\d)?)\s*\n?"
                        r"(?:(?!NVRM: The NVIDIA GPU).){0,400}?fallen off the bus", re.DOTALL)


@functools.cache
def catalog() -> dict[str, Any]:
    from doctor.yamlsafe import load_packaged

    data = load_packaged(Path(__file__).with_name("xid.yaml"))
    return {**data, "codes": {int(k): v for k, v in data["codes"].items()}}  # the cache keeps keys as text


def explain(code: int) -> dict[str, Any]:
    """What the catalog says of ``code`` (name, meaning, action, action_text, explains); ``known`` False for a
    code it does not list — still an event, with NVIDIA's catalog to read."""
    cat = catalog()
    entry = cat["codes"].get(code)
    if entry is None:
        return {"known": False, "name": f"Xid {code} (not in llmdoctor's catalog)", "action": "none",
                "action_text": "look it up in NVIDIA's Xid catalog", "explains": []}
    return {"known": True, "name": entry["name"], "meaning": entry.get("meaning", entry["name"]),
            "action": entry["action"], "action_text": cat["actions"][entry["action"]],
            "explains": list(entry.get("explains", ()))}


def event(code: int, gpu: str, message: str = "", pid: str | None = None) -> dict[str, Any]:
    """One Xid event as a fact item: where, what the driver said, and what the catalog makes of it."""
    explained = explain(code)
    explained.setdefault("meaning", f"the driver says: {message[:MESSAGE_KEPT]}" if message else "no message")
    return {"code": code, "gpu": gpu, "pid": pid, "message": message[:MESSAGE_KEPT], **explained}


def fallen_off_bus(text: str, known: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int, int]]:
    """Xid 79 events (with the span of ``text`` they came from) for the multi-line "fallen off the bus" reports
    whose GPU no Xid 79 line names."""
    if "fallen off the bus" not in text:
        return []
    named = {e["gpu"][:10] for e in known if e["code"] == 79}
    out = []
    for m in FALLEN_OFF.finditer(text):
        gpu = m.group(1).lower()
        if gpu[:10] not in named:
            named.add(gpu[:10])
            out.append((event(79, gpu, "fallen off the bus and is not responding to commands (no Xid line)"),
                        m.start(), m.end()))
    return out


def parse_line(line: str) -> dict[str, Any] | None:
    m = XID_LINE.search(line)
    if m is None:
        return None
    return event(int(m.group(2)), m.group(1).lower(), m.group(4).strip(), m.group(3))
