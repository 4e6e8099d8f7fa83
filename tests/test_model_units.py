"""Sizes as typed on the command line and as shown on the card."""

from __future__ import annotations

import pytest

from doctor.errors import InputError
from doctor.model.units import format_bytes, format_count, format_tokens, parse_bytes, parse_tokens


@pytest.mark.parametrize(("text", "want"), [
    ("80G", 80 * 10**9), ("141GB", 141 * 10**9), ("80GiB", 80 * 2**30), ("80Gi", 80 * 2**30),
    ("85899345920", 85_899_345_920), ("1.5T", 1_500_000_000_000), ("512MiB", 512 * 2**20), ("80 gb", 80 * 10**9),
])
def test_parse_bytes(text: str, want: int) -> None:
    assert parse_bytes(text) == want


@pytest.mark.parametrize("text", ["", "eighty", "80X", "-5G", "0"])
def test_parse_bytes_refuses_nonsense(text: str) -> None:
    with pytest.raises(InputError, match="--gpu-mem"):
        parse_bytes(text)


@pytest.mark.parametrize(("text", "want"), [("32768", 32768), ("32k", 32768), ("1M", 2**20), ("128K", 131072)])
def test_parse_tokens(text: str, want: int) -> None:
    assert parse_tokens(text) == want


@pytest.mark.parametrize("text", ["32x", "", "0", "-1k"])
def test_parse_tokens_refuses_nonsense(text: str) -> None:
    with pytest.raises(InputError, match="--context"):
        parse_tokens(text)


def test_formatting() -> None:
    assert format_bytes(512) == "512 B"
    assert format_bytes(98_304) == "96.0 KiB"
    assert format_bytes(12 * 2**30) == "12.0 GiB"
    assert format_bytes(627 * 2**30) == "627 GiB"
    assert format_count(671_030_000_000) == "671.0B"
    assert format_count(7_615_616_512) == "7.62B"
    assert format_count(1_026_000_000_000) == "1.03T"
    assert format_tokens(32768) == "32k" and format_tokens(2**20) == "1M" and format_tokens(5000) == "5000"
