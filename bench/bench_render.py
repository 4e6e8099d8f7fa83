"""What the text for people costs: ``check``'s rendering of the bundled incident and of the real scrapes.

    python bench/bench_render.py [--repeat 300]

In-process, after one check run per input: the median time of the default one-screen text, of ``-v``, of
Markdown and JSON, and of the last redaction pass every output goes through (doctor.redact.redact_shapes).
Rendering must stay a rounding error next to the probes (tens of ms): the one-screen default must not slow
``check``. The real scrapes are read from fixtures/metrics.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
METRICS = ROOT / "fixtures" / "metrics"


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    os.environ.setdefault("COLUMNS", "100")

    from doctor.commands.check import CheckOptions, run_check
    from doctor.redact import redact_shapes
    from doctor.render.check import check_markdown, check_text
    from doctor.sources.offline import OfflineInputs

    runs = {"example:vllm-kv-full": run_check(CheckOptions(snapshot="example:vllm-kv-full"))}
    for scrape in sorted(METRICS.glob("*.prom")) if METRICS.is_dir() else []:
        runs[scrape.name] = run_check(CheckOptions(offline=OfflineInputs(metrics=str(scrape))))
    print(f"{'input':<22}{'text':>9}{'text -v':>9}{'markdown':>10}{'json':>8}{'redact -v':>11}  (median ms)")
    for name, run in runs.items():
        verbose = check_text(run, verbose=True)
        cells = [_median_ms(lambda run=run: check_text(run), args.repeat),
                 _median_ms(lambda run=run: check_text(run, verbose=True), args.repeat),
                 _median_ms(lambda run=run: check_markdown(run), args.repeat),
                 _median_ms(lambda run=run: json.dumps(run.to_dict(), default=str), args.repeat),
                 _median_ms(lambda text=verbose: redact_shapes(text), args.repeat)]
        print(f"{name:<22}" + "".join(f"{c:>{w}.3f}" for c, w in zip(cells, (9, 9, 10, 8, 11), strict=True)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
