"""SCENARIO history for a fleet of any size (1,000 instances × 24 h at 60 s), backfilled block by block.

NOT REAL CAPTURES. The five deployments of fixtures/prometheus/scenarios.py (same metric names, label shapes and
bucket bounds, taken from real scrapes and the engines' source — see that file), repeated on new hosts, with
every value a closed form of (instance, time): gauges from the time of day plus a hashed noise, counters as the
exact integral of their rate. That is what makes the size tractable: a fleet of 1,000 is ~50,000 series and
~72 million samples, which as one OpenMetrics text is ~12 GB and as many passes of ``promtool`` (it reads its
whole input once per 2-hour block) is hours. Here each 2-hour window is written on its own (~1 GB, streamed to
disk, never held in memory), backfilled by ``promtool tsdb create-blocks-from openmetrics`` into one block and
deleted, while the next window is generated: 12 non-overlapping blocks, as a Prometheus that had scraped the
fleet for a day would hold.

    python bench/fleet_history.py --instances 1000 --hours 24 --step 60 --out /tmp/llmdoctor-fleet-1000
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

JOB, GPU_JOB = "llm", "gpu"
BLOCK_S = 2 * 3600
DAY = 86400.0
KINDS = ("healthy", "kv-exhausted", "queueing", "ep-skew", "underscore")
#: what the report must name for each kind (scenarios.py's expectations)
EXPECT = {"healthy": (), "kv-exhausted": ("kv-cache-exhausted",), "queueing": ("max-num-seqs-limit",),
          "ep-skew": ("expert-load-imbalance",), "underscore": ("kv-filling-fast",)}
_VLLM_TTFT = (0.02, 0.06, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_VLLM_ITL = (0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1.0)
_SGLANG_TTFT = (0.1, 0.2, 0.4, 0.6, 1, 2, 4, 10, 20)
_SGLANG_ITL = (0.01, 0.015, 0.02, 0.03, 0.04, 0.06, 0.1, 0.2)

Fn = Callable[[int], float]


@dataclass(frozen=True)
class Series:
    prefix: str  # name{labels}␠
    value: Fn
    fmt: str = ".6g"


def day(t: float) -> float:
    return math.sin(2 * math.pi * (t % DAY) / DAY)


def day_integral(a: float, b: float, t0: float, t: float) -> float:
    """∫ a + b·day(s) ds from t0 to t: a counter whose rate follows the clock."""
    w = 2 * math.pi / DAY
    return a * (t - t0) - b / w * (math.cos(w * t) - math.cos(w * t0))


def noise(seed: int, t: int) -> float:
    """Deterministic noise in [-0.5, 0.5): a hash of (seed, t), so any window can be written on its own."""
    return ((seed * 1103515245 + t * 2654435761) % 2147483647) / 2147483647 - 0.5


class Fleet:
    """Every series of the fleet, grouped by family (OpenMetrics wants a family's lines together)."""

    def __init__(self, instances: int, start: int, end: int) -> None:
        self.start, self.end = start, end
        self.families: dict[str, tuple[str, list[Series]]] = {}
        self.instances: dict[str, str] = {}  # instance label -> kind
        for i in range(instances):
            kind = KINDS[i % len(KINDS)]
            host = f"10.{i // 5 // 250}.{i // 5 % 250}.{i % 5 + 1}"
            getattr(self, "_" + kind.replace("-", "_"))(host, seed=i)

    def add(self, family: str, kind: str, name: str, labels: dict[str, str], value: Fn, fmt: str = ".6g") -> None:
        text = ",".join(f'{k}="{v}"' for k, v in labels.items())
        self.families.setdefault(family, (kind, []))[1].append(Series(f"{name}{{{text}}} ", value, fmt))

    def counter(self, family: str, labels: dict[str, str], total: Fn) -> None:
        self.add(family, "counter", family + "_total", labels, total, ".10g")

    def histogram(self, family: str, labels: dict[str, str], bounds: tuple[float, ...], per_s: float,
                  median: float) -> None:
        t0 = self.start

        def count(t: int) -> float:
            return per_s * (t - t0)

        for le in (*bounds, math.inf):
            share = 1.0 if math.isinf(le) else 0.5 * (1 + math.erf(math.log(le / median) / (0.6 * math.sqrt(2))))
            self.add(family, "histogram", family + "_bucket",
                     {**labels, "le": "+Inf" if math.isinf(le) else f"{le:g}"}, lambda t, s=share: round(count(t) * s),
                     "d")
        self.add(family, "histogram", family + "_count", labels, lambda t: round(count(t)), "d")
        self.add(family, "histogram", family + "_sum", labels, lambda t: count(t) * median * 1.2, ".10g")

    # -- the five deployments ---------------------------------------------------------------------------------
    def _engine(self, host: str, port: int, kind: str) -> str:
        instance = f"{host}:{port}"
        self.instances[instance] = kind
        self.add("up", "gauge", "up", {"instance": instance, "job": JOB}, lambda t: 1, "d")
        return instance

    def _vllm(self, instance: str, *, old: bool, kv: Fn, running: Fn, waiting: Fn, preempted: Fn,
              running_integral: Callable[[float, float], float]) -> None:
        labels = {"instance": instance, "job": JOB, "engine": "0", "model_name": "meta-llama/Llama-3.1-70B-Instruct"}
        kv_name = "vllm:gpu_cache_usage_perc" if old else "vllm:kv_cache_usage_perc"
        self.add(kv_name, "gauge", kv_name, labels, lambda t: round(min(1.0, max(0.0, kv(t))), 4))
        self.add("vllm:num_requests_running", "gauge", "vllm:num_requests_running", labels, lambda t: round(running(t)),
                 "d")
        self.add("vllm:num_requests_waiting", "gauge", "vllm:num_requests_waiting", labels, lambda t: round(waiting(t)),
                 "d")
        t0 = self.start
        self.counter("vllm:num_preemptions", labels, preempted)
        for family, per in (("vllm:prompt_tokens", 40), ("vllm:generation_tokens", 25),
                            ("vllm:prefix_cache_queries", 40), ("vllm:prefix_cache_hits", 24)):
            self.counter(family, labels, lambda t, p=per: p * running_integral(t0, t))
        self.histogram("vllm:time_to_first_token_seconds", labels, _VLLM_TTFT, 2.0, 0.3)
        self.histogram("vllm:time_per_output_token_seconds" if old else "vllm:inter_token_latency_seconds", labels,
                       _VLLM_ITL, 50.0, 0.03)
        config = {**labels, "block_size": "16", "cache_dtype": "auto", "enable_prefix_caching": "True",
                  "gpu_memory_utilization": "0.9", "num_gpu_blocks": "13750"}
        self.add("vllm:cache_config_info", "gauge", "vllm:cache_config_info", config, lambda t: 1, "d")

    def _sglang(self, instance: str, *, prefix: str, ranks: int, kv: Callable[[int, int], float], running: float,
                queued: Callable[[int], float]) -> None:
        base = {"instance": instance, "job": JOB, "model_name": "Qwen/Qwen3-235B-A22B", "engine_type": "unified"}
        t0 = self.start
        for r in range(ranks):
            labels = {**base, "tp_rank": str(r), "pp_rank": "0", "moe_ep_rank": str(r)}
            if ranks > 1:
                labels["dp_rank"] = str(r)
            self.add(f"{prefix}token_usage", "gauge", f"{prefix}token_usage", labels,
                     lambda t, r=r: round(min(1.0, kv(t, r)), 4))
            self.add(f"{prefix}num_running_reqs", "gauge", f"{prefix}num_running_reqs", labels, lambda t: running, "g")
            self.add(f"{prefix}num_queue_reqs", "gauge", f"{prefix}num_queue_reqs", labels,
                     lambda t: round(queued(t)), "d")
            self.add(f"{prefix}max_total_num_tokens", "gauge", f"{prefix}max_total_num_tokens", labels,
                     lambda t: 900000, "d")
            self.counter(f"{prefix}num_retracted_requests", labels, lambda t: 0)
            stream = {**labels, "is_streaming": "false"}
            self.counter(f"{prefix}prompt_tokens", stream, lambda t: 40 * running * (t - t0))
            self.counter(f"{prefix}generation_tokens", stream, lambda t: 25 * running * (t - t0))
            self.counter(f"{prefix}cached_tokens", {**labels, "cache_source": "device"},
                         lambda t: 20 * running * (t - t0))
        self.histogram(f"{prefix}time_to_first_token_seconds", {**base, "is_streaming": "false"}, _SGLANG_TTFT,
                       2.0, 0.5)
        self.histogram(f"{prefix}inter_token_latency_seconds", base, _SGLANG_ITL, 50.0, 0.025)

    def _healthy(self, host: str, seed: int) -> None:
        instance = self._engine(host, 8000, "healthy")
        self._vllm(instance, old=False, kv=lambda t: 0.4 + 0.15 * day(t) + 0.04 * noise(seed, t),
                   running=lambda t: 30 + 12 * day(t), waiting=lambda t: 0, preempted=lambda t: 0,
                   running_integral=lambda t0, t: day_integral(30, 12, t0, t))
        labels = {"instance": f"{host}:9835", "job": GPU_JOB, "uuid": f"00000000-0000-0000-0000-{seed:012d}"}
        self.add("nvidia_smi_utilization_gpu_ratio", "gauge", "nvidia_smi_utilization_gpu_ratio", labels,
                 lambda t: round(min(1.0, max(0.0, 0.55 + 0.2 * day(t) + 0.06 * noise(seed + 7, t))), 2))
        self.add("nvidia_smi_memory_used_bytes", "gauge", "nvidia_smi_memory_used_bytes", labels,
                 lambda t: 1.28e11 + round(20 * noise(seed + 9, t)) * 1e8)

    def _kv_exhausted(self, host: str, seed: int) -> None:
        instance = self._engine(host, 8000, "kv-exhausted")
        start, span = self.start, max(1, self.end - self.start)
        full_at = start + span * 20 // 24

        def frac(t: int) -> float:
            return (t - start) / span

        self._vllm(instance, old=True,
                   kv=lambda t: min(0.985, 0.35 + 0.65 * frac(t) * 24 / 20) + 0.02 * noise(seed, t) * (t >= full_at),
                   running=lambda t: min(120.0, 30 + 90 * frac(t) * 24 / 20),
                   waiting=lambda t: 20 + 20 * noise(seed, t) if t >= full_at else 0,
                   preempted=lambda t: 0.1 * max(0, t - full_at),
                   running_integral=lambda t0, t: _ramp_integral(t0, t, start, span))

    def _queueing(self, host: str, seed: int) -> None:
        instance = self._engine(host, 30000, "queueing")
        self._sglang(instance, prefix="sglang:", ranks=1, kv=lambda t, r: 0.115 + 0.035 * day(t), running=48,
                     queued=lambda t: 25 + 10 * day(t))

    def _ep_skew(self, host: str, seed: int) -> None:
        instance = self._engine(host, 30000, "ep-skew")
        self._sglang(instance, prefix="sglang:", ranks=8, kv=lambda t, r: 0.5 + 0.08 * day(t) + 0.01 * r,
                     running=30, queued=lambda t: 0)
        for gpu in range(8):
            labels = {"instance": f"{host}:9400", "job": GPU_JOB, "gpu": str(gpu),
                      "UUID": f"GPU-5c2e1a3b-0000-4000-8000-{seed:06d}{gpu:06d}",
                      "pci_bus_id": f"00000000:{0x18 + gpu * 0x10:02X}:00.0", "device": f"nvidia{gpu}",
                      "modelName": "NVIDIA H200", "Hostname": f"gpu-node-{seed}", "DCGM_FI_DRIVER_VERSION": "590.48.01"}
            util = 97.0 if gpu == 3 else None
            self.add("DCGM_FI_DEV_GPU_UTIL", "gauge", "DCGM_FI_DEV_GPU_UTIL", labels,
                     lambda t, u=util, g=gpu: round(min(100.0, max(0.0, (u if u is not None else 25 + 8 * day(t))
                                                                        + 4 * noise(seed * 8 + g, t)))), "d")
            self.add("DCGM_FI_DEV_FB_USED", "gauge", "DCGM_FI_DEV_FB_USED", labels,
                     lambda t, g=gpu: 131072 + round(1000 * noise(seed * 8 + g + 3, t)), "d")

    def _underscore(self, host: str, seed: int) -> None:
        instance = self._engine(host, 30000, "underscore")
        ramp, end = self.end - 40 * 60, self.end

        def kv(t: int, r: int) -> float:
            return 0.3 if t < ramp else 0.3 + 0.55 * (t - ramp) / (end - ramp)

        self._sglang(instance, prefix="sglang_", ranks=1, kv=kv, running=10, queued=lambda t: 0)

    # -- writing ----------------------------------------------------------------------------------------------
    def write_window(self, path: Path, times: range) -> int:
        """One window as OpenMetrics text, streamed family by family; returns the bytes written."""
        written = 0
        with path.open("w", buffering=1 << 20) as out:
            for family, (kind, series) in self.families.items():
                out.write(f"# TYPE {family} {kind}\n")
                for s in series:
                    prefix, value, fmt = s.prefix, s.value, s.fmt
                    chunk = "".join([f"{prefix}{value(t):{fmt}} {t}\n" for t in times])
                    written += len(chunk)
                    out.write(chunk)
            out.write("# EOF\n")
        return written

    @property
    def series_count(self) -> int:
        return sum(len(s) for _k, s in self.families.values())


def _ramp_integral(t0: float, t: float, start: int, span: int) -> float:
    """∫ min(120, 30 + 108·(s-start)/span) ds: the kv-exhausted deployment's running requests."""
    cap_at = start + span * (90 / 108)

    def f(s: float) -> float:
        if s <= cap_at:
            x = s - start
            return 30 * x + 54 * x * x / span
        x = cap_at - start
        return 30 * x + 54 * x * x / span + 120 * (s - cap_at)

    return f(t) - f(t0)


def build(out: Path, instances: int, hours: float, step: int, promtool: str) -> dict[str, float]:
    """Backfill ``out/data`` window by window (generation of window k+1 overlaps promtool on window k)."""
    end = int(time.time()) // step * step - step
    start = end - int(hours * 3600)
    times_all = range(start - start % step + step, end + 1, step)
    shutil.rmtree(out, ignore_errors=True)
    (out / "data").mkdir(parents=True)
    started = time.perf_counter()
    fleet = Fleet(instances, times_all[0], end)
    generate_s, total_bytes, pending = 0.0, 0, None
    window_start = times_all[0] - times_all[0] % BLOCK_S
    index = 0
    while window_start <= end:
        times = range(max(times_all[0], window_start), min(end, window_start + BLOCK_S - 1) + 1, step)
        times = range(times.start + (-(times.start - times_all[0])) % step, times.stop, step)
        path = out / f"window-{index}.om"
        t = time.perf_counter()
        total_bytes += fleet.write_window(path, times)
        generate_s += time.perf_counter() - t
        if pending is not None:
            _finish(*pending)
        pending = (subprocess.Popen([promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(path),
                                     str(out / "data")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE), path)
        window_start += BLOCK_S
        index += 1
    if pending is not None:
        _finish(*pending)
    return {"end": end, "instances": len(fleet.instances), "series": fleet.series_count,
            "samples": fleet.series_count * len(times_all), "bytes": total_bytes, "generate_s": generate_s,
            "total_s": time.perf_counter() - started, "windows": index}


def _finish(process: subprocess.Popen[bytes], path: Path) -> None:
    _out, err = process.communicate()
    path.unlink()
    if process.returncode != 0:
        raise RuntimeError(f"promtool failed on {path.name}: {err.decode()[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--step", type=int, default=60)
    parser.add_argument("--out", type=Path, default=Path("/tmp/llmdoctor-fleet-1000"))
    args = parser.parse_args()
    promtool = shutil.which("promtool")
    if promtool is None:
        sys.exit("promtool not installed (Debian: apt-get install prometheus)")
    info = build(args.out, args.instances, args.hours, args.step, promtool)
    print(f"{info['instances']} instances, {info['series']:,} series, {info['samples']:,} samples "
          f"({info['bytes'] / 1e9:.1f} GB of OpenMetrics in {info['windows']} windows, never more than one on disk): "
          f"generated in {info['generate_s']:.0f} s, backfilled by {info['total_s']:.0f} s")
    os.sync()


if __name__ == "__main__":
    main()
