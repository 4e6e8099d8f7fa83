"""No secret planted in any input reaches any output: text, JSON, markdown, stderr, or the snapshot file.

Secrets are planted everywhere a user's secrets live: the argv and environment of a real server process
(tests/support/fake_launch.py, found by the process probe through its port), the /server_info it serves
(SGLang reports `api_key` and its launch command in clear), --command, lint's argument, --file and stdin,
a targets file (a URL password and a --api-key in its command), a snapshot's recorded inputs, and the
endpoint URL itself (http://user:password@host). The target's own API key comes from an environment variable
(--api-key-env): it goes to the target only — a redirect to another server must not carry it.
All of these values are made up for the test.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT
from support.fake_launch import launch_argv, launch_env
from support.httpserver import JSON, PROM, LocalServer, Response

SCENARIOS = ROOT / "fixtures" / "scenarios"

SECRETS = {
    "process argv --api-key": "sk-argv-7f3a9c1e5b2d4f60aa",
    "process env HF_TOKEN": "hf_EnvTokenAbCdEfGhIjKlMnOpQr",
    "process env VLLM_API_KEY": "vllm-env-key-0a1b2c3d4e5f",
    "process env SGLANG_ADMIN_PASSWORD": "admin-pw-from-env-5t6y7u",
    "endpoint URL password": "pa55w0rd-in-url-q1w2e3",
    "target API key (--api-key-env)": "target-key-from-env-r4t5y6",
    "server_info api_key": "sk-scenario-0123456789abcdef",
    "server_info admin_api_key": "scenario-admin-secret-value",
    "command --api-key": "cmd-api-key-u7i8o9p0",
    "command --hf-token": "hf_CommandLineTokenZxCvBnMaSd",
    "command bearer token": "bearer-in-cmd-9z8y7x6w5v4u",
    "command URL password": "model-url-pw-z1x2c3v4",
    "targets URL password": "targets-url-pass-f4g5h6",
    "targets command --api-key": "targets-cmd-secret-a1s2d3",
    "model path URL password": "model-path-pw-k9j8h7g6",
    "--config URL password": "config-url-pw-m5n6b7v8",
}
S = SECRETS
KEY_VAR = "LLMDOCTOR_TEST_TARGET_KEY"
COMMAND = (f"HF_TOKEN={S['command --hf-token']} AUTH_HEADER='Bearer {S['command bearer token']}' "
           f"HF_ENDPOINT=https://mirror:{S['command URL password']}@hf-mirror.example "
           f"vllm serve Qwen/Qwen3-8B --tensor-parallel-size 2 --api-key {S['command --api-key']} "
           f"--hf-token {S['command --hf-token']}")
FORMATS = (("--format", "json"), ("--format", "markdown"), ("--format", "text", "-v"))


def _leaks(text: str) -> list[str]:
    """The secrets found in ``text``, whole or by their distinctive last 12 characters."""
    return [name for name, value in SECRETS.items() if value in text or value[-12:] in text]


def _run(*args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "NO_COLOR": "1", KEY_VAR: S["target API key (--api-key-env)"], **(env or {})}
    return subprocess.run([sys.executable, "-m", "doctor", *args], input=stdin, capture_output=True, text=True,
                          cwd=ROOT, env=full, timeout=60)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A real process with secrets in its argv and environment, serving the scenario SGLang /server_info (which
    carries api_key, admin_api_key and a launch command with --api-key) and /metrics."""
    routes = tmp_path_factory.mktemp("routes") / "routes.json"
    routes.write_text(json.dumps({
        "/v1/models": [JSON, str(SCENARIOS / "sglang_v1_models.json")],
        "/server_info": [JSON, str(SCENARIOS / "sglang_server_info.json")],
        "/model_info": [JSON, str(SCENARIOS / "sglang_model_info.json")],
        "/metrics": [PROM, str(SCENARIOS / "sglang_dp2_tp4_metrics.prom")]}))
    port = _free_port()
    env = {**launch_env(dict(os.environ)), "FAKE_LAUNCH_ROUTES": str(routes),
           "HF_TOKEN": S["process env HF_TOKEN"], "VLLM_API_KEY": S["process env VLLM_API_KEY"],
           "SGLANG_ADMIN_PASSWORD": S["process env SGLANG_ADMIN_PASSWORD"]}
    child = subprocess.Popen(launch_argv("--model-path", "Qwen/Qwen3-8B", "--tp-size", "2",
                                         "--api-key", S["process argv --api-key"], "--port", str(port)),
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline().startswith(b"LISTENING")
        yield port
    finally:
        child.terminate()
        child.wait(timeout=10)


def _endpoint(port: int) -> str:
    return f"http://ops:{S['endpoint URL password']}@127.0.0.1:{port}"


def _assert_clean(runs: dict[str, subprocess.CompletedProcess[str]], files: list[Path] = ()) -> None:
    found = {label: _leaks(run.stdout + run.stderr) for label, run in runs.items()}
    found.update({str(path): _leaks(path.read_text()) for path in files})
    assert not {k: v for k, v in found.items() if v}, found
    crashed = {label: run.stderr for label, run in runs.items() if run.returncode == 4 or "Traceback" in run.stderr}
    assert not crashed, crashed


def _parallel(jobs: dict[str, tuple[tuple[str, ...], dict]]) -> dict[str, subprocess.CompletedProcess[str]]:
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {label: pool.submit(_run, *args, **kw) for label, (args, kw) in jobs.items()}
        return {label: future.result() for label, future in futures.items()}


def test_live_check_of_a_process_with_secrets_everywhere(server: int) -> None:
    jobs = {f"check {' '.join(fmt)}": (("check", "--endpoint", _endpoint(server), "--api-key-env", KEY_VAR,
                                        "--timeout", "2", *fmt), {}) for fmt in FORMATS}
    runs = _parallel(jobs)
    _assert_clean(runs)
    doc = json.loads(runs["check --format json"].stdout)
    assert doc["facts"]["process.found"]["value"] is True  # the argv and env were really read...
    assert doc["facts"]["process.env"]["value"]["HF_TOKEN"] == "***"
    assert doc["facts"]["launch.tp"]["value"] == 8  # ...and so was /server_info (the server's report wins)
    assert doc["target"] == f"http://***@127.0.0.1:{server}"


def test_snapshot_file_and_its_replay(server: int, tmp_path: Path) -> None:
    snap = tmp_path / "incident.json"
    written = _run("snapshot", "--endpoint", _endpoint(server), "--api-key-env", KEY_VAR, "--command", COMMAND,
                   "--gpu", "H200:8", "-o", str(snap))
    assert written.returncode == 0, written.stderr
    runs = _parallel({f"replay {' '.join(fmt)}": (("check", "--snapshot", str(snap), *fmt), {}) for fmt in FORMATS})
    _assert_clean({"snapshot": written, **runs}, [snap])
    assert json.loads(snap.read_text())["extra"]["inputs"]["command"].count("***") >= 4


def test_offline_command_and_recorded_server_info(tmp_path: Path) -> None:
    script = tmp_path / "launch.sh"
    script.write_text(COMMAND + "\n")
    info = SCENARIOS / "sglang_server_info.json"
    jobs: dict[str, tuple[tuple[str, ...], dict]] = {}
    for fmt in FORMATS:
        shown = " ".join(fmt)
        jobs[f"check --command {shown}"] = (("check", "--command", COMMAND, "--server-info", str(info), *fmt), {})
        jobs[f"lint ARG {shown}"] = (("lint", COMMAND, "--gpu", "H200:8", *fmt), {})
        jobs[f"lint --file {shown}"] = (("lint", "--file", str(script), *fmt), {})
        jobs[f"lint stdin {shown}"] = (("lint", *fmt), {"stdin": COMMAND})
    jobs["check --command-file"] = (("check", "--command-file", str(script), "--format", "json"), {})
    runs = _parallel(jobs)
    _assert_clean(runs)
    assert all(run.returncode in (0, 1) for run in runs.values()), {k: r.stderr for k, r in runs.items()}
    # the secret on the command line is itself a finding, with the flag named and the value masked
    assert "secret-in-command" in {f["id"] for f in json.loads(runs["lint ARG --format json"].stdout)["findings"]}


def test_targets_file_with_secrets(server: int, tmp_path: Path) -> None:
    targets = tmp_path / "fleet.yaml"
    targets.write_text(
        "targets:\n"
        f"  - endpoint: 'http://u:{S['targets URL password']}@127.0.0.1:{server}'\n"
        f"    api_key_env: {KEY_VAR}\n"
        f"    command: 'vllm serve Qwen/Qwen3-8B --api-key {S['targets command --api-key']}'\n"
        f"  - name: second\n    endpoint: 'http://u:{S['targets URL password']}@127.0.0.1:{_free_port()}'\n")
    runs = _parallel({f"fleet {' '.join(fmt)}": (("check", "--targets", str(targets), "--timeout", "1",
                                                  *fmt[:2]), {}) for fmt in FORMATS})
    _assert_clean(runs)
    doc = json.loads(runs["fleet --format json"].stdout)
    assert doc["summary"] == {"targets": 2, "reachable": 1, "findings": doc["summary"]["findings"]}


def test_errors_do_not_echo_secrets(tmp_path: Path) -> None:
    dead = f"http://ops:{S['endpoint URL password']}@127.0.0.1:{_free_port()}"
    jobs = {
        "unreachable": (("check", "--endpoint", dead, "--api-key-env", KEY_VAR, "--timeout", "0.5"), {}),
        "no port": (("check", "--endpoint", f"http://ops:{S['endpoint URL password']}@example.invalid/x?y=1"), {}),
        "the key for its name": (("check", "--endpoint", dead, "--api-key-env", S["command --api-key"]), {}),
        "a shaped key in a bad value": (("lint", COMMAND, "--users", S["command --hf-token"]), {}),
        "unknown gpu": (("lint", COMMAND, "--gpu", "H9000"), {}),  # lint carries on (issue 14): output still clean
        "snapshot unreachable": (("snapshot", "--endpoint", dead, "-o", str(tmp_path / "s.json"),
                                  "--timeout", "0.5"), {}),
    }
    runs = _parallel(jobs)
    assert {label: run.returncode for label, run in runs.items()} == {
        "unreachable": 3, "no port": 2, "the key for its name": 2, "a shaped key in a bad value": 2, "unknown gpu": 1,
        "snapshot unreachable": 3}
    _assert_clean(runs)


def test_the_api_key_goes_to_the_target_only() -> None:
    """A 301 to another (local) server: that server must not receive the key; the target must."""
    with LocalServer({"/v1/models": Response(file=SCENARIOS / "vllm_v1_models.json", content_type=JSON),
                      "/version": Response(file=SCENARIOS / "vllm_version.json", content_type=JSON),
                      "/metrics": Response(body="vllm:num_requests_running 1\n", content_type=PROM)}) as other:
        moved = {path: Response(301, headers={"Location": other.url(path)})
                 for path in ("/v1/models", "/version", "/metrics", "/server_info", "/get_server_info")}
        with LocalServer(moved) as target:
            start = time.monotonic()
            result = _run("check", "--endpoint", f"http://ops:{S['endpoint URL password']}@{target.endpoint}",
                          "--api-key-env", KEY_VAR, "--format", "json", "--timeout", "2")
            elapsed = time.monotonic() - start
    assert result.returncode == 3 and elapsed < 15  # nothing followed: the target could not be examined
    assert "redirected to another host" in result.stderr
    sent = [r.headers.get("authorization") for r in target.requests]
    assert sent and all(value == f"Bearer {S['target API key (--api-key-env)']}" for value in sent)
    leaked = [r for r in other.requests if "authorization" in r.headers]
    assert other.requests == [] and leaked == []
    _assert_clean({"redirect": result})


def test_urls_with_credentials_are_masked_in_every_line_of_every_format() -> None:
    """A URL's password — in the model path, --config or the endpoint — masked in the text header, the "could not
    check" line and its reasons, -v, JSON, Markdown and every one-line error (they printed it before)."""
    model = f"https://hub:{S['model path URL password']}@models.example/org/m"
    config = f"https://cfg:{S['--config URL password']}@hf.example/org/m"
    command = f"vllm serve {model} --tensor-parallel-size 2"
    dead = f"http://ops:{S['endpoint URL password']}@127.0.0.1:{_free_port()}"
    jobs: dict[str, tuple[tuple[str, ...], dict]] = {}
    for fmt in (*FORMATS, ("--format", "text")):
        shown = " ".join(fmt)
        jobs[f"check model path {shown}"] = (("check", "--command", command, "--gpu", "H200:8", *fmt), {})
        jobs[f"lint model path {shown}"] = (("lint", command, *fmt), {})
        jobs[f"check --config {shown}"] = (("check", "--command", command, "--config", config, *fmt), {})
        jobs[f"check --endpoint {shown}"] = (("check", "--endpoint", dead, "--timeout", "0.5", *fmt), {})
    jobs["lint --config"] = (("lint", "--config", config, command), {})
    jobs["plan --config"] = (("plan", config, "--gpu", "H200:8"), {})
    jobs["inspect --config"] = (("inspect", config), {})
    runs = _parallel(jobs)
    _assert_clean(runs)
    header = " ".join(runs["check model path --format text"].stdout.split("verdict")[0].split())
    assert "https://***@models.example/org/m" in header  # masked, not dropped: the reader still sees which
    assert runs["check --config --format text"].returncode == 2 and "https://***@hf.example" in \
        runs["check --config --format text"].stderr
    assert runs["check --endpoint --format text"].returncode == 3


def test_every_token_shape_is_masked_and_passes_the_substring_precheck() -> None:
    """redact_shapes tests a literal prefix before running the token regex: a shape whose prefix the table
    lacked would be skipped silently. One sample per alternative of every shape."""
    from doctor.redact import _TOKEN_PREFIXES, MASK, redact_shapes

    samples = ["hf_" + "a" * 20, "sk-" + "b" * 20, *(f"gh{c}_" + "c" * 24 for c in "pousr"),
               *(f"xox{c}-" + "e" * 12 for c in "abpr"), "AKIA" + "F" * 16]
    for token in samples:
        assert any(token.startswith(p) for p in _TOKEN_PREFIXES), token
        out = redact_shapes(f"value {token} here")
        assert token not in out and MASK in out, token


def test_every_secret_name_passes_the_name_word_precheck() -> None:
    """redact_text skips its name=value and flag-pair scans when the text holds none of _NAME_WORDS: a secret
    name without one would go unmasked. Every alternative of _SECRET_NAME, in every spelling it accepts, and
    each masked through redact_text in both forms."""
    import itertools
    import re

    from doctor.redact import _ANY_NAME_WORD, _SECRET_NAME, MASK, is_secret_name, redact_text

    group = re.search(r"\(\^\|_\)\((.*)\)\(\$\|_\)", _SECRET_NAME.pattern).group(1)
    names = []
    for alternative in group.split("|"):
        optional = alternative.count("?")
        pieces = re.split(r".\?", alternative)  # 'api_?key' -> api, key with the '_' optional
        letters = re.findall(r"(.)\?", alternative)
        for keep in itertools.product((True, False), repeat=optional):
            name = pieces[0] + "".join(c * k + p for c, k, p in zip(letters, keep, pieces[1:], strict=True))
            names.append(name)
    assert len(names) > 20
    for name in names:
        assert is_secret_name(name), name
        assert _ANY_NAME_WORD.search(name), name
        for spelling in (name, name.upper(), name.replace("_", "-")):
            assert redact_text(f"{spelling}=s3cr3tvalue") == f"{spelling}={MASK}", spelling
            assert redact_text(f"serve --{spelling} s3cr3tvalue") == f"serve --{spelling} {MASK}", spelling
