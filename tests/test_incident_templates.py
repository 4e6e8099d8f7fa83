"""Every error-catalog template that fires in the incident benchmark's start-up logs names a specific cause
(issue 22 point 2): each launch-failure and hardware-fit case of the worked batches (bench/incidents_baseline.json
``batches``; a blind batch joins once it has been measured) is scanned with the catalogs, as ``check --log``
scans it, and a fired template that maps to nothing, or only to a start-up *class* cause (a selector on where it
is raised: engine-config-rejected, model-load-failed, …), fails — unless it is listed below as truly generic,
with why. A listed template that no longer fires fails too, so the list cannot go stale.

The cases are the real incidents' log excerpts (bench/incidents/, each with its thread's URL).
"""

from __future__ import annotations

import json

import yaml
from conftest import ROOT

from doctor.logs.catalog import scan
from doctor.logs.source import signatures

SYMPTOMS = ("launch-failure", "hardware-fit")

#: Templates that fire in those logs and rightly name no specific cause, by why.
_WRAPPER = "wraps another error (a traceback or the worker's own message follows or is quoted): that line names the cause"
GENERIC = {
    "sglang-960446b4ff": _WRAPPER,  # Scheduler hit an exception: {traceback}
    "sglang-c396104f31": _WRAPPER,  # Received sigquit from a child process. It usually means the child failed.
    "sglang-25a125cae2": _WRAPPER,  # Capture cuda graph failed: {e}
    "vllm-6edf7ce82b": _WRAPPER,  # WorkerProc failed to start.
    "vllm-a471509d6d": _WRAPPER,  # EngineCore failed to start.
    "vllm-e80f3dd620": _WRAPPER,  # EngineCore hit an exception: {traceback}
    "vllm-578854882a": _WRAPPER,  # Worker failed with error '{result}', please check the stack trace above …
    "vllm-ad87591b0e": _WRAPPER,  # Exception in worker {process_name} while processing method {method}: {e}, {tb}
    "vllm-7e4d1dd0d6": _WRAPPER,  # Exception in worker {process_name} while processing method {method}.
    "vllm-ce665168c0": "the registry's summary ('failed to be inspected. Please check the logs'): the error it points to "
                       "is logged before it",
    "lower-bae73ed4ed": "pydantic's title line ('N validation error for <Config>'): the next line holds vLLM's message",
    "vllm-cf516d39f7": "the words of Python's own ModuleNotFoundError; vLLM's site of the same words is import_from_path "
                       "for a plugin file, not a dependency (engine-dependency-missing reads the exception line itself)",
    "sglang-d226216468": "Python's AttributeError wording ('X' object has no attribute 'y'): an engine bug, no setting "
                         "causes it",
    "vllm-a5417b4f6c": "'{memset_name} failed with error {err}' has two holes and three words, so any '<x> failed with "
                       "error <y>' line matches it (here NCCL's ibv wrapper, which nccl-init-failed names); its own site "
                       "is a Triton benchmark helper never run at start-up",
    "vllm-5d505acb3d": "a warning that vLLM's compiled ops did not import on this platform; the server may start "
                       "(vllm-project/vllm thread of case i013: it was not the fault)",
    "vllm-4b75cbc9e8": "multimodal placeholders and features disagree: a mismatch between the engine's and "
                       "transformers' processors whose side the inputs do not say (transformers' version decides)",
    "vllm-c8fe5c0cab": "a fallback notice (FlashInfer absent: PyTorch's own top-p/top-k sampling is used); the server "
                       "starts and samples correctly",
    "sglang-1c8de3112f": "SGLang logs it for every model module that fails to import at start-up, healthy CPU builds "
                         "included; it is a fault only for the architecture served, which the log does not tie to it "
                         "(log.model_import_errors keeps engine-too-old from blaming the release)",
    "sglang-aa07fa6462": "argparse's 'unrecognized arguments': which flag, and whether the release lacks it, is read "
                         "from the launch command (unknown-flag, argument-error), not from these words",
}


def _class_causes() -> set[str]:
    """Causes that claim templates by where they are raised (a ``startup`` selector): the start-up classes."""
    out = {"engine-error-unplaced"}
    for cause, sigs in signatures().items():
        if any("startup" in (s.get("select") or {}) for s in sigs):
            out.add(cause)
    return out


def _worked_cases() -> list[dict]:
    batches = set(json.loads((ROOT / "bench" / "incidents_baseline.json").read_text(encoding="utf-8"))["batches"])
    cases = []
    for path in sorted((ROOT / "bench" / "incidents").glob("i*.yaml")):
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
        if case["batch"] in batches and case["symptom"] in SYMPTOMS and (case.get("evidence") or {}).get("log"):
            cases.append(case)
    return cases


def _fired() -> dict[str, tuple[str | None, list[str]]]:
    """template id → (the cause it maps to, the cases whose log fired it)."""
    fired: dict[str, tuple[str | None, list[str]]] = {}
    for case in _worked_cases():
        version = str(case["version"]) if case.get("version") else None
        for _, m in scan(str(case["evidence"]["log"]).splitlines(), case["engine"], version):
            cause = None if m.by_place else m.cause
            fired.setdefault(m.template, (cause, []))[1].append(case["id"])
    return fired


def test_the_worked_batches_have_start_up_logs() -> None:
    assert len(_worked_cases()) >= 100  # 158 launch failures in batches 1+2, most with a log


def test_every_fired_template_names_a_specific_cause() -> None:
    classes = _class_causes()
    unplaced = {tid: (cause, ids) for tid, (cause, ids) in _fired().items()
                if (cause is None or cause in classes) and tid not in GENERIC}
    assert not unplaced, "templates that fire in the incidents' logs and name no specific cause: " + "; ".join(
        f"{tid} ({cause or 'unmapped'}, in {', '.join(ids[:3])})" for tid, (cause, ids) in sorted(unplaced.items()))


def test_every_generic_exception_still_fires_and_is_unmapped() -> None:
    fired = _fired()
    stale = [tid for tid in GENERIC if tid not in fired]
    assert not stale, f"listed as generic but no longer fired by any worked case: {stale}"
    classes = _class_causes()
    mapped = [tid for tid in GENERIC if fired[tid][0] not in (None, *classes)]
    assert not mapped, f"listed as generic but now mapped to a specific cause (remove from GENERIC): {mapped}"
