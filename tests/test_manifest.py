"""`--manifest FILE|-` on lint, check and plan, and `manifest:` in a targets file.

Every manifest below is a SCENARIO written for these tests (no real cluster's manifest is among the fixtures), in
the shapes the Kubernetes API, `kubectl get -o yaml|json`, `helm template` and the LeaderWorkerSet CRD
(leaderworkerset.x-k8s.io/v1; the leader command is shaped after vLLM's docs/deployment/frameworks/lws.md)
write. GPU product labels are the values NVIDIA's GPU Feature Discovery sets on nodes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from conftest import SHARED_FIXTURES, requires_shared, run_cli
from support.httpserver import LocalServer
from support.serve import vllm_routes

from doctor.errors import InputError
from doctor.sources.manifest import parse_manifest

SECRET = "hf_scenario_literal_0123456789abcdef"

CONTAINER = {
    "name": "vllm",
    "image": "vllm/vllm-openai:v0.11.0",
    "command": ["vllm", "serve"],
    "args": ["Qwen/Qwen3-8B", "--tensor-parallel-size", "2", "--api-key", "$(VLLM_API_KEY)"],
    "env": [{"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {"name": "vllm-secrets", "key": "api-key"}}},
            {"name": "HF_TOKEN", "value": SECRET},
            {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
    "resources": {"limits": {"nvidia.com/gpu": "2", "memory": "64Gi"}},
}
SIDECAR = {"name": "envoy", "image": "envoyproxy/envoy:v1.30", "args": ["--config-path", "/etc/envoy.yaml"]}


def pod_spec(product: str | list[str] | None = "NVIDIA-H100-80GB-HBM3", affinity: bool = False) -> dict:
    spec: dict = {"containers": [SIDECAR, CONTAINER]}
    if product is not None and not affinity:
        spec["nodeSelector"] = {"nvidia.com/gpu.product": product}
    elif product is not None:
        values = product if isinstance(product, list) else [product]
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": values}]}]}}}
    return spec


def deployment(**kw: object) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "qwen", "namespace": "llm"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "qwen"}},
                     "template": {"metadata": {"labels": {"app": "qwen"}}, "spec": pod_spec(**kw)}}}


LWS = {
    "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": {"name": "vllm"},
    "spec": {"replicas": 1, "leaderWorkerTemplate": {
        "size": 2,
        "leaderTemplate": {"spec": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H200"}, "containers": [{
            "name": "vllm-leader", "image": "vllm/vllm-openai:v0.10.2",
            "command": ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader "
                        "--ray_cluster_size=$(LWS_GROUP_SIZE); python3 -m vllm.entrypoints.openai.api_server "
                        "--port 8080 --model meta-llama/Meta-Llama-3.1-405B-Instruct --tensor-parallel-size 8 "
                        "--pipeline_parallel_size 2"],
            "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}},
        "workerTemplate": {"spec": {"containers": [{
            "name": "vllm-worker", "image": "vllm/vllm-openai:v0.10.2",
            "command": ["sh", "-c", "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh worker "
                        "--ray_address=$(LWS_LEADER_ADDRESS)"],
            "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}}}},
}


def _write(tmp_path: Path, docs: list[dict] | dict, name: str = "m.yaml", fmt: str = "yaml") -> Path:
    path = tmp_path / name
    if fmt == "json":
        path.write_text(json.dumps(docs, indent=2))
    else:
        path.write_text(yaml.safe_dump_all(docs if isinstance(docs, list) else [docs], sort_keys=False))
    return path


def test_deployment_engine_container_gpus_and_secret_names() -> None:
    launch = parse_manifest(yaml.safe_dump(deployment()), "--manifest m.yaml")
    assert launch.where == "--manifest m.yaml: Deployment/qwen › vllm"  # the envoy sidecar is passed over
    assert launch.engine == "vllm" and launch.engine_version == "0.11.0"
    assert launch.gpu == "H100:2" and launch.gpu_product == "NVIDIA-H100-80GB-HBM3"
    assert launch.secret_env == ["VLLM_API_KEY"]
    assert "<from secret vllm-secrets key api-key>" in launch.command and "<from fieldRef>" in launch.command


@pytest.mark.parametrize("doc, gpu", [
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": pod_spec("NVIDIA-H200")}, "H200:2"),
    ({**deployment(), "kind": "StatefulSet"}, "H100:2"),
    (deployment(product="NVIDIA-A100-SXM4-80GB", affinity=True), "A100 80GB:2"),
    (LWS, "H200:16"),
])
def test_workload_kinds(doc: dict, gpu: str) -> None:
    launch = parse_manifest(yaml.safe_dump(doc), "m")
    assert launch.gpu == gpu and launch.engine == "vllm"


def test_leaderworkerset_reads_the_leader_in_a_shell_script(tmp_path: Path) -> None:
    result = run_cli("lint", "--manifest", str(_write(tmp_path, LWS)), "--format", "json")
    doc = json.loads(result.stdout)
    assert doc["model"] == "meta-llama/Meta-Llama-3.1-405B-Instruct" and doc["engine_version"] == "0.10.2"
    assert "LeaderWorkerSet group of 2 pods × 8 GPUs" in result.stderr


def test_kubectl_list_json_and_helm_multidoc(tmp_path: Path) -> None:
    listing = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "qwen"}, "spec": {"ports": [{"port": 8000}]}},
        deployment()], "metadata": {"resourceVersion": ""}}
    assert parse_manifest(json.dumps(listing), "m").gpu == "H100:2"
    helm = ("---\n# Source: llm/templates/service.yaml\n" + yaml.safe_dump({"kind": "Service", "apiVersion": "v1"})
            + "---\n# Source: llm/templates/configmap.yaml\n" + yaml.safe_dump({"kind": "ConfigMap", "data": {}})
            + "---\n# Source: llm/templates/deployment.yaml\n" + yaml.safe_dump(deployment()))
    launch = parse_manifest(helm, "m")
    assert launch.where.endswith("Deployment/qwen › vllm")


def test_what_cannot_be_told_is_a_note_not_a_guess() -> None:
    both = parse_manifest(yaml.safe_dump(deployment(product=["NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"],
                                                    affinity=True)), "m")
    assert both.gpu is None and "allows NVIDIA-H100-80GB-HBM3, NVIDIA-H200" in both.notes[0]
    none = parse_manifest(yaml.safe_dump(deployment(product=None)), "m")
    assert none.gpu is None and none.gpu_count == 2 and "pass --gpu NAME:2" in none.notes[0]
    odd = parse_manifest(yaml.safe_dump(deployment(product="NVIDIA-Imaginary-9000")), "m")
    assert odd.gpu is None and "not in the GPU catalog" in odd.notes[0]
    two = parse_manifest(yaml.safe_dump_all([deployment(), {**deployment(), "metadata": {"name": "other"}}]), "m")
    assert "more engine deployments" in two.notes[0] and "Deployment/other" in two.notes[0]


@pytest.mark.parametrize("text, says", [
    (yaml.safe_dump({"kind": "Service", "apiVersion": "v1"}), "no container that runs vLLM or SGLang (found: Service"),
    ("kind: Deployment\nspec: [unclosed", "--manifest m"),
    (yaml.safe_dump({**deployment(), "spec": {"template": {"spec": {"containers": [SIDECAR]}}}}), "found: Deployment"),
    # libyaml recurses in C: this used to kill the process with SIGSEGV (tests/test_corpus_cli.py deep.json)
    ("[" * 100_000, "nested too deeply"),
    ("- " * 100_000 + "x", "nested too deeply"),
], ids=["service-only", "invalid-yaml", "sidecar-only", "deep-flow", "deep-block"])
def test_bad_manifests(text: str, says: str) -> None:
    with pytest.raises(InputError, match=None) as err:
        parse_manifest(text, "--manifest m")
    assert says in str(err.value)


def test_lint_check_plan_take_a_manifest(tmp_path: Path) -> None:
    path = _write(tmp_path, deployment())
    lint = run_cli("lint", "--manifest", str(path), "--format", "json")
    doc = json.loads(lint.stdout)
    assert doc["engine"] == "vllm" and doc["engine_version"] == "0.11.0"
    ids = {f["id"] for f in doc["findings"]}
    assert "secret-in-command" in ids  # the literal HF_TOKEN
    for output in (lint.stdout, lint.stderr):
        assert SECRET not in output
    assert "env from secrets (names only, values not read): VLLM_API_KEY" in lint.stderr
    # stdin, as kubectl pipes it
    piped = run_cli("lint", "--manifest", "-", "--format", "json", input=path.read_text())
    assert json.loads(piped.stdout)["model"] == "Qwen/Qwen3-8B"
    check = run_cli("check", "--manifest", str(path), "--format", "json")
    assert check.returncode in (0, 1) and "secret-in-command" in {f["id"] for f in json.loads(check.stdout)["findings"]}
    plan = run_cli("plan", "example:seed-gqa-27b", "--manifest", str(path), "--format", "json")
    assert plan.returncode in (0, 1), plan.stderr
    planned = json.loads(plan.stdout)
    assert (planned["gpu"]["name"], planned["gpu"]["count"]) == ("H100", 2)
    # the engine and version of the deployment's image, not both engines' newest
    assert planned["commands"]["sglang"] is None and planned["commands"]["vllm"]["version"] == "0.11.0"
    # given flags win; a command and a manifest together is ambiguous
    assert "H200" in run_cli("lint", "--manifest", str(path), "--gpu", "H200:2").stdout
    both = run_cli("lint", "--manifest", str(path), "vllm serve x")
    assert both.returncode == 2 and "not both" in both.stderr
    missing = run_cli("plan", "example:seed-gqa-27b")
    assert missing.returncode == 2 and "--gpu" in missing.stderr


@requires_shared
def test_targets_file_manifest_key(tmp_path: Path) -> None:
    path = _write(tmp_path, deployment())
    with LocalServer(vllm_routes(SHARED_FIXTURES / "metrics" / "vllm_1.prom")) as engine:
        targets = tmp_path / "fleet.yaml"
        targets.write_text(f"- {{endpoint: '{engine.endpoint}', manifest: '{path}'}}\n"
                           f"- {{endpoint: '{engine.endpoint}', name: broken, manifest: '{tmp_path / 'none.yaml'}'}}\n")
        result = run_cli("check", "--targets", str(targets), "--format", "json")
    doc = json.loads(result.stdout)
    first, broken = doc["targets"]
    assert {"kv-cache-exhausted", "secret-in-command"} <= {f["id"] for f in first["findings"]}
    assert broken["error"] and "none.yaml" in broken["error"]
    assert SECRET not in result.stdout


@pytest.mark.parametrize("label, gpu", [
    # GPU Feature Discovery writes the product label as nvidia-smi's name with spaces turned into '-'
    ("NVIDIA-H200", "H200:2"), ("NVIDIA-H100-80GB-HBM3", "H100:2"), ("NVIDIA-A100-SXM4-80GB", "A100 80GB:2"),
    ("NVIDIA-L4", "L4:2"), ("NVIDIA-H100-NVL", "H100 NVL:2"), ("Tesla-T4", "T4:2"), ("NVIDIA-L40S", "L40S:2"),
])
def test_gfd_product_labels_map_through_the_gpu_catalog(label: str, gpu: str) -> None:
    assert parse_manifest(yaml.safe_dump(deployment(product=label)), "m").gpu == gpu
