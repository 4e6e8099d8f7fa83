"""What platform teams run: the pre-commit hook, the CI action's script, the container image and the
Kubernetes manifests — each checked by the tool its ecosystem uses (pre-commit itself, check-jsonschema's
vendored GitHub Actions schema, kubernetes-validate, amtool, Docker's own Dockerfile parser), and the hook
and the script run for real on a throwaway git repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from conftest import ROOT, SHARED_FIXTURES, unavailable
from test_lint_ci import GOOD

#: a commit hook and a CI job have no model config (and never ask the Hub): a finding the command alone decides
BAD = GOOD.replace("--tensor-parallel-size", "--tp-size")
FINDING = "deploy/bad.yaml:11: CRITICAL flag-from-other-engine"

DEPLOY = ROOT / "deploy" / "kubernetes"
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = shutil.which(name, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if path is None:
        unavailable(f"{name} is not installed (pip install '.[test]'; amtool: Debian's prometheus-alertmanager)")
    return path


def _git_repo(path: Path) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=path, check=True, env=env, capture_output=True)


def test_kubernetes_manifests_are_valid() -> None:
    proc = subprocess.run([_tool("kubernetes-validate"), "--strict", "--kubernetes-version", "1.30.0",
                           *map(str, sorted(DEPLOY.glob("*.yaml")))], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("passed") >= 7


def _containers() -> dict[str, dict]:
    out = {}
    for path in DEPLOY.glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            spec = doc.get("spec", {})
            pod = spec.get("template", spec.get("jobTemplate", {}).get("spec", {}).get("template", {})).get("spec", {})
            for container in pod.get("containers", ()):
                out[container["name"]] = container | {"_pod": pod}
    return out


def test_manifest_args_are_llmdoctors_own_options() -> None:
    """Each container's args parse with the real CLI (a renamed option would break the deployment)."""
    import click

    from doctor.cli.group import cli

    containers = _containers()
    assert {"llmdoctor", "report"} <= set(containers)
    for container in containers.values():
        command, *args = container["args"]
        sub = cli.get_command(click.Context(cli), command)
        assert sub is not None, command
        sub.make_context(command, list(args))   # raises on an unknown option
        assert container["_pod"]["securityContext"]["runAsNonRoot"] is True


def test_alertmanager_config_is_accepted_by_amtool(tmp_path: Path) -> None:
    doc = yaml.safe_load((DEPLOY / "alertmanager-config.yaml").read_text())
    (tmp_path / "alertmanager.yml").write_text(doc["data"]["alertmanager.yml"])
    proc = subprocess.run([_tool("amtool"), "check-config", str(tmp_path / "alertmanager.yml")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rules = subprocess.run([sys.executable, "-m", "doctor", "rules", "--format", "json"], capture_output=True,
                           text=True, cwd=ROOT, timeout=60)
    if rules.returncode == 0 and rules.stdout.strip().startswith("{"):
        labels = [r["labels"] for g in json.loads(rules.stdout).get("groups", []) for r in g["rules"]]
        assert labels and all("symptom" in lab for lab in labels)   # what the route matches on


def test_dockerfile_is_slim_and_unprivileged() -> None:
    import dockerfile

    commands = dockerfile.parse_file(str(ROOT / "Dockerfile"))
    by = {}
    for c in commands:
        by.setdefault(c.cmd.upper(), []).append(c.value)
    base = by["FROM"][0][0]
    assert base.startswith("python:") and "cuda" not in base and "nvidia" not in base
    user = by["USER"][-1][0].split(":")[0]
    assert user.isdigit() and int(user) != 0
    assert by["ENTRYPOINT"][-1] == ("llmdoctor",)
    copied = {v[0] for v in by["COPY"]}
    assert {"doctor", "playbooks"} <= copied
    uids = {c["_pod"]["securityContext"]["runAsUser"] for c in _containers().values()}
    assert uids == {int(user)}


def test_action_and_hook_definitions_are_valid() -> None:
    proc = subprocess.run([_tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions",
                           str(ROOT / "action.yml")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = subprocess.run([_tool("pre-commit"), "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _sample(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / "deploy").mkdir(parents=True)
    (repo / "deploy" / "good.yaml").write_text(GOOD)
    (repo / "README.md").write_text("a team's serving manifests\n")
    _git_repo(repo)
    return repo


def test_lint_changed_script_on_a_pull_request(tmp_path: Path) -> None:
    """The action's script: only the files the change touches, SARIF written, exit 1 on the bad one."""
    repo = _sample(tmp_path)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    (repo / "deploy" / "bad.yaml").write_text(BAD)
    (repo / "notes.txt").write_text("not linted\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "bad"],
                   cwd=repo, check=True)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
           "LLMDOCTOR_SARIF": "out.sarif"}
    proc = subprocess.run([str(ROOT / "tools" / "ci" / "lint_changed.sh"), base], cwd=repo, capture_output=True,
                          text=True, env=env, timeout=180)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    results = json.loads((repo / "out.sarif").read_text())["runs"][0]["results"]
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"deploy/bad.yaml"}
    assert FINDING in proc.stdout


def test_pre_commit_hook_for_real(tmp_path: Path) -> None:
    """`pre-commit try-repo` installs this repository's hook into its own environment and runs it."""
    if not (ROOT / ".git").exists():
        unavailable("pre-commit try-repo needs the project as a git checkout")
    repo = _sample(tmp_path)
    (repo / "deploy" / "bad.yaml").write_text(BAD)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run([_tool("pre-commit"), "try-repo", str(ROOT), "llmdoctor-lint", "--files",
                           "deploy/bad.yaml", "deploy/good.yaml", "README.md"], cwd=repo, capture_output=True,
                          text=True, env=env, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert FINDING in out
    assert "deploy/good.yaml:" not in out.replace("deploy/good.yaml: note", "")
    proc = subprocess.run([_tool("pre-commit"), "try-repo", str(ROOT), "llmdoctor-lint", "--files",
                           "deploy/good.yaml"], cwd=repo, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_configs_resolve_offline_in_the_hook() -> None:
    """The hook passes --offline: a model id in a manifest is never looked up on the Hub from a commit hook."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert "--offline" in hooks[0]["entry"].split()
    assert SHARED_FIXTURES.is_dir()
