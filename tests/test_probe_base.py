"""The probe contract: Target parsing, options, credentials, and run_probe never raising."""

from __future__ import annotations

import base64
import json
from types import SimpleNamespace

import pytest
from support.httpserver import JSON, LocalServer, Response

from doctor.errors import InputError
from doctor.facts import Facts
from doctor.probes import metrics, server
from doctor.probes.base import ProbeOptions, Target, api_key_from_env, auth_headers, interpret_raw, run_probe


@pytest.mark.parametrize("text,scheme,host,port,base", [
    ("127.0.0.1:8000", "http", "127.0.0.1", 8000, ""),
    ("localhost:30000", "http", "localhost", 30000, ""),
    ("http://gpu-node-3:8000/", "http", "gpu-node-3", 8000, ""),
    ("https://llm.example.com", "https", "llm.example.com", 443, ""),
    ("http://llm.example.com", "http", "llm.example.com", 80, ""),
    ("[::1]:8000", "http", "::1", 8000, ""),
    ("http://[fe80::1]:30000", "http", "fe80::1", 30000, ""),
    ("https://gateway.example.com/qwen/", "https", "gateway.example.com", 443, "/qwen"),
    ("  HTTP://Node:8000  ", "http", "node", 8000, ""),
])
def test_target_forms(text, scheme, host, port, base):
    target = Target.parse(text)
    assert (target.scheme, target.host, target.port, target.base_path) == (scheme, host, port, base)


def test_target_urls_bracket_ipv6():
    assert Target.parse("[::1]:8000").url("/metrics") == "http://[::1]:8000/metrics"
    assert Target.parse("https://gw.example.com/qwen").url("/v1/models") == "https://gw.example.com:443/qwen/v1/models"


@pytest.mark.parametrize("text,message", [
    ("", "empty endpoint"),
    ("gpu-node-3", "no port"),
    ("ftp://host:21", "scheme 'ftp'"),
    ("::1:8000", "IPv6 addresses go in brackets"),
    ("host:99999", "--endpoint"),
    ("host:0", "port 0"),
    ("http://:8000", "no host"),
    ("http://host:8000/?x=1", "without ?query"),
])
def test_bad_endpoints_are_input_errors(text, message):
    with pytest.raises(InputError, match="^--endpoint: ") as info:
        Target.parse(text)
    assert message in str(info.value)


def test_userinfo_is_kept_out_of_every_output_and_sent_as_basic_auth():
    target = Target.parse("http://admin:pa55word@127.0.0.1:8000")
    shown = " ".join([target.display(), repr(target), json.dumps(target.to_dict()), target.url("/x")])
    assert "pa55word" not in shown and "admin" not in shown
    assert target.display() == "http://***@127.0.0.1:8000"
    header = auth_headers(target, ProbeOptions())["Authorization"]
    assert base64.b64decode(header.split()[1]) == b"admin:pa55word"
    with pytest.raises(InputError) as info:
        Target.parse("ftp://admin:pa55word@host:21")
    assert "pa55word" not in str(info.value)


def test_api_key_wins_and_never_shows_in_repr():
    opts = ProbeOptions(api_key="sk-live-0123456789abcdef")
    assert auth_headers(Target.parse("h:1"), opts) == {"Authorization": "Bearer sk-live-0123456789abcdef"}
    assert "sk-live" not in repr(opts)


def test_api_key_from_env(monkeypatch):
    monkeypatch.setenv("MY_VLLM_KEY", " k-1 ")
    assert api_key_from_env("MY_VLLM_KEY") == "k-1"
    monkeypatch.delenv("MY_VLLM_KEY")
    with pytest.raises(InputError, match="MY_VLLM_KEY is not set"):
        api_key_from_env("MY_VLLM_KEY")


@pytest.mark.parametrize("kwargs,flag", [({"timeout_s": 0}, "--timeout"), ({"sample_s": -1}, "--sample"),
                                         ({"pid": 0}, "--pid"), ({"max_body_bytes": 0}, "max_body_bytes")])
def test_bad_options(kwargs, flag):
    with pytest.raises(InputError, match=f"^{flag}"):
        ProbeOptions(**kwargs)


def test_budget_covers_sampling():
    assert ProbeOptions(timeout_s=2, sample_s=5).budget_s() == 10.0
    assert ProbeOptions(run_timeout_s=3).budget_s() == 3


def test_run_probe_turns_a_crash_in_fetch_into_a_result():
    """A stand-in module for the wrapper's mechanics only: fetch raising something unexpected."""
    def fetch(target, opts):
        raise RuntimeError("lost the connection token=hunter2-secret")

    module = SimpleNamespace(NAME="boom", fetch=fetch, interpret=lambda raw: Facts())
    result = run_probe(module, Target.parse("h:1"), ProbeOptions())
    assert not result.ok and result.error.startswith("RuntimeError: lost the connection")
    assert "hunter2" not in result.error
    assert result.raw == {"error": result.error}
    assert result.facts.unknown_reason("boom.anything") == result.error


def test_interpret_of_malformed_raw_never_raises():
    facts, error = interpret_raw(metrics, {"scrapes": [{"status": 200, "text": 42, "at_s": "soon"}]})
    assert error is not None and error.startswith("cannot interpret the metrics probe's data")
    facts, error = interpret_raw(server, {"requests": {"/v1/models": {"json": ["not", "a", "dict"]}}})
    assert error is not None and "no vLLM or SGLang API answered" in error


def test_basic_auth_reaches_the_server():
    with LocalServer({"/version": Response(body='{"version": "0.33.0"}', content_type=JSON)}) as srv:
        target = Target.parse(f"http://ops:s3cret-pass@{srv.endpoint}")
        run_probe(server, target, ProbeOptions())
        assert srv.requests[0].headers["authorization"].startswith("Basic ")


@pytest.mark.parametrize("given", ["sk-live-0123456789abcdef", "abcDEF0123456789xyz", "key with spaces", ""])
def test_api_key_env_never_echoes_what_may_be_the_key_itself(given, monkeypatch):
    if given.isidentifier():
        monkeypatch.delenv(given, raising=False)
    with pytest.raises(InputError) as info:
        api_key_from_env(given)
    assert not given or given not in str(info.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "0.0.0.0", "::1"])
def test_loopback_and_any_address_are_this_host(host):
    from doctor.probes.base import not_this_host

    assert not_this_host(host) is None


def test_a_documentation_address_is_not_this_host():
    from doctor.probes.base import not_this_host

    assert not_this_host("192.0.2.10") == "endpoint host 192.0.2.10 is not this machine"
