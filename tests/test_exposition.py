"""The exposition parser against prometheus_client's (the reference it replaces on the hot path), on the real
scrapes in fixtures/metrics, and on the corners of the text format."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from conftest import ROOT, SHARED_FIXTURES, requires_shared

from doctor.probes.exposition import ExpositionError, SampleParser, is_sample_or_comment, parse_samples

REAL = sorted((SHARED_FIXTURES / "metrics").glob("*.prom"))
SCENARIO = ROOT / "fixtures" / "scenarios" / "sglang_dp2_tp4_metrics.prom"


def _reference(text: str) -> list[tuple[str, dict[str, str], float]]:
    from prometheus_client.parser import text_string_to_metric_families

    return [(s.name, dict(s.labels), s.value) for family in text_string_to_metric_families(text)
            for s in family.samples]


def _same(ours: list, reference: list) -> None:
    def key(sample: tuple) -> tuple:
        name, labels, value = sample
        return name, tuple(sorted(labels.items())), "nan" if math.isnan(value) else value

    assert sorted(map(key, ours)) == sorted(map(key, reference))


@requires_shared
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_scrapes_parse_exactly_as_prometheus_client_does(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    _same(parse_samples(text.splitlines()), _reference(text if text.endswith("\n") else text + "\n"))


def test_scenario_and_format_corners_agree_with_the_reference() -> None:
    text = SCENARIO.read_text(encoding="utf-8") + (
        'a_total{x="q\\"uote",y="back\\\\slash",z="new\\nline"} 1\n'
        'b{ x = "spaced" , } 2.5 1712345678000\n'
        "c NaN\nd +Inf\ne -Inf\nf 1e-3\n"
        'g{le="+Inf"} 7\n'
        'h{x="}{,="} 3\n')
    _same(parse_samples(text.splitlines()), _reference(text))


@pytest.mark.parametrize("line", [
    "vllm:x{a=\"1\"",            # cut inside the label set
    "vllm:x{a=\"1\"} ",           # no value
    "vllm:x{a=1} 3",             # unquoted label value
    "vllm:x{a=\"1\" b=\"2\"} 3",  # missing comma
    "vllm:x sixteen",            # not a number
    "9lives 1",                  # a name cannot start with a digit
    "vllm:x{a=\"\\\"} 1",         # the quote is escaped: the value never ends
])
def test_bad_lines_are_refused_with_the_line_quoted(line: str) -> None:
    with pytest.raises(ExpositionError) as info:
        SampleParser().parse(line)
    assert "\n" not in str(info.value) and line[:10] in str(info.value).replace("\\\\", "\\")
    assert not is_sample_or_comment(line)
    with pytest.raises(ValueError):
        _reference(line + "\n")  # the reference refuses them too


def test_label_sets_are_parsed_once_and_shared() -> None:
    parser = SampleParser()
    _, first, _ = parser.parse('x{engine="0"} 1')
    _, second, _ = parser.parse('y{engine="0"} 2')
    assert first is second and first == {"engine": "0"}
