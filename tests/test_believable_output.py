"""What the first screen says must be believable (issue 23, Believable output and Small): real CLI runs as
subprocesses, over the bundled example configs and real loopback servers."""

from __future__ import annotations

import json

from conftest import run_cli


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
