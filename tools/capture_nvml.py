"""Record a real GPU reading as a fixture: what llmdoctor's NVML probe reads, plus nvidia-smi's own view.

Run it on a machine with an NVIDIA driver, from the repository root:

    python tools/capture_nvml.py                     # writes fixtures/nvml/<gpu>-<driver>-<date>.json
    python tools/capture_nvml.py -o reading.json

The file holds the probe's raw NVML output (replayable through doctor.probes.gpu.interpret) — with every health
field the probe reads (temperatures and their slowdown/shutdown thresholds, clocks-event reasons, SM clock and
its maximum, PCIe generation/width and their maxima, PCIe replays, NVLink link states and error counters,
persistence mode, and the Xid events NVML delivers during ``--xid-wait`` seconds) — the ``nvidia-smi -q`` text and
``-q -x`` XML, ``--query-gpu`` CSV (the same health columns), ``nvlink --status`` and ``topo -m`` texts, the UTC date and the
driver version. No session has run it on a GPU yet (the device machine was not lent to issue 26's session).
tests/test_gpu_probe.py checks every such file: NVML and nvidia-smi must name the same GPUs and memory.
Host names, serial numbers and UUIDs are replaced, as in the other real fixtures.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from doctor.outio import write_atomic  # noqa: E402 - after the path set-up above
from doctor.probes.gpu import read_nvml  # noqa: E402

QUERY = ("index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used,utilization.gpu,mig.mode.current,"
         "ecc.errors.uncorrected.volatile.total,remapped_rows.pending,remapped_rows.failure,power.draw,power.limit,"
         "driver_version,temperature.gpu,temperature.gpu.tlimit,clocks.current.sm,clocks.max.sm,"
         "clocks_event_reasons.active,clocks_event_reasons.gpu_idle,clocks_event_reasons.sw_power_cap,"
         "clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,"
         "clocks_event_reasons.hw_power_brake_slowdown,clocks_event_reasons.sw_thermal_slowdown,"
         "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,persistence_mode,"
         "retired_pages.pending")
_UUID = re.compile(r"(GPU|MIG)-[0-9a-fA-F-]{36}")
_SERIAL = re.compile(r"(<serial>)[^<]*(</serial>)")
_SERIAL_TEXT = re.compile(r"^(\s*Serial Number\s*:\s*)\S+", re.MULTILINE)  # the -q text form


def _run(*args: str) -> str:
    try:
        done = subprocess.run(["nvidia-smi", *args], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"[not captured: {exc}]"
    return done.stdout if done.returncode == 0 else f"[nvidia-smi exited {done.returncode}: {done.stderr.strip()}]"


def _mask(text: str) -> str:
    text = _SERIAL_TEXT.sub(r"\g<1>0000000000000", text)
    return _SERIAL.sub(r"\g<1>0000000000000\g<2>", _UUID.sub(r"\1-00000000-0000-0000-0000-000000000000", text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, help="where to write the JSON (default: fixtures/nvml/…)")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds NVML may take (default 10)")
    parser.add_argument("--xid-wait", type=float, default=2.0,
                        help="seconds to wait for NVML Xid events after reading (default 2; the probe's bound)")
    args = parser.parse_args()

    nvml = read_nvml(args.timeout, xid_wait_s=args.xid_wait)
    if nvml.error:
        print(f"capture_nvml: {nvml.error}", file=sys.stderr)
        return 3
    raw = json.loads(_mask(json.dumps(nvml.to_raw())))
    now = dt.datetime.now(dt.timezone.utc)
    capture = {
        "_capture": "real reading recorded by tools/capture_nvml.py (not a scenario)",
        "captured_at": now.isoformat(timespec="seconds"),
        "driver": nvml.driver,
        "nvml": raw,
        "nvidia_smi_q": _mask(_run("-q")),
        "nvidia_smi_xml": _mask(_run("-q", "-x")),
        "nvidia_smi_csv": _mask(_run(f"--query-gpu={QUERY}", "--format=csv")),
        "nvidia_smi_topo": _run("topo", "-m"),
        "nvidia_smi_nvlink": _mask(_run("nvlink", "--status")),
    }
    first = re.sub(r"[^a-z0-9]+", "-", nvml.readings[0].name.lower()).strip("-") if nvml.readings else "no-gpu"
    out = args.output or ROOT / "fixtures" / "nvml" / f"{first}-{nvml.driver}-{now:%Y%m%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, json.dumps(capture, indent=1) + "\n")
    print(f"wrote {out} ({len(nvml.readings)} GPU(s), driver {nvml.driver})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
