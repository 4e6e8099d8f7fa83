"""The architectures vLLM runs with pipeline parallelism, read from the wheel (tools/gen_pp_architectures.py), and
the rule that reads them: a release that refused PP for an architecture the newest release supports is too old."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import yaml
from conftest import find_wheel_file, unavailable

from doctor.engines.pp_architectures import DATA, pp_class

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tools/ is not an installed package
from tools.gen_pp_architectures import MODELS, read_wheel  # noqa: E402


def _committed() -> dict:
    return json.loads(DATA.read_text(encoding="utf-8"))["vllm"]


def test_the_table_is_what_the_wheel_says() -> None:
    """Regenerated from the release wheel, the table is the committed one; each entry's line is its class, and the
    class (or a model class it derives from) lists SupportsPP among its bases."""
    doc = _committed()
    wheel = find_wheel_file("vllm", doc["version"])
    if wheel is None:
        unavailable(f"vllm-{doc['version']} wheel not in the wheel dir (tools/fetch_test_wheels.sh)")
    supported, unresolved = read_wheel(wheel)
    assert (supported, unresolved) == (doc["architectures"], doc["unresolved"])
    with zipfile.ZipFile(wheel) as zf:
        path, line = supported["Llama4ForConditionalGeneration"].rsplit(":", 1)
        lines = zf.read(path).decode("utf-8").splitlines()[int(line) - 1:]
        header = "\n".join(lines[:lines.index(next(t for t in lines if t.rstrip().endswith("):")))+ 1])
        assert header.startswith("class Llama4ForConditionalGeneration(") and "SupportsPP" in header
        # a subclass of a PP model class is PP too (phi3.py: class Phi3ForCausalLM(LlamaForCausalLM))
        assert supported["Phi3ForCausalLM"].startswith(MODELS + "phi3.py:")
    # encoder-only models have no pipeline stages
    assert "BertModel" not in supported and "XLMRobertaModel" not in supported


def test_unresolved_architectures_claim_nothing() -> None:
    assert pp_class("DeepseekV32ForCausalLM") is None and "DeepseekV32ForCausalLM" in _committed()["unresolved"]
    assert pp_class("LlamaForCausalLM").startswith(MODELS + "llama.py:")


def _check(*args: str) -> list[str]:
    from tests.conftest import run_cli

    proc = run_cli("check", "--offline", "--format", "json", "--symptom", "launch-failure", *args,
                   env={"HF_HUB_OFFLINE": "1"})
    assert proc.returncode in (0, 1, 5), proc.stderr
    return [f["id"] for f in json.loads(proc.stdout)["findings"]]


def _i461_log(tmp_path: Path) -> Path:
    case = yaml.safe_load((ROOT / "bench" / "incidents" / "i461-vllm-16231.yaml").read_text(encoding="utf-8"))
    path = tmp_path / "i461.log"
    path.write_text(case["evidence"]["log"], encoding="utf-8")
    return path


def test_a_pp_refusal_for_an_architecture_a_later_release_runs_is_the_release(tmp_path: Path) -> None:
    """vllm-project/vllm#16231 (i461): vLLM 0.8.3 refused PP for Llama 4; 0.33.0's Llama4ForConditionalGeneration
    implements SupportsPP (the table), so the release is what is missing; the refusal stays named after it."""
    config = ROOT / "fixtures" / "configs" / "meta-llama__Llama-4-Maverick-17B-128E-Instruct.json"
    named = _check("--log", str(_i461_log(tmp_path)), "--config", str(config), "--engine-version", "0.8.3")
    assert named[:2] == ["engine-too-old", "parallel-config-rejected"]


def test_a_pp_refusal_for_an_architecture_not_in_the_table_stays_the_layout(tmp_path: Path) -> None:
    config = ROOT / "fixtures" / "configs" / "deepseek-ai__DeepSeek-V3.2.json"  # an unresolved architecture
    named = _check("--log", str(_i461_log(tmp_path)), "--config", str(config))
    assert "engine-too-old" not in named and "parallel-config-rejected" in named
    # no config: nothing says which architecture was refused
    assert "engine-too-old" not in _check("--log", str(_i461_log(tmp_path)))
