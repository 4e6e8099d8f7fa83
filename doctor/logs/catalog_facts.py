"""The error catalogs' facts for one log: which engine templates it printed, the causes they map to, the
values their holes held, and the engine's own errors no cause names (issue 22, docs/error-catalog.md).

Mapped templates join ``log.causes`` (the same list the causes' regex signatures fill), so the symptom
trees need nothing new for them. A template no cause claims still speaks: ``log.catalog.unmapped`` lists it
with its release range, file:line, function and guarding condition, and the start-up refusals among them
are ``log.catalog.unmapped_refusals`` (critical: the engine refused to start for a reason no rule names).
"""

from __future__ import annotations

import re
from dataclasses import replace

from doctor.logs.catalog import TemplateMatch, load, match_quote, scan
from doctor.redact import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Excerpt lines the facts quote at most (a crash loop prints the same refusal hundreds of times).
MAX_MATCHES = 50
#: vLLM's KV refusal, by wording: the numbers its holes hold, in the order of the text (vllm 0.6
#: worker/worker.py ``_check_if_can_support_max_seq_len``: max len, KV tokens; 0.7+ v1/core/kv_cache_utils.py:
#: max len, GiB needed, GiB available — the hole names vary with the expression, the order does not).
_KV_WORDINGS = (("stored in KV cache", ("max_model_len", "kv_tokens")),
                ("KV cache is needed", ("max_model_len", "needed_gib", "available_gib")))
_KV_CAUSE = "kv-cache-too-small-for-max-len"


def describe(m: TemplateMatch) -> dict[str, Any]:
    """A match as fact data: what a finding quotes (redacted before it is cut, so a replay of the redacted
    excerpt cuts the same text)."""
    site = m.sites[0] if m.sites else None
    return {"catalog": m.catalog, "template": m.template, "message": redact_text(m.message)[:300], "cause": m.cause,
            "severity": m.severity, "releases": f"{m.since}–{m.until}" if m.since != m.until else m.since,
            "where": m.where, "function": site.function if site else "", "guard": (site.guard or "always (no enclosing if)") if site else "",
            "type": site.type if site else "", "kind": site.kind if site else "", "startup": m.startup,
            "in_release": m.in_release}


def refusal(m: TemplateMatch) -> str:
    """The check behind a matched line, in words a fix quotes: the condition that raised it and where, the values
    the message printed, the flags it names (doctor/logs/catalog_map.py ``flags_named``)."""
    from doctor.logs.catalog_map import config_class_flags, flags_named

    site = m.sites[0] if m.sites else None
    if site is None:
        return f'the engine\'s "{m.text[:120]}"'
    if site.kind == "curated":  # compiled into a lower layer (tools/errors_curated.yaml): its source, not a guard
        out = f"{site.function} prints it ({site.file.split(' (', 1)[0]})"
        values = [f"{p['hole']}={redact_text(str(v))[:60]}" for p, v in
                  zip([p for p in load(m.catalog).templates[m.template]["parts"] if not isinstance(p, str)],  # type: ignore[union-attr]
                      m.ordered, strict=False) if str(v).strip() and p["hole"] != "rest"]
        return out + ("; the message printed " + ", ".join(values) if values else "")
    releases = f"{m.since}–{m.until}" if m.since != m.until else m.since
    where = f"{site.where} ({site.function}, {m.catalog} {releases})"
    guard = " ".join((site.guard or "").split())
    out = f"the engine raises it when `{guard[:200]}` holds, at {where}" if guard else \
        f"the engine raises it unconditionally at {where}"
    parts = load(m.catalog).templates[m.template]["parts"]  # type: ignore[union-attr] - the catalog matched it
    holes = [p["hole"] for p in parts if not isinstance(p, str)]
    values = [f"{name}={redact_text(str(value))[:60]}" for name, value in zip(holes, m.ordered, strict=False)
              if name and str(value).strip()]
    if values:
        out += "; the message printed " + ", ".join(dict.fromkeys(values))
    flags = flags_named(m.catalog, site.file, site.guard or "", " ".join(p for p in parts if isinstance(p, str)))
    if flags:
        out += "; the flags it names: " + ", ".join(flags)
    elif group := config_class_flags(m.catalog, site.file, site.function):
        out += "; the flags of the config class it checks: " + ", ".join(group[:8]) + (", …" if len(group) > 8 else "")
    return out


def catalog_facts(lines: tuple[str, ...] | list[str], engine: str | None, version: str | None,
                  put: Any, *, started: bool | None = None) -> tuple[list[int], list[dict[str, str]]]:
    """Put the ``log.catalog.*`` and ``log.kv_refusal.*`` facts; return the line indices to keep in the
    excerpt and the causes named as (cause, line) pairs.

    ``started`` is the log's own verdict (``log.started``): an engine error in a log whose server never said it
    was ready is a start-up refusal wherever in the engine it was raised."""
    matches = scan(lines, engine, version)
    quoted = _quoted_kv_refusal(lines, engine, version, matches, put)
    if not matches:
        return quoted, []
    seen: dict[str, dict[str, Any]] = {}
    refusals: dict[str, str] = {}
    kept: list[int] = []
    named: list[dict[str, str]] = []
    for index, m in matches:
        if m.template in seen:  # the first printing speaks for the rest (and the excerpt keeps only it)
            continue
        if len(seen) >= MAX_MATCHES:
            break
        kept.append(index)
        seen[m.template] = describe(m)
        pinned = _read_against_pin(m, engine, version)
        if pinned:
            seen[m.template]["pinned"] = pinned
        if started is True and m.by_place:  # start-up code, but this server started: not what stopped it
            seen[m.template].update(cause=None, severity="warning" if m.severity == "critical" else m.severity)
            continue
        if started is False and m.severity == "warning":  # an error (not a warning) that ended the start
            seen[m.template]["severity"] = "critical"
        if m.cause:
            named.append({"cause": m.cause, "line": redact_text(m.message)[:300]})
            key = f"log.refusal.{m.cause.replace('-', '_')}"
            if key not in refusals:
                refusals[key] = refusal(m) + (f"; {pinned}" if pinned else "")
                put(key, refusals[key], f"the check behind {m.template} ({m.where})")
            if m.cause == _KV_CAUSE:
                _kv_refusal(m, put)
    kept.extend(quoted)
    found = list(seen.values())
    put("log.catalog.matches", found, "lines that match an engine's own error or warning template")
    # SGLang imports every model module at start-up and logs each that fails (healthy CPU builds log several):
    # no fault by itself, but the architectures of those modules then read as "not supported" (engine-too-old's
    # log node checks this before blaming the release)
    failed = [(index, str(m.values.get("name"))) for index, m in matches
              if m.text.startswith("Ignore import error when loading {name}")][:MAX_MATCHES]
    if failed:
        kept.extend(index for index, _ in failed)  # a snapshot's excerpt replays to the same list
        put("log.model_import_errors", list(dict.fromkeys(name for _, name in failed)),
            "SGLang's 'Ignore import error when loading …' lines")
    unmapped = [f for f in found if not f["cause"]]
    put("log.catalog.unmapped", unmapped, "engine errors and warnings no cause names")
    put("log.catalog.unmapped_refusals", [f for f in unmapped if f["severity"] == "critical"],
        "engine errors that ended the start (raised in start-up code, or in a log that never got ready) no cause "
        "names")
    return kept, named


def _read_against_pin(m: TemplateMatch, engine: str | None, version: str | None) -> str | None:
    """For a lower layer's message read from a pinned wheel (``ray-2.55.1``): what this engine release requires of
    that package and whether the release read is within it (doctor/engines/pins.py); the table is opened only here,
    for such a line."""
    if m.catalog != "lower" or m.since == "curated" or not version:
        return None
    from doctor.engines.pins import read_against_pin

    return read_against_pin(m.since, engine, version)


def _quoted_kv_refusal(lines: tuple[str, ...] | list[str], engine: str | None, version: str | None,
                       matches: list[tuple[int, TemplateMatch]], put: Any) -> list[int]:
    """vLLM's KV refusal quoted by hand (re-wrapped, cut short: doctor/logs/catalog.py ``match_quote``) where no
    line matched a template whole: its numbers still give the length that fits and the memory needed. Returns
    the indices of the lines the quote spans (the excerpt keeps them, so a replay reads the same)."""
    if engine not in (None, "vllm") or any(m.cause == _KV_CAUSE for _i, m in matches):
        return []
    first = next((i for i, line in enumerate(lines) if "max seq len" in line), None)
    if first is None:
        return []
    window = list(lines[first:first + 6])  # the refusal and the lines it was wrapped onto
    text = "\n".join(window)
    quoted = match_quote(text, "vllm", version, _KV_CAUSE)
    if quoted is None:
        return []
    estimate = re.search(r"estimated maximum model length is \d+", text)
    if estimate and not quoted.values.get("estimated_msg"):  # the engine's own sentence, cut from the rest
        quoted = replace(quoted, values={**quoted.values, "estimated_msg": estimate.group(0)})
    _kv_refusal(quoted, put)
    return list(range(first, first + len(window)))


def _number(value: Any) -> int | float | None:
    """A hole's value as a number: typed holes already are; a str hole that printed one (``format_gib(x)``, whose
    type the generator cannot read from a call) is read here."""
    if isinstance(value, (int, float)):
        return value
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return None


def _kv_refusal(m: TemplateMatch, put: Any) -> None:
    names = next((n for words, n in _KV_WORDINGS if words in m.text), ())
    numbers = [v for v in map(_number, m.ordered) if v is not None]
    values = dict(zip(names, numbers, strict=False))
    what = f"vLLM's KV refusal ({m.where}, {m.since}–{m.until})"
    for key, value in values.items():
        put(f"log.kv_refusal.{key}", value, what)
    fits = values.get("kv_tokens")
    estimated = m.values.get("estimated_msg")
    if isinstance(estimated, str):
        found = re.search(r"maximum model length is (\d+)", estimated)
        if found:
            fits = int(found.group(1))
    if fits is None and {"max_model_len", "needed_gib", "available_gib"} <= values.keys() and values["needed_gib"]:
        # KV memory grows linearly with the length: what fits is the length scaled by available / needed
        fits = int(values["max_model_len"] * values["available_gib"] / values["needed_gib"])
    if fits is not None:
        put("log.kv_refusal.fits_max_model_len", int(fits), f"{what}: the --max-model-len the KV cache holds")
