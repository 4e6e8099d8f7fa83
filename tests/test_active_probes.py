"""The active probes over real HTTP on 127.0.0.1 against a scenario OpenAI-compatible server
(tests/support/openai_server.py: vLLM and SGLang response shapes, model output modelled on public issue reports).

Each test sends the probes' real requests and reads the facts their pure ``interpret`` draws from the raw."""

from __future__ import annotations

import json

import pytest
from support.httpserver import LocalServer, Response
from support.openai_server import (
    DEEPSEEK_CALL,
    HERMES_CALL,
    LLAMA_CALL,
    PROSE,
    XML_CALL,
    Behaviour,
    OpenAIServer,
)

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.probes import active
from doctor.probes.active import ActiveContext, run_active
from doctor.probes.base import ProbeOptions, Target

TOOLS = ("tools-ignored",)
REASONING = ("reasoning-leak",)
DETERMINISM = ("nondeterministic-outputs",)


def _run(behaviour: Behaviour, symptoms: tuple[str, ...] = (), timeout: float = 3.0, **ctx: object):
    with OpenAIServer(behaviour) as srv:
        context = ActiveContext(model=behaviour.models[0], symptoms=symptoms, **ctx)  # type: ignore[arg-type]
        results = run_active(Target.parse(srv.endpoint), ProbeOptions(timeout_s=timeout), context)
    return {r.name: r for r in results}, srv


def _facts(results: dict) -> dict:
    facts = Facts()
    for result in results.values():
        facts.update(result.facts)
    return {f.key: f.value for f in facts}


# -- tool probe -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("markup", "marker"), [
    (XML_CALL, "<function="), (HERMES_CALL, "<tool_call>"), (LLAMA_CALL, '{"name": "get_time", …}'),
    (DEEPSEEK_CALL, "<｜tool▁calls▁begin｜>"),
])
def test_markup_left_in_content_is_seen(markup: str, marker: str) -> None:
    results, _ = _run(Behaviour(tool="markup", tool_markup=markup), TOOLS)
    facts = _facts(results)
    assert facts["active.tool.called"] is False and facts["active.tool.markup_in_content"] is True
    assert marker in facts["active.tool.markup"]
    assert results["active.tool"].facts.fact("active.tool.markup_in_content").observed


@pytest.mark.parametrize("text", [PROSE, "Tokyo is UTC+9. A get_time call would need a tool I do not have.",
                                  'Here is JSON: {"city": "Tokyo", "name": "clock"}'])
def test_prose_is_not_markup(text: str) -> None:
    facts = _facts(_run(Behaviour(tool="markup", tool_markup=text), TOOLS)[0])
    assert facts["active.tool.called"] is False and facts["active.tool.markup_in_content"] is False


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_parsed_tool_call(engine: str) -> None:
    results, srv = _run(Behaviour(engine=engine, tool="parsed"), TOOLS)
    facts = _facts(results)
    assert facts["active.tool.called"] is True and facts["active.tool.markup_in_content"] is False
    assert facts["active.tool.finish_reason"] == "tool_calls" and facts["active.tool.status"] == 200
    [sent] = [c for c in srv.chats if c.get("tools")]
    assert sent["tool_choice"] == "auto" and sent["tools"][0]["function"]["name"] == "get_time"
    assert sent["temperature"] == 0 and sent["max_tokens"] == 256


def test_vllm_refusal_of_auto_tool_choice_is_an_observation() -> None:
    results, _ = _run(Behaviour(tool="refused"), TOOLS)
    facts = _facts(results)
    assert results["active.tool"].ok
    assert facts["active.tool.status"] == 400 and facts["active.tool.auto_tool_choice_refused"] is True
    assert "--enable-auto-tool-choice" in results["active.tool"].facts.fact("active.tool.auto_tool_choice_refused").source
    assert "active.tool.called" not in facts


def test_an_answer_cut_at_max_tokens_is_inconclusive_not_a_verdict() -> None:
    results, _ = _run(Behaviour(tool="truncated"), TOOLS)
    assert not results["active.tool"].ok and "inconclusive" in results["active.tool"].error
    assert "active.tool.markup_in_content" not in _facts(results)


def test_thinking_is_switched_off_for_the_tool_request_and_budget_grows_when_it_cannot_be() -> None:
    _, srv = _run(Behaviour(tool="parsed"), TOOLS, reasoning_model=True, thinking_toggle="enable_thinking",
                  thinking_default=True)
    [sent] = [c for c in srv.chats if c.get("tools")]
    assert sent["chat_template_kwargs"] == {"enable_thinking": False} and sent["max_tokens"] == 256
    _, srv = _run(Behaviour(tool="parsed"), TOOLS, reasoning_model=True, thinking_toggle=None)
    [sent] = [c for c in srv.chats if c.get("tools")]
    assert "chat_template_kwargs" not in sent and sent["max_tokens"] == 1024


def test_a_family_without_tool_parser_gets_no_tool_request() -> None:
    results, srv = _run(Behaviour(), TOOLS, tools_expected=False)
    assert "active.tool" not in results and not [c for c in srv.chats if c.get("tools")]


# -- reasoning probe ------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("engine", "field"), [("vllm", "reasoning"), ("sglang", "reasoning_content")])
def test_reasoning_separated(engine: str, field: str) -> None:
    results, _ = _run(Behaviour(engine=engine, reasoning="separated"), REASONING)
    facts = _facts(results)
    assert facts["active.reasoning.separated"] is True and facts["active.reasoning.leaked"] is False
    assert field in results["active.reasoning"].facts.fact("active.reasoning.separated").source


@pytest.mark.parametrize(("mode", "marker"), [("leaked", "<think>"), ("end_only", "</think>"),
                                              ("harmony", "analysis…assistantfinal")])
def test_reasoning_leaked(mode: str, marker: str) -> None:
    facts = _facts(_run(Behaviour(reasoning=mode), REASONING)[0])
    assert facts["active.reasoning.leaked"] is True and facts["active.reasoning.separated"] is False
    assert marker in facts["active.reasoning.markers"]


def test_thinking_cut_before_any_marker_is_inconclusive() -> None:
    """A template that opens <think> in the prompt, thinking past max_tokens: the content is reasoning with no marker
    yet, indistinguishable from an answer. No verdict, and the probe says why."""
    results, _ = _run(Behaviour(reasoning="open", thinking_switch=None), REASONING)
    assert not results["active.reasoning"].ok and "inconclusive" in results["active.reasoning"].error
    assert "active.reasoning.leaked" not in _facts(results)


def test_append_think_parser_puts_think_in_content_on_purpose() -> None:
    """MiniMax's append-think parsers return <think>… as content by design (docs/families.md): not a leak."""
    results, _ = _run(Behaviour(reasoning="append", thinking_switch=None), REASONING,
                      reasoning_parser="minimax-append-think")
    facts = _facts(results)
    assert facts["active.reasoning.leaked"] is False
    assert "by design" in active.observation(results["active.reasoning"])["summary"]
    # the same answer from a server whose parser is not an append-think one is a leak
    assert _facts(_run(Behaviour(reasoning="append", thinking_switch=None), REASONING)[0])["active.reasoning.leaked"]


def test_thinking_toggle_follows_the_family() -> None:
    """DeepSeek-V3.1 thinks only when asked (`thinking`, default off): the default request shows nothing, the
    toggled one shows the parser at work."""
    results, srv = _run(Behaviour(reasoning="separated", thinking_switch="thinking", thinking_default=False),
                        REASONING, reasoning_model=True, thinking_toggle="thinking", thinking_default=False)
    kwargs = [c.get("chat_template_kwargs") for c in srv.chats if c["max_tokens"] == 512]
    assert kwargs == [None, {"thinking": True}]
    assert _facts(results)["active.reasoning.separated"] is True
    summary = active.observation(results["active.reasoning"])["summary"]
    assert "default: no thinking at all" in summary and "thinking=true: reasoning separated" in summary


def test_reasoning_effort_is_not_a_template_switch() -> None:
    _, srv = _run(Behaviour(reasoning="harmony"), REASONING, reasoning_model=True, thinking_toggle="reasoning_effort")
    assert len([c for c in srv.chats if c["max_tokens"] == 512]) == 1


# -- determinism probe ----------------------------------------------------------------------------------------
def test_deterministic_server() -> None:
    results, srv = _run(Behaviour(determinism="stable"), DETERMINISM)
    facts = _facts(results)
    assert facts["active.determinism.identical"] is True and facts["active.determinism.diverge_at"] is None
    assert facts["active.determinism.concurrency_only"] is False and facts["active.determinism.after_warmup"] is False
    greedy = [c for c in srv.chats if c.get("logprobs")]
    assert len(greedy) == 4 and all(c["temperature"] == 0 and c["seed"] == 1234 for c in greedy)
    assert len({json.dumps(c["messages"]) for c in greedy}) == 1
    assert len(srv.chats) == 2 + 4 + 3  # health, greedy runs, concurrent fillers


def test_divergence_after_warmup() -> None:
    facts = _facts(_run(Behaviour(determinism="warmup", diverge_at=5), DETERMINISM)[0])
    assert facts["active.determinism.identical"] is False and facts["active.determinism.after_warmup"] is True
    assert facts["active.determinism.diverge_at"] == 5 and facts["active.determinism.concurrency_only"] is False
    assert facts["active.determinism.margin"] == pytest.approx(0.015)


def test_divergence_only_under_concurrency() -> None:
    results, _ = _run(Behaviour(determinism="concurrency", diverge_at=9), DETERMINISM)
    facts = _facts(results)
    assert facts["active.determinism.identical"] is False and facts["active.determinism.concurrency_only"] is True
    assert facts["active.determinism.after_warmup"] is False and facts["active.determinism.diverge_at"] == 9
    assert "only under concurrency at token 9" in active.observation(results["active.determinism"])["summary"]


def test_without_logprobs_the_text_is_compared() -> None:
    results, _ = _run(Behaviour(determinism="warmup", diverge_at=3, logprobs=False), DETERMINISM)
    fact = results["active.determinism"].facts.fact("active.determinism.diverge_at")
    # token 3 is " the" in the cold run and " each" after the warm-up: they differ at their second character
    assert fact.value == len("Record 161: ") and "characters" in fact.source


def test_each_run_starts_cold_and_the_prompt_fits_the_context() -> None:
    _, first = _run(Behaviour(), DETERMINISM)
    _, second = _run(Behaviour(), DETERMINISM, max_model_len=1024)
    prompt = [c for c in first.chats if c.get("logprobs")][0]["messages"][0]["content"]
    short = [c for c in second.chats if c.get("logprobs")][0]["messages"][0]["content"]
    assert prompt.splitlines()[0] != short.splitlines()[0]  # a new nonce opens every run's prompt
    assert len(prompt.splitlines()) == 160 + 3 and len(short.splitlines()) < 50


# -- safety, budget, context ----------------------------------------------------------------------------------
def test_api_key_goes_to_the_target_only_and_never_into_the_raw() -> None:
    key = "sk-active-probe-secret-0123456789"
    with OpenAIServer(Behaviour()) as srv:
        results = run_active(Target.parse(srv.endpoint), ProbeOptions(timeout_s=3, api_key=key),
                             ActiveContext(model="served-model", symptoms=TOOLS))
    assert {r.headers.get("authorization") for r in srv.requests} == {f"Bearer {key}"}
    dumped = json.dumps([r.raw for r in results]) + json.dumps([active.observation(r) for r in results])
    assert key not in dumped and '"api_key_sent": true' in dumped


def test_redirect_to_another_host_is_not_followed() -> None:
    key = "sk-active-probe-secret-0123456789"
    with LocalServer({}) as elsewhere:
        moved = Response(307, headers={"Location": f"http://localhost:{elsewhere.port}/v1/chat/completions"})
        with LocalServer({"/v1/chat/completions": moved}) as srv:
            results = run_active(Target.parse(srv.endpoint), ProbeOptions(timeout_s=2, api_key=key),
                                 ActiveContext(model="m", symptoms=TOOLS))
    assert elsewhere.requests == []
    assert "redirected to another host" in results[0].error
    assert results[1].error.startswith("not sent: the health request failed")


def test_a_slow_server_is_bounded_and_the_rest_is_not_sent() -> None:
    slow = Response(body="{}", delay=3)
    with LocalServer({"/v1/chat/completions": slow}) as srv:
        results = run_active(Target.parse(srv.endpoint), ProbeOptions(timeout_s=0.3), ActiveContext(model="m"))
    assert [r.name for r in results] == list(active.PROBES)
    assert "timed out after 0.3s" in results[0].error
    assert all(r.error.startswith("not sent") for r in results[1:])
    assert len(srv.requests) == 1


def test_unknown_model_is_a_probe_error() -> None:
    with OpenAIServer(Behaviour()) as srv:
        results = run_active(Target.parse(srv.endpoint), ProbeOptions(timeout_s=2), ActiveContext(model="other"))
    assert "HTTP 404" in results[0].error and "does not exist" in results[0].error
    assert all(not r.ok for r in results)


def test_no_model_known_sends_nothing() -> None:
    with OpenAIServer(Behaviour()) as srv:
        results = run_active(Target.parse(srv.endpoint), ProbeOptions(timeout_s=2), ActiveContext(model=None))
    assert srv.chats == [] and all("pass --model" in r.error for r in results)


def test_context_picks_the_model() -> None:
    facts = Facts()
    facts.set("server.model", "first", "/v1/models id")
    facts.set("expect.tool_parser", None, "families.yaml")
    ctx = ActiveContext.from_facts(facts, served=["first", "second"])
    assert ctx.model == "first" and ctx.tools_expected is False
    assert ActiveContext.from_facts(facts, model="second", served=["first", "second"]).model == "second"
    assert ActiveContext.from_facts(Facts(), served=[]).tools_expected is None
    with pytest.raises(InputError, match="--model third: not served here"):
        ActiveContext.from_facts(facts, model="third", served=["first", "second"])


def test_budget_counts_every_request() -> None:
    results, srv = _run(Behaviour(), ())
    budgets = [active.observation(r)["budget"] for r in results.values()]
    assert sum(b["requests"] for b in budgets) == len(srv.chats)
    assert sum(b["max_tokens"] for b in budgets) == sum(c["max_tokens"] for c in srv.chats)


def test_replay_gives_the_same_facts() -> None:
    results, _ = _run(Behaviour(tool="markup", reasoning="leaked", determinism="concurrency"), ())
    entries = {name: json.loads(json.dumps(r.to_snapshot())) for name, r in results.items()}
    replayed = {r.name: r for r in active.replay(entries)}
    for name, result in results.items():
        assert replayed[name].facts.to_dict() == result.facts.to_dict()
        assert replayed[name].ok == result.ok
