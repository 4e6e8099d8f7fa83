"""The layers below the engines that issue 22 point 4 still lacked: tokenizers, Ray placement, and what each engine
release pins of those layers (doctor/engines/pins.json).

Real lines only: tokenizers' own output, run here with real pip-installed releases (fixtures/logs/lower/SOURCES.md),
and Ray lines quoted from public threads (fixtures/logs/public/SOURCES.md).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT, find_wheel_file, unavailable

from doctor.facts import Facts
from doctor.logs import catalog as cat
from doctor.logs.source import read_log_input

LOWER = ROOT / "fixtures" / "logs" / "lower"
PUBLIC = ROOT / "fixtures" / "logs" / "public"


def _exception_line(path) -> str:
    return next(line for line in path.read_text().splitlines() if line.startswith("Exception: "))


def _check(*args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "doctor", "check", *args, "--format", "json"],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    return json.loads(result.stdout)


# ------------------------------------------------------------------------------------------- tokenizers
def test_a_tokenizer_json_too_new_for_tokenizers_is_a_tokenizer_load_failure() -> None:
    """tokenizers 0.19.1 reading a tokenizer.json that 0.22.1 saved: its own serde message, matched under either
    engine to the curated template (with the enum and the position as values) and to tokenizer-load-failed."""
    line = _exception_line(LOWER / "tokenizers-0.19.1-newer-tokenizer-json.log")
    for engine in ("vllm", "sglang", None):
        match = cat.match_line(line, engine, None)
        assert match is not None and match.catalog == "lower", (engine, match)
        assert match.cause == "tokenizer-load-failed"
        assert match.values == {"enum": "ModelWrapper", "line": 217, "column": 3}
        assert "enum_untagged.rs" in match.where and match.sites[0].function == "tokenizers"


def test_a_file_that_is_not_json_is_named_in_tokenizers_words() -> None:
    """A Git LFS pointer in place of tokenizer.json: no cause claims serde_json's generic "expected value", but the
    line is still named (unmapped, the layer and its source) and, in a log that never started, is a critical
    start-up refusal."""
    line = _exception_line(LOWER / "tokenizers-0.22.1-lfs-pointer.log")
    match = cat.match_line(line, None, None)
    assert match is not None and match.cause is None and match.sites[0].function == "tokenizers"
    doc = _check("--log", str(LOWER / "tokenizers-0.22.1-lfs-pointer.log"))
    found = {f["id"]: f for f in doc["findings"]}
    assert found["engine-error-unplaced"]["severity"] == "critical"
    assert "expected value at line 1 column 1" in json.dumps(found["engine-error-unplaced"])


def test_the_installed_tokenizers_prints_what_the_catalog_expects(tmp_path) -> None:
    """Where tokenizers is installed, its own message for a file that is not JSON is matched to the same template
    as the recorded run (the curated text follows the library, not the fixture)."""
    pytest.importorskip("tokenizers")
    bad = tmp_path / "tokenizer.json"
    bad.write_text("version https://git-lfs.github.com/spec/v1\n")
    result = subprocess.run([sys.executable, str(LOWER / "repro_tokenizers.py"), "load", str(bad)],
                            capture_output=True, text=True, timeout=60)
    line = next(ln for ln in result.stderr.splitlines() if ln.startswith("Exception: "))
    recorded = cat.match_line(_exception_line(LOWER / "tokenizers-0.22.1-lfs-pointer.log"), None, None)
    assert cat.match_line(line, None, None).template == recorded.template


def test_the_tokenizer_fix_names_what_the_engine_release_requires() -> None:
    """With the engine release known, the fix names the tokenizers range that release's wheel requires (vLLM 0.33.0:
    tokenizers>=0.23.2, its METADATA Requires-Dist)."""
    doc = _check("--log", str(LOWER / "tokenizers-0.19.1-newer-tokenizer-json.log"),
                 "--command", "vllm serve Qwen/Qwen3-8B", "--engine-version", "0.33.0")
    fix = next(f["fix"] for f in doc["findings"] if f["id"] == "tokenizer-load-failed")
    assert "tokenizers >=0.23.2" in fix and "serde_derive src/de/enum_untagged.rs:38-41" in fix
    assert "enum=ModelWrapper" in fix


# each recorded run's line, its template's source, the values its holes take, and the cause (None: named unmapped)
_TOKENIZER_RUNS = [
    ("tokenizers-0.23.3-missing-file.log", "io/error.rs", {}, None),
    ("tokenizers-0.23.3-truncated.log", "serde_json src/error.rs:357", {"line": 85, "column": 1}, None),
    ("tokenizers-0.19.1-empty.log", "serde_json src/error.rs:357", {"line": 1, "column": 0}, None),
    ("tokenizers-0.23.3-added-token-no-content.log", "de/mod.rs:290", {"field": "content", "line": 1, "column": 99},
     None),
    ("tokenizers-0.19.1-unknown-model.log", "enum_untagged.rs", {"enum": "ModelWrapper", "line": 1, "column": 1503},
     "tokenizer-load-failed"),
    ("tokenizers-0.23.3-unknown-model.log", "enum_untagged.rs",
     {"enum": "ModelUntagged", "line": 1, "column": 1504}, "tokenizer-load-failed"),
    ("tokenizers-0.23.3-unknown-pre-tokenizer.log", "enum_untagged.rs",
     {"enum": "PreTokenizerUntagged", "line": 1, "column": 263}, "tokenizer-load-failed"),
]


@pytest.mark.parametrize("name,source,values,cause", _TOKENIZER_RUNS)
def test_tokenizers_load_errors_are_matched_from_the_librarys_own_runs(name: str, source: str, values: dict,
                                                                       cause: str | None) -> None:
    """Each damaged tokenizer.json a model load meets (missing, cut short, empty, an entry without a field, a model
    type or pre-tokenizer the release does not know), as tokenizers 0.19.1 and 0.23.3 really print it: matched to
    its curated template with the position as values; the unknown variants are tokenizer-load-failed, the rest
    are named unmapped as a critical start-up refusal."""
    line = _exception_line(LOWER / name)
    match = cat.match_line(line, None, None)
    assert match is not None and match.catalog == "lower" and match.sites[0].function == "tokenizers", line
    assert source in match.where and match.values == values and match.cause == cause
    if cause is None:
        found = {f["id"]: f for f in _check("--log", str(LOWER / name))["findings"]}
        assert found["engine-error-unplaced"]["severity"] == "critical"
        assert line.removeprefix("Exception: ") in json.dumps(found["engine-error-unplaced"])


@pytest.mark.parametrize("case,recorded", [
    ("missing", "tokenizers-0.23.3-missing-file.log"),
    ("truncated", "tokenizers-0.23.3-truncated.log"),
    ("unknown-model", "tokenizers-0.23.3-unknown-model.log"),
    ("unknown-pre-tokenizer", "tokenizers-0.23.3-unknown-pre-tokenizer.log"),
    ("added-token-no-content", "tokenizers-0.23.3-added-token-no-content.log"),
])
def test_the_installed_tokenizers_prints_each_damaged_file_as_recorded(tmp_path, case: str, recorded: str) -> None:
    """The installed tokenizers (a test extra) run on the same damaged files as the recorded runs: its message is
    matched to the same template (the curated text follows the library, not only the fixture)."""
    pytest.importorskip("tokenizers")
    script = str(LOWER / "repro_tokenizers.py")
    subprocess.run([sys.executable, script, "save", str(tmp_path)], check=True, capture_output=True, timeout=60)
    subprocess.run([sys.executable, script, "broken", str(tmp_path)], check=True, capture_output=True, timeout=60)
    target = tmp_path / ("missing/tokenizer.json" if case == "missing" else f"{case}.json")
    result = subprocess.run([sys.executable, script, "load", str(target)], capture_output=True, text=True,
                            timeout=60)
    line = next(ln for ln in result.stderr.splitlines() if ln.startswith("Exception: "))
    expected = cat.match_line(_exception_line(LOWER / recorded), None, None)
    assert cat.match_line(line, None, None).template == expected.template, line


# ------------------------------------------------------------------------------------------- Ray
@pytest.mark.parametrize("name,template,values", [
    ("ray-19326-infeasible.log", "lower-add9b988ec",
     {"what": "actor or task", "resources": "{node:172.31.57.230: 0.001000}, {CPU: 1.000000}", "what_again": "task"}),
    ("ray-19720-resource-deadlock.log", "lower-4f4473878f", {"what": "actor or task", "what_again": "actor or task"}),
    ("ray-12628-resource-deadlock-1x.log", "lower-c4e5154bfb", {"resources": "{CPU: 1.000000}"}),
    ("ray-16612-resource-deadlock-1x.log", "lower-c4e5154bfb", {"resources": "{CPU: 0.250000}"}),
])
def test_the_raylets_own_warnings_name_the_gpus_the_layout_lacks(name: str, template: str, values: dict) -> None:
    """The raylet's compiled warnings (a task or actor no node can place now: infeasible, or the cluster's
    resources held by actors), as public Ray threads quote them in the 2.x and 1.x wordings: matched to the curated
    templates and, in a log that never started a server, named tp-exceeds-visible-gpus."""
    facts = {f.key: f.value for f in read_log_input(str(LOWER / name)).facts}
    match = next(m for m in facts["log.catalog.matches"] if m["catalog"] == "lower")
    assert match["template"] == template and match["cause"] == "tp-exceeds-visible-gpus"
    line = cat.match_line(next(ln for ln in (LOWER / name).read_text().splitlines() if "with ID" in ln), "vllm", None)
    assert line is not None and line.template == template
    assert {k: line.values[k] for k in values} == values
    assert "tp-exceeds-visible-gpus" in facts["log.causes"]


def _v2_line(counts: list[tuple[dict, int]], gang: str | None = None) -> str:
    """A line as ray 2.55.1's ray/autoscaler/v2/event_logger.py:113-165 builds it: each request shape as
    '{resource_map}*{count}', joined by ', ', after its lead (a placement group's with its detail)."""
    lead = ("No available node types can fulfill resource requests " if gang is None else
            f"No available node types can fulfill placement group requests (detail={gang}): ")
    body = ", ".join(f"{shape}*{count}" for shape, count in counts)
    return "(autoscaler +32s) " + lead + body + ". Add suitable node types to this cluster to resolve this issue."


@pytest.mark.parametrize("line,template", [
    (_v2_line([({"GPU": 1.0}, 4)]), "lower-23736ae6de"),
    (_v2_line([({"node:10.0.0.2": 0.001, "GPU": 1.0}, 1), ({"GPU": 1.0}, 7)]), "lower-23736ae6de"),
    (_v2_line([({"GPU": 1.0, "CPU": 1.0}, 8)], gang="STRICT_PACK"), "lower-e6e9fe5fc5"),
])
def test_the_v2_autoscalers_infeasible_reports_are_placement_failures(line: str, template: str) -> None:
    """The v2 autoscaler's infeasible reports (no public engine thread quotes them yet: rendered as the wheel's code
    builds them) are matched to their own templates, not to v1's 'Error: … resource request {request}', and name
    tp-exceeds-visible-gpus."""
    match = cat.match_line(line, "vllm", None)
    assert match is not None and match.template == template and match.cause == "tp-exceeds-visible-gpus"
    assert "event_logger.py" in match.where


@pytest.mark.parametrize("name,values", [
    ("vllm-ray-no-node-types.log", {"request": "{'node:111.6.168.225': 0.001, 'GPU': 1.0}"}),
    ("vllm-ray-pending-gpus.log", {"request": "defaultdict(<class 'float'>, {'CPU': 4.0, 'GPU': 2.0})"}),
])
def test_rays_placement_reports_name_the_gpus_the_layout_lacks(name: str, values: dict) -> None:
    """Ray's autoscaler reports from public vLLM threads: matched to the curated template (the request as a value)
    and named as tp-exceeds-visible-gpus, whose fix names VLLM_HOST_IP for a bundle pinned to a node."""
    facts = {f.key: f.value for f in read_log_input(str(PUBLIC / name)).facts}
    match = next(m for m in facts["log.catalog.matches"] if m["catalog"] == "lower")
    assert match["cause"] == "tp-exceeds-visible-gpus" and "autoscaler.py" in match["where"]
    assert values["request"] in match["message"]
    assert "tp-exceeds-visible-gpus" in facts["log.causes"]
    doc = _check("--log", str(PUBLIC / name))
    fix = next(f["fix"] for f in doc["findings"] if f["id"] == "tp-exceeds-visible-gpus")
    assert "VLLM_HOST_IP" in fix


def test_rays_own_raises_are_read_from_its_wheel() -> None:
    """Ray's Python (placement groups, ray.init, actors) is read from the pinned wheel with file:line, like the
    other wheels of tools/errors_lower.txt: a rendered raise of ray/util/placement_group.py comes back to it."""
    catalog = cat.load("lower")
    assert "ray-2.55.1" in catalog.releases
    tid, entry = next((t, e) for t, e in sorted(catalog.templates.items())
                      if any(s["file"] == "ray/util/placement_group.py" for s in e["sites"])
                      and all(isinstance(p, str) for p in e["parts"]))
    match = cat.match_line(f"ValueError: {entry['parts'][0]}", "vllm", None)
    assert match is not None and match.template == tid and match.where.startswith("ray/util/placement_group.py:")


# ------------------------------------------------------------------------------------------- pins
def test_every_release_read_has_its_pins() -> None:
    """doctor/engines/pins.json holds every release of tools/catalog_versions.txt, each with the wheel whose
    METADATA it was read from."""
    from tools.gen_catalog import shipped_versions

    table = json.loads((ROOT / "doctor" / "engines" / "pins.json").read_text())
    assert table["schema"] == "llmdoctor.pins/1"
    for engine, version in shipped_versions():
        read = table["engines"][engine][version]
        assert read["source"].startswith(f"{engine}-{version}"), (engine, version, read["source"])


def test_pins_are_read_from_wheel_metadata() -> None:
    """The cached wheels' own METADATA give what the table holds (vLLM 0.33.0 pins torch 2.14.0 and FlashInfer
    0.7.2.post1; SGLang 0.5.23 transformers 5.19.0 and tokenizers 0.23.2)."""
    from doctor.engines.pins import pins

    assert pins("vllm", "0.33.0")["torch"] == "==2.14.0" and pins("vllm", "0.33.0")["flashinfer"] == "==0.7.2.post1"
    assert pins("sglang", "0.5.23")["transformers"] == "==5.19.0" and pins("sglang", "0.5.23")["tokenizers"] == "==0.23.2"
    assert pins("vllm", "0.2.0")["pydantic"] == "<2" and pins("vllm", "9.9.9") == {}
    from tools.gen_engine_pins import from_wheel, parse_requires

    wheel = find_wheel_file("vllm", "0.33.0")
    if wheel is None:
        unavailable("no cached vLLM 0.33.0 wheel (tools/fetch_test_wheels.sh)")
    table = json.loads((ROOT / "doctor" / "engines" / "pins.json").read_text())
    assert parse_requires(from_wheel(wheel)[0]) == table["engines"]["vllm"]["0.33.0"]["requires"]


def test_engine_pins_are_facts_only_where_a_lower_layer_spoke() -> None:
    """engine.pins.* is derived when a log line matched a lower layer's message (the tokenizers run), not for an
    engine's own refusal: a check of another log never opens the pins table."""
    from doctor.derive.analyzers import derive_engine_pins

    def derive(path) -> Facts:
        facts = Facts()
        for fact in read_log_input(str(path)).facts:
            facts.set(fact.key, fact.value, fact.source)
        facts.set("engine.name", "vllm", "test input")
        facts.set("launch.version", "0.11.0", "test input")
        derive_engine_pins(facts)
        return facts

    facts = derive(LOWER / "tokenizers-0.19.1-newer-tokenizer-json.log")
    assert facts.get("engine.pins.tokenizers") == ">=0.21.1" and facts.get("engine.pins.torch") == "==2.8.0"
    assert "vllm-0.11.0-" in facts.fact("engine.pins.torch").source
    assert "engine.pins.torch" not in derive(PUBLIC / "vllm-no-kv-memory.log")


def test_a_lower_message_is_set_against_what_the_engine_release_installs() -> None:
    """A transformers refusal from a real incident (bench/incidents/i093: vLLM 0.6.3 and Qwen3-MoE): the message was
    read from transformers 5.19.0's wheel; the finding says what vLLM 0.6.3's wheel requires (>=4.45.0) and whether
    the release read is within it."""
    import yaml

    from doctor.logs.catalog_facts import catalog_facts

    incident = yaml.safe_load((ROOT / "bench" / "incidents" / "i093-vllm-19793.yaml").read_text())
    out: dict = {}
    catalog_facts(incident["evidence"]["log"].splitlines(), "vllm", incident["version"],
                  lambda key, value, _source: out.__setitem__(key, value))
    match = next(m for m in out["log.catalog.matches"] if m["catalog"] == "lower")
    expected = "vllm 0.6.3 requires transformers >=4.45.0; this message was read from transformers 5.19.0 (within it)"
    assert match["pinned"] == expected and out["log.refusal.engine_too_old"].endswith(expected)


@pytest.mark.parametrize("version,spec,ok", [
    ("5.19.0", "<5.21.0,>=5.16.1", True), ("5.21.0", "<5.21.0,>=5.16.1", False),
    ("5.0.3", "!=5.0.*,>=4.56.0", False), ("4.56.1", "!=5.0.*,>=4.56.0", True),
    ("0.7.2", "==0.7.2.post1", False), ("1.2.3", "~=1.2", True), ("1.3", "~=1.2.0", False),
    ("2.8.0", '==2.8.0; platform_system == "Linux"', True), ("2.8.0", "===2.8.0", None),
])
def test_a_requirement_is_read_as_pip_reads_it(version: str, spec: str, ok: bool | None) -> None:
    """The specifiers the pins hold (every one in pins.json is of these forms), compared as PEP 440 does."""
    from doctor.engines.pins import satisfies

    assert satisfies(version, spec) is ok


def test_every_recorded_requirement_is_one_the_comparison_reads() -> None:
    from doctor.engines.pins import satisfies

    table = json.loads((ROOT / "doctor" / "engines" / "pins.json").read_text())
    specs = {r["spec"] for releases in table["engines"].values() for read in releases.values()
             for reqs in read["requires"].values() for r in reqs if r["spec"]}
    assert specs and not [s for s in specs if satisfies("1.0", s) is None]


def test_the_pins_table_is_opened_only_for_a_lower_layers_line() -> None:
    """check without a log opens neither the error catalogs nor doctor/engines/pins.json (tests/test_error_catalog.py
    audits both); a log whose lines are the engine's own does not open the pins either; a lower layer's line does."""
    probe = ("import sys\nopened = []\n"
             "sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == 'open' and args else None)\n"
             "from doctor.cli.main import main\nsys.argv = ['llmdoctor', *sys.argv[1:]]\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print('PINS' if any(p.endswith('/engines/pins.json') for p in opened) else 'NONE', file=sys.stderr)\n")

    def opens_pins(*args: str) -> bool:
        result = subprocess.run([sys.executable, "-c", probe, "check", "--format", "json", *args], capture_output=True,
                                text=True, cwd=ROOT, timeout=120)
        return result.stderr.strip().splitlines()[-1] == "PINS"

    command = ("--command", "vllm serve Qwen/Qwen3-8B", "--engine-version", "0.33.0")
    assert not opens_pins(*command)
    assert not opens_pins(*command, "--log", str(PUBLIC / "vllm-no-kv-memory.log"))
    assert opens_pins(*command, "--log", str(LOWER / "tokenizers-0.19.1-newer-tokenizer-json.log"))


def test_a_placement_wait_that_ended_in_a_start_is_no_finding(tmp_path) -> None:
    """vLLM's placement wait (vllm-project/vllm#8908's line) before a real vLLM 0.32.0 start-up that went on to serve
    (fixtures/live, a scenario built from real lines): Ray placed the workers in the end, so the wait names no cause;
    alone it does (tests/test_logs.py)."""
    from conftest import SHARED_FIXTURES

    started = (SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu" / "plain-after" / "server.log").read_text()
    log = tmp_path / "server.log"
    log.write_text((PUBLIC / "vllm-ray-placement-wait.log").read_text() + started)
    doc = _check("--log", str(log))
    assert "tp-exceeds-visible-gpus" not in {f["id"] for f in doc["findings"]}
    alone = _check("--log", str(PUBLIC / "vllm-ray-placement-wait.log"))
    assert "tp-exceeds-visible-gpus" in {f["id"] for f in alone["findings"]}


def test_every_recorded_marker_is_decided_for_linux_x86_64() -> None:
    """Every environment marker pins.json holds is decided for Linux x86_64 CPython (none is left as text), and a
    requirement it keeps loses its marker: vLLM 0.6.4.post1's xformers (``platform_system == "Linux" and
    platform_machine == "x86_64"``, its METADATA) is the pin itself."""
    from doctor.engines.pins import marker_holds, pins

    table = json.loads((ROOT / "doctor" / "engines" / "pins.json").read_text())
    markers = {r["marker"] for releases in table["engines"].values() for read in releases.values()
               for reqs in read["requires"].values() for r in reqs if r["marker"]}
    assert markers and {m: marker_holds(m) for m in markers} == dict.fromkeys(markers, True)
    assert marker_holds('platform_machine == "aarch64"') is False and marker_holds('python_version < "3.10"') is None
    assert pins("vllm", "0.6.4.post1")["xformers"] == "==0.0.28.post3"


def test_an_sglang_release_gets_the_layers_below_through_the_vllm_it_pins() -> None:
    """SGLang 0.4.2's wheel requires vllm==0.6.4.post1 under srt and torch without a bound, no transformers or Ray
    (its METADATA, pins.json): what those layers are comes from vLLM 0.6.4.post1's own pins, and says so. A range
    of vLLM releases is followed over the releases it admits; an open one (SGLang 0.4.0's >=0.6.3.post1) is not."""
    from doctor.engines.pins import effective_pins, pins

    own = pins("sglang", "0.4.2")
    assert own["vllm"] == "==0.6.4.post1" and own["torch"] == "any" and "transformers" not in own
    below = pins("vllm", "0.6.4.post1")
    got = effective_pins("sglang", "0.4.2")
    assert got["torch"] == (below["torch"], "via vllm 0.6.4.post1") == ("==2.5.1", "via vllm 0.6.4.post1")
    assert got["transformers"] == (below["transformers"], "via vllm 0.6.4.post1")
    assert got["flashinfer"] == (own["flashinfer"], "")  # its own pin stays its own
    ranged = effective_pins("sglang", "0.4.0.post1")
    assert ranged["torch"] == ("==2.4.0 | ==2.5.1", "via vllm 0.6.3.post1-0.6.4.post1")
    assert effective_pins("sglang", "0.4.0")["torch"] == ("any", "") and "ray" not in effective_pins("sglang", "0.4.0")


def test_a_lower_message_under_an_sglang_release_names_the_vllm_its_pin_came_from() -> None:
    """A Ray message read from the ray 2.55.1 wheel, in a log of SGLang 0.4.2: the finding's pin says the range
    comes through vLLM 0.6.4.post1 (SGLang asks for no Ray itself), and the engine.pins.ray fact's source says so."""
    from doctor.derive.analyzers import derive_engine_pins
    from doctor.logs.catalog_facts import catalog_facts

    catalog = cat.load("lower")
    entry = next(e for _t, e in sorted(catalog.templates.items())
                 if any(s["file"] == "ray/util/placement_group.py" for s in e["sites"])
                 and all(isinstance(p, str) for p in e["parts"]))
    out: dict = {}
    catalog_facts([f"ValueError: {entry['parts'][0]}"], "sglang", "0.4.2",
                  lambda key, value, _source: out.__setitem__(key, value))
    match = next(m for m in out["log.catalog.matches"] if m["catalog"] == "lower")
    assert match["pinned"] == ("sglang 0.4.2 requires ray >=2.9 (via vllm 0.6.4.post1); this message was read from "
                               "ray 2.55.1 (within it)")
    facts = Facts()
    facts.set("log.catalog.matches", out["log.catalog.matches"], "test input")
    facts.set("engine.name", "sglang", "test input")
    facts.set("launch.version", "0.4.2", "test input")
    derive_engine_pins(facts)
    assert facts.get("engine.pins.ray") == ">=2.9" and "via vllm 0.6.4.post1" in facts.fact("engine.pins.ray").source
