"""Bad input never crashes: any field of a config set to any JSON value gives a card or an InputError.

Hypothesis mutates the bundled scenario configs (and a few real ones from fixtures/);
the analysis, the KV layout at every dtype, the report and the text card must either work or raise
InputError (one line, exit 2 in the CLI) — never another exception.
"""

from __future__ import annotations

import copy
import json

from conftest import SHARED_FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doctor.commands.inspect import build_report
from doctor.errors import InputError
from doctor.model.architecture import analyze
from doctor.model.config import EXAMPLES_DIR
from doctor.render.inspect import render_text

SOURCES = sorted(EXAMPLES_DIR.glob("*.json")) + [
    SHARED_FIXTURES / "configs" / name for name in (
        "nvidia__Llama-3_3-Nemotron-Super-49B-v1.json", "moonshotai__Kimi-K3.json", "zai-org__GLM-5.2.json",
        "deepseek-ai__DeepSeek-V4-Flash.json", "google__gemma-4-26B-A4B.json", "nvidia__Nemotron-H-56B-Base-8K.json")
    if (SHARED_FIXTURES / "configs" / name).is_file()]
CONFIGS = [json.loads(p.read_text(encoding="utf-8")) for p in SOURCES]

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10**13) | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


def _paths(node, prefix=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list) and node:
        for index in {0, len(node) - 1}:
            yield (*prefix, index)
            yield from _paths(node[index], (*prefix, index))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_configs_give_a_card_or_an_input_error(data: st.DataObject) -> None:
    raw = copy.deepcopy(data.draw(st.sampled_from(CONFIGS)))
    for path in data.draw(st.lists(st.sampled_from(list(_paths(raw))), min_size=1, max_size=3)):
        node = raw
        try:
            for key in path[:-1]:
                node = node[key]
            node[path[-1]] = data.draw(JSON_VALUES)
        except (KeyError, IndexError, TypeError):
            continue
    try:
        card = analyze(raw, source="mutated/config.json")
    except InputError:
        return
    for kv_dtype in ("auto", "bf16", "fp8", "fp4"):
        try:
            report = build_report(card, kv_dtype=kv_dtype, gpu_mem=80 * 10**9)
        except InputError:
            continue
        json.dumps(report)
        render_text(card, report)
