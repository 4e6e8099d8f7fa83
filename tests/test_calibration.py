"""Measured beats computed: `llmdoctor calibrate` keeps the pairs real runs measured, and `plan`, `lint` and `check`
band a capacity by the user's own runs of that model, GPU and engine (doctor/model/calibration.py).

The positive path reads a real start-up log (fixtures/logs/public/vllm-0.19-qwen3-8b-h100-startup.log: lines of a
vLLM 0.19.0 run of Qwen3-8B on an H100 that llm-d-planner committed) with the model's real config; the refusal path
snapshots the real SGLang 0.5.23 CPU server's recorded answers (fixtures/live/sglang-0.5.23-cpu) over loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import SHARED_FIXTURES, requires_shared, run_cli, shared_config
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor.model.calibration import SCHEMA, model_ids

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "public" / "vllm-0.19-qwen3-8b-h100-startup.log"
#: the launch the log's "non-default args" line shows
COMMAND = "vllm serve Qwen/Qwen3-8B --max-model-len 8192 --gpu-memory-utilization 0.95 --no-enable-prefix-caching"
SGLANG = SHARED_FIXTURES / "live" / "sglang-0.5.23-cpu"


def _env(folder: Path) -> dict[str, str]:
    return {"LLMDOCTOR_DATA_DIR": str(folder)}


def _add_log(folder: Path, *extra: str):
    return run_cli("calibrate", "add", "--log", str(LOG), "--config", str(shared_config("Qwen__Qwen3-8B.json")),
                   "--gpu", "H100", "--command", COMMAND, "--engine-version", "0.19.0", *extra, env=_env(folder))


def _plan_band(folder: Path) -> dict:
    result = run_cli("plan", str(shared_config("Qwen__Qwen3-8B.json")), "--gpu", "H100", "--format", "json",
                     env=_env(folder))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["fit"]["vllm"]["kv_tokens_band"]


@requires_shared
def test_a_real_start_up_log_calibrates_plan_lint_and_check(tmp_path: Path) -> None:
    before = _plan_band(tmp_path)
    assert before["source"] == "record" and before["runs"] >= 5

    added = _add_log(tmp_path, "--format", "json")
    assert added.returncode == 0, added.stderr
    doc = json.loads(added.stdout)
    [run] = doc["added"]
    # the log's "GPU KV cache size: 418,688 tokens" against what llmdoctor computes for that launch
    assert run["measured"] == 418_688 and run["models"] == ["qwen/qwen3-8b"]
    assert (run["gpu"], run["engine"], run["version"], run["tp"]) == ("H100", "vllm", "0.19.0", 1)
    assert abs(run["expected"] / run["measured"] - 1) < 0.15 and "GPU KV cache size" in run["measured_source"]
    stored = json.loads((tmp_path / "calibration.json").read_text(encoding="utf-8"))
    assert stored["schema"] == SCHEMA and len(stored["runs"]) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["calibration.json"]  # written atomically: no temp file left

    again = _add_log(tmp_path)
    assert again.returncode == 0 and again.stdout.startswith("already")
    assert len(json.loads((tmp_path / "calibration.json").read_text(encoding="utf-8"))["runs"]) == 1

    after = _plan_band(tmp_path)
    assert after["source"] == "calibration" and after["runs"] == 1 and after["file"].endswith("calibration.json")
    assert after["error"] == round(abs(run["error"]), 4) < before["error"]
    assert "of your own runs" in after["text"] and "vllm 0.19.0 TP1" in after["text"]

    lint = run_cli("lint", "--config", str(shared_config("Qwen__Qwen3-8B.json")), "--gpu", "H100", COMMAND,
                   env=_env(tmp_path))
    fit = " ".join(line.strip() for line in lint.stdout.splitlines()[4:6])
    assert fit.startswith("fit: ≈") and "1 of your own runs: qwen/qwen3-8b, H100, vLLM" in fit, lint.stdout

    shown = run_cli("calibrate", "show", env=_env(tmp_path))
    assert shown.returncode == 0 and "qwen/qwen3-8b on H100, vllm: ±1% on 1 of your own runs" in shown.stdout


@requires_shared
def test_check_says_measured_against_computed(tmp_path: Path) -> None:
    result = run_cli("check", "--log", str(LOG), "--config", str(shared_config("Qwen__Qwen3-8B.json")),
                     "--gpu", "H100", "--command", COMMAND, "--engine-version", "0.19.0", env=_env(tmp_path))
    capacity = " ".join(line.strip() for line in result.stdout.splitlines() if line.startswith(("capacity", " ")))
    assert "predicted (" in capacity and "measured 418,688" in capacity and "calibrate add" in capacity


def _sglang_routes() -> dict[str, Response]:
    return {"/v1/models": Response(file=SGLANG / "v1_models.before.out", content_type=JSON),
            "/server_info": Response(file=SGLANG / "server_info.before.out", content_type=JSON),
            "/get_server_info": Response(file=SGLANG / "get_server_info.before.out", content_type=JSON),
            "/model_info": Response(file=SGLANG / "model_info.before.out", content_type=JSON),
            "/metrics": Response(file=SGLANG / "metrics.before.out", content_type=PROM)}


@requires_shared
def test_a_pool_sized_by_hand_calibrates_nothing(tmp_path: Path) -> None:
    """The recorded SGLang CPU server ran with --max-total-tokens 32768: its snapshot keeps the measured pool and
    says why it is no calibration; `calibrate add` refuses it (exit 1) and writes no file."""
    snapshot = tmp_path / "s.json"
    with LocalServer(_sglang_routes()) as srv:
        taken = run_cli("snapshot", "--endpoint", srv.endpoint, "--log", str(SGLANG / "server.log"),
                        "-o", str(snapshot), env=_env(tmp_path / "data"))
    assert taken.returncode == 0, taken.stderr
    capacity = json.loads(snapshot.read_text(encoding="utf-8"))["extra"]["capacity"]
    assert capacity["measured_tokens"] == 32768 and "set by hand" in capacity["calibrates"]
    assert "not a calibration" in taken.stdout

    refused = run_cli("calibrate", "add", str(snapshot), env=_env(tmp_path / "data"))
    assert refused.returncode == 1 and refused.stdout.startswith("refused") and "--max-total-tokens" in refused.stdout
    assert not (tmp_path / "data" / "calibration.json").exists()


def test_bad_inputs_are_one_line(tmp_path: Path) -> None:
    nothing = run_cli("calibrate", "add", env=_env(tmp_path))
    assert nothing.returncode == 2 and nothing.stderr.count("\n") == 1 and "nothing to add" in nothing.stderr
    (tmp_path / "calibration.json").write_text("{not json", encoding="utf-8")
    damaged = run_cli("calibrate", "show", env=_env(tmp_path))
    assert damaged.returncode == 2 and damaged.stderr.count("\n") == 1 and "calibration.json" in damaged.stderr
    assert "Traceback" not in damaged.stderr
    kept = run_cli("calibrate", "clear", env=_env(tmp_path))
    assert kept.returncode == 2 and "--yes" in kept.stderr and (tmp_path / "calibration.json").exists()
    cleared = run_cli("calibrate", "clear", "--yes", env=_env(tmp_path))
    assert cleared.returncode == 0 and not (tmp_path / "calibration.json").exists()


def test_one_model_under_its_names() -> None:
    assert model_ids("fixtures/configs/Qwen__Qwen3-8B.json", "Qwen__Qwen3-8B", "Qwen/Qwen3-8B") == ("qwen/qwen3-8b",)
    assert model_ids("/models/Qwen3-8B/", None, "") == ("qwen3-8b",)
    assert model_ids("models--meta-llama--Llama-3.1-8B") == ("meta-llama/llama-3.1-8b",)
