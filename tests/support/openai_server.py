"""A scenario OpenAI-compatible server on 127.0.0.1 for the active probes' tests.

Every body it returns is a scenario written for the tests, not a capture of a real server. The shapes follow the
engines' protocol sources: vLLM 0.33.0 ChatCompletionResponse (vllm/entrypoints/openai/chat_completion/
protocol.py:76-150: separated thinking in ``reasoning``, an empty ``tool_calls`` dropped, ``system_fingerprint``)
and its ErrorResponse (vllm/entrypoints/serve/engine/protocol.py:79-87); SGLang 0.5.23 (sglang/srt/entrypoints/
openai/protocol.py:106-112 ErrorResponse, :1293-1345 ChatMessage with ``reasoning_content``, ``tool_calls``
dropped when None). Model output strings are modelled on the engines' public issue reports, cited where defined.

The server behaves like an engine where the probes need it to:

* a prefix cache: a prompt it has seen before is "warm";
* batching: a request that overlaps another one in time (each is held ``hold`` seconds) ran "under concurrency";
  with ``determinism = "concurrency"``, the greedy request the determinism probe sends together with its fillers
  (doctor/probes/active.yaml ``determinism.concurrent``) waits for them, so it is batched with them however
  loaded the machine is (a 50 ms overlap window alone lost the race under the full test suite);
* greedy determinism: ``determinism = "warmup"`` flips the token at ``diverge_at`` of warm runs to the runner-up
  (a near-tie, as restored hybrid state does); ``"concurrency"`` flips it only for overlapping requests.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from doctor.probes.active import spec as active_spec
from support.httpserver import JSON, LocalServer, Request, Response

# --- model output strings (scenarios) -------------------------------------------------------------------------
#: Qwen3-Coder's XML call under --tool-call-parser hermes, left in content with tool_calls empty
#: (shape of vllm-project/vllm#21571: "<tool_call>\n<function=…>\n<parameter=…>").
XML_CALL = "<tool_call>\n<function=get_time>\n<parameter=timezone>\nAsia/Tokyo\n</parameter>\n</function>\n</tool_call>"
#: Hermes/Qwen JSON call with no parser on SGLang (the template's <tool_call> JSON, as in vllm-project/vllm#17161).
HERMES_CALL = '<tool_call>\n{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}\n</tool_call>'
#: Llama 3 JSON call returned as content (shape of vllm-project/vllm#11786).
LLAMA_CALL = '{"type": "function", "function": {"name": "get_time", "parameters": {"timezone": "Asia/Tokyo"}}}'
#: DeepSeek-V3 call tokens in content (shape of sgl-project/sglang#4379).
DEEPSEEK_CALL = ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n"
                 '{"timezone": "Asia/Tokyo"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>')
PROSE = "I cannot look up the current time, but Tokyo is on Japan Standard Time (UTC+9)."
THOUGHT = "391 = 17 × 23, so it has divisors other than 1 and itself."
ANSWER = "No, 391 is not a prime number."
#: gpt-oss harmony text with the special tokens stripped (shape of sgl-project/sglang#9244).
HARMONY_TEXT = f"analysisThe user asks whether 391 is prime. {THOUGHT}assistantfinal{ANSWER}"
#: The greedy answer every determinism request gets (tokens), and the runner-up used where it diverges.
TOKENS = ("Record", " 161", ":", " the", " archive", " keeps", " every", " entry", " in", " the", " order", " it",
          " arrived", ",", " and", " nothing", " is", " ever", " removed", ".", "\n", "Record", " 162", ":", " the",
          " archive", " keeps", " every", " entry", " in", " the", " order")
RUNNER_UP = " each"
VLLM_REFUSAL = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set'


@dataclass
class Behaviour:
    """How the scenario server answers each kind of request the probes send."""

    engine: str = "vllm"
    models: tuple[str, ...] = ("served-model",)
    root: str = "/models/Qwen3-8B"  # vLLM's /v1/models root: the model path, which names the family
    version: str = "0.33.0"
    tool: str = "parsed"  # parsed | markup | prose | refused | truncated
    tool_markup: str = XML_CALL
    reasoning: str = "separated"  # separated | leaked | end_only | open | append | harmony
    thinking_switch: str | None = "enable_thinking"
    thinking_default: bool = True
    determinism: str = "stable"  # stable | warmup | concurrency
    diverge_at: int = 5
    server_info: dict[str, Any] = field(default_factory=dict)  # SGLang resolved server args
    hold: float = 0.05  # seconds each chat request is held, so requests sent together overlap
    logprobs: bool = True


class OpenAIServer(LocalServer):
    """``with OpenAIServer(Behaviour(...)) as srv``: /v1/models, /version or /server_info, /v1/chat/completions."""

    def __init__(self, behaviour: Behaviour | None = None, extra_routes: dict[str, Any] | None = None) -> None:
        self.b = behaviour or Behaviour()
        routes: dict[str, Any] = {"/v1/models": Response(body=json.dumps(self._models()), content_type=JSON),
                                  "/v1/chat/completions": self._chat}
        if self.b.engine == "vllm":
            routes["/version"] = Response(body=json.dumps({"version": self.b.version}), content_type=JSON)
        else:
            info = {"_scenario": "SGLang /server_info, scenario", "version": self.b.version,
                    "model_path": self.b.root, "tp_size": 1, **self.b.server_info}
            routes["/server_info"] = Response(body=json.dumps(info), content_type=JSON)
        routes.update(extra_routes or {})
        super().__init__(routes)
        self.chats: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self._live: list[dict[str, int]] = []
        self._state = threading.Lock()
        self._arrived = threading.Condition(self._state)
        self._fillers = self._fillers_used = 0
        self._greedy_runs: dict[str, int] = {}

    # -- routes --------------------------------------------------------------------------------------------
    def _models(self) -> dict[str, Any]:
        owner = self.b.engine
        cards = [{"id": name, "object": "model", "created": 1790000000, "owned_by": owner,
                  "root": self.b.root if owner == "vllm" else name, "parent": None, "max_model_len": 32768}
                 for name in self.b.models]
        return {"object": "list", "data": cards}

    def _chat(self, request: Request) -> Response:
        body = json.loads(request.body or b"{}")
        mine = {"peak": 0}
        with self._state:
            self.chats.append(body)
            self._live.append(mine)
            for entry in self._live:
                entry["peak"] = max(entry["peak"], len(self._live))
            batched = self._batched_with_fillers(body)
        try:
            time.sleep(self.b.hold)
            together = batched()
            return self._answer(body, concurrent=together or mine["peak"] > 1)
        finally:
            with self._state:
                self._live.remove(mine)

    def _batched_with_fillers(self, body: dict[str, Any]) -> Callable[[], bool]:
        """(Called under ``_state``.) For the determinism probe's concurrent run: a wait until its fillers arrived.

        The fillers are the probe's own filler prompts; the greedy request sent with them is the one after the
        probe's ``repeats`` sequential runs of the same prompt. Anything else is not waited for."""
        det = active_spec()["determinism"]
        contents = [m.get("content") for m in body.get("messages") or [] if isinstance(m, dict)]
        if any(c in det["concurrent"]["messages"] for c in contents):
            self._fillers += 1
            self._arrived.notify_all()
            return lambda: False
        if self.b.determinism != "concurrency" or not body.get("logprobs"):
            return lambda: False
        key = json.dumps(body.get("messages"), sort_keys=True)
        self._greedy_runs[key] = self._greedy_runs.get(key, 0) + 1
        if self._greedy_runs[key] <= det["repeats"]:
            return lambda: False
        before = self._fillers_used

        def wait() -> bool:
            with self._arrived:
                self._arrived.wait_for(lambda: self._fillers > before, timeout=10)
                self._fillers_used = self._fillers
                return self._fillers > before

        return wait

    def _answer(self, body: dict[str, Any], *, concurrent: bool) -> Response:
        if body.get("model") not in self.b.models:
            return self._error(404, "NotFoundError", f"The model `{body.get('model')}` does not exist.")
        if body.get("tools"):
            return self._tool(body)
        if body.get("logprobs"):
            return self._greedy(body, concurrent)
        if int(body.get("max_tokens") or 0) <= 16:
            one = int(body["max_tokens"]) == 1
            return self._completion(body, content="Hello" if one else "Hello! How can I help?", tokens=1 if one else 7)
        return self._reasoning(body)

    def _tool(self, body: dict[str, Any]) -> Response:
        mode = self.b.tool
        if mode == "refused":
            return self._error(400, "BadRequestError", VLLM_REFUSAL)
        if mode == "parsed":
            call = {"id": "chatcmpl-tool-0a1b2c3d", "type": "function",
                    "function": {"name": "get_time", "arguments": '{"timezone": "Asia/Tokyo"}'}}
            if self.b.engine == "sglang":
                call["index"] = 0
            return self._completion(body, content=None, tool_calls=[call], finish="tool_calls", tokens=18)
        if mode == "markup":
            return self._completion(body, content=self.b.tool_markup, tokens=30)
        if mode == "truncated":
            return self._completion(body, content="<think>\nThe user wants the time in Tokyo, so",
                                    finish="length", tokens=int(body["max_tokens"]))
        return self._completion(body, content=PROSE, tokens=20)

    def _reasoning(self, body: dict[str, Any]) -> Response:
        switch = self.b.thinking_switch
        kwargs = body.get("chat_template_kwargs") or {}
        thinking = bool(kwargs.get(switch, self.b.thinking_default)) if switch else self.b.thinking_default
        mode = self.b.reasoning
        if not thinking:
            return self._completion(body, content=ANSWER, tokens=10)
        if mode == "separated":
            return self._completion(body, content=ANSWER, reasoning=THOUGHT, tokens=40)
        if mode == "leaked":
            return self._completion(body, content=f"<think>\n{THOUGHT}\n</think>\n\n{ANSWER}", tokens=40)
        if mode == "end_only":  # the template opened <think> in the prompt
            return self._completion(body, content=f"{THOUGHT}\n</think>\n\n{ANSWER}", tokens=40)
        if mode == "open":  # the template opened <think> and the thinking outlasted max_tokens
            return self._completion(body, content=THOUGHT, finish="length", tokens=int(body["max_tokens"]))
        if mode == "append":  # MiniMax append-think parsers: the whole output as content, <think> prepended
            return self._completion(body, content=f"<think>{THOUGHT}</think>\n\n{ANSWER}", tokens=40)
        return self._completion(body, content=HARMONY_TEXT, tokens=40)

    def _greedy(self, body: dict[str, Any], concurrent: bool) -> Response:
        key = json.dumps(body.get("messages"), sort_keys=True)
        with self._state:
            warm = key in self._seen
            self._seen.add(key)
        tokens = list(TOKENS[: int(body.get("max_tokens") or len(TOKENS))])
        flip = (self.b.determinism == "warmup" and warm) or (self.b.determinism == "concurrency" and concurrent)
        if flip and self.b.diverge_at < len(tokens):
            tokens[self.b.diverge_at] = RUNNER_UP
        items = []
        for index, token in enumerate(tokens):
            best, second = (TOKENS[index], RUNNER_UP) if index == self.b.diverge_at else (TOKENS[index], " the")
            margin = 0.015 if index == self.b.diverge_at else 2.5
            top = [{"token": best, "logprob": -0.69, "bytes": list(best.encode())},
                   {"token": second, "logprob": -0.69 - margin, "bytes": list(second.encode())}]
            chosen = next(t for t in top if t["token"] == token)
            items.append({"token": token, "logprob": chosen["logprob"], "bytes": chosen["bytes"], "top_logprobs": top})
        logprobs = {"content": items} if self.b.logprobs else None
        return self._completion(body, content="".join(tokens), tokens=len(tokens), logprobs=logprobs,
                                finish="length")

    # -- response shapes ---------------------------------------------------------------------------------------
    def _completion(self, body: dict[str, Any], *, content: str | None, tokens: int, reasoning: str | None = None,
                    tool_calls: list[dict[str, Any]] | None = None, finish: str = "stop",
                    logprobs: dict[str, Any] | None = None) -> Response:
        if self.b.engine == "vllm":
            message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None, "annotations": None,
                                       "audio": None, "function_call": None, "reasoning": reasoning}
            if tool_calls:  # vLLM drops an empty tool_calls (protocol.py:88-93)
                message["tool_calls"] = tool_calls
            choice: dict[str, Any] = {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish,
                                      "stop_reason": None, "token_ids": None}
            doc: dict[str, Any] = {"id": "chatcmpl-scenario", "object": "chat.completion", "created": 1790000000,
                                   "model": body["model"], "choices": [choice], "service_tier": None,
                                   "system_fingerprint": f"vllm-{self.b.version}-tp1-0a1b2c3d",
                                   "usage": {"prompt_tokens": 40, "total_tokens": 40 + tokens,
                                             "completion_tokens": tokens, "prompt_tokens_details": None},
                                   "prompt_logprobs": None, "prompt_token_ids": None, "kv_transfer_params": None}
        else:
            message = {"role": "assistant", "content": content, "reasoning_content": reasoning}
            if tool_calls is not None:
                message["tool_calls"] = tool_calls
            choice = {"index": 0, "message": message, "logprobs": logprobs, "finish_reason": finish,
                      "matched_stop": None}
            doc = {"id": "scenario", "object": "chat.completion", "created": 1790000000, "model": body["model"],
                   "choices": [choice], "usage": {"prompt_tokens": 40, "total_tokens": 40 + tokens,
                                                  "completion_tokens": tokens, "prompt_tokens_details": None,
                                                  "reasoning_tokens": 0},
                   "metadata": {"weight_version": "default"}}
        return Response(body=json.dumps(doc), content_type=JSON)

    def _error(self, status: int, kind: str, message: str) -> Response:
        if self.b.engine == "vllm":
            doc: dict[str, Any] = {"error": {"message": message, "type": kind, "param": None, "code": status}}
        else:
            doc = {"object": "error", "message": message, "type": kind, "param": None, "code": status}
        return Response(status=status, body=json.dumps(doc), content_type=JSON)
