"""What the renderers share: the key facts of an instance as people read them, and findings back from JSON.

The report document (analysis.py) is plain JSON; the HTML, Markdown and terminal renderers all read it, and
format numbers the same way through here (a ratio as a percentage, a slope per minute, seconds as ms/s/min).
"""

from __future__ import annotations

import re

from doctor.findings import Evidence, Finding

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SEVERITY_ORDER = ("critical", "warning", "info")
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def finding(data: dict[str, Any]) -> Finding:
    """A Finding again from its ``to_dict()`` (the shared findings renderers take Finding objects)."""
    fields = {k: data[k] for k in ("id", "severity", "confidence", "title", "what", "why", "fix", "ref", "symptom")}
    return Finding(**fields, evidence=[Evidence(**e) for e in data.get("evidence", [])])


def slug(instance: str) -> str:
    return "instance-" + re.sub(r"[^A-Za-z0-9]+", "-", instance).strip("-")


def _value(facts: dict[str, Any], key: str) -> Any:
    item = facts.get("facts", {}).get(key)
    return None if item is None else item.get("value")


def _known(facts: dict[str, Any], key: str) -> bool:
    return key in facts.get("facts", {})


def key_facts(facts: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, value as text, fact keys behind it) for the facts a reader of a fleet report looks at first."""
    v = lambda key: _value(facts, key)  # noqa: E731 - a local shorthand
    rows: list[tuple[str, str, str]] = []

    def add(label: str, text: str | None, keys: str) -> None:
        if text is not None:
            rows.append((label, text, keys))

    engine = v("metrics.engine") or v("launch.engine")
    layout = ", ".join(f"{name} {v(f'launch.{name.lower()}')}" for name in ("EP", "DP")
                       if isinstance(v(f"launch.{name.lower()}"), int))
    add("engine", (ENGINE_NAMES.get(engine, engine) + (f" ({layout})" if layout else "")) if engine else None,
        "metrics.engine, launch.ep, launch.dp")
    add("KV usage (p95)", pct(v("metrics.kv_usage")), "metrics.kv_usage")
    if _known(facts, "metrics.kv_fill_rate"):
        rate, ttf = v("metrics.kv_fill_rate"), v("metrics.time_to_full_s")
        text = f"{rate * 6000:+.2f} pts/min" if isinstance(rate, (int, float)) else "?"
        text += f", full in {duration(ttf)}" if isinstance(ttf, (int, float)) else ", not filling"
        add("KV trend (now)", text, "metrics.kv_fill_rate, metrics.time_to_full_s")
    add("KV capacity", _tokens(v("metrics.kv_capacity_tokens")), "metrics.kv_capacity_tokens")
    add("running / queued (p95)", _pair(v("metrics.running"), v("metrics.queued"), _count),
        "metrics.running, metrics.queued")
    if _known(facts, "metrics.preemptions_total"):
        total, rate = v("metrics.preemptions_total"), v("metrics.preemptions_per_s")
        add("preemptions", f"{_count(total)}" + (f" ({rate:.3g}/s)" if isinstance(rate, (int, float)) and rate
                                                  else ""), "metrics.preemptions_total, metrics.preemptions_per_s")
    add("prefix-cache hit rate", pct(v("metrics.prefix_hit_rate")), "metrics.prefix_hit_rate")
    add("TTFT p50 / p99", _pair(v("metrics.ttft_p50"), v("metrics.ttft_p99"), seconds),
        "metrics.ttft_p50, metrics.ttft_p99")
    add("ITL p50 / p99", _pair(v("metrics.itl_p50"), v("metrics.itl_p99"), seconds),
        "metrics.itl_p50, metrics.itl_p99")
    add("tokens/s out / in", _pair(v("metrics.gen_tokens_per_s"), v("metrics.prompt_tokens_per_s"), _count),
        "metrics.gen_tokens_per_s, metrics.prompt_tokens_per_s")
    util = v("gpu.util")
    if isinstance(util, list) and util:
        skew = v("gpu.util_skew")
        add("GPU utilization", " ".join(pct(u) or "?" for u in util)
            + (f" (max/mean {skew:.2f})" if isinstance(skew, (int, float)) else ""), "gpu.util, gpu.util_skew")
    add("scrape success", pct(v("metrics.scrape_up_ratio")), "metrics.scrape_up_ratio")
    return rows


def pct(value: Any) -> str | None:
    return f"{value * 100:.1f}%" if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def seconds(value: Any) -> str | None:
    if not isinstance(value, (int, float)):
        return None
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def duration(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "?"
    if value < 120:
        return f"{value:.0f} s"
    if value < 7200:
        return f"{value / 60:.0f} min"
    return f"{value / 3600:.1f} h"


def _count(value: Any) -> str | None:
    if not isinstance(value, (int, float)):
        return None
    return f"{value:,.0f}" if abs(value) >= 10 else f"{value:.3g}"


def _tokens(value: Any) -> str | None:
    return f"{value:,} tokens" if isinstance(value, int) else None


def _pair(a: Any, b: Any, fmt: Any) -> str | None:
    left, right = fmt(a), fmt(b)
    if left is None and right is None:
        return None
    return f"{left or '?'} / {right or '?'}"
