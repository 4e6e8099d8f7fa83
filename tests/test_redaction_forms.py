"""Redaction masks secrets, not the words around them, and a URL's credentials look the same in every output:
``scheme://***@host`` (issue 23: over-masking, a lost Markdown backtick, two URL forms)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.prometheus import free_port
from support.serve import Receiver, payload, post

from doctor.probes.base import Target
from doctor.redact import _TOKEN_SHAPES, MASK, _mask_token_shapes, redact_obj, redact_text


def test_a_path_named_like_a_secret_is_not_masked():
    done = run_cli("check", "--snapshot", "example:../../../etc/passwd")
    assert done.returncode == 2
    assert "no such bundled snapshot" in done.stderr and "***" not in done.stderr
    assert redact_text("/run/secrets/token: not found") == "/run/secrets/token: not found"
    assert redact_text("token: abc123") == "token: ***"  # a name that is not a path's still masks its value


@pytest.mark.parametrize("markdown, shown", [
    ("restart with `--api-key sk-live-0123456789abcdef` now", "restart with `--api-key ***` now"),
    ("set `HF_TOKEN=hf_abcdefghijklmnopqrstu` first", "set `HF_TOKEN=***` first"),
])
def test_markdown_keeps_its_backticks(markdown, shown):
    assert redact_text(markdown) == shown


def test_serve_markdown_keeps_its_backticks(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Receiver(tmp_path, "--out-dir", str(out), "--timeout", "1") as rx:
        alert = {"labels": {"alertname": "LLMDoctorKvCacheExhausted", "instance": f"127.0.0.1:{free_port()}",
                            "symptom": "memory-filling-fast"}, "fingerprint": "00000000000000a7",
                 "annotations": {"description": "restart with `--api-key sk-live-0123456789abcdef` now"}}
        post(f"{rx.url}/alertmanager", payload([alert]))
        rx.wait(lambda h: h["delivered"] + h["delivery_failed"] >= 1)
    text = (out / "00000000000000a7.md").read_text()
    assert "sk-live" not in text
    assert "`--api-key ***`" in text


def test_one_url_form_everywhere():
    url = "http://admin:hunter2@10.0.0.7:30000"
    target = Target.parse(url)
    forms = {target.display(), redact_text(url), redact_obj({"u": url})["u"],
             json.loads(redact_text(json.dumps({"endpoint": url})))["endpoint"]}
    assert forms == {"http://***@10.0.0.7:30000"}


_PIECES = ["hf_", "sk-", "ghp_", "gho_", "xoxb-", "AKIA", "AKIAABCDEFGHIJKLMNOP", "hf_" + "a" * 20, "sk-" + "b" * 18,
           "ghs_" + "c" * 22, "xoxp-" + "1" * 12, "x", "_", "-", " ", "\n", '"', "é"]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(alphabet="ab_-. /:\"'0Z9", max_size=20)), max_size=14))
def test_token_shapes_are_masked_as_one_regex_pass_masks_them(parts: list[str]) -> None:
    """redact_shapes tries the token pattern only where a token prefix occurs: the result must be exactly the
    whole-text substitution's, prefixes back to back, inside words, overlapping and at the very start included."""
    text = "".join(parts)
    assert _mask_token_shapes(text) == _TOKEN_SHAPES.sub(MASK, text)
