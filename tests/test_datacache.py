"""The parsed-data cache: the same data as parsing, rebuilt on any change, never trusted when it cannot be."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor import datacache
from doctor.engines.families import DATA_FILE, _load_families
from doctor.playbook import loader


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("LLMDOCTOR_CACHE_DIR", str(directory))
    return directory


def _counting(value: object) -> tuple[list[int], object]:
    calls: list[int] = []

    def build() -> object:
        calls.append(1)
        return value
    return calls, build


def test_second_run_loads_what_the_first_built(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    calls, build = _counting({"a": (1, 2), "b": [None, True, 2.5, "x"]})
    assert datacache.cached("t", [source], build) == {"a": (1, 2), "b": [None, True, 2.5, "x"]}
    assert datacache.cached("t", [source], build) == {"a": (1, 2), "b": [None, True, 2.5, "x"]}
    assert calls == [1]
    assert len(list(cache.glob("t.*@*.marshal"))) == 1


def test_an_edit_rebuilds_and_replaces_the_old_copy(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    calls, build = _counting({"v": 1})
    datacache.cached("t", [source], build)
    source.write_text("a: 22\n")
    datacache.cached("t", [source], build)
    assert calls == [1, 1] and len(list(cache.glob("t.*@*.marshal"))) == 1


def test_a_corrupt_copy_is_rebuilt(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    calls, build = _counting({"v": 1})
    datacache.cached("t", [source], build)
    [copy] = cache.glob("t.*@*.marshal")
    copy.write_bytes(b"\x00garbage")
    assert datacache.cached("t", [source], build) == {"v": 1} and calls == [1, 1]


def test_a_directory_others_can_write_is_not_used(cache: Path, tmp_path: Path) -> None:
    cache.mkdir(mode=0o700)
    cache.chmod(0o777)
    assert datacache.cache_dir() is None
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    calls, build = _counting({"v": 1})
    datacache.cached("t", [source], build)
    datacache.cached("t", [source], build)
    assert calls == [1, 1] and not list(cache.iterdir())


def test_off_and_unwritable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LLMDOCTOR_CACHE_DIR", "")
    assert datacache.cache_dir() is None
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("LLMDOCTOR_CACHE_DIR", str(blocker / "sub"))  # a file where a directory should be
    assert datacache.cache_dir() is None
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")
    assert datacache.cached("t", [source], lambda: 7) == 7


def test_a_build_error_is_raised_and_not_cached(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "data.yaml"
    source.write_text("a: 1\n")

    def broken() -> object:
        raise ValueError("bad data")

    with pytest.raises(ValueError, match="bad data"):
        datacache.cached("t", [source], broken)
    assert not list(cache.glob("t.*"))


def test_shipped_data_from_the_cache_is_the_parsed_data(cache: Path) -> None:
    fresh_families = _load_families(DATA_FILE)
    loader._load_builtin.cache_clear()
    first = loader._load_builtin()
    loader._load_builtin.cache_clear()
    second = loader._load_builtin()  # from the cache this time
    loader._load_builtin.cache_clear()
    assert list(cache.glob("playbooks.*@*.marshal"))
    parsed, errors = loader._load_dirs([loader.builtin_dir()], schema=False)
    assert not errors and first == second == parsed and parsed.playbooks and parsed.causes
    assert datacache.cached("engines.families", [DATA_FILE], lambda: fresh_families) == fresh_families
    assert datacache.cached("engines.families", [DATA_FILE], lambda: None) == fresh_families
