"""Kubernetes manifests as a source: the engine container's launch, its GPUs and their product.

``--manifest FILE|-`` (lint, check, plan) and ``manifest:`` in a targets file read what a platform team
actually has: a Pod, Deployment, StatefulSet, DaemonSet, Job/CronJob, LeaderWorkerSet, a ``kubectl get -o
yaml|json`` List, or ``helm template`` output (many ``---`` documents). From the pod template of each
workload:

* the engine container: the container whose ``command`` + ``args`` read as a vLLM/SGLang launch (sidecars and
  proxies are passed over); its ``image`` (the tag gives the engine version) and ``env``. An env var from
  ``valueFrom`` (``secretKeyRef``, ``configMapKeyRef``) is *named*, never resolved: the value stays in the
  cluster, the command text carries ``<from secret NAME key KEY>``;
* ``resources.limits["nvidia.com/gpu"]`` (else requests) as GPUs per pod; a LeaderWorkerSet group of ``size``
  pods has ``size`` × that;
* the GPU product from ``nodeSelector`` or required node affinity on ``nvidia.com/gpu.product`` — the label
  NVIDIA's GPU Feature Discovery writes (``NVIDIA-H200``, ``NVIDIA-H100-80GB-HBM3``) — mapped through the GPU
  catalog's name parser (doctor/hardware/catalog.py), so every spelling the catalog knows works here too.

What cannot be told (no product label, two products allowed, two engine containers) is a note, never a guess.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from doctor.errors import InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
#: kind → path to the pod spec inside the object
_POD_SPEC_PATHS: dict[str, tuple[tuple[str, ...], ...]] = {
    "Pod": (("spec",),),
    "Deployment": (("spec", "template", "spec"),),
    "StatefulSet": (("spec", "template", "spec"),),
    "DaemonSet": (("spec", "template", "spec"),),
    "ReplicaSet": (("spec", "template", "spec"),),
    "Job": (("spec", "template", "spec"),),
    "CronJob": (("spec", "jobTemplate", "spec", "template", "spec"),),
    # the leader runs the API server in the usual multi-node recipes; the worker template when there is none
    "LeaderWorkerSet": (("spec", "leaderWorkerTemplate", "leaderTemplate", "spec"),
                        ("spec", "leaderWorkerTemplate", "workerTemplate", "spec")),
}


@dataclass
class ManifestLaunch:
    """What a manifest says about one engine deployment."""

    where: str                      # FILE: Kind/name › container
    command: str                    # the container as a Kubernetes YAML snippet the command parser reads
    engine: str | None = None
    engine_version: str | None = None  # from the image tag
    gpu: str | None = None          # NAME:COUNT for --gpu, when the product is known
    gpu_count: int | None = None
    gpu_product: str | None = None  # the label value as written
    secret_env: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_manifest(path: str, flag: str = "--manifest") -> ManifestLaunch:
    """The engine deployment in the manifest at ``path`` ('-': standard input); InputError naming the file."""
    return read_manifest_text(path, flag)[0]


def read_manifest_text(path: str, flag: str = "--manifest") -> tuple[ManifestLaunch, str]:
    """:func:`read_manifest`, and the manifest's text as read (what `lint --fix` patches)."""
    from doctor.yamlsafe import MAX_YAML_BYTES

    if path == "-":
        from doctor.inio import decode_text, read_stdin_capped

        text, label = decode_text(read_stdin_capped(limit=MAX_YAML_BYTES), "standard input"), f"{flag} -"
    else:
        from doctor.sources.offline import read_text

        text, label = read_text(path, flag, limit=MAX_YAML_BYTES), f"{flag} {path}"
    return parse_manifest(text, label), text


def parse_manifest(text: str, label: str) -> ManifestLaunch:
    from doctor.yamlsafe import load_yaml_documents

    docs = [d for d in load_yaml_documents(text, label) if d is not None]
    found: list[ManifestLaunch] = []
    kinds: list[str] = []
    for obj in _objects(docs):
        kind = obj.get("kind")
        kinds.append(str(kind))
        for spec_path in _POD_SPEC_PATHS.get(str(kind), ()):
            pod = _dig(obj, spec_path)
            if isinstance(pod, dict):
                launch = _from_pod(obj, pod, label)
                if launch is not None:
                    found.append(launch)
                    break
    if not found:
        seen = ", ".join(sorted(set(kinds))) or "no Kubernetes objects"
        raise InputError(f"{label}: no container that runs vLLM or SGLang (found: {seen}; read: "
                         f"{', '.join(_POD_SPEC_PATHS)}, List)")
    chosen = found[0]
    if len(found) > 1:
        chosen.notes.append("the manifest has more engine deployments; read the first: "
                            + ", ".join(f.where for f in found))
    return chosen


def _objects(docs: list[Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            out.extend(_objects(doc["items"]))
        else:
            out.append(doc)
    return out


def _dig(node: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _from_pod(obj: dict[str, Any], pod: dict[str, Any], label: str) -> ManifestLaunch | None:
    import yaml

    from doctor.engines.shapes import find_launch

    containers = [c for c in pod.get("containers") or [] if isinstance(c, dict)]
    name = _dig(obj, ("metadata", "name")) or "(unnamed)"
    for container in containers:
        snippet, secrets = _container_snippet(container)
        text = yaml.safe_dump({"containers": [snippet]}, sort_keys=False)
        try:
            launch = find_launch(text)
        except InputError:
            continue
        if launch.engine is None:
            continue
        where = f"{label}: {obj.get('kind')}/{name} › {container.get('name', '(unnamed container)')}"
        result = ManifestLaunch(where=where, command=text, engine=launch.engine,
                                engine_version=launch.image_version, secret_env=secrets)
        _gpus(obj, pod, container, result)
        return result
    return None


def _container_snippet(container: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """command/args/image and env with every valueFrom replaced by a name: no secret value is ever looked up."""
    snippet = {k: container[k] for k in ("image", "command", "args") if k in container}
    env, secrets = [], []
    for item in container.get("env") or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        if "value" in item:
            env.append({"name": item["name"], "value": "" if item["value"] is None else str(item["value"])})
            continue
        source = item.get("valueFrom") if isinstance(item.get("valueFrom"), dict) else {}
        ref = source.get("secretKeyRef") if isinstance(source.get("secretKeyRef"), dict) else None
        if ref is not None:
            secrets.append(item["name"])
            shown = f"<from secret {ref.get('name', '?')} key {ref.get('key', '?')}>"
        else:
            shown = f"<from {', '.join(map(str, source)) or 'valueFrom'}>"
        env.append({"name": item["name"], "value": shown})
    if env:
        snippet["env"] = env
    return snippet, secrets


def _gpus(obj: dict[str, Any], pod: dict[str, Any], container: dict[str, Any], out: ManifestLaunch) -> None:
    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    per_pod = None
    for part in ("limits", "requests"):
        value = (resources.get(part) or {}).get(GPU_RESOURCE) if isinstance(resources.get(part), dict) else None
        if value is not None:
            try:
                per_pod = int(str(value))
            except ValueError:
                out.notes.append(f"resources.{part}[{GPU_RESOURCE}] = {value!r} is not a whole number")
            else:
                from doctor.bounds import check

                check("gpu_count", per_pod, f"{out.where}: resources.{part}[{GPU_RESOURCE}]")
            break
    size = _dig(obj, ("spec", "leaderWorkerTemplate", "size")) if obj.get("kind") == "LeaderWorkerSet" else None
    if per_pod is not None and isinstance(size, int) and size > 1:
        out.notes.append(f"LeaderWorkerSet group of {size} pods × {per_pod} GPUs")
        per_pod *= size
    out.gpu_count = per_pod
    products = _products(pod)
    if len(products) > 1:
        out.notes.append(f"{GPU_PRODUCT_LABEL} allows {', '.join(products)}: the GPU model is not known; pass --gpu")
        return
    if not products:
        if per_pod:
            out.notes.append(f"{per_pod} GPUs of an unknown model (no {GPU_PRODUCT_LABEL} in nodeSelector or node "
                             f"affinity): pass --gpu NAME:{per_pod}")
        return
    out.gpu_product = products[0]
    from doctor.hardware.catalog import lookup_gpu

    model = lookup_gpu(products[0])
    if model is None:
        out.notes.append(f"{GPU_PRODUCT_LABEL}={products[0]} is not in the GPU catalog: pass --gpu")
        return
    out.gpu = f"{model.name}:{per_pod}" if per_pod else model.name


def _products(pod: dict[str, Any]) -> list[str]:
    """Values of the GPU Feature Discovery product label the pod is pinned to (nodeSelector, required affinity)."""
    found: list[str] = []
    selector = pod.get("nodeSelector")
    if isinstance(selector, dict) and selector.get(GPU_PRODUCT_LABEL):
        found.append(str(selector[GPU_PRODUCT_LABEL]))
    terms = _dig(pod, ("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                       "nodeSelectorTerms"))
    for term in terms if isinstance(terms, list) else []:
        for expr in (term.get("matchExpressions") or []) if isinstance(term, dict) else []:
            if (isinstance(expr, dict) and expr.get("key") == GPU_PRODUCT_LABEL and expr.get("operator") == "In"
                    and isinstance(expr.get("values"), list)):
                found.extend(str(v) for v in expr["values"])
    return list(dict.fromkeys(found))


def note_lines(launch: ManifestLaunch | None) -> list[str]:
    """One stderr line per thing the manifest could not tell (or told with a caveat)."""
    if launch is None:
        return []
    lines = [f"manifest: {launch.where}" + (f", GPUs {launch.gpu}" if launch.gpu else "")]
    if launch.secret_env:
        lines.append(f"manifest: env from secrets (names only, values not read): {', '.join(launch.secret_env)}")
    return lines + [f"manifest: {n}" for n in launch.notes]
