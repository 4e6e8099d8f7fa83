"""Active probes (`check --active`): send a few small, fixed requests and observe what the server does.

Configuration can only *suggest* why tools are ignored or thinking leaks; one request that needs a tool shows
whether the parser extracted the call, left the model's markup in ``content`` (parser missing or wrong), or the
model never tried (template or model). The same holds for reasoning separation and for reproducibility: the
same greedy request cold, after a warm-up and under concurrent load tells cache-dependent divergence (hybrid
models with prefix caching) from load-dependent divergence (kernels that are not batch-invariant).

Four probes, each following the probe contract (doctor/probes/base.py): ``fetch`` sends and records raw material
(a redacted request summary, status, latency and the answer's fields); ``interpret`` is pure, so a snapshot
replays to the same ``active.*`` facts (docs/facts.md). Every prompt, token cap and markup pattern is fixed in
``active.yaml`` and documented in docs/active.md; only the served model's name comes from the deployment.
Requests go to the target only, with the API key only there (``auth_headers``), under ``--timeout`` each, and
redirects to another host are never followed (``http.post_json``).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.probes.base import (
    ProbeOptions,
    ProbeResult,
    Target,
    auth_headers,
    interpret_raw,
    load_data,
    run_probe,
)
from doctor.probes.http import HttpError, post_json
from doctor.redact import redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar

CHAT = "/v1/chat/completions"
#: Per-request deadline when --active runs without an explicit --timeout: a 256-token answer from a large model
#: takes seconds, far past the 2 s the passive GETs need.
DEFAULT_TIMEOUT_S = 30.0
_TEXT_KEPT = 4000  # characters of an answer kept in the raw (the probes' answers are capped far below this)
_ERROR_KEPT = 300
#: A failed health request of these kinds (or statuses) means every other request would fail the same way.
_FATAL_KINDS = HttpError.UNREACHABLE | {"redirect", "not_llm"}
_FATAL_STATUS = (401, 403, 404)


def spec() -> dict[str, Any]:
    return load_data("active.yaml")


# ---------------------------------------------------------------------------------------------- context
@dataclass(frozen=True)
class ActiveContext:
    """What the probes need to know about the deployment before sending (from the passive probes and inputs).

    Everything here that changes a request is recorded in the raw material, so ``interpret`` never needs it.
    """

    model: str | None
    reasoning_model: bool | None = None
    thinking_toggle: str | None = None
    thinking_default: bool | None = None
    tools_expected: bool | None = None
    reasoning_parser: str | None = None
    max_model_len: int | None = None
    symptoms: tuple[str, ...] = ()  # canonical symptom ids; empty: every probe

    @classmethod
    def from_facts(cls, facts: Facts, *, model: str | None = None, served: Iterable[str] = (),
                   symptoms: Iterable[str] = ()) -> ActiveContext:
        """The context from gathered facts; ``--model`` must be one the server serves (when it says which)."""
        served = list(served)
        if model and served and model not in served:
            raise InputError(f"--model {model}: not served here (served: {', '.join(served)})")
        name = model or facts.get("server.model") or (served[0] if served else None)
        max_len = facts.get("server.max_model_len") or facts.get("launch.max_model_len")
        return cls(
            model=name if isinstance(name, str) else None,
            reasoning_model=facts.get("expect.reasoning_model"),
            thinking_toggle=facts.get("expect.thinking_toggle"),
            thinking_default=facts.get("expect.thinking_default"),
            tools_expected=facts.get("expect.tool_parser") is not None if "expect.tool_parser" in facts else None,
            reasoning_parser=facts.get("launch.reasoning_parser"),
            max_model_len=max_len if isinstance(max_len, int) else None,
            symptoms=tuple(symptoms),
        )

    def template_switch(self) -> str | None:
        """The chat_template_kwargs key that switches thinking, when the family has one templates read."""
        toggle = self.thinking_toggle
        return toggle if toggle in spec()["reasoning"]["template_switches"] else None


def served_models(results: Iterable[ProbeResult]) -> list[str]:
    """Model ids the server lists (GET /v1/models, recorded by the server probe), in its order."""
    for result in results:
        if result.name != "server":
            continue
        record = (result.raw.get("requests") or {}).get("/v1/models") or {}
        cards = (record.get("json") or {}).get("data") if isinstance(record.get("json"), dict) else None
        return [c["id"] for c in cards or [] if isinstance(c, dict) and isinstance(c.get("id"), str)]
    return []


# ---------------------------------------------------------------------------------------------- requests
def _send(target: Target, opts: ProbeOptions, body: dict[str, Any], label: str) -> dict[str, Any]:
    """One chat completion as raw material: what was asked, status, time, and the answer's fields or the error."""
    headers = auth_headers(target, opts)
    record: dict[str, Any] = {"label": label, "request": _summary(body, bool(headers))}
    started = time.perf_counter()
    try:
        response = post_json(target.url(CHAT), body, timeout_s=opts.timeout_s, headers=headers,
                             max_bytes=opts.max_body_bytes)
    except HttpError as exc:
        record.update(error=str(exc), kind=exc.kind, status=exc.status,
                      latency_ms=round((time.perf_counter() - started) * 1000, 1))
        return record
    record.update(status=response.status, latency_ms=round(response.elapsed_ms, 1))
    try:
        doc = response.json()
    except HttpError as exc:
        record.update(error=str(exc), kind=exc.kind)
        return record
    failure = response.status_error()
    if failure is not None:
        record.update(error=str(failure), kind=failure.kind,
                      server_error=redact_text(_server_message(doc))[:_ERROR_KEPT])
        return record
    answer = _answer(doc)
    if answer is None:
        record.update(error=f"POST {CHAT}: the answer has no choices[0].message (not an OpenAI chat completion)",
                      kind="not_openai")
    else:
        record["answer"] = answer
    return record


def _summary(body: dict[str, Any], sent_key: bool) -> dict[str, Any]:
    """The request as shown in outputs and snapshots: fixed parameters, the prompt shortened, never the key."""
    prompt = str(body["messages"][-1]["content"])
    out: dict[str, Any] = {"path": CHAT, "model": body["model"],
                           "prompt": prompt if len(prompt) <= 120 else f"{prompt[:100]}… ({len(prompt)} characters)",
                           "max_tokens": body["max_tokens"], "temperature": body["temperature"]}
    if body.get("tools"):
        out["tools"] = [t["function"]["name"] for t in body["tools"]]
        out["tool_choice"] = body.get("tool_choice")
    for key in ("seed", "logprobs", "top_logprobs", "chat_template_kwargs"):
        if key in body:
            out[key] = body[key]
    out["api_key_sent"] = sent_key
    return out


def _server_message(doc: Any) -> str:
    """The error text of vLLM ({"error": {"message"}}), SGLang ({"object": "error", "message"}) or FastAPI."""
    if isinstance(doc, dict):
        inner = doc.get("error")
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        for key in ("message", "detail", "error"):
            if isinstance(doc.get(key), str):
                return doc[key]
    return ""


def _answer(doc: Any) -> dict[str, Any] | None:
    """The fields the probes read from a ChatCompletionResponse (vllm 0.33.0
    vllm/entrypoints/openai/chat_completion/protocol.py:76-150; sglang 0.5.23
    sglang/srt/entrypoints/openai/protocol.py:1293-1345). vLLM calls the separated reasoning ``reasoning`` (from
    0.11.1; ``reasoning_content`` before, and beside it for a while), SGLang ``reasoning_content``; vLLM drops an
    empty ``tool_calls`` (:88-93)."""
    choices = doc.get("choices") if isinstance(doc, dict) else None
    if not (isinstance(choices, list) and choices and isinstance(choices[0], dict)):
        return None
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        return None
    field = next((k for k in ("reasoning", "reasoning_content") if _text(message.get(k)).strip()), None)
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append({"name": redact_text(_text(function.get("name"))),
                          "arguments": redact_text(_text(function.get("arguments")))[:_ERROR_KEPT]})
    answer: dict[str, Any] = {
        "content": redact_text(_text(message.get("content")))[:_TEXT_KEPT] or None,
        "reasoning": redact_text(_text(message.get(field)))[:_TEXT_KEPT] if field else None,
        "reasoning_field": field,
        "tool_calls": calls,
        "finish_reason": choice.get("finish_reason"),
    }
    logprobs = (choice.get("logprobs") or {}).get("content") if isinstance(choice.get("logprobs"), dict) else None
    if isinstance(logprobs, list) and logprobs:
        answer["tokens"] = [redact_text(_text(item.get("token"))) for item in logprobs if isinstance(item, dict)]
        answer["top"] = [[[redact_text(_text(t.get("token"))), t.get("logprob")]
                          for t in item.get("top_logprobs") or [] if isinstance(t, dict)]
                         for item in logprobs if isinstance(item, dict)]
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    if isinstance(usage.get("completion_tokens"), int):
        answer["completion_tokens"] = usage["completion_tokens"]
    if isinstance(doc.get("system_fingerprint"), str):
        answer["system_fingerprint"] = doc["system_fingerprint"]
    return answer


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _ok(record: dict[str, Any]) -> bool:
    return "answer" in record


def _budget(bodies: Iterable[dict[str, Any]]) -> dict[str, int]:
    bodies = list(bodies)
    return {"requests": len(bodies), "max_tokens": sum(int(b["max_tokens"]) for b in bodies)}


def _find(text: str, markers: list[dict[str, str]], patterns: list[dict[str, str]], tool: str = "") -> list[str]:
    """The markers found in ``text``, as shown to users: literal ones, else the patterns for markup whose special
    tokens the server stripped."""
    found = [m["text"] for m in markers if m["text"] in text]
    if found:
        return found
    for pattern in patterns:
        if re.search(pattern["regex"].replace("{tool}", re.escape(tool)), text, re.DOTALL):
            found.append(pattern["shown"].replace("{tool}", tool))
    return found


# ---------------------------------------------------------------------------------------------- the probes
class _Probe:
    """One active probe: ``fetch`` needs the context; ``observe``/``interpret`` read the raw alone."""

    NAME: ClassVar[str]
    KEY: ClassVar[str]  # section of active.yaml

    def __init__(self, ctx: ActiveContext) -> None:
        self.ctx = ctx

    @classmethod
    def wanted(cls, ctx: ActiveContext) -> bool:
        return not ctx.symptoms or spec()[cls.KEY].get("symptom") in ctx.symptoms

    def fetch(self, target: Target, opts: ProbeOptions) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def observe(cls, raw: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    @classmethod
    def record_facts(cls, obs: dict[str, Any], facts: Facts) -> None:
        raise NotImplementedError

    @classmethod
    def summary(cls, obs: dict[str, Any]) -> str:
        raise NotImplementedError

    @classmethod
    def interpret(cls, raw: dict[str, Any]) -> Facts:
        facts = Facts()
        obs = cls.observe(raw)
        if obs.get("error"):
            facts.error(cls.NAME, obs["error"])
        cls.record_facts(obs, facts)
        return facts

    def body(self, messages: list[dict[str, Any]], max_tokens: int, **extra: Any) -> dict[str, Any]:
        """A greedy chat request: the probes compare answers, so nothing in them may be sampled."""
        return {"model": self.ctx.model, "messages": messages, "max_tokens": max_tokens, "temperature": 0, **extra}


def _first_error(records: list[dict[str, Any]]) -> str | None:
    return next((_error_line(r) for r in records if not _ok(r)), None)


def _error_line(record: dict[str, Any]) -> str:
    message = record.get("error") or "no answer"
    return f"{message}: {record['server_error']}" if record.get("server_error") else message


class LatencyProbe(_Probe):
    """Health and latency: a one-token answer (time to first token, without streaming) and a 16-token one."""

    NAME = "active.latency"
    KEY = "latency"

    @classmethod
    def wanted(cls, ctx: ActiveContext) -> bool:
        return True  # context for every report, and the health check the other probes wait for

    def fetch(self, target: Target, opts: ProbeOptions) -> dict[str, Any]:
        cfg = spec()["latency"]
        bodies = [self.body(cfg["messages"], cfg["ttft_max_tokens"]), self.body(cfg["messages"], cfg["total_max_tokens"])]
        within = replace(opts, timeout_s=min(opts.timeout_s, float(cfg["answer_within_s"])))
        first = _send(target, within, bodies[0], "ttft")
        records = [first] if not _ok(first) else [first, _send(target, opts, bodies[1], "total")]
        return {"model": self.ctx.model, "budget": _budget(bodies), "requests": records}

    @classmethod
    def observe(cls, raw: dict[str, Any]) -> dict[str, Any]:
        records = raw.get("requests") or []
        error = _first_error(records)
        if not records or not _ok(records[0]):
            obs = {"error": error or "no request was made"}
            if records and records[0].get("kind") == "timeout":
                obs["no_token_within_s"] = round(records[0]["latency_ms"] / 1000, 1)
            return obs
        obs: dict[str, Any] = {"ttft_s": round(records[0]["latency_ms"] / 1000, 4),
                               "system_fingerprint": records[0]["answer"].get("system_fingerprint")}
        if len(records) > 1 and _ok(records[1]):
            obs["total_s"] = round(records[1]["latency_ms"] / 1000, 4)
            obs["completion_tokens"] = records[1]["answer"].get("completion_tokens")
        elif error:
            obs["error"] = error
        return obs

    @classmethod
    def record_facts(cls, obs: dict[str, Any], facts: Facts) -> None:
        from doctor.probes.server import fingerprint_facts

        if "no_token_within_s" in obs:
            facts.set("active.latency.no_token_within_s", obs["no_token_within_s"],
                      "active latency probe: a one-token completion that timed out", observed=True)
        if "ttft_s" in obs:
            facts.set("active.latency.ttft_s", obs["ttft_s"],
                      "active latency probe: a one-token completion (time to first token, not streamed)",
                      observed=True)
        if "total_s" in obs:
            facts.set("active.latency.total_s", obs["total_s"],
                      f"active latency probe: a {obs.get('completion_tokens') or '16'}-token completion", observed=True)
        if obs.get("system_fingerprint"):
            facts.update(fingerprint_facts(obs["system_fingerprint"]))

    @classmethod
    def summary(cls, obs: dict[str, Any]) -> str:
        if "ttft_s" not in obs:
            return obs.get("error", "")
        text = f"one-token answer in {obs['ttft_s'] * 1000:.0f} ms (≈ time to first token)"
        if "total_s" in obs:
            text += f", {obs.get('completion_tokens') or '?'} tokens in {obs['total_s'] * 1000:.0f} ms"
        return text


class ToolProbe(_Probe):
    """One request with one trivial tool and a prompt that needs it (tools-ignored)."""

    NAME = "active.tool"
    KEY = "tool"

    @classmethod
    def wanted(cls, ctx: ActiveContext) -> bool:
        return super().wanted(ctx) and ctx.tools_expected is not False

    def fetch(self, target: Target, opts: ProbeOptions) -> dict[str, Any]:
        cfg = spec()["tool"]
        # Thinking off where the template has a switch: the answer is then the call, well inside the token cap.
        switch = self.ctx.template_switch()
        extra = {"chat_template_kwargs": {switch: False}} if switch else {}
        always_thinks = self.ctx.reasoning_model and not extra
        max_tokens = cfg["max_tokens_thinking"] if always_thinks else cfg["max_tokens"]
        if self.ctx.max_model_len:  # prompt and answer together inside the served context (active.yaml)
            max_tokens = max(1, min(max_tokens, int(self.ctx.max_model_len * cfg["context_share"])))
        body = self.body(cfg["messages"], max_tokens, tools=[cfg["tool"]], tool_choice=cfg["tool_choice"], **extra)
        return {"model": self.ctx.model, "tool": cfg["tool"]["function"]["name"], "budget": _budget([body]),
                "requests": [_send(target, opts, body, "tool")]}

    @classmethod
    def observe(cls, raw: dict[str, Any]) -> dict[str, Any]:
        cfg = spec()["tool"]
        [record] = raw.get("requests") or [{"error": "no request was made"}]
        obs: dict[str, Any] = {"status": record.get("status")}
        if not _ok(record):
            refused = record.get("status") == 400 and cfg["refusal"] in (record.get("server_error") or "")
            obs["refused"] = refused
            if refused:
                obs["server_error"] = record["server_error"]
            else:
                obs["error"] = _error_line(record)
            return obs
        answer = record["answer"]
        content = answer.get("content") or ""
        obs.update(refused=False, called=bool(answer["tool_calls"]),
                   calls=[c["name"] for c in answer["tool_calls"]], finish_reason=answer.get("finish_reason"),
                   markup=_find(content, cfg["markers"], cfg["patterns"], raw.get("tool", "")),
                   markup_in_reasoning=bool(_find(answer.get("reasoning") or "", cfg["markers"], cfg["patterns"],
                                                  raw.get("tool", ""))))
        if not obs["called"] and answer.get("finish_reason") == "length":
            obs["error"] = (f"inconclusive: the answer reached max_tokens ({record['request']['max_tokens']}) before "
                            "any tool call was complete")
        return obs

    @classmethod
    def record_facts(cls, obs: dict[str, Any], facts: Facts) -> None:
        source = "active tool probe: POST /v1/chat/completions with one tool, tool_choice auto"
        if obs.get("status") is not None:
            facts.set("active.tool.status", obs["status"], source, observed=True)
        if obs.get("refused"):
            facts.set("active.tool.auto_tool_choice_refused", True, f"{source}: HTTP 400 {obs['server_error']!r}",
                      observed=True)
            return
        if obs.get("error") or "called" not in obs:
            return
        facts.set("active.tool.auto_tool_choice_refused", False, source, observed=True)
        facts.set("active.tool.called", obs["called"], f"{source}: tool_calls {obs['calls'] or 'empty'}",
                  observed=True)
        shown = ", ".join(obs["markup"])
        facts.set("active.tool.markup_in_content", bool(obs["markup"]),
                  f"{source}: content {'holds ' + shown if shown else 'has no tool-call markup'}", observed=True)
        facts.set("active.tool.markup", obs["markup"], f"{source}: markers of active.yaml found in content",
                  observed=True)
        facts.set("active.tool.finish_reason", obs["finish_reason"], source, observed=True)

    @classmethod
    def summary(cls, obs: dict[str, Any]) -> str:
        if obs.get("refused"):
            return f"HTTP 400: {obs['server_error']}"
        if obs.get("error"):
            return obs["error"]
        if obs.get("called"):
            text = f"tool_calls {', '.join(obs['calls'])} (finish_reason {obs['finish_reason']})"
            return text + (f"; markup also left in content: {', '.join(obs['markup'])}" if obs["markup"] else "")
        if obs.get("markup"):
            return f"tool_calls empty, markup left in content: {', '.join(obs['markup'])} (the parser did not extract it)"
        return "tool_calls empty and no tool-call markup: the model did not try to call the tool"


class ReasoningProbe(_Probe):
    """A short question to a reasoning model, by default and with thinking toggled (reasoning-leak)."""

    NAME = "active.reasoning"
    KEY = "reasoning"

    @classmethod
    def wanted(cls, ctx: ActiveContext) -> bool:
        return super().wanted(ctx) and ctx.reasoning_model is not False

    def fetch(self, target: Target, opts: ProbeOptions) -> dict[str, Any]:
        cfg = spec()["reasoning"]
        bodies = {"default": self.body(cfg["messages"], cfg["max_tokens"])}
        switch = self.ctx.template_switch()
        if switch:
            # The opposite of the default: thinking on shows the parser at work when the family defaults to off;
            # thinking off checks a client that turns it off gets a clean answer.
            on = self.ctx.thinking_default is not True
            bodies[f"{switch}={str(on).lower()}"] = self.body(cfg["messages"], cfg["max_tokens"],
                                                               chat_template_kwargs={switch: on})
        append = self.ctx.reasoning_parser if self.ctx.reasoning_parser in cfg["append_think_parsers"] else None
        records = []
        for label, body in bodies.items():
            records.append(_send(target, opts, body, label))
            if not _ok(records[-1]) and records[-1].get("kind") in HttpError.UNREACHABLE:
                break
        return {"model": self.ctx.model, "append_think_parser": append, "budget": _budget(bodies.values()),
                "requests": records}

    @classmethod
    def observe(cls, raw: dict[str, Any]) -> dict[str, Any]:
        cfg = spec()["reasoning"]
        records = raw.get("requests") or []
        answered = [r for r in records if _ok(r)]
        if not answered:
            return {"error": _first_error(records) or "no request was made"}
        runs = []
        for record in answered:
            answer = record["answer"]
            content = answer.get("content") or ""
            markers = _find(content, cfg["markers"], cfg["patterns"])
            by_design = bool(raw.get("append_think_parser")) and content.lstrip().startswith("<think>")
            run = {"label": record["label"], "markers": [] if by_design else markers, "by_design": by_design,
                   "reasoning_field": answer.get("reasoning_field"), "reasoning_chars": len(answer.get("reasoning") or ""),
                   "finish_reason": answer.get("finish_reason")}
            # Cut at max_tokens with nothing to tell by: a template that opens <think> in the prompt leaves only the
            # </think> the model never reached, so this answer may be thinking that leaks, or an answer.
            run["open"] = not (run["markers"] or by_design or run["reasoning_chars"]) and run["finish_reason"] == "length"
            runs.append(run)
        decided = [r for r in runs if not r["open"]]
        obs: dict[str, Any] = {
            "runs": runs,
            "leaked": any(r["markers"] for r in decided),
            "separated": any(r["reasoning_chars"] for r in decided),
            "markers": list(dict.fromkeys(m for r in decided for m in r["markers"])),
            "field": next((r["reasoning_field"] for r in decided if r["reasoning_field"]), None),
            "by_design": any(r["by_design"] for r in decided),
            "append_think_parser": raw.get("append_think_parser"),
        }
        obs["thinking_seen"] = obs["leaked"] or obs["separated"] or obs["by_design"]
        if not obs["thinking_seen"] and len(decided) < len(runs):
            obs["error"] = ("inconclusive: the answer reached max_tokens with no reasoning field and no thinking marker "
                            "(thinking opened by the template may still have been running)")
        return obs

    @classmethod
    def record_facts(cls, obs: dict[str, Any], facts: Facts) -> None:
        if "runs" not in obs or obs.get("error"):
            return
        labels = ", ".join(r["label"] for r in obs["runs"])
        source = f"active reasoning probe: a short question ({labels})"
        leak = f"content holds {', '.join(obs['markers'])}" if obs["markers"] else "no reasoning markers in content"
        if obs["by_design"]:
            leak += f" (the <think> block that {obs['append_think_parser']} puts in content on purpose is not counted)"
        facts.set("active.reasoning.leaked", obs["leaked"], f"{source}: {leak}", observed=True)
        facts.set("active.reasoning.separated", obs["separated"],
                  f"{source}: {obs['field'] or 'no reasoning field'} populated" if obs["separated"]
                  else f"{source}: neither reasoning nor reasoning_content populated", observed=True)
        facts.set("active.reasoning.markers", obs["markers"], f"{source}: markers of active.yaml found in content",
                  observed=True)

    @classmethod
    def summary(cls, obs: dict[str, Any]) -> str:
        if "runs" not in obs:
            return obs.get("error", "")
        parts = []
        for run in obs["runs"]:
            if run["markers"]:
                what = f"thinking markers in content ({', '.join(run['markers'])})"
            elif run["by_design"]:
                what = f"<think> block in content by design ({obs['append_think_parser']})"
            elif run["reasoning_chars"]:
                what = f"reasoning separated into {run['reasoning_field']} ({run['reasoning_chars']} characters)"
            elif run["open"]:
                what = "cut at max_tokens with no marker and no reasoning field (inconclusive)"
            else:
                what = "no thinking at all"
            parts.append(f"{run['label']}: {what}")
        return "; ".join(parts)


class DeterminismProbe(_Probe):
    """The same greedy request cold, after its warm-up, and together with other requests (nondeterministic-outputs)."""

    NAME = "active.determinism"
    KEY = "determinism"

    def prompt(self, nonce: str) -> tuple[str, int]:
        cfg = spec()["determinism"]
        prefix = cfg["prefix"]
        lines = prefix["lines"]
        if self.ctx.max_model_len:  # stay inside the served context, prompt and answer together
            # Bytes bound tokens from above whatever the tokenizer (a byte-level BPE or byte-fallback token covers
            # at least one byte): a per-line token estimate overflowed a small-vocabulary tokenizer at 512.
            fixed = len(prefix["opening"].format(nonce=nonce).encode()) + len(cfg["question"].encode()) + 2
            room = (self.ctx.max_model_len - cfg["max_tokens"] - prefix["template_tokens"] - fixed) // \
                len(prefix["line"].format(i=lines).encode() + b"\n")
            lines = max(1, min(lines, room))
        text = "\n".join([prefix["opening"].format(nonce=nonce),
                          *(prefix["line"].format(i=i) for i in range(1, lines + 1)), "", cfg["question"]])
        return text, lines

    def fetch(self, target: Target, opts: ProbeOptions) -> dict[str, Any]:
        cfg = spec()["determinism"]
        nonce = secrets.token_hex(4)
        prompt, lines = self.prompt(nonce)
        greedy = self.body([{"role": "user", "content": prompt}], cfg["max_tokens"], seed=cfg["seed"],
                           logprobs=True, top_logprobs=cfg["top_logprobs"])
        fillers = [self.body([{"role": "user", "content": text}], cfg["concurrent"]["max_tokens"])
                   for text in cfg["concurrent"]["messages"]]
        raw: dict[str, Any] = {"model": self.ctx.model, "nonce": nonce, "prefix_lines": lines,
                               "budget": _budget([greedy] * (cfg["repeats"] + 1) + fillers), "sequential": []}
        for index in range(cfg["repeats"]):
            record = _send(target, opts, greedy, "cold" if index == 0 else f"after warm-up {index}")
            raw["sequential"].append(record)
            if not _ok(record):
                return raw
        together = _concurrently(target, opts, [greedy, *fillers])
        raw["concurrent"] = {**together[0], "label": "under concurrency"}
        raw["fillers"] = [{k: r.get(k) for k in ("label", "request", "status", "latency_ms", "error")}
                          for r in together[1:]]
        return raw

    @classmethod
    def observe(cls, raw: dict[str, Any]) -> dict[str, Any]:
        sequential = raw.get("sequential") or []
        if not sequential or not all(_ok(r) for r in sequential):
            return {"error": _first_error(sequential) or "no request was made"}
        concurrent = raw.get("concurrent") if _ok(raw.get("concurrent") or {}) else None
        answers = [r["answer"] for r in sequential] + ([concurrent["answer"]] if concurrent else [])
        by_tokens = all(a.get("tokens") for a in answers)
        seqs = [a["tokens"] if by_tokens else (a.get("content") or "") for a in answers]
        cold, warm = seqs[0], seqs[1:len(sequential)]
        obs: dict[str, Any] = {"runs": len(seqs), "compared": "tokens" if by_tokens else "characters",
                               "length": len(cold)}
        differing = next((i for i, s in enumerate(seqs[1:len(sequential)], 1) if s != cold), None)
        if differing is not None:
            base, other, base_answer = cold, seqs[differing], answers[0]
            obs["after_warmup"] = all(w == warm[0] for w in warm)
            obs["concurrency_only"] = False
        elif concurrent is not None and seqs[-1] != warm[-1]:
            base, other, base_answer = warm[-1], seqs[-1], answers[len(sequential) - 1]
            obs["after_warmup"], obs["concurrency_only"] = False, True
        else:
            obs["identical"] = True
            obs["after_warmup"] = False
            if concurrent is None:
                obs["concurrency_error"] = _error_line(raw.get("concurrent") or {})
            else:
                obs["concurrency_only"] = False
            return obs
        obs["identical"] = False
        pairs = enumerate(zip(base, other, strict=False))
        position = next((i for i, (a, b) in pairs if a != b), min(len(base), len(other)))  # else: one is shorter
        obs["diverge_at"] = position
        obs["margin"] = _margin(base_answer, position) if by_tokens else None
        if by_tokens:
            obs["tokens_at"] = [base[position] if position < len(base) else None,
                                other[position] if position < len(other) else None]
        return obs

    @classmethod
    def record_facts(cls, obs: dict[str, Any], facts: Facts) -> None:
        if "identical" not in obs:
            return
        unit = obs["compared"]
        source = (f"active determinism probe: {obs['runs']} greedy runs (temperature 0, fixed seed) compared by "
                  f"{unit}: cold, after warm-up" + (", under concurrency" if "concurrency_only" in obs else ""))
        facts.set("active.determinism.identical", obs["identical"], source, observed=True)
        facts.set("active.determinism.diverge_at", obs.get("diverge_at"),
                  f"{source}; position counted in {unit}", observed=True)
        facts.set("active.determinism.after_warmup", obs["after_warmup"], source, observed=True)
        if "concurrency_only" in obs:
            facts.set("active.determinism.concurrency_only", obs["concurrency_only"], source, observed=True)
        else:
            facts.error("active.determinism.concurrency_only",
                        f"the run under concurrency failed: {obs.get('concurrency_error')}")
        if obs.get("margin") is not None:
            facts.set("active.determinism.margin", obs["margin"],
                      f"{source}; top-1 minus top-2 logprob at the diverging token of the reference run", observed=True)

    @classmethod
    def summary(cls, obs: dict[str, Any]) -> str:
        if "identical" not in obs:
            return obs.get("error", "")
        if obs["identical"]:
            text = f"{obs['runs']} greedy runs identical ({obs['length']} {obs['compared']})"
            return text + ("; the concurrent run failed" if "concurrency_only" not in obs else "")
        when = "only under concurrency" if obs.get("concurrency_only") else (
            "after the warm-up (cold run differs)" if obs["after_warmup"] else "between sequential runs")
        text = f"diverges {when} at {obs['compared'][:-1]} {obs['diverge_at']}"
        if obs.get("tokens_at"):
            text += f" ({obs['tokens_at'][0]!r} vs {obs['tokens_at'][1]!r})"
        if obs.get("margin") is not None:
            text += f", logprob margin {obs['margin']:.3f}"
        return text


def _margin(answer: dict[str, Any], position: int) -> float | None:
    """How close the reference run's choice was at ``position``: top-1 minus top-2 logprob (a near-tie flips)."""
    top = answer.get("top") or []
    if position >= len(top) or len(top[position]) < 2:
        return None
    first, second = top[position][0][1], top[position][1][1]
    if not all(isinstance(x, (int, float)) for x in (first, second)):
        return None
    return round(float(first) - float(second), 6)


def _concurrently(target: Target, opts: ProbeOptions, bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send ``bodies`` at the same moment (one thread each) so the server batches them together."""
    records: list[dict[str, Any] | None] = [None] * len(bodies)
    start = threading.Barrier(len(bodies))

    def work(index: int) -> None:
        with contextlib.suppress(threading.BrokenBarrierError):  # a thread that never started: send anyway
            start.wait(timeout=opts.timeout_s)
        records[index] = _send(target, opts, bodies[index], "concurrent" if index == 0 else f"filler {index}")

    threads = [threading.Thread(target=work, args=(i,), daemon=True, name=f"active-{i}") for i in range(len(bodies))]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 2 * opts.timeout_s + 1
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [r if r is not None else {"error": f"timed out after {opts.timeout_s:g}s", "kind": "timeout"}
            for r in records]


# ---------------------------------------------------------------------------------------------- running
#: name -> probe; the order is the order they run in (the health request first).
PROBES: dict[str, type[_Probe]] = {p.NAME: p for p in (LatencyProbe, ToolProbe, ReasoningProbe, DeterminismProbe)}


def is_active(name: str) -> bool:
    return name in PROBES


def run_active(target: Target, opts: ProbeOptions, ctx: ActiveContext) -> list[ProbeResult]:
    """The probes the context calls for, one after the other (a probe's requests must not share batches with
    another probe's, or the determinism probe's "sequential" runs would not be). Nothing runs without a model."""
    results: list[ProbeResult] = []
    for probe in PROBES.values():
        if not probe.wanted(ctx):
            continue
        if ctx.model is None:
            reason = "no served model name known: pass --model NAME (GET /v1/models gave none)"
        else:
            reason = _blocked(results)
        if reason:
            raw = {"error": reason}
            facts, error = interpret_raw(probe, raw)
            results.append(ProbeResult(probe.NAME, False, error, 0.0, raw, facts))
            continue
        results.append(run_probe(probe(ctx), target, opts))
    return results


def _blocked(results: list[ProbeResult]) -> str | None:
    """Why later probes are not worth sending: the health request could not get through at all."""
    health = next((r for r in results if r.name == LatencyProbe.NAME), None)
    if health is None or health.ok:
        return None
    first = (health.raw.get("requests") or [{}])[0]
    if first.get("kind") in _FATAL_KINDS or first.get("status") in _FATAL_STATUS:
        return f"not sent: the health request failed ({health.error})"
    return None


def replay(entries: dict[str, dict[str, Any]]) -> list[ProbeResult]:
    """Recorded active probes (a snapshot's ``probes`` entries) through the same ``interpret`` as live."""
    results = []
    for name, entry in entries.items():
        facts, error = interpret_raw(PROBES[name], entry["raw"])
        results.append(ProbeResult(name, error is None, error, float(entry["elapsed_ms"]), entry["raw"], facts))
    return results


def observation(result: ProbeResult) -> dict[str, Any]:
    """What a probe saw, for outputs: the JSON probe entry's extra keys and the one-line summary."""
    probe = PROBES[result.name]
    raw = result.raw
    requests = [*(raw.get("requests") or []), *(raw.get("sequential") or [])]
    if raw.get("concurrent"):
        requests += [raw["concurrent"], *(raw.get("fillers") or [])]
    obs = probe.observe(raw) if "error" not in raw else {"error": raw["error"]}
    return {
        "summary": probe.summary(obs),
        "budget": raw.get("budget") or {},
        "requests": [{"label": r.get("label"), "request": r.get("request"), "status": r.get("status"),
                      "latency_ms": r.get("latency_ms"), "error": r.get("error")} for r in requests],
        "observation": obs,
    }
