"""The parsed-data cache: the same data as parsing, rebuilt on any change, never trusted when it cannot be."""

from __future__ import annotations

import gzip
import json
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


# --- the catalogs' blobs, the compiled-regex table, the user's playbooks (issue 23 / 27: the speed of check) ---

ROOT = Path(__file__).resolve().parents[1]


def _run(args: list[str], cache_env: str, *, code: str | None = None) -> str:
    """One fresh process (``python -m doctor ARGS``, or ``python -c CODE``) with LLMDOCTOR_CACHE_DIR set; its
    stdout with the run's own timings masked (the one part of an answer that differs run to run)."""
    import os
    import re
    import subprocess
    import sys

    env = {**os.environ, "NO_COLOR": "1", "LLMDOCTOR_CACHE_DIR": cache_env}
    argv = [sys.executable, "-c", code] if code is not None else [sys.executable, "-m", "doctor", *args]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False)
    assert done.returncode in (0, 1, 5), done.stderr
    return re.sub(r"\d+(?:\.\d+)? ?ms\b", "N ms", re.sub(r'("elapsed_ms": )[\d.]+', r"\g<1>0", done.stdout))


#: Real logs of both engines (fixtures/logs/public/SOURCES.md, fixtures/live/SOURCES.md) that the catalogs match.
LOGS = [ROOT / "fixtures" / "live" / "vllm-0.32.0-cpu" / "devmode" / "server.log",
        ROOT / "fixtures" / "logs" / "public" / "vllm-no-kv-memory.log",
        ROOT / "fixtures" / "logs" / "public" / "sglang-cudagraph-capture-oom.log"]


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.name)
def test_check_log_answers_the_same_cold_warm_and_uncached(log: Path, tmp_path: Path) -> None:
    """Byte for byte (up to its own timing), `check --log` answers the same with no cache, with a cache being
    built (catalog blobs, regex table, playbooks) and with every piece of it loaded from the cache."""
    args = ["check", "--log", str(log), "--format", "json", "--fail-on", "never"]
    uncached = _run(args, "")
    cache = tmp_path / "cache"
    cold = _run(args, str(cache))
    assert list(cache.glob("errors-*.blob")) and list(cache.glob("regex@*.marshal"))
    warm = _run(args, str(cache))
    assert '"log.catalog.matches"' in uncached  # the catalogs matched lines of it
    assert uncached == cold == warm


def test_a_blob_that_is_not_the_one_its_index_was_written_with_is_rebuilt(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "data.json"
    source.write_text("{}")
    calls: list[int] = []

    def build() -> tuple[dict[str, int], bytes]:
        calls.append(1)
        return {"entries": 3}, b"abcdef"

    index, blob = datacache.cached_blob("b", [source], build)
    assert (index, bytes(blob)) == ({"entries": 3}, b"abcdef")
    index, blob = datacache.cached_blob("b", [source], build)
    assert bytes(blob[2:4]) == b"cd" and calls == [1]  # mapped from the cache, not built
    [on_disk] = cache.glob("b.*@*.blob")
    on_disk.write_bytes(b"abc")  # cut short by hand or by a full disk: the index no longer vouches for it
    index, blob = datacache.cached_blob("b", [source], build)
    assert bytes(blob) == b"abcdef" and calls == [1, 1]
    [index_file] = cache.glob("b.*@*.marshal")
    index_file.write_bytes(b"\x00garbage")
    assert bytes(datacache.cached_blob("b", [source], build)[1]) == b"abcdef" and calls == [1, 1, 1]


def test_error_catalogs_from_the_blob_are_the_parsed_catalogs(cache: Path) -> None:
    """Every entry, bucket and literal piece read back from the blob equals a fresh parse of the shipped file."""
    from doctor.logs import catalog

    for name in catalog.ENGINES:
        path = catalog.CATALOG_DIR / f"{name}.json.gz"
        data, blob = catalog._parse(path)
        catalog.load.cache_clear()
        loaded = catalog.load(name)  # builds the cache
        catalog.load.cache_clear()
        again = catalog.load(name)  # reads it
        catalog.load.cache_clear()
        assert loaded is not None and again is not None and bytes(again.blob) == blob
        doc = json.loads(gzip.decompress(path.read_bytes()))["templates"]
        assert sorted(again.templates) == sorted(doc)
        for tid in list(doc)[::97]:
            assert again.templates[tid] == doc[tid]
            assert again.chunks(tid) == catalog._chunks(doc[tid]["parts"])
        for word in list(data["index"])[::53]:
            assert {row[0] for row in again.bucket(word)} <= set(doc)


_REGEX_PROBE = r"""
import re, sys
from doctor.regexcache import install
install()
if sys.argv[1:] == ["strict"]:  # every pattern must now come from the table: the parser may not run
    import re._parser as parser
    def refuse(*args, **kwargs):
        raise AssertionError("parsed again")
    parser.parse = refuse
cases = [(r"(?P<name>[A-Za-z_]+)=(?P<value>\d+)", 0, "x=1 api_key=42"), (r"^\s*INFO\b.*$", re.M, "a\n INFO b\nc"),
         (r"caf\u00e9|na\u00efve", re.I, "CAF\u00c9 NA\u00cfVE"), (rb"\x00+(\w)", 0, b"ab\x00\x00c"),
         (r"(a)(b)?(?:c)", 0, "ac abc"), (r"\bKV cache\b.{0,20}?(\d+(?:\.\d+)?) GiB", re.S, "KV cache is\n 3.5 GiB")]
for pattern, flags, text in cases:
    compiled = re.compile(pattern, flags)
    found = [m.group(0) for m in compiled.finditer(text)]
    print(repr(pattern), compiled.flags, compiled.groups, dict(compiled.groupindex), found,
          repr(compiled.sub(lambda m: m.group(0)[::-1], text)))
"""


def test_compiled_regexes_from_the_table_behave_as_freshly_compiled(tmp_path: Path) -> None:
    """The table gives the same Pattern as re's compiler (flags, groups, names, matches) and is really used; a
    corrupt table, an unwritable or absent cache directory only mean compiling as before."""
    import sys

    from doctor import regexcache

    if sys.version_info[:2] not in regexcache._SUPPORTED:
        pytest.skip("the table is used on CPython 3.11-3.13 only")
    cache = tmp_path / "cache"
    fresh = _run([], "", code=_REGEX_PROBE)  # no cache: re's own compiler
    assert fresh.count("\n") == 6
    assert _run([], str(cache), code=_REGEX_PROBE) == fresh  # builds the table
    [table] = cache.glob("regex@*.marshal")
    strict = _REGEX_PROBE.replace('sys.argv[1:] == ["strict"]', "True")
    assert _run([], str(cache), code=strict) == fresh  # every pattern from the table, none parsed
    table.write_bytes(b"\x00not marshal")
    assert _run([], str(cache), code=_REGEX_PROBE) == fresh
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert _run([], str(blocker / "cache"), code=_REGEX_PROBE) == fresh  # no directory can be made there


def test_an_edited_cause_in_a_users_playbooks_is_seen_by_the_next_run(tmp_path: Path) -> None:
    """--playbooks DIR is kept between runs once it validates: editing a cause file (its text), adding one and
    breaking one are each seen by the very next run."""
    from test_playbook_layout import OVERRIDE_LOG, _user_cause

    cache = str(tmp_path / "cache")
    mine = _user_cause(tmp_path / "mine")
    args = ["check", "--playbooks", str(mine), "--log", str(OVERRIDE_LOG), "--format", "json"]
    first = json.loads(_run(args, cache))
    assert any(f["id"] == "gpu-blocks-overridden-to-zero" for f in first["findings"])
    assert list(Path(cache).glob("playbooks-given-*.marshal"))
    cause = mine / "causes" / "gpu-blocks-overridden-to-zero.yaml"
    cause.write_text(cause.read_text().replace("was forced by num_gpu_blocks_override",
                                               "was set by hand (edited)"))
    second = json.loads(_run(args, cache))
    titles = {f["id"]: f["title"] for f in second["findings"]}
    assert titles["gpu-blocks-overridden-to-zero"] == "The KV block count was set by hand (edited)"
    cause.write_text(cause.read_text().replace("severity: warning", "severity: bogus"))
    import os
    import subprocess
    import sys

    broken = subprocess.run([sys.executable, "-m", "doctor", *args], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "LLMDOCTOR_CACHE_DIR": cache}, timeout=120, check=False)
    assert broken.returncode == 2 and "gpu-blocks-overridden-to-zero.yaml" in broken.stderr


_DATACLASS_PROBE = r"""
import sys
from doctor import dataclasscache
dataclasscache.install()
if sys.argv[1:] == ["strict"]:  # every method must now come from the table: compiling source may not happen
    import builtins
    def refuse(*args, **kwargs):
        raise AssertionError("compiled again")
    dataclasscache.compile = refuse
import dataclasses, inspect
from dataclasses import dataclass, field

@dataclass(frozen=True)
class Site:
    file: str
    line: int = 0
    tags: tuple[str, ...] = ()

@dataclass(order=True)
class Row:
    name: str
    values: list[int] = field(default_factory=list)
    note: str = field(default="", repr=False)

a, b = Site("x.py", 3, ("t",)), Site("x.py", 3, ("t",))
print(a, a == b, hash(a) == hash(b), dataclasses.astuple(a))
try:
    a.line = 4
except dataclasses.FrozenInstanceError as exc:
    print("frozen", exc)
r = Row("n")
r.values.append(1)
print(r, Row("a") < Row("b"), Row("n") == Row("n", [], "other"), Row("m").values is not r.values)
print(inspect.signature(Site.__init__), Site.__init__.__annotations__, Site.__init__.__code__.co_filename)
"""


def test_dataclass_methods_from_the_table_behave_as_freshly_generated(tmp_path: Path) -> None:
    """Generated __init__/__repr__/__eq__/__hash__/frozen __setattr__/ordering are the same whether compiled or
    read from the table (their signatures and annotations too), the table is really used, and a corrupt table
    or no cache directory only mean compiling as before."""
    cache = tmp_path / "cache"
    fresh = _run([], "", code=_DATACLASS_PROBE)
    assert "frozen cannot assign to field 'line'" in fresh and fresh.count("\n") == 4
    assert _run([], str(cache), code=_DATACLASS_PROBE) == fresh
    [table] = cache.glob("dataclass-code@*.marshal")
    strict = _DATACLASS_PROBE.replace('sys.argv[1:] == ["strict"]', "True")
    assert _run([], str(cache), code=strict) == fresh  # nothing compiled: every method from the table
    table.write_bytes(b"\x00not marshal")
    assert _run([], str(cache), code=_DATACLASS_PROBE) == fresh
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert _run([], str(blocker / "cache"), code=_DATACLASS_PROBE) == fresh


def test_the_regex_table_and_the_cache_directory_stay_bounded(tmp_path: Path) -> None:
    """A pattern that compiles large (a catalog's alternation of every flag name) is compiled each run, not kept:
    kept, one per release, they grew the table every run loads past 100 MB (a `inspect` of a bad file then peaked
    at 255 MB, tests/test_corpus_cli.py). And the cache directory itself is trimmed, oldest files first, once past
    its budget: each checkout and user playbook directory keeps slots of its own that nothing else removes."""
    import marshal
    import os
    import sys

    from doctor import datacache, regexcache

    if sys.version_info[:2] in regexcache._SUPPORTED:
        cache = tmp_path / "cache"
        big = "|".join(f"flag{i}[_ -]name[_ -]{i}" for i in range(3000))  # compiles to far over MAX_ENTRY_BYTES
        probe = f"import re\nfrom doctor.regexcache import install\ninstall()\nre.compile({big!r})\nre.compile(r'a+b')\n"
        _run([], str(cache), code=probe)
        [table] = cache.glob("regex@*.marshal")
        kept = marshal.loads(table.read_bytes())
        assert (big, 0) not in kept and ("a+b", 0) in kept
        assert table.stat().st_size <= regexcache.MAX_TABLE_BYTES

    directory = tmp_path / "dir"
    directory.mkdir()
    for i in range(10):
        path = directory / f"slot{i}@k.marshal"
        path.write_bytes(b"x" * 1000)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))
    original = datacache.MAX_DIR_BYTES
    try:
        datacache.MAX_DIR_BYTES = 8000
        datacache._trim(directory)
    finally:
        datacache.MAX_DIR_BYTES = original
    left = sorted(p.name for p in directory.iterdir())
    assert left == [f"slot{i}@k.marshal" for i in range(4, 10)]  # the oldest went first, down to 3/4 of the budget
