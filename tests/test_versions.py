"""One version ordering for catalogs, gating rules, the family table and the playbooks' version ops."""

from __future__ import annotations

import pytest

from doctor.errors import InputError
from doctor.versions import extract_version, release, version_at_least, version_key


def test_order() -> None:
    ordered = ["0.4.10", "0.5.1rc1", "0.5.1", "0.5.1.post3", "0.5.4", "0.5.10", "0.9.2rc1", "0.9.2", "0.10.0",
               "0.10.1.1", "0.33.0"]
    assert sorted(ordered, key=version_key) == ordered
    assert version_key("0.5") == version_key("0.5.0") == version_key("v0.5.0")
    assert version_key("0.13.0+cu129") == version_key("0.13.0")
    assert version_key("1.0.dev3") < version_key("1.0a1") < version_key("1.0")


def test_not_versions() -> None:
    for text in ("latest", "nightly", "", "main", "sha-abc"):
        assert version_key(text) is None
    with pytest.raises(InputError, match="not a version number"):
        version_at_least("latest", "0.5.0")


def test_release_and_at_least() -> None:
    assert release("0.5.6.post2") == release("0.5.6")
    assert release("v0.29.1rc1.dev9+g2671fedfc") == release("0.29.1")
    assert version_at_least("0.5.1.post3", "0.5.1") and not version_at_least("0.5.0", "0.5.1")


def test_extract_from_tags() -> None:
    assert extract_version("v0.13.0-cu129") == "0.13.0"
    assert extract_version("lmsysorg/sglang:v0.5.4.post3-cu126") == "0.5.4.post3"
    assert extract_version("latest") is None
