"""Which releases register each architecture (doctor/engines/architectures.json, tools/gen_pp_architectures.py
--history), and the refusal it decides: "Model architectures [...] are not supported" blames the release only when a
later release is the first to register the architecture."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import yaml
from conftest import find_wheel_file, run_cli, unavailable

from doctor.engines.architectures import DATA, registration

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package
from tools.gen_pp_architectures import (  # noqa: E402
    TRANSFORMERS_AUTO,
    catalog_releases,
    history,
    model_types,
    read_registered,
)

INCIDENTS = ROOT / "bench" / "incidents"


def _doc() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))


def test_the_table_covers_every_catalog_release() -> None:
    doc = _doc()
    listed: dict[str, list[str]] = {}
    for engine, version in catalog_releases():
        listed.setdefault(engine, []).append(version)
    assert doc["releases"] == listed


def test_the_table_is_what_each_cached_wheel_registers() -> None:
    """Read again from every release wheel at hand, each release registers exactly the architectures the table says
    it does, and an architecture first registered there has the file:line the wheel gives."""
    doc = _doc()
    wheels = [(engine, version, find_wheel_file(engine, version))
              for engine, versions in doc["releases"].items() for version in versions]
    wheels = [w for w in wheels if w[2] is not None]
    if not wheels:
        unavailable("no catalog release wheel in the wheel dir (tools/fetch_test_wheels.sh)")
    for engine, version, wheel in wheels:
        read = read_registered(engine, wheel)
        assert read, f"{wheel.name}: no registry read"
        answers = {arch: registration(engine, arch, version) for arch in doc["architectures"]}
        assert set(read) == {arch for arch, r in answers.items() if r and r.state == "registered"}, wheel.name
        for arch, where in read.items():
            if answers[arch].since == version:
                assert answers[arch].where == where, (wheel.name, arch)


def test_the_model_types_are_what_the_transformers_wheel_maps() -> None:
    doc = _doc()
    pin = doc["model_types"]["read"].split()[0].removeprefix("transformers-")
    wheel = find_wheel_file("transformers", pin)
    if wheel is None:
        unavailable(f"transformers-{pin} wheel not in the wheel dir")
    with zipfile.ZipFile(wheel) as zf:
        assert model_types(zf.read(TRANSFORMERS_AUTO).decode(), set(doc["architectures"])) == doc["model_types"]["types"]


def test_runs_close_where_a_release_drops_the_architecture() -> None:
    reads = {"vllm": [("0.1", {"A": "f.py:1"}), ("0.2", {"A": "f.py:2", "B": "f.py:3"}), ("0.3", {"B": "f.py:3"}),
                      ("0.4", {"A": "g.py:9", "B": "f.py:3"})]}
    assert history(reads) == {"A": {"vllm": [["0.1", "0.2", "f.py:1"], ["0.4", None, "g.py:9"]]},
                              "B": {"vllm": [["0.2", None, "f.py:3"]]}}


def _refused(case: str) -> tuple[str, str, str]:
    """(engine, version, architecture) of an incident whose log quotes the registry's refusal."""
    data = yaml.safe_load(next(INCIDENTS.glob(f"{case}-*.yaml")).read_text(encoding="utf-8"))
    line = next(t for t in data["evidence"]["log"].splitlines() if "are not supported" in t)
    return data["engine"], str(data["version"]), line.split("[", 1)[1].split("]", 1)[0].strip("'")


def test_the_incidents_refusals() -> None:
    """The refusals real incidents quote: a release older than the first that registers the architecture, and one that
    registers it (the refusal came from a model module that failed to import)."""
    engine, version, arch = _refused("i323")  # vLLM 0.2.4, Qwen2ForCausalLM
    r = registration(engine, arch, version)
    assert (arch, r.state, r.since) == ("Qwen2ForCausalLM", "later", "0.3.0")
    assert r.sentence().startswith("Qwen2ForCausalLM is registered from vLLM 0.3.0 (vllm/model_executor/models/")
    assert r.sentence().endswith("; this server runs 0.2.4")
    engine, version, arch = _refused("i416")  # vLLM 0.6.3, LlamaForCausalLM: registered since the first release
    assert registration(engine, arch, version).state == "registered"
    engine, version, arch = _refused("i200")  # SGLang 0.4.5, Glm4ForCausalLM
    assert registration(engine, arch, version).state == "later"
    assert registration(engine, arch, None).state == "unknown"


def test_real_configs_architectures() -> None:
    """The real configs' architectures: Qwen3-VL-MoE is newer than vLLM 0.10.1.1; every config's architecture that the
    newest vLLM registers is "registered" there, and older than its first release it is "later"."""
    newest = _doc()["releases"]["vllm"][-1]
    config = json.loads((ROOT / "fixtures" / "configs" / "Qwen__Qwen3-VL-30B-A3B-Instruct.json").read_text())
    r = registration("vllm", config["architectures"][0], "0.10.1.1")
    assert (r.state, r.since) == ("later", "0.11.0")
    for path in sorted((ROOT / "fixtures" / "configs").glob("*.json")):
        for arch in json.loads(path.read_text(encoding="utf-8")).get("architectures") or []:
            r = registration("vllm", arch, newest)
            if r.state == "registered" and r.since != _doc()["releases"]["vllm"][0]:
                assert registration("vllm", arch, "0.2.0").state == "later", (path.name, arch)


def _check(case: str, tmp_path: Path, *extra: str) -> dict:
    data = yaml.safe_load(next(INCIDENTS.glob(f"{case}-*.yaml")).read_text(encoding="utf-8"))
    log = tmp_path / f"{case}.log"
    log.write_text(data["evidence"]["log"], encoding="utf-8")
    proc = run_cli("check", "--offline", "--format", "json", "--symptom", "launch-failure", "--log", str(log),
                   *extra, env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode in (0, 1, 5), proc.stderr
    return json.loads(proc.stdout)


def test_check_names_the_release_only_when_it_lacks_the_architecture(tmp_path: Path) -> None:
    """i323 (vLLM 0.2.4 refused Qwen2ForCausalLM): engine-too-old, its fix naming 0.3.0; i416 (vLLM 0.6.3 refused
    LlamaForCausalLM, which every release registers): not the release."""
    out = _check("i323", tmp_path, "--engine-version", "0.2.4")
    too_old = next(f for f in out["findings"] if f["id"] == "engine-too-old")
    assert "Qwen2ForCausalLM is registered from vLLM 0.3.0" in json.dumps(too_old)
    out = _check("i416", tmp_path, "--engine-version", "0.6.3")
    ids = [f["id"] for f in out["findings"]]
    assert "engine-too-old" not in ids
    assert "vLLM 0.6.3 registers LlamaForCausalLM" in json.dumps(out["facts"]["engine.architecture_not_too_old"])


def test_transformers_unknown_model_type_on_a_release_that_registers_it(tmp_path: Path) -> None:
    """i563 (vllm-project/vllm#33580): vLLM 0.15.0's transformers did not know model type glm4_moe_lite, whose
    architecture (transformers' auto mapping: Glm4MoeLiteForCausalLM) vLLM 0.15.0 registers: transformers is what is
    missing, not the engine; the same refusal on 0.14.1, which lacks the architecture, is the release's."""
    out = _check("i563", tmp_path, "--engine-version", "0.15.0")
    ids = [f["id"] for f in out["findings"]]
    assert "engine-too-old" not in ids and "transformers-too-old-for-architecture" in ids
    assert "vLLM 0.15.0 registers Glm4MoeLiteForCausalLM" in out["facts"]["engine.architecture_not_too_old"]["value"]
    out = _check("i563", tmp_path, "--engine-version", "0.14.1")
    too_old = next(f for f in out["findings"] if f["id"] == "engine-too-old")
    assert "Glm4MoeLiteForCausalLM is registered from vLLM 0.15.0" in json.dumps(too_old)
