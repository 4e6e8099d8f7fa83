"""The active probes' data names real things: every marker is in the engine source line it cites (read from the
vLLM 0.33.0 / SGLang 0.5.23 wheels in place, never installed), and every fact the probes write is documented."""

from __future__ import annotations

import re
import zipfile
from functools import cache

import pytest
from conftest import ROOT, WHEEL_DIR, find_wheel_file, unavailable
from support.openai_server import Behaviour, OpenAIServer

from doctor.facts import Facts
from doctor.probes.active import ActiveContext, run_active, spec
from doctor.probes.base import ProbeOptions, Target

VERSIONS = {"vllm": "0.33.0", "sglang": "0.5.23"}  # the engines' wheels, read in place (never installed)


@cache
def _wheel(engine: str) -> zipfile.ZipFile | None:
    found = find_wheel_file(engine, VERSIONS[engine])
    return zipfile.ZipFile(found) if found else None


def _lines(spec_text: str) -> list[int]:
    lines: list[int] = []
    for part in spec_text.split(","):
        start, _, end = part.partition("-")
        lines.extend(range(int(start), int(end or start) + 1))
    return lines


def _citations() -> list[tuple[str, str, str, list[int]]]:
    out = []
    for section in ("tool", "reasoning"):
        for marker in spec()[section]["markers"]:
            for cite in marker["source"].split(";"):
                engine, path_lines = cite.split()
                path, _, lines = path_lines.partition(":")
                out.append((marker["text"], engine, path, _lines(lines)))
    return out


@pytest.mark.parametrize(("text", "engine", "path", "lines"), _citations(),
                         ids=lambda v: v if isinstance(v, str) else None)
def test_marker_is_in_the_cited_source_line(text: str, engine: str, path: str, lines: list[int]) -> None:
    wheel = _wheel(engine)
    if wheel is None:
        unavailable(f"{engine}-{VERSIONS[engine]}-*.whl not in {WHEEL_DIR} (set LLMDOCTOR_WHEEL_DIR; .ci/run fills it)")
    source = wheel.read(path).decode("utf-8").splitlines()
    near = "\n".join(source[max(0, lines[0] - 2): lines[-1] + 1])
    assert text in near, f"{text!r} not at {path}:{lines[0]}-{lines[-1]}"


def test_refusal_text_is_vllms() -> None:
    wheel = _wheel("vllm")
    if wheel is None:
        unavailable(f"vllm-0.33.0-*.whl not in {WHEEL_DIR} (set LLMDOCTOR_WHEEL_DIR; .ci/run fills it)")
    source = wheel.read("vllm/renderers/online_renderer.py").decode("utf-8").splitlines()
    # the message is two adjacent string literals (online_renderer.py:278-279): join them as Python does
    pieces = re.findall(r"'([^']*)'|\"([^\"]*)\"", "\n".join(source[277:279]))
    literals = "".join(single or double for single, double in pieces)
    assert spec()["tool"]["refusal"] in literals


def test_every_active_fact_is_documented() -> None:
    documented = set(re.findall(r"`(active\.[a-z_.]+)`", (ROOT / "docs" / "facts.md").read_text()))
    facts = Facts()
    for behaviour in (Behaviour(tool="parsed", determinism="warmup"), Behaviour(tool="refused")):
        with OpenAIServer(behaviour) as srv:
            for result in run_active(Target.parse(srv.endpoint), ProbeOptions(timeout_s=3),
                                     ActiveContext(model="served-model")):
                facts.update(result.facts)
    written = {f.key for f in facts if f.key.startswith("active.")}
    assert written and written <= documented, sorted(written - documented)
