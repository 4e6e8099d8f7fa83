"""The error catalogs (issue 22): templates read from every release's wheel, matched back from real log lines.

Real logs only: the public excerpts (fixtures/logs/public, SOURCES.md), the live captures of real vLLM 0.32.0
and SGLang 0.5.23 (fixtures/live), and a property test that renders the catalog's own templates with typed
values and must get each back as the same template and release range.
"""

from __future__ import annotations

import functools
import json
import random
import re
import subprocess
import sys

import pytest
from conftest import ROOT, SHARED_FIXTURES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from doctor.logs import catalog as cat
from doctor.logs.catalog_map import cause_for, selects, startup_class
from doctor.logs.source import read_log_input

PUBLIC = ROOT / "fixtures" / "logs" / "public"
VLLM_LIVE = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu"
SGLANG_LIVE = SHARED_FIXTURES / "live" / "sglang-0.5.23-cpu"


def _facts(path) -> dict:
    return {f.key: f.value for f in read_log_input(str(path)).facts}


def _line(path, needle: str) -> str:
    return next(line for line in path.read_text(errors="replace").splitlines() if needle in line)


# ------------------------------------------------------------------------------------------- the property
def _render(parts: list, draw) -> str:
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
        elif part["type"] == "int":
            out.append(str(draw(st.integers(min_value=0, max_value=10**7))))
        elif part["type"] == "float":
            out.append(f"{draw(st.floats(min_value=0, max_value=1e4, allow_nan=False)):.2f}")
        else:
            out.append(draw(st.text(alphabet="qzxjkv", min_size=1, max_size=6)))
    return "".join(out)


@functools.cache
def _live(engine: str, version: str) -> list[str]:
    """The templates a release prints (drawn from, once per release)."""
    catalog = cat.load(engine)
    at = catalog.release_index(version)
    return sorted(t for t in catalog.templates if cat._printed_at(catalog, t, at))


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@settings(max_examples=200, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_rendered_template_is_matched_back_to_itself_and_its_releases(engine: str, data) -> None:
    _rendered_back(engine, data.draw(st.sampled_from(cat.load(engine).releases)), data)


#: The releases read before the catalogs of issue 22 (point 5): vLLM 0.2.0-0.5.5, SGLang 0.1.3-0.3.6.post3.
_OLD = {"vllm": "0.6.0", "sglang": "0.4.0"}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_rendered_template_of_an_old_release_is_matched_back_to_it(engine: str, data) -> None:
    releases = cat.load(engine).releases
    old = releases[:releases.index(_OLD[engine])]
    assert len(old) >= 25
    _rendered_back(engine, data.draw(st.sampled_from(old)), data)


def _rendered_back(engine: str, version: str, data) -> None:
    """A template the release prints, rendered with typed values, is matched back to itself (or to one that reads
    the same line) with its release range and its sites of that release."""
    catalog = cat.load(engine)
    at = catalog.release_index(version)
    tid = data.draw(st.sampled_from(_live(engine, version)))
    parts = catalog.templates[tid]["parts"]
    line = "ERROR 12-01 12:41:11 [x.py:1] " + _render(parts, data.draw)
    match = cat.match_line(line, engine, version)
    assert match is not None, (tid, line)
    if match.template != tid:
        # another template of the release reads the same line: one with the same literals (holes named
        # otherwise), or an outer one whose str hole takes this template's text (a message quoting a message)
        other = catalog.templates[match.template]["parts"]
        assert match.in_release, (tid, match.template, line)
        # (a log line keeps no trailing blanks: templates that differ only there read the same line)
        assert _literals(other) == _literals(parts) or \
            any(not isinstance(p, str) and p["type"] == "str" for p in other), (tid, match.template, line)
        return
    assert match.in_release
    lo, hi = catalog.span(tid)
    assert (match.since, match.until) == (lo, hi)
    assert catalog.release_index(match.since) <= at <= catalog.release_index(match.until)
    assert all(catalog.release_index(s.since) <= at <= catalog.release_index(s.until) for s in match.sites)


def _literals(parts: list) -> list[str]:
    literals = [p for p in parts if isinstance(p, str)]
    return literals[:-1] + [literals[-1].rstrip()] if literals else literals


def test_every_release_read_is_in_the_tables() -> None:
    """Every release of the flag catalogs, the ones before the catalogs of issue 22 point 5 included (vLLM
    0.2.0-0.5.5, SGLang 0.1.3-0.3.6.post3), each from its own wheel with its sha256."""
    from tools.gen_catalog import shipped_versions

    for engine, first in (("vllm", "0.2.0"), ("sglang", "0.1.3")):
        listed = [v for e, v in shipped_versions() if e == engine]
        catalog = cat.load(engine)
        assert catalog.releases == listed and listed[0] == first
        wheels = {r["version"]: r["wheel"] for r in catalog.header["releases"]}
        assert all(wheels[v].startswith(f"{engine}-{v}-") for v in listed)


def test_the_layers_below_are_read_from_their_pinned_wheels() -> None:
    """tools/errors_lower.txt pins each lower layer read from a wheel (transformers, triton, FlashInfer,
    FlashAttention 4); the table holds exactly those releases, each with its wheel and sha256, then the curated
    messages no wheel holds (torch's allocator, the CUDA runtime, NCCL, pydantic-core: tools/errors_curated.yaml)."""
    from tools.gen_errors import lower_pins

    catalog = cat.load("lower")
    pins = lower_pins()
    assert catalog.releases == [f"{dist}-{version}" for dist, version, _p in pins] + ["curated"]
    for (dist, version, _p), header in zip(pins, catalog.header["releases"], strict=False):
        assert header["wheel"].lower().startswith(f"{dist.replace('-', '_')}-{version}-")
        assert len(header["sha256"]) == 64
    assert {"transformers", "triton", "flashinfer-python", "flash-attn-4"} <= {d for d, _v, _p in pins}


@pytest.mark.parametrize("line,cause,where", [
    # FlashInfer's JIT refuses a GPU below sm75 (the Volta V100's 7.0), FlashAttention 4 a Pascal card's 6.1
    ("RuntimeError: FlashInfer requires GPUs with sm75 or higher. Detected TARGET_CUDA_ARCHS={'7.0'}.",
     "gpu-arch-unsupported", "flashinfer/jit/core.py:139"),
    # (both engines ship a copy of FlashAttention 4: their own catalog's site of it is the one named)
    ("ValueError: Unsupported compute capability: 6.1. Supported: 8.x, 9.x, 10.x, 11.x, 12.x",
     "gpu-arch-unsupported", "cute/interface.py:"),
    # FlashInfer JIT-compiles at start-up: without the CUDA toolkit's nvcc it cannot
    ("RuntimeError: Could not find nvcc and default cuda_home='/usr/local/cuda' doesn't exist",
     "engine-dependency-missing", "flashinfer/jit/cpp_ext.py:"),
])
def test_an_attention_kernels_refusal_is_matched_to_its_wheel(line: str, cause: str, where: str) -> None:
    """The attention kernels' own refusals, rendered from their templates of the pinned wheels: matched under
    either engine to the package's file:line and mapped (an architecture below the kernels' minimum, a toolchain
    the JIT needs)."""
    for engine in ("vllm", "sglang"):
        match = cat.match_line(line, engine, None)
        assert match is not None and match.catalog in ("lower", engine), (engine, match)
        assert match.cause == cause and where in match.where, (match.cause, match.where)


def test_a_table_is_rebuilt_from_itself_byte_for_byte() -> None:
    """``gen_errors.py --all --reuse-table`` takes the releases a table holds back out of it: lossless, so
    adding a release (older or newer) reads only that release's wheel."""
    import gzip

    from tools.catalog_gen import error_history

    raw = gzip.decompress((ROOT / "doctor" / "engines" / "errors" / "sglang.json.gz").read_bytes())
    table = json.loads(raw)
    assert error_history.dump(error_history.build("sglang", error_history.reads_of(table))) == raw


# ------------------------------------------------------------------------------------------- real logs
def test_the_kv_refusal_gives_the_length_that_fits_on_every_wording() -> None:
    """vLLM's KV refusal in the 0.6 wording and in 0.32's, as the catalog holds them; the numbers of
    issue 22 (163840 / 63040) are the 2024 thread's."""
    old = cat.match_line("ValueError: The model's max seq len (163840) is larger than the maximum number of tokens "
                         "that can be stored in KV cache (63040). Try increasing `gpu_memory_utilization` or "
                         "decreasing `max_model_len` when initializing the engine.", "vllm", "0.6.3")
    assert old is not None and old.cause == "kv-cache-too-small-for-max-len"
    assert old.ordered == (163840, 63040)
    assert any(s.file == "vllm/worker/worker.py" for s in old.sites)
    assert old.in_release and old.severity == "critical"
    facts: dict = {}
    from doctor.logs.catalog_facts import catalog_facts

    catalog_facts([old.message], "vllm", "0.6.3", lambda k, v, _w: facts.__setitem__(k, v), started=False)
    assert facts["log.kv_refusal.fits_max_model_len"] == 63040 and facts["log.kv_refusal.max_model_len"] == 163840

    # 0.33.0's wording, rendered from its own template in the catalog (the estimate's sentence is the wheel's
    # vllm/v1/core/kv_cache_planning.py:72-75, a variable the template's last hole takes)
    catalog = cat.load("vllm")
    tid = next(t for t in catalog.templates if "max seq len" in cat.template_text(catalog.templates[t]["parts"])
               and cat._printed_at(catalog, t, catalog.release_index("0.33.0")))
    values = iter(["163840", "10.00", "3.85", "Based on the available memory, the estimated maximum model length "
                   "is 63040. "])
    line = "".join(p if isinstance(p, str) else next(values) for p in catalog.templates[tid]["parts"])
    facts.clear()
    catalog_facts([line], "vllm", "0.33.0", lambda k, v, _w: facts.__setitem__(k, v), started=False)
    assert facts["log.kv_refusal.needed_gib"] == 10.0 and facts["log.kv_refusal.available_gib"] == 3.85
    assert facts["log.kv_refusal.fits_max_model_len"] == 63040  # the engine's own estimate wins
    assert facts["log.catalog.matches"][0]["where"].startswith("vllm/v1/core/kv_cache_planning.py:")


@pytest.mark.parametrize("case,wording,values", [
    # vLLM 0.2.7's wording (vllm-project/vllm#2418): the KV cache's tokens are the length that fits
    ("i001-vllm-2418", "vllm-9254bdd0f4", {"max_model_len": 4096, "kv_tokens": 3664, "fits_max_model_len": 3664}),
    # vLLM 0.8.2's GiB wording as pasted into vllm-project/vllm#15617 (its backticks lost to GitHub's markdown):
    # the length that fits is the length scaled by available / needed
    ("i456-vllm-15617", "vllm-376e990f03", {"max_model_len": 116160, "needed_gib": 4.43, "available_gib": 3.48,
                                            "fits_max_model_len": 91249}),
    # the newest wording (vLLM 0.29.1rc1, eugr/spark-vllm-docker#396) as its reporter quoted it: re-wrapped over
    # three lines, a bracket dropped, cut before "Try increasing": no template matches a line whole, the quote
    # reading (doctor/logs/catalog.py match_quote) still gives the numbers and the engine's own estimate
    ("i340-spark-vllm-docker-396", None, {"max_model_len": 196608, "needed_gib": 23.25, "available_gib": 22.5,
                                          "fits_max_model_len": 190272}),
])
def test_a_real_kv_refusal_gives_the_length_that_fits_and_the_memory(tmp_path, case: str, wording: str | None,
                                                                     values: dict) -> None:
    """Issue 22 point 3 on real log lines of the incident benchmark (bench/incidents/, each with its thread): the
    refusal's holes become facts, and check's fix quotes the length that fits and the memory the engine printed."""
    import yaml

    doc = yaml.safe_load((ROOT / "bench" / "incidents" / f"{case}.yaml").read_text(encoding="utf-8"))
    log = tmp_path / "server.log"
    log.write_text(doc["evidence"]["log"], encoding="utf-8")
    facts = _facts(log)
    if wording is not None:
        assert any(m["template"] == wording for m in facts["log.catalog.matches"]), facts["log.catalog.matches"]
    for key, value in values.items():
        assert facts[f"log.kv_refusal.{key}"] == value, (key, facts.get(f"log.kv_refusal.{key}"))
    result = subprocess.run([sys.executable, "-m", "doctor", "check", "--log", str(log), "--format", "json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    finding = next(f for f in json.loads(result.stdout)["findings"] if f["id"] == "kv-cache-too-small-for-max-len")
    assert f"at most {values['fits_max_model_len']} fits" in finding["fix"], finding["fix"]
    if "needed_gib" in values:
        assert f"{values['needed_gib']} GiB of KV cache needed" in finding["fix"], finding["fix"]


def test_public_logs_name_their_template_and_its_file() -> None:
    facts = _facts(PUBLIC / "vllm-no-kv-memory.log")  # vLLM 0.6.4.post1 (SOURCES.md)
    match = next(m for m in facts["log.catalog.matches"] if "No available memory" in m["message"])
    assert match["startup"] and match["type"] == "ValueError"
    assert "startup-out-of-memory" in facts["log.causes"]


def test_a_live_refusal_is_matched_with_the_installed_releases_file_line() -> None:
    line = _line(VLLM_LIVE / "tools-llama3json-launchfail" / "server.log", "cannot be used with the tokenizer")
    match = cat.match_line(line, "vllm", "0.32.0")
    assert match is not None and match.in_release
    # the vLLM 0.32.0 wheel: ParserManager.validate_parser_tokenizer raises it (tests/realengine cites the same)
    assert match.template == "vllm-6c62c9627b" and match.where == "vllm/parser/parser_manager.py:94"
    assert match.sites[0].type == "TypeError" and match.sites[0].function == "ParserManager.validate_parser_tokenizer"
    assert match.severity == "critical" and match.startup


def test_a_healthy_live_start_has_no_refusal() -> None:
    for path in (VLLM_LIVE / "plain-after" / "server.log", SGLANG_LIVE / "server.log"):
        facts = _facts(path)
        assert not facts.get("log.catalog.unmapped_refusals"), facts.get("log.catalog.unmapped_refusals")
        assert not [m for m in facts.get("log.catalog.matches", []) if m["severity"] == "critical"]


def test_a_live_import_failure_is_named_once_not_also_by_its_class() -> None:
    """Real SGLang 0.5.23 start-ups that died importing (fixtures/live/sglang-0.5.23-cpu/SOURCES): the cause the
    regex names, and no start-up class cause on top from the same lines."""
    for name in ("try1-no-torchvision.log", "try2-no-sgl_kernel.log"):
        facts = _facts(SGLANG_LIVE / name)
        assert facts["log.causes"] == ["engine-dependency-missing"], (name, facts["log.causes"])


def test_an_unmapped_refusal_still_speaks_in_the_engines_words(tmp_path) -> None:
    """An error of SGLang 0.5.23 that no cause claims (raised outside the start-up modules the classes cover), in
    a log whose server never got ready: a start-up refusal in the engine's own words, with the releases,
    file:line and the condition."""
    catalog = cat.load("sglang")
    at = catalog.release_index("0.5.23")
    tid = next(t for t, e in sorted(catalog.templates.items())
               if cat._printed_at(catalog, t, at) and cause_for("sglang", t, e) is None
               and all(s["kind"] == "raise" and not startup_class("sglang", s["file"]) for s in e["sites"])
               and all(isinstance(p, str) for p in e["parts"]) and len(e["parts"][0]) > 40)
    message = catalog.templates[tid]["parts"][0]
    log = tmp_path / "server.log"
    log.write_text(f"[2026-12-01 13:28:54] server_args=ServerArgs(model_path='m')\nValueError: {message}\n")
    result = subprocess.run([sys.executable, "-m", "doctor", "check", "--log", str(log), "--format", "json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    doc = json.loads(result.stdout)
    found = {f["id"]: f for f in doc["findings"]}
    assert found["engine-error-unplaced"]["severity"] == "critical", sorted(found)
    text = json.dumps(found["engine-error-unplaced"])
    site = catalog.templates[tid]["sites"][-1]
    assert message[:40] in text and f"{site['file']}:" in text and site["function"] in text


# ------------------------------------------------------------------------------------------- selectors
def test_selector_keys_each_narrow_the_class() -> None:
    catalog = cat.load("vllm")
    tid, entry = next((t, e) for t, e in catalog.templates.items()
                      if any(s["file"] == "vllm/v1/core/kv_cache_utils.py" and s["kind"] == "raise"
                             for s in e["sites"]) and "max seq len" in str(e["parts"]))
    assert selects("vllm", {"startup": "kv-sizing", "kind": "raise"}, entry)
    assert selects("vllm", {"module": "vllm/v1/core/*", "words": ["max seq len"]}, entry)
    assert not selects("vllm", {"module": "vllm/config/*"}, entry)
    assert not selects("vllm", {"kind": "log"}, entry)
    assert not selects("vllm", {"words": ["max seq len", "flux capacitor"]}, entry)
    assert cause_for("vllm", tid, entry) == "kv-cache-too-small-for-max-len"  # words beat the class's place


def test_every_template_a_cause_names_exists() -> None:
    from doctor.logs.source import signatures

    for cause, sigs in signatures().items():
        for sig in sigs:
            if "template" in sig:
                assert sig["template"] in cat.load(sig["catalog"]).templates, (cause, sig)


# ------------------------------------------------------------------------------------------- lazy loading
# every file the process opens is seen by an audit hook: an error catalog (doctor/engines/errors/*.json.gz) or its
# datacache copy (errors-<name>-… in the cache directory) opened is an error catalog read
_PROBE = ("import sys\nopened = []\n"
          "sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == 'open' and args else None)\n"
          "from doctor.cli.main import main\nsys.argv = ['llmdoctor', *sys.argv[1:]]\n"
          "try:\n    main()\nexcept SystemExit:\n    pass\n"
          "read = [p for p in opened if '/engines/errors/' in p or '/errors-' in p or p.endswith('/engines/pins.json')]\n"
          "print('READ ' + repr(read), file=sys.stderr)\n"
          "print('LOADED' if 'doctor.logs.catalog' in sys.modules else 'LEAN', file=sys.stderr)\n")


def _loads_catalog(*args: str) -> tuple[bool, bool]:
    """(whether the error catalog's module was imported, whether a catalog file, its cached copy or the engines'
    pins table was opened)."""
    result = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, cwd=ROOT,
                            timeout=120)
    assert json.loads(result.stdout)["schema"].startswith("llmdoctor.check/"), result.stderr[-2000:]
    read = next(line for line in result.stderr.splitlines() if line.startswith("READ "))
    return result.stderr.strip().endswith("LOADED"), read != "READ []"


def test_check_without_a_log_loads_no_catalog() -> None:
    """Issue 22's bench: `check` without a log neither imports the matcher nor opens a catalog (start-up
    unchanged); with a log it does both."""
    command = ["check", "--command", "vllm serve Qwen/Qwen3-8B --max-model-len 4096", "--format", "json"]
    assert _loads_catalog(*command) == (False, False)
    assert _loads_catalog(*command, "--log", str(PUBLIC / "vllm-no-kv-memory.log")) == (True, True)


def test_the_doc_is_generated_from_the_tables() -> None:
    from tools.catalog_gen.error_coverage import render

    assert (ROOT / "docs" / "error-catalog.md").read_text(encoding="utf-8") == render() + "\n", \
        "docs/error-catalog.md is stale: python tools/gen_errors.py --coverage"


def test_a_long_line_is_cut_before_matching() -> None:
    noise = "".join(random.Random(1).choice("ab ") for _ in range(100_000))
    assert cat.match_line(noise, "vllm", None) is None


# ------------------------------------------------------------------------------------------- specific fixes
@functools.cache
def _specific_refusals(engine: str) -> list[str]:
    """The newest release's start-up refusals mapped by setting or subsystem (not by a rule of their own)."""
    from doctor.logs.catalog_map import how_mapped

    catalog = cat.load(engine)
    at = len(catalog.releases) - 1
    out = []
    for tid, entry in sorted(catalog.templates.items()):
        sites = [s for s in entry["sites"] if catalog._order[s["since"]] <= at <= catalog._order[s["until"]]
                 and s["kind"] == "raise" and startup_class(engine, s["file"])]
        if sites and how_mapped(engine, tid, entry, sites)[1] in ("setting", "subsystem"):
            out.append(tid)
    return out


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=st.data())
def test_a_refusal_mapped_by_construction_has_a_fix_that_quotes_its_check(engine: str, data) -> None:
    """Render a start-up refusal the catalog maps by the setting its check names or the subsystem it is raised in,
    read it back as `check --log` does: the cause's fix carries that check (its condition and file:line), the
    values the line printed, and, when mapped by setting, the flag."""
    from doctor.facts import Facts
    from doctor.logs.catalog_facts import catalog_facts
    from doctor.playbook.engine import render_fix
    from doctor.playbook.loader import load_playbooks

    catalog = cat.load(engine)
    tid = data.draw(st.sampled_from(_specific_refusals(engine)))
    parts = catalog.templates[tid]["parts"]
    line = "ValueError: " + _render(parts, data.draw)
    facts = Facts()
    _, named = catalog_facts([line], engine, catalog.releases[-1], facts.set, started=False)
    match = cat.match_line(line, engine, catalog.releases[-1])
    if match is None or match.template != tid:  # another template reads the same line (the property test's case)
        return
    assert named and named[0]["cause"] == match.cause, (tid, named)
    fix = render_fix(load_playbooks().causes[match.cause], facts)
    site = match.sites[0]
    assert f"{site.file}:{site.line}" in fix, (tid, fix)
    guard = " ".join(site.guard.split())[:200]
    assert (f"`{guard}`" if guard else "unconditionally") in fix, (tid, fix)
    for value in match.ordered:
        assert str(value)[:60] in fix or not str(value).strip(), (tid, value, fix)
    from doctor.logs.catalog_map import flags_named, how_mapped

    if how_mapped(engine, tid, catalog.templates[tid], match.sites)[1] == "setting":
        text = " ".join(p for p in parts if isinstance(p, str))
        for flag in flags_named(engine, site.file, site.guard, text):
            assert flag in fix, (tid, flag, fix)


def test_a_local_variable_does_not_name_a_setting() -> None:
    """vLLM's safetensors prefetch check (``if block_size < 1`` in the weight loader, its own variable) is not the
    KV cache's --block-size: outside the argument modules a condition names a setting only as an attribute, a
    message only as the identifier or the flag."""
    from doctor.logs.catalog_map import flags_named, how_mapped

    catalog = cat.load("vllm")
    tid, entry = next((t, e) for t, e in catalog.templates.items()
                      if "safetensors prefetch block size" in str(e["parts"]))
    site = entry["sites"][-1]
    assert flags_named("vllm", site["file"], site["guard"], str(entry["parts"][0])) == []
    assert how_mapped("vllm", tid, entry) == ("checkpoint-load-failed", "subsystem")
    # a piece of a longer flag is not that flag: --weight-cache-master-port does not name --master-port
    assert flags_named("vllm", "vllm/entrypoints/cli/preload.py", "",
                       "--weight-cache-draft-master-port must differ from --weight-cache-master-port") == []


def test_a_config_error_inside_pydantics_line_is_matched_to_its_template() -> None:
    """vLLM's config classes are pydantic dataclasses: a check they raise prints inside pydantic's line
    (``  Value error, <message> [type=value_error, input_value=…]``). In the incident benchmark's real logs every
    such line is matched to the engine's template of the message (bench/incidents/, each with its thread's URL)."""
    import yaml

    lines = []
    for path in sorted((ROOT / "bench" / "incidents").glob("i*.yaml")):
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
        log = str((case.get("evidence") or {}).get("log") or "")
        lines += [(case["id"], line) for line in log.splitlines() if "Value error, " in line and "[type=value_error" in line]
    assert lines, "no incident log has pydantic's full line (i163-vllm-28981 did)"
    for case_id, line in lines:
        match = cat.match_line(line, "vllm", None)
        assert match is not None and match.catalog == "vllm" and match.cause, (case_id, line, match)


def test_a_line_pasted_without_its_backticks_is_matched_to_its_template() -> None:
    """A log pasted into an issue outside a code block loses the backticks the engines put around names: vLLM
    0.8.2's KV refusal as vllm-project/vllm#15617 shows it (bench/incidents/i456-vllm-15617.yaml) is still its
    template, and a line that has backticks is matched only as printed."""
    line = ("ERROR 03-27 16:43:19 [core.py:343] ValueError: To serve at least one request with the models's max seq "
            "len (116160), (4.43 GB KV cache is needed, which is larger than the available KV cache memory (3.48 GB). "
            "Try increasing gpu_memory_utilization or decreasing max_model_len when initializing the engine.")
    match = cat.match_line(line, "vllm", "0.8.2")
    assert match is not None and match.cause == "kv-cache-too-small-for-max-len"
    assert match.in_release and match.ordered[0] == 116160
    # backticks in the wrong places are no paste of the template
    assert cat.match_line(line.replace("gpu_memory_utilization", "`gpu_memory`_utilization"), "vllm", "0.8.2") is None


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_every_template_with_backticks_is_matched_without_them(engine: str) -> None:
    """Each template's rendering with its backticks dropped is matched back to a template of the same text
    (holes filled with fixed values)."""
    catalog = cat.load(engine)
    ticked = [t for t in sorted(catalog.templates)
              if any(isinstance(p, str) and "`" in p for p in catalog.templates[t]["parts"])]
    assert len(ticked) > 100
    for tid in random.Random(0).sample(ticked, 60):
        parts = catalog.templates[tid]["parts"]
        line = "".join(p.replace("`", "") if isinstance(p, str) else ("7" if p["type"] in ("int", "float") else "qzx")
                       for p in parts)
        found = cat.match_line(line, engine, None)
        # this template, or one that fixes as many letters of the line (two templates may differ only in their
        # holes' names; a hole's value may end in a one-letter literal of another: `x` must be a CUDA tensor.)
        def letters(tparts: list) -> int:
            return sum(c.isalpha() for p in tparts if isinstance(p, str) for c in p)

        assert found is not None and letters(catalog.templates[found.template]["parts"]) >= letters(parts), (tid, line)


# ------------------------------------------------------------------------------------------- the generator's forms
_FORMS = {  # each message form point 1 names, as a statement in the engine's source shows it
    "raise f-string": lambda src: src.startswith("raise") and ('f"' in src or "f'" in src),
    "raise .format": lambda src: src.startswith("raise") and ".format(" in src,
    "log % args": lambda src: re.match(r"logger\.(error|warning|critical)\(", src) is not None and "%" in src,
    "log _once": lambda src: re.match(r"logger\.\w+_once\(", src) is not None,
}


def test_the_generator_reads_every_message_form_of_a_real_wheel() -> None:
    """Point 1's forms read from the real vLLM 0.33.0 wheel (tools/catalog_gen/errors.py, nothing imported): for the
    first site of each form, the template's file:line is the statement's own line and every literal piece of the
    template is in the statement's text, and the shipped table holds that template at that release and line."""
    import zipfile

    from conftest import find_wheel_file, unavailable

    from tools.catalog_gen.error_history import _SKIP_PARTS
    from tools.catalog_gen.errors import scan_source

    wheel = find_wheel_file("vllm", "0.33.0")
    if wheel is None:
        unavailable("no cached vLLM 0.33.0 wheel (tools/fetch_test_wheels.sh)")
    catalog = cat.load("vllm")
    found: dict[str, tuple[str, dict, str]] = {}
    with zipfile.ZipFile(wheel) as zf:
        # the engine's own modules, as the generator reads them (tools/catalog_gen/error_history.py _SKIP_PARTS)
        for name in sorted(n for n in zf.namelist() if n.startswith("vllm/") and n.endswith(".py")
                           and not _SKIP_PARTS & set(n.split("/"))):
            text = zf.read(name).decode("utf-8", errors="replace")
            lines = text.splitlines()
            for site in scan_source(text, name)["sites"]:
                src = lines[site["line"] - 1].strip()
                form = next((f for f, test in _FORMS.items() if f not in found and test(src)), None)
                if form is not None:
                    statement = " ".join(ln.strip() for ln in lines[site["line"] - 1:site["line"] + 8])
                    found[form] = (name, site, statement)
            if len(found) == len(_FORMS):
                break
    assert set(found) == set(_FORMS)
    at = catalog.release_index("0.33.0")
    for form, (name, site, statement) in found.items():
        # adjacent string literals and line breaks in the source: compare without quotes and blanks
        compact = re.sub(r"""["'\s]""", "", statement)
        literals = [re.sub(r"""["'\s]""", "", p) for p in site["parts"] if isinstance(p, str)]
        assert literals and all(p in compact for p in literals), (form, name, site)
        shipped = [s for tid, e in catalog.templates.items() if e["parts"] == site["parts"] for s in e["sites"]
                   if s["file"] == name and catalog._order[s["since"]] <= at <= catalog._order[s["until"]]]
        lines = [s["line"] if isinstance(s["line"], int) else s["line"][at - catalog._order[s["since"]]]
                 for s in shipped]
        assert site["line"] in lines, (form, name, site["line"], lines)
