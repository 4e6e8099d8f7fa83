"""Property tests: whatever a user hands over, every parser of outside data answers or raises a DoctorError.

One property per parser, over arbitrary bytes/text and over mutations of real (or clearly labelled scenario)
documents: config.json (doctor.model.config), /metrics (raw_from_text → interpret), /server_info (raw_from_body →
interpret), playbook directories (doctor.playbook.loader), targets files (doctor.commands.fleet.load_targets), snapshots
(read_snapshot → replay → the whole check pipeline), --gpu, --endpoint and the size/token units. Errors are one
line and name the input; whatever is produced serialises as strict JSON (no NaN/Infinity, which `--format json`
consumers cannot read). The launch-command parser has its own properties in tests/test_command_properties.py;
the extra shapes here are argv lists and Kubernetes YAML. Budgets are small (the suite must stay fast).
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, SHARED_FIXTURES
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from support.mutate import JSON_VALUES, mutated
from support.playbook_dirs import write_dir

from doctor.errors import DoctorError, InputError
from doctor.facts import Facts

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SCENARIOS = ROOT / "fixtures" / "scenarios"
METRICS_FILES = sorted((SHARED_FIXTURES / "metrics").glob("*.prom")) + [SCENARIOS / "sglang_dp2_tp4_metrics.prom"]


def one_line(err: BaseException, *names: str) -> None:
    """A DoctorError is one line that names the input (file, flag or field) it is about."""
    text = str(err)
    assert text and "\n" not in text and "Traceback" not in text
    assert any(name in text for name in names), (text, names)


def strict_json(obj: object) -> None:
    """What a command prints with --format json must parse anywhere (no NaN, no Infinity)."""
    json.loads(json.dumps(obj, default=str, allow_nan=False))


def facts_are_sane(facts: Facts) -> None:
    strict_json(facts.to_dict())
    for fact in facts:
        if isinstance(fact.value, float):
            assert math.isfinite(fact.value), (fact.key, fact.value, fact.source)


# ------------------------------------------------------------------------------------------ config.json
def _config_through_inspect(path: Path) -> None:
    from doctor.commands.inspect import build_report
    from doctor.model.architecture import analyze
    from doctor.model.config import load_config
    from doctor.render.inspect import render_text

    try:
        loaded = load_config(str(path))
        card = analyze(loaded.raw, name=loaded.name, source=str(path))
        for kv_dtype in ("auto", "fp8"):
            report = build_report(card, kv_dtype=kv_dtype, gpu_mem=80 * 10**9)
            strict_json(report)
            render_text(card, report)
    except InputError as err:
        one_line(err, str(path), "config", "--kv-dtype", "kv")


_CONFIG_KEYS = ["architectures", "model_type", "num_attention_heads", "num_key_value_heads", "hidden_size",
                "head_dim", "num_hidden_layers", "intermediate_size", "vocab_size", "max_position_embeddings",
                "torch_dtype", "n_routed_experts", "num_experts", "num_experts_per_tok", "kv_lora_rank",
                "qk_rope_head_dim", "sliding_window", "layer_types", "quantization_config", "text_config",
                "vision_config", "num_nextn_predict_layers", "index_topk", "rope_scaling"]


@FAST
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_config_any_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_bytes(data)
        _config_through_inspect(path)


@FAST
@given(st.dictionaries(st.sampled_from(_CONFIG_KEYS), JSON_VALUES, max_size=12))
def test_config_any_fields(doc: dict) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(doc))
        _config_through_inspect(path)


# ------------------------------------------------------------------------------------------ /metrics
def _metrics(text: str) -> Facts:
    from doctor.probes import metrics

    facts = metrics.interpret(metrics.raw_from_text(text, "fuzz.prom"))  # interpret itself must not raise
    facts_are_sane(facts)
    return facts


_NAMES = ["vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting",
          "vllm:num_preemptions_total", "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
          "vllm:time_to_first_token_seconds_bucket", "vllm:time_to_first_token_seconds_count",
          "vllm:cache_config_info", "sglang:token_usage", "sglang:num_running_reqs", "sglang:num_queue_reqs",
          "sglang:max_total_num_tokens", "sglang:spec_accept_length", "sglang:spec_accept_rate",
          "sglang:cached_tokens_total", "sglang:prompt_tokens_total"]
_VALUES = st.sampled_from(["NaN", "+Inf", "-Inf", "0", "-1", "1e308", "3", "0.5", "1e-320", "x", ""]) | \
    st.floats(allow_nan=True, allow_infinity=True).map(repr)
_LABELS = st.dictionaries(st.sampled_from(["engine", "dp_rank", "tp_rank", "le", "model_name", "num_gpu_blocks",
                                           "block_size", "kv_cache_size_tokens", "gpu_memory_utilization",
                                           "enable_prefix_caching"]),
                          st.text(max_size=6) | st.sampled_from(["+Inf", "NaN", "0.1", "1", "-5", "True"]),
                          max_size=4)


@st.composite
def expositions(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 25))):
        name = draw(st.sampled_from(_NAMES))
        if draw(st.integers(0, 5)) == 0:
            kind = draw(st.sampled_from(["gauge", "counter", "histogram", "summary", "untyped", "bogus"]))
            lines.append(f"# TYPE {name.removesuffix('_total').removesuffix('_bucket').removesuffix('_count')} {kind}")
        labels = draw(_LABELS)
        body = ",".join(f'{k}="{v}"' for k, v in labels.items())
        lines.append(f"{name}{{{body}}} {draw(_VALUES)}" if labels else f"{name} {draw(_VALUES)}")
    ending = draw(st.sampled_from(["\n", "", "\r\n", "\n\n"]))
    return (ending if ending == "\r\n" else "\n").join(lines) + ending


@FAST
@given(expositions())
def test_metrics_mapper_on_any_exposition(text: str) -> None:
    _metrics(text)


@FAST
@given(st.text(max_size=500))
def test_metrics_mapper_on_any_text(text: str) -> None:
    _metrics(text)


@FAST
@given(data=st.data())
def test_real_scrapes_cut_or_corrupted_anywhere(data: st.DataObject) -> None:
    files = [p for p in METRICS_FILES if p.is_file()]
    text = data.draw(st.sampled_from(files)).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    start = data.draw(st.integers(0, len(lines)))
    cut = "".join(lines[start:start + 200])
    cut = cut[:data.draw(st.integers(0, len(cut)))]  # ends anywhere, mid-line included
    if cut and data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(cut) - 1))
        cut = cut[:at] + data.draw(st.sampled_from(['"', "{", "}", " NaN", "\\", "\n", " ", "="])) + cut[at + 1:]
    _metrics(cut)


def test_nan_and_inf_gauges_are_unknown_not_numbers() -> None:
    """A gauge reading NaN (no data yet) or Inf says nothing: the fact is unknown, with the reason."""
    facts = _metrics("vllm:kv_cache_usage_perc NaN\nvllm:num_requests_running +Inf\nvllm:num_requests_waiting 3\n")
    assert "metrics.kv_usage" not in facts and "NaN" in facts.unknown_reason("metrics.kv_usage")
    assert "metrics.running" not in facts and facts.get("metrics.queued") == 3


# ------------------------------------------------------------------------------------------ /server_info
def _server(text: str) -> Facts:
    from doctor.probes import server

    facts = server.interpret(server.raw_from_body(text, "fuzz.json"))
    facts_are_sane(facts)
    return facts


SERVER_BODIES = [json.loads((SCENARIOS / name).read_text()) for name in ("sglang_server_info.json",
                                                                        "vllm_server_info_dev.json")]


@FAST
@given(st.text(max_size=300) | JSON_VALUES.map(json.dumps))
def test_server_info_any_body(text: str) -> None:
    _server(text)


@FAST
@given(st.sampled_from(SERVER_BODIES).flatmap(lambda doc: mutated(doc, 4)))
def test_server_info_mutated(doc: object) -> None:
    _server(json.dumps(doc))


# ------------------------------------------------------------------------------------------ playbooks
BUILTIN = ROOT / "playbooks"
PLAYBOOK_DOCS = {p.name: yaml.safe_load(p.read_text()) for p in sorted(BUILTIN.glob("*.yaml"))}
CAUSE_DOCS = {f"causes/{p.name}": yaml.safe_load(p.read_text()) for p in sorted((BUILTIN / "causes").glob("*.yaml"))}
TREES = sorted(n for n in PLAYBOOK_DOCS if n != "traps.yaml")


def _validate_dir(files: dict[str, str]) -> None:
    """validate_dirs lists one-line problems naming the file; whatever validates also loads and runs."""
    from doctor.playbook.engine import diagnose
    from doctor.playbook.loader import load_playbooks, validate_dirs

    with tempfile.TemporaryDirectory() as tmp:
        write_dir(Path(tmp), files)
        errors = validate_dirs([tmp], builtin=False)
        for error in errors:
            one_line(Exception(error), tmp)
        if errors:
            with pytest.raises(InputError):
                load_playbooks([tmp], builtin=False)
            return
        pbset = load_playbooks([tmp], builtin=False)
        facts = Facts()
        facts.set("model.moe", True, "fuzz")
        facts.set("launch.engine", "vllm", "fuzz")
        diagnosis = diagnose(pbset, facts)
        strict_json(diagnosis.to_dict())


@FAST
@given(st.text(max_size=300), st.sampled_from(["x.yaml", "causes/x.yaml", "traps.yaml", "facts/x.yaml"]))
def test_playbook_dir_any_text(text: str, name: str) -> None:
    _validate_dir({name: text})


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a schema pass each
@given(data=st.data())
def test_playbook_dir_mutated_builtin(data: st.DataObject) -> None:
    tree = data.draw(st.sampled_from(TREES))
    causes = {name: yaml.safe_dump(doc) for name, doc in CAUSE_DOCS.items()}
    if data.draw(st.booleans()):
        name = data.draw(st.sampled_from(sorted(CAUSE_DOCS)))
        causes[name] = yaml.safe_dump(data.draw(mutated(CAUSE_DOCS[name], 2)))
    else:
        tree_doc = data.draw(mutated(PLAYBOOK_DOCS[tree], 3))
        _validate_dir({**causes, tree: yaml.safe_dump(tree_doc)})
        return
    _validate_dir({**causes, tree: yaml.safe_dump(PLAYBOOK_DOCS[tree])})


# ------------------------------------------------------------------------------------------ targets files
_TARGET = st.fixed_dictionaries({}, optional={
    "endpoint": st.text(max_size=20) | st.sampled_from(["127.0.0.1:8000", "http://u:p@h:1", "h", "[::1]:1"]) | JSON_VALUES,
    "name": JSON_VALUES, "api_key_env": JSON_VALUES, "gpu": JSON_VALUES, "config": JSON_VALUES,
    "command": JSON_VALUES, "engine_version": JSON_VALUES, "api_key": JSON_VALUES, "colour": JSON_VALUES})


@FAST
@given(st.text(max_size=300) | st.lists(_TARGET | JSON_VALUES, max_size=4).map(json.dumps)
       | st.lists(_TARGET, max_size=4).map(lambda t: yaml.safe_dump({"targets": t})))
def test_targets_file(text: str) -> None:
    from doctor.commands.fleet import load_targets
    from doctor.probes.base import Target

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fleet.yaml"
        path.write_text(text)
        try:
            specs = load_targets(str(path))
        except InputError as err:
            one_line(err, str(path))
            return
    for spec in specs:
        assert all(isinstance(getattr(spec, k), (str, type(None))) for k in ("name", "gpu", "config", "command"))
        try:
            Target.parse(spec.endpoint)
        except InputError as err:
            one_line(err, "--endpoint")


# ------------------------------------------------------------------------------------------ snapshots
@pytest.fixture(scope="module")
def recorded_snapshot() -> dict:
    """One real snapshot, recorded over HTTP from the scenario SGLang server (tests/test_snapshot.py's routes)."""
    from support.httpserver import JSON, PROM, LocalServer, Response

    from doctor.probes.base import ProbeOptions, Target
    from doctor.probes.runner import run_probes
    from doctor.sources.snapshot import build_snapshot

    routes = {"/v1/models": Response(file=SCENARIOS / "sglang_v1_models.json", content_type=JSON),
              "/server_info": Response(file=SCENARIOS / "sglang_server_info.json", content_type=JSON),
              "/model_info": Response(file=SCENARIOS / "sglang_model_info.json", content_type=JSON),
              "/metrics": Response(file=SCENARIOS / "sglang_dp2_tp4_metrics.prom", content_type=PROM)}
    with LocalServer(routes) as srv:
        target = Target.parse(srv.endpoint)
        results = run_probes(target, ProbeOptions(timeout_s=2), names=["server", "metrics"])
    inputs = {"inputs": {"command": "python3 -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 2",
                         "engine_version": None, "gpu": "H200:8", "workload": {"context": 32768, "users": 4},
                         "config_json": json.loads((ROOT / "doctor/examples/seed-gqa-27b.json").read_text()),
                         "config_name": "example:seed-gqa-27b"}}
    return json.loads(json.dumps(build_snapshot(target, results, inputs)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_snapshot_mutated_replays_or_is_refused(recorded_snapshot: dict, data: st.DataObject) -> None:
    from doctor.commands.check import CheckOptions, run_check

    doc = data.draw(mutated(recorded_snapshot, 3))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snap.json"
        path.write_text(json.dumps(doc))
        try:
            run = run_check(CheckOptions(snapshot=str(path)))
        except DoctorError as err:
            one_line(err, str(path), "--", "launch command", "config", "example:")
            return
    strict_json(run.to_dict())


@FAST
@given(st.binary(max_size=300))
def test_snapshot_any_bytes(data: bytes) -> None:
    from doctor.sources.snapshot import read_snapshot, replay

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "snap.json"
        path.write_bytes(data)
        try:
            replay(read_snapshot(path))
        except InputError as err:
            one_line(err, str(path))


# ------------------------------------------------------------------------------------------ small parsers
@FAST
@given(st.text(max_size=40) | st.from_regex(r"\s*\d{0,25}\s*[x×*:]?\s*(H200|B300|RTX 4090|a100 80gb|MI300X)?\s*"
                                            r"[x×*:]?\s*\d{0,25}\s*", fullmatch=True))
def test_gpu_spec(text: str) -> None:
    from doctor.hardware.spec import gpu_facts, parse_gpu_spec

    try:
        spec = parse_gpu_spec(text)
    except InputError as err:
        one_line(err, "--gpu")
        return
    assert spec.count >= 1
    strict_json(gpu_facts(spec, f"--gpu {text}").to_dict())


@FAST
@given(st.text(max_size=60) | st.from_regex(r"(https?|ftp|)(://)?([a-z]*:[a-z]*@)?(\[[0-9a-f:]*\]|[a-z0-9.]*)"
                                            r"(:\d{0,7})?(/[a-z/]*)?(\?x=1)?", fullmatch=True))
def test_endpoint(text: str) -> None:
    from doctor.probes.base import Target

    try:
        target = Target.parse(text)
    except InputError as err:
        one_line(err, "--endpoint")
        return
    assert 0 < target.port < 65536 and target.host
    assert "@" not in target.display().replace("***@", "")


@FAST
@given(st.text(max_size=20) | st.from_regex(r"-?\d{0,30}(\.\d{0,5})?\s*[kKmMgGtTiIbB]{0,3}", fullmatch=True))
def test_size_and_token_units(text: str) -> None:
    from doctor.model.units import parse_bytes, parse_tokens

    for parse in (parse_tokens, parse_bytes):
        try:
            value = parse(text)
        except InputError as err:
            assert "\n" not in str(err)
            continue
        assert isinstance(value, int) and value > 0


@FAST
@given(st.lists(st.text(max_size=30) | st.sampled_from(["vllm", "serve", "--tp", "-tp", "8", "--api-key", "=",
                                                        "--model", "--", "python3", "-m", "sglang.launch_server"]),
                max_size=12))
def test_command_as_argv_list(argv: list[str]) -> None:
    from doctor.engines.command import parse_command

    assume(argv)
    try:
        cmd = parse_command(argv)
    except InputError as err:
        one_line(err, "launch command", "engine")
        return
    strict_json(cmd.to_dict())


@FAST
@given(st.sampled_from(["apiVersion: v1\nkind: Pod\n", "args:\n", "containers:\n", "- "]),
       st.lists(st.text(max_size=20) | st.sampled_from(["&a [1]", "*a", "{", "- vllm", "- serve", "  - --tp",
                                                        "command: [vllm, serve, m]", "---", ": :"]), max_size=8))
def test_command_as_kubernetes_yaml(head: str, lines: list[str]) -> None:
    from doctor.engines.command import parse_command

    try:
        parse_command(head + "\n".join(lines))
    except InputError as err:
        one_line(err, "launch command", "engine")
