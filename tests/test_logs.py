"""Server logs as evidence (`check --log`, `snapshot --log`, `log:` in --targets): real vLLM 0.32.0 and SGLang
0.5.23 logs (fixtures/live), short excerpts of public GPU failure reports
(fixtures/logs/public, cited in its SOURCES.md), and scenario logs built from real lines where a test needs
something no real log has (a secret, a gigabyte) — each labelled where it is built."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, SHARED_FIXTURES, requires_shared, run_cli
from support.httpserver import JSON, PROM, LocalServer, Response

from doctor.errors import InputError
from doctor.logs import read as log_read
from doctor.logs.parse import log_facts
from doctor.logs.read import read_log
from doctor.logs.source import read_log_input, replay_excerpt, signatures
from doctor.playbook.loader import load_playbooks

VLLM = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu"
SGLANG = SHARED_FIXTURES / "live" / "sglang-0.5.23-cpu"
PUBLIC = ROOT / "fixtures" / "logs" / "public"


def _facts(path: Path) -> dict:
    return {f.key: f.value for f in read_log_input(str(path)).facts}


def _check_json(*args: str, input: str | None = None) -> dict:
    result = run_cli("check", *args, "--format", "json", input=input)
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)


# ------------------------------------------------------------------------------------------ real vLLM logs
@requires_shared
def test_vllm_healthy_start_gives_startup_facts_and_the_launch_command() -> None:
    facts = _facts(VLLM / "plain-after" / "server.log")
    assert (facts["log.engine"], facts["log.version"]) == ("vllm", "0.32.0")
    assert facts["log.kv_cache_tokens"] == 1_048_576  # "CPU KV cache size: 1,048,576 tokens"
    assert facts["log.max_concurrency"] == 2048.0
    assert facts["log.kv_cache_gib"] == 1.0
    assert facts["log.started"] is True
    assert facts["log.stats"]["waiting"] == 0 and "prefix_hit_rate" in facts["log.stats"]
    # the non-default args vLLM printed become the command; the real process argv has the same flags
    argv = (VLLM / "plain-after" / "cmdline.txt").read_text().split()
    for flag in ("--max-model-len", "--max-num-seqs", "--dtype"):
        assert f"{flag} {argv[argv.index(flag) + 1]}" in facts["log.launch_command"]
    assert facts["log.launch_command"].startswith("vllm serve /models/tiny-qwen2 ")


@requires_shared
def test_vllm_startup_refusal_gives_the_final_error_and_traceback() -> None:
    facts = _facts(VLLM / "tools-llama3json-launchfail" / "server.log")
    assert facts["log.started"] is False
    assert facts["log.error"].startswith("TypeError: --tool-call-parser llama3_json cannot be used with the tokenizer")
    assert facts["log.traceback"][0] == "Traceback (most recent call last):"
    assert facts["log.traceback"][-1] == facts["log.error"]
    assert "--tool-call-parser llama3_json" in facts["log.launch_command"]


@requires_shared
def test_vllm_engine_death_names_the_cause_from_the_log_alone() -> None:
    doc = _check_json("--log", str(VLLM / "headdim16-crash-before" / "server.log"))
    [finding] = [f for f in doc["findings"] if f["id"] == "attention-config-unsupported"]
    assert (finding["severity"], finding["confidence"]) == ("critical", "high")
    assert "head_dim=16" in finding["what"]
    assert doc["facts"]["log.error"]["value"].startswith("vllm.v1.engine.exceptions.EngineDeadError")
    # the command the log printed was read (engine and version known), so fixes speak vLLM
    assert doc["engine"] == "vllm" and doc["engine_version"] == "0.32.0"


@requires_shared
def test_a_launch_command_given_wins_over_the_logs() -> None:
    doc = _check_json("--log", str(VLLM / "plain-after" / "server.log"),
                      "--command", "vllm serve /models/other --max-num-seqs 64")
    assert doc["facts"]["launch.max_num_seqs"]["value"] == 64


# ------------------------------------------------------------------------------------------ real SGLang logs
@requires_shared
def test_sglang_healthy_start() -> None:
    reading = read_log_input(str(SGLANG / "server.log"))
    facts = {f.key: f.value for f in reading.facts}
    assert facts["log.engine"] == "sglang"
    assert (facts["log.kv_cache_tokens"], facts["log.max_running_requests"]) == (32768, 4)
    assert facts["log.attention_backend"] == "torch_native"
    assert facts["log.cuda_graph"] == "disabled"
    assert facts["log.stats"] == {"running": 4, "waiting": 0, "kv_usage": 0.01}  # "#token: 184" read as a count
    assert facts["log.args"]["attention_backend"] == "torch_native" and "mem_fraction_static" in facts["log.args"]
    # SGLang logs resolved arguments: no command is made up from them, and the reason says so
    assert "log.launch_command" not in facts
    assert "resolved server_args" in reading.facts.unknown_reason("log.launch_command")


@requires_shared
@pytest.mark.parametrize("name, module", [("try1-no-torchvision.log", "torchvision"),
                                          ("try2-no-sgl_kernel.log", "sgl_kernel")])
def test_sglang_missing_module(name: str, module: str) -> None:
    doc = _check_json("--log", str(SGLANG / name))
    [finding] = [f for f in doc["findings"] if f["id"] == "engine-dependency-missing"]
    assert finding["confidence"] == "high" and f"No module named '{module}'" in finding["what"]


# ------------------------------------------------------------------------------------------ public excerpts
_EXPECTED = {"vllm-cudagraph-capture-oom.log": "cuda-graph-capture-oom",
             "sglang-cudagraph-capture-oom.log": "cuda-graph-capture-oom",
             "vllm-no-kv-memory.log": "startup-out-of-memory",
             "vllm-weight-loading-oom.log": "startup-out-of-memory",
             "vllm-no-kernel-image.log": "gpu-arch-unsupported",
             "vllm-nccl-error.log": "nccl-init-failed",
             "vllm-nccl-error-2.log": "nccl-init-failed",
             "vllm-ray-no-node-types.log": "tp-exceeds-visible-gpus",
             "vllm-ray-pending-gpus.log": "tp-exceeds-visible-gpus",
             "vllm-ray-placement-wait.log": "tp-exceeds-visible-gpus"}


#: excerpts of healthy GPU start-ups: the facts each must give (and no finding of its own)
_FACTS = {"vllm-attention-backend.log": {"log.attention_backend": "FLASH_ATTN"},
          "vllm-hybrid-block-size.log": {"log.block_size": 1568, "log.weights_gib": 17.7},
          "vllm-kv-blocks-override.log": {"log.kv_override": ["num_gpu_blocks_override=512 (measured: 0 blocks)"],
                                          "log.cuda_graph": "estimated", "log.cuda_graph_gib": 0.73},
          "vllm-0.6-memory-profile.log": {"log.weights_gib": 7.51, "log.kv_cache_gib": 3.76,
                                          "log.gpu_memory_utilization": 0.9, "log.max_concurrency": 1.54},
          "vllm-0.19-qwen3-8b-h100-startup.log": {"log.version": "0.19.0", "log.weights_gib": 15.27,
                                                  "log.kv_cache_gib": 57.5, "log.kv_cache_tokens": 418688,
                                                  "log.cuda_graph_gib": 0.84, "log.max_concurrency": 51.11}}


#: excerpts of vLLM's SpecDecoding log line from public threads: (accepted / drafted, mean acceptance length,
#: the cause a log alone must name or None where acceptance is good)
_SPEC = {"vllm-spec-decode-low-acceptance.log": (round(89 / 975, 4), 2.37, "spec-decode-low-acceptance"),
         "vllm-spec-decode-zero-acceptance.log": (0.0, 1.0, "spec-decode-low-acceptance"),
         "vllm-spec-decode-good-acceptance.log": (round(262 / 295, 4), 5.44, None),
         "sglang-spec-decode-good-acceptance.log": (0.61, 2.83, None),
         "sglang-hybrid-spec-decode.log": (0.71, 3.13, None)}


def test_every_public_excerpt_is_cited() -> None:
    sources = (PUBLIC / "SOURCES.md").read_text()
    assert {p.name for p in PUBLIC.glob("*.log")} == set(_EXPECTED) | set(_FACTS) | set(_SPEC)
    for name in [*_EXPECTED, *_FACTS, *_SPEC]:
        row = next(line for line in sources.splitlines() if line.startswith(f"| {name} "))
        expected = _EXPECTED.get(name) or (_SPEC[name][2] if name in _SPEC else None) or "none"
        assert "https://github.com/" in row and expected in row


@pytest.mark.parametrize("name", sorted(_SPEC))
def test_public_spec_decode_excerpt(name: str) -> None:
    """Real speculative-decoding lines: vLLM's SpecDecoding line (one in the layout with "Draft acceptance rate"
    first, as printed by the build of vllm-project/vllm#24127; the rate is accepted / drafted of the last line)
    and SGLang's Decode batch line ("accept rate", also in the hybrid-model layout "#full token: …"). A log alone
    names low acceptance, and nothing where a real server accepted most of its drafts."""
    rate, length, cause = _SPEC[name]
    doc = _check_json("--log", str(PUBLIC / name))
    facts = doc["facts"]
    assert facts["log.spec_accept_rate"]["value"] == rate
    if name.startswith("sglang"):
        assert facts["log.engine"]["value"] == "sglang"
        assert facts["log.stats"]["value"]["spec_accept_length"] == length
    else:
        assert facts["log.spec_accept_length"]["value"] == length
    assert doc["facts"]["metrics.spec_accept_rate"]["value"] == rate
    found = {f["id"]: f for f in doc["findings"]}
    if cause is None:
        assert "spec-decode-low-acceptance" not in found, sorted(found)
    else:
        assert set(found) == {cause} and found[cause]["confidence"] == "high"
        assert f"{rate:.1%}".replace(".0%", "%") in found[cause]["what"], found[cause]["what"]


#: Start-up excerpts whose lines are a cause's log signature (the cause's own tree decides whether it is a finding:
#: hybrid-prefix-below-block needs low cache hits besides the line).
_SIGNED = {"vllm-hybrid-block-size.log": ["hybrid-prefix-below-block"]}


@pytest.mark.parametrize("name", sorted(_FACTS))
def test_public_startup_excerpt_facts(name: str) -> None:
    reading = read_log_input(str(PUBLIC / name))
    facts = {f.key: f.value for f in reading.facts}
    assert {k: facts.get(k) for k in _FACTS[name]} == _FACTS[name]
    assert facts["log.engine"] == "vllm" and facts["log.causes"] == _SIGNED.get(name, [])
    assert "log.started" not in facts and "ready" in reading.facts.unknown_reason("log.started")


def test_the_engines_block_size_beats_the_computed_one() -> None:
    """Measured beats computed: the block size vLLM logged is engine.block_size, whatever the arithmetic says."""
    from doctor.derive import derive_all

    facts = read_log_input(str(PUBLIC / "vllm-hybrid-block-size.log")).facts
    for key, value in (("model.attention", "hybrid"), ("model.layers.kv", 12), ("model.layers.linear", 36),
                       ("model.kv_bytes_per_token", 24576), ("model.state_bytes_per_sequence", 216268800),
                       ("launch.engine", "vllm")):
        facts.set(key, value, "scenario: a hybrid model whose computed block differs")
    derive_all(facts)
    block = facts.fact("engine.block_size")
    assert block.value == 1568 and block.observed and "vllm-hybrid-block-size.log" in block.source


def test_a_logged_block_override_is_a_hand_set_kv_size() -> None:
    from doctor.derive import derive_all

    facts = derive_all(read_log_input(str(PUBLIC / "vllm-kv-blocks-override.log")).facts)
    assert facts.get("capacity.kv_override") == ["num_gpu_blocks_override=512 (measured: 0 blocks)"]


@pytest.mark.parametrize("name", sorted(_EXPECTED))
def test_public_excerpt_names_its_cause(name: str) -> None:
    doc = _check_json("--log", str(PUBLIC / name))
    found = {f["id"]: f for f in doc["findings"]}
    assert set(found) == {_EXPECTED[name]}, sorted(found)
    assert found[_EXPECTED[name]]["confidence"] == "high"
    assert "?>" not in found[_EXPECTED[name]]["what"] + found[_EXPECTED[name]]["fix"]


def test_graph_capture_oom_is_not_also_a_startup_oom() -> None:
    facts = _facts(PUBLIC / "vllm-cudagraph-capture-oom.log")
    assert facts["log.causes"] == ["cuda-graph-capture-oom"]


def test_signatures_are_data_in_the_cause_files() -> None:
    declared = {path.stem for path in (ROOT / "playbooks" / "causes").glob("*.yaml")
                if yaml.safe_load(path.read_text()).get("log_signatures")}
    assert declared == set(signatures())
    # every cause a signature names has its node in its symptom's tree (log_node.symptom, else launch-failure),
    # generated from its file
    pbset = load_playbooks()
    for cause_id in declared:
        symptom = pbset.causes[cause_id].log_node.get("symptom", "launch-failure")
        tree = pbset.playbooks[symptom].tree
        assert cause_id in {node.get("cause") for node in tree if "log.causes" in json.dumps(node.get("when", {}))}
    hand_written = [line for line in (ROOT / "playbooks" / "launch-failure.yaml").read_text().splitlines()
                    if line.startswith("  - when: {fact: log.causes, op: contains")]
    assert hand_written == []


# ------------------------------------------------------------------------------------------ big logs, pipes
def _big_log(tmp_path: Path, middle_mb: int) -> Path:
    """Scenario: a real healthy start, real request lines repeated, a real engine death (a long-lived server
    that died)."""
    head = (VLLM / "plain-after" / "server.log").read_bytes()
    dying = (VLLM / "headdim16-crash-before" / "server.log").read_bytes()
    tail = dying[dying.rindex(b"\n", 0, dying.index(b"Traceback")) + 1:]  # from the crash's first line on
    filler = b'INFO:     127.0.0.1:38250 - "POST /v1/completions HTTP/1.1" 200 OK\n' * 16000
    path = tmp_path / "big.log"
    with path.open("wb") as fh:
        fh.write(head)
        for _ in range(middle_mb):
            fh.write(filler[:1 << 20])
        fh.write(tail)
    return path


@requires_shared
def test_big_log_reads_head_and_tail_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _big_log(tmp_path, 3)
    log = read_log(str(path))
    assert log.skipped_bytes > 0 and log.total_bytes == path.stat().st_size
    assert sum(len(line) + 1 for line in log.lines) <= log_read.HEAD_BYTES + log_read.TAIL_BYTES
    facts = {f.key: f.value for f in log_facts(log, signatures()).facts}
    assert facts["log.kv_cache_tokens"] == 1_048_576  # from the head
    assert "attention-config-unsupported" in facts["log.causes"]  # from the tail
    assert facts["log.skipped_bytes"] == log.skipped_bytes


@requires_shared
def test_stdin_is_streamed_to_the_same_facts(tmp_path: Path) -> None:
    path = _big_log(tmp_path, 3)
    from_file = _check_json("--log", str(path))["facts"]
    with path.open("rb") as stdin:  # bytes as they are (text mode would turn the progress bars' \r into \n)
        piped = subprocess.run([sys.executable, "-m", "doctor", "check", "--log", "-", "--format", "json"],
                               stdin=stdin, capture_output=True, cwd=ROOT, timeout=60)
    assert piped.returncode in (0, 1), piped.stderr
    from_pipe = json.loads(piped.stdout)["facts"]
    log_keys = {k for k in from_file if k.startswith("log.") and k not in ("log.bytes",)}
    assert {k: from_file[k]["value"] for k in log_keys} == {k: from_pipe[k]["value"] for k in log_keys}


@requires_shared
def test_lines_cut_by_the_cap_are_not_misread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_read, "HEAD_BYTES", 1000)
    monkeypatch.setattr(log_read, "TAIL_BYTES", 1000)
    log = read_log(str(VLLM / "plain-after" / "server.log"))
    text = (VLLM / "plain-after" / "server.log").read_text()
    assert all(line in text.splitlines() for line in log.lines)  # whole lines only, never half a line


# ------------------------------------------------------------------------------------------ snapshots, redaction
@requires_shared
@pytest.mark.parametrize("path", ["plain-after/server.log", "tools-llama3json-launchfail/server.log",
                                  "headdim16-crash-before/server.log", "../sglang-0.5.23-cpu/server.log",
                                  "../sglang-0.5.23-cpu/try2-no-sgl_kernel.log"])
def test_the_excerpt_replays_to_the_same_facts(path: str) -> None:
    from doctor.redact import redact_obj

    reading = read_log_input(str(VLLM / path))
    # a snapshot redacts its extra section once more (doctor/sources/snapshot.py): nothing may be left to change
    assert redact_obj(reading.excerpt) == reading.excerpt
    replayed = replay_excerpt(json.loads(json.dumps(reading.excerpt)))
    assert replayed.facts.to_dict() == reading.facts.to_dict()
    assert len(reading.excerpt["lines"]) < 120  # the lines that gave facts, not the log


def _secret_log(tmp_path: Path) -> Path:
    """Scenario: the real llama3_json start-up log with an API key added to the printed arguments and a URL
    with a password in a warning (no real log of ours carries a secret)."""
    text = (VLLM / "tools-llama3json-launchfail" / "server.log").read_text()
    text = text.replace("'host': '127.0.0.1'", "'host': '127.0.0.1', 'api_key': 'sk-live-abcdefghijklmnop1234'")
    text = text.replace("Found ulimit of 20000", "Proxy https://admin:hunter2pass@proxy.local:3128 set. Found ulimit of 20000")
    path = tmp_path / "secret.log"
    path.write_text(text)
    return path


@requires_shared
def test_secrets_never_leave_the_log(tmp_path: Path) -> None:
    path = _secret_log(tmp_path)
    for fmt in ("json", "text", "markdown"):
        result = run_cli("check", "--log", str(path), "--format", fmt, "-v")
        assert result.returncode in (0, 1), result.stderr
        assert "sk-live-abcdefghijklmnop1234" not in result.stdout and "hunter2pass" not in result.stdout
    reading = read_log_input(str(path))
    dumped = json.dumps(reading.excerpt) + json.dumps(reading.facts.to_dict())
    assert "sk-live" not in dumped and "hunter2pass" not in dumped
    assert "--api-key" in reading.facts.get("log.launch_command")  # the flag stays, its value is masked


def _vllm_routes() -> dict[str, Response]:
    folder = VLLM / "plain-after"
    return {"/metrics": Response(file=folder / "metrics.txt", content_type=PROM),
            "/v1/models": Response(file=folder / "v1_models.txt", content_type=JSON),
            "/version": Response(file=folder / "version.txt", content_type=JSON)}


@requires_shared
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_snapshot_records_the_redacted_excerpt_and_check_replays_it(tmp_path: Path, engine: str) -> None:
    if engine == "vllm":
        log = _secret_log(tmp_path)
    else:  # the real SGLang log: its "#token: 184" counts and 'api_key': None must survive the snapshot
        log = tmp_path / "sglang.log"
        log.write_bytes((SGLANG / "server.log").read_bytes())
    snap = tmp_path / "snap.json"
    with LocalServer(_vllm_routes()) as srv:
        result = run_cli("snapshot", "--endpoint", f"127.0.0.1:{srv.port}", "--log", str(log), "-o", str(snap))
    assert result.returncode == 0, result.stderr
    text = snap.read_text()
    assert "sk-live" not in text and "hunter2pass" not in text
    recorded = json.loads(text)["extra"]["inputs"]["log"]
    assert recorded["lines"] and recorded["total_bytes"] == log.stat().st_size
    live = _check_json("--log", str(log))["facts"]
    log.unlink()  # the replay needs the snapshot only
    replayed = _check_json("--snapshot", str(snap))["facts"]
    assert {k: v["value"] for k, v in live.items() if k.startswith("log.")} == \
        {k: v["value"] for k, v in replayed.items() if k.startswith("log.")}


def test_a_broken_recorded_excerpt_is_one_line(tmp_path: Path) -> None:
    snap = {"schema": "llmdoctor.snapshot/1", "target": {"scheme": "http", "host": "h", "port": 1},
            "probes": {}, "extra": {"inputs": {"log": {"lines": "not a list"}}}}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(snap))
    result = run_cli("check", "--snapshot", str(path))
    assert result.returncode == 2
    assert result.stderr.strip().endswith("extra.inputs.log: .lines: expected a list of strings") or \
        "extra.inputs.log" in result.stderr and "expected a list of strings" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing.log", "no such file"),
    (lambda p: p, "is a directory"),
    (lambda p: (p / "core").write_bytes(b"\x7fELF\x00\x00\x00" * 10) and p / "core", "binary data"),
    (lambda p: (p / "server.log.1.gz").write_bytes(__import__("gzip").compress(b"INFO x\n")) and p / "server.log.1.gz",
     "zcat FILE | llmdoctor check --log -"),
])
def test_bad_log_is_one_line_exit_2(tmp_path: Path, make, message: str) -> None:
    target = make(tmp_path)
    result = run_cli("check", "--log", str(target))
    assert result.returncode == 2 and message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    with pytest.raises(InputError, match=message):
        read_log(str(target))


def test_a_log_of_nothing_known_is_no_crash(tmp_path: Path) -> None:
    path = tmp_path / "other.log"
    path.write_text("hello\nworld\n")
    doc = _check_json("--log", str(path))
    assert doc["facts"]["log.causes"]["value"] == [] and "log.engine" not in doc["facts"]


def test_log_belongs_to_one_target_not_to_a_fleet(tmp_path: Path) -> None:
    targets = tmp_path / "fleet.yaml"
    targets.write_text("- endpoint: 127.0.0.1:1\n")
    result = run_cli("check", "--targets", str(targets), "--log", str(targets))
    assert result.returncode == 2 and "log: key" in result.stderr


@requires_shared
def test_targets_log_key_is_read_per_target(tmp_path: Path) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_bytes((VLLM / "headdim16-crash-before" / "server.log").read_bytes())
    targets = tmp_path / "fleet.yaml"
    with LocalServer(_vllm_routes()) as srv:
        targets.write_text(f"- endpoint: 127.0.0.1:{srv.port}\n  name: a\n  log: logs/a.log\n")
        result = run_cli("check", "--targets", str(targets), "--format", "json")
    assert result.returncode in (0, 1), result.stderr
    doc = json.loads(result.stdout)
    [target] = doc["targets"]
    assert "attention-config-unsupported" in {f["id"] for f in target["findings"]}


@requires_shared
def test_without_a_log_nothing_waits_for_one() -> None:
    """No --log: the log-only branches are not listed as "could not check" on every run; with one, they run."""
    doc = _check_json("--metrics", str(SHARED_FIXTURES / "metrics" / "vllm_2.prom"))
    assert not any(k.startswith("log.") for u in doc["unchecked"] for k in u["missing"])
    assert "log.causes" not in doc["facts"]


def test_argparse_refusal_named_from_the_log_line(tmp_path: Path) -> None:
    """Scenario: the two lines CPython's argparse prints when `vllm serve` refuses a flag (the message is
    argparse's own, Lib/argparse.py; the flags are made up). No command could be read, so the finding quotes
    the line instead of leaving a template gap."""
    path = tmp_path / "refused.log"
    path.write_text("usage: vllm serve [model_tag] [options]\n"
                    "vllm serve: error: unrecognized arguments: --tp 8 --expert-parallel\n")
    doc = _check_json("--log", str(path))
    [finding] = [f for f in doc["findings"] if f["id"] == "unknown-flag"]
    assert finding["confidence"] == "high"
    assert finding["what"] == 'The server log shows it: "vllm serve: error: unrecognized arguments: --tp 8 --expert-parallel"'
    assert "?>" not in finding["fix"] and "(those in the log line)" in finding["fix"]
    assert doc["facts"]["log.error"]["value"] == "unrecognized arguments: --tp 8 --expert-parallel"


@pytest.mark.parametrize("log, command, version, spelled", [
    ("vllm-cudagraph-capture-oom.log", "vllm serve Qwen/Qwen3-8B", "0.11.0", "--cuda-graph-sizes 1 2 4"),
    ("vllm-cudagraph-capture-oom.log", "vllm serve Qwen/Qwen3-8B", "0.33.0", "--cudagraph-capture-sizes 1 2 4"),
    ("sglang-cudagraph-capture-oom.log", "python -m sglang.launch_server --model-path Qwen/Qwen3-8B", "0.5.8",
     "--cuda-graph-max-bs 16"),
    ("sglang-cudagraph-capture-oom.log", "python -m sglang.launch_server --model-path Qwen/Qwen3-8B", "0.5.23",
     "--cuda-graph-max-bs-decode 16"),
])
def test_graph_capture_fix_uses_the_releases_spelling(log: str, command: str, version: str, spelled: str) -> None:
    doc = _check_json("--log", str(PUBLIC / log), "--command", command, "--engine-version", version)
    [finding] = [f for f in doc["findings"] if f["id"] == "cuda-graph-capture-oom"]
    assert spelled in finding["fix"]


def test_one_standard_input_for_one_input() -> None:
    result = run_cli("check", "--log", "-", "--command-file", "-", input="x\n")
    assert result.returncode == 2 and "both read standard input" in result.stderr


@requires_shared
@pytest.mark.parametrize("wrap", ["Dec 01 12:41:11 gpu-node-7 vllm[25276]: ", "2026-12-01T12:41:11.123456789Z ",
                                  "vllm-1  | "])
def test_collector_prefixes_change_nothing(tmp_path: Path, wrap: str) -> None:
    """Scenario: the real engine-death log as journald, `kubectl logs --timestamps` and docker compose hand it
    over (each real line with the collector's prefix added)."""
    source = VLLM / "headdim16-crash-before" / "server.log"
    wrapped = tmp_path / "wrapped.log"
    wrapped.write_text("".join(wrap + line + "\n" for line in source.read_text().splitlines()))
    plain, collected = _facts(source), _facts(wrapped)
    for key in ("log.engine", "log.version", "log.launch_command", "log.kv_cache_tokens", "log.error", "log.causes",
                "log.started", "log.warnings"):
        assert collected.get(key) == plain.get(key), key


@requires_shared
def test_a_log_on_standard_input_is_read_once_per_run() -> None:
    """`check --active --log -` and `snapshot --log -` gather more than once; standard input can be read only
    once, so every gather after the first must see the same log facts (doctor.commands.check.with_log_read)."""
    log = SHARED_FIXTURES / "live" / "vllm-0.32.0-cpu" / "tools-hermes" / "server.log"
    script = (
        "from doctor.commands.check import with_log_read\n"
        "from doctor.sources.offline import OfflineInputs, gather\n"
        "offline = with_log_read(OfflineInputs(log='-'))\n"
        "for _ in range(2):\n"
        "    facts = gather(offline).facts\n"
        "    print(facts.get('log.version'), facts.get('log.kv_cache_tokens'))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, input=log.read_text(), capture_output=True,
                            text=True, timeout=60)
    first, second = result.stdout.strip().splitlines()
    assert first == second and not first.startswith("None"), result.stdout + result.stderr


@requires_shared
def test_a_hybrid_models_token_count_survives_the_excerpt() -> None:
    """SGLang's hybrid-model batch line says ``#full token: 350592``: a count, not a secret named "token". The
    excerpt a snapshot records must not mask it, or the replay loses the whole Decode batch line."""
    reading = read_log_input(str(PUBLIC / "sglang-hybrid-spec-decode.log"))
    assert "***" not in " ".join(reading.excerpt["lines"])
    replayed = replay_excerpt(reading.excerpt).facts
    assert replayed.get("log.spec_accept_rate") == reading.facts.get("log.spec_accept_rate") == 0.71
