"""What the first screen says must be believable (issue 23, Believable output and Small): real CLI runs as
subprocesses, over the bundled example configs and real loopback servers."""

from __future__ import annotations

import json
import re

from conftest import SHARED_FIXTURES, run_cli


def _lint(*args: str, stdin: str | None = None) -> tuple[int, dict]:
    done = run_cli("lint", "--offline", *args, "--format", "json", input=stdin)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_a_secret_on_the_command_line_leads_lint():
    """Qwen3 without a reasoning parser (a warning) and an --api-key on the command line: the secret comes first."""
    _rc, doc = _lint("--config", "example:seed-gqa-27b",
                     "vllm serve Qwen/Qwen3-32B --api-key sk-abcdefghijklmnopqrstu --max-num-seq 8")
    ids = [f["id"] for f in doc["findings"]]
    assert "reasoning-parser-missing" in ids and "abbreviated-flag" in ids
    first = doc["findings"][0]
    assert first["id"] == "secret-in-command" and first["severity"] in ("warning", "critical")
    assert "sk-abcdefghijklmnopqrstu" not in json.dumps(doc)


def test_a_kubernetes_args_block_on_its_own_is_a_launch():
    """README and --help promise a Kubernetes args: list; the `args:` block as pasted reads as the bare list does."""
    block = "args:\n  - --model\n  - /models/Qwen3-8B\n  - --max-num-seqs\n  - \"8\"\n"
    bare = "- --model\n- /models/Qwen3-8B\n- --max-num-seqs\n- \"8\"\n"
    _rc, from_block = _lint("--file", "-", stdin=block)
    _rc, from_bare = _lint("--file", "-", stdin=bare)
    assert from_block["engine"] == from_bare["engine"] == "vllm"
    assert from_block["flags"] == from_bare["flags"]
    assert from_block["model"] == "/models/Qwen3-8B"


def _check(*args: str) -> dict:
    done = run_cli("check", *args, "--format", "json", env={"HF_HUB_OFFLINE": "1"})
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_a_default_sequence_cap_is_not_what_binds_at_two_running():
    """The real vllm_2.prom scrape: 12 queued, 2 running, KV 0.46%. With the cap unknown (or the engine's default:
    128 or more) the cap cannot be what binds; only a cap set to 2 by hand makes it certain."""
    scrape = str(SHARED_FIXTURES / "metrics" / "vllm_2.prom")
    for extra in ((), ("--command", "vllm serve /models/m")):
        found = {f["id"]: f for f in _check("--metrics", scrape, *extra)["findings"]}
        assert found["max-num-seqs-limit"]["confidence"] == "low", extra
        assert "does not bind at 2 running" in found["max-num-seqs-limit"]["fix"]
    capped = {f["id"]: f for f in _check("--metrics", scrape, "--command", "vllm serve /models/m --max-num-seqs 2")
              ["findings"]}
    assert capped["max-num-seqs-limit"]["confidence"] == "high"


def test_a_refused_probe_is_named_with_its_flag_on_the_first_screen():
    """vLLM with --api-key: /metrics and /version answer, /v1/models is 401. The first screen says which request
    was refused and that --api-key-env fixes it, not a bare "server ok"."""
    from support.httpserver import LocalServer, Response
    from support.serve import vllm_routes

    routes = vllm_routes(SHARED_FIXTURES / "metrics" / "vllm_1.prom")
    routes["/v1/models"] = Response(401, b'{"error":"Unauthorized"}', content_type="application/json")
    with LocalServer(routes) as server:
        done = run_cli("check", "--endpoint", f"127.0.0.1:{server.port}", env={"HF_HUB_OFFLINE": "1"})
    assert done.returncode in (0, 1), done.stderr
    screen = " ".join(done.stdout.split("\n\n")[0].split())
    assert "server ok" in screen and "refused /v1/models (HTTP 401): pass --api-key-env NAME" in screen
    # What listens here is pytest, not an engine: its options are not read as vLLM flags.
    assert "unknown-flag" not in done.stdout and "argument-error" not in done.stdout, done.stdout
    # The server named its engine, not its flags: the next input asked for is the launch command, never
    # "the inputs given do not say".
    hint = " ".join(done.stdout.split("most useful next input:", 1)[1].split())
    assert hint.startswith("pass --command '<the server's launch command>'"), hint


def test_gpus_names_its_own_argument_in_errors():
    done = run_cli("gpus", "FooBar")
    assert done.returncode == 2 and done.stderr.startswith("llmdoctor: gpus NAME: unknown GPU 'FooBar'")


def test_gpu_mem_given_is_not_asked_for_again():
    """--gpu H100 is ambiguous only in memory; with --gpu-mem the note must not ask for --gpu-mem."""
    asked = run_cli("plan", "example:seed-gqa-27b", "--gpu", "H100:1")
    given = run_cli("plan", "example:seed-gqa-27b", "--gpu", "H100:1", "--gpu-mem", "80GB")
    assert "pass --gpu-mem" in " ".join(asked.stdout.split())
    text = " ".join(given.stdout.split())
    assert "pass --gpu-mem" not in text and "taken as H100 (sm_90) with the memory of --gpu-mem 80GB" in text


def test_every_help_puts_options_before_examples():
    from doctor.cli.group import cli

    for name in cli.list_commands(None):
        text = run_cli(name, "--help").stdout
        if "Examples:" in text:
            assert text.index("Options:") < text.index("Examples:"), name


def test_a_plan_short_of_the_asked_users_says_so_on_the_first_screen():
    """gpt-oss-120b (real config) on one H100 for 100 users holds about 15 per engine (SGLang's SWA pool keeps its
    sliding layers at 0.8 × the full layers' tokens): a finding, and the replicas it would take under the verdict —
    not "RUNS" and "Findings: none" with the count only in the JSON. The replica count is the users asked over
    those one replica serves, rounded up."""
    config = str(SHARED_FIXTURES / "configs" / "openai__gpt-oss-120b.json")
    done = run_cli("plan", config, "--gpu", "H100:1", "--users", "100")
    assert done.returncode == 1, done.stderr
    head = " ".join("\n".join(done.stdout.splitlines()[:14]).split())
    assert "RUNS DEGRADED" in head and "users-exceed-kv-capacity" in head
    shortfalls = re.findall(r"serves (\d+) of 100 concurrent requests of 32k: (\d+) replicas \((\d+) GPUs\)", head)
    assert len(shortfalls) == 2, head  # one line per engine, both on the first screen
    for served, replicas, gpus in shortfalls:
        assert 10 <= int(served) < 100 and int(replicas) == -(-100 // int(served)) == int(gpus)
    enough = run_cli("plan", config, "--gpu", "H100:1", "--users", "10")
    assert "users-exceed-kv-capacity" not in enough.stdout and "\nusers " not in enough.stdout


def test_the_plan_names_one_weights_figure_per_layout():
    """DeepSeek-class MLA + MoE on 8× H200 with DP attention: the "why" line's weights are the TP layout's and say
    so ("at TP8"); "fit" holds the chosen layout's (78.5 vs 94.7 GiB/GPU, bare, read as a contradiction)."""
    done = run_cli("plan", "example:seed-mla-moe", "--gpu", "H200:8", "--context", "32k", "--users", "100")
    text = " ".join(done.stdout.split())
    assert "the weights fit from TP8 (78.4 GiB per GPU at TP8 of 129 GiB usable)" in text
    assert "weights 93.9 GiB/GPU of 129 GiB usable" in text   # the chosen DP-attention layout's, under fit


def _plan(config: str, gpu: str, *args: str) -> dict:
    done = run_cli("plan", str(SHARED_FIXTURES / "configs" / config), "--gpu", gpu, *args, "--format", "json")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def test_every_alternative_passes_the_same_gates():
    """What "What would run" proposes — more of these GPUs, smaller weights on them — runs when planned: DSA on
    sm_89 (DeepSeek-V3.2 on 2× RTX 4090) and an FP8 checkpoint on sm_70 (DeepSeek-V3 on 2× V100) run on no
    number of those GPUs, so no "more GPUs" is offered; where memory is the only gate (one MI300X, two A100s, a
    BF16 GLM-5 on 8× H200) the alternative is offered and planning it runs."""
    import re

    gated = {("deepseek-ai__DeepSeek-V3.2.json", "RTX 4090:2"), ("deepseek-ai__DeepSeek-V3.json", "V100 16GB:2")}
    offered = 0
    for config, gpu in sorted(gated) + [("deepseek-ai__DeepSeek-V3.json", "MI300X:1"),
                                        ("deepseek-ai__DeepSeek-V3.json", "A100 80GB:2"),
                                        ("zai-org__GLM-5.json", "H200:8")]:
        instead = _plan(config, gpu)["verdict"]["instead"]
        assert instead and instead[-1].startswith("what fits"), instead
        for line in instead[:-1]:
            more = re.match(r"more GPUs: (\d+)× (.+?) as ", line)
            smaller = re.match(r"smaller weights: (FP8|NVFP4) ", line)
            assert more or smaller, line
            assert (config, gpu) not in gated, line
            args = (f"{more.group(2)}:{more.group(1)}",) if more else (gpu, "--weights-dtype",
                                                                      smaller.group(1).lower())
            status = _plan(config, *args)["verdict"]["status"]
            assert status != "does-not-run", (config, gpu, line, status)
            offered += 1
    assert offered >= 3


def test_the_plan_text_does_not_contradict_itself_on_one_gpu():
    """MoE on one GPU (per replica) is planned without expert parallelism: no line may call EP essential or claim
    it; and one of anything is singular ("1 GPUs", "× 1 pools", "one per 1 GPUs" were printed)."""
    import re

    cases = [("openai__gpt-oss-120b.json", "H100:1"), ("Qwen__Qwen3-30B-A3B.json", "H100:1"),
             ("Qwen__Qwen3-30B-A3B.json", "H100:4", "--latency", "relaxed"),
             ("deepseek-ai__DeepSeek-V3.json", "MI300X:1"), ("Qwen__Qwen3-8B.json", "H100:1")]
    for config, gpu, *args in cases:
        done = run_cli("plan", str(SHARED_FIXTURES / "configs" / config), "--gpu", gpu, *args, "-v")
        assert done.returncode in (0, 1), done.stderr
        text = " ".join(done.stdout.split())
        assert not re.search(r"\b1 (GPUs|pools|replicas|copies)\b|× 1 pools|one per 1 ", text), (config, gpu, text)
        if "no expert parallelism" in text:
            assert "EP is essential" not in text and "with expert parallelism" not in text, (config, gpu, text)
