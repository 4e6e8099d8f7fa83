"""Every error-catalog template that fires in the incident benchmark's logs names a specific cause (issue 22
point 2): each case with a log, of every symptom, of the measured batches (a batch joins once its first, blind
measurement is recorded: bench/incidents_batch<N>_first.json) is scanned with the catalogs, as ``check --log``
scans it, and a fired template that maps to nothing, or only by its start-up *stage* (a selector on where it is
raised and nothing else: engine-config-rejected, model-load-failed, …; doctor/logs/catalog_map.py
``specificity``), fails — unless it is listed below as truly generic, with why. A listed template that no longer
fires fails too, so the list cannot go stale. A line that a cause's own regex signature names (playbooks/causes/,
``pattern``) is that cause's, as ``check --log`` reads it (doctor/logs/parse.py ``_named``), whatever its template
maps to.

The cases are the real incidents' log excerpts (bench/incidents/, each with its thread's URL).
"""

from __future__ import annotations

import re

import yaml
from conftest import ROOT

from doctor.logs import catalog as cat
from doctor.logs.catalog import scan
from doctor.logs.catalog_map import how_mapped
from doctor.logs.parse import log_facts
from doctor.logs.read import LogText
from doctor.logs.source import signatures

#: Templates that fire in those logs and rightly name no specific cause, by why.
_WRAPPER = "wraps another error (a traceback or the worker's own message follows or is quoted): that line names the cause"
GENERIC = {
    "sglang-960446b4ff": _WRAPPER,  # Scheduler hit an exception: {traceback}
    "sglang-3a2f0f8caf": _WRAPPER,  # Exception in ModelRpcClient: (SGLang 0.1.3-0.1.17's router, a traceback follows)
    "sglang-c396104f31": _WRAPPER,  # Received sigquit from a child process. It usually means the child failed.
    "vllm-6edf7ce82b": _WRAPPER,  # WorkerProc failed to start.
    "vllm-a471509d6d": _WRAPPER,  # EngineCore failed to start.
    "vllm-e80f3dd620": _WRAPPER,  # EngineCore hit an exception: {traceback}
    "vllm-7e4d1dd0d6": _WRAPPER,  # Exception in worker {process_name} while processing method {method}.
    "vllm-ce665168c0": "the registry's summary ('failed to be inspected. Please check the logs'): the error it points to "
                       "is logged before it",
    "lower-bae73ed4ed": "pydantic's title line ('N validation error for <Config>'): the next line holds vLLM's message",
    "sglang-d226216468": "Python's AttributeError wording ('X' object has no attribute 'y'): an engine bug, no setting "
                         "causes it",
    "vllm-c8fe5c0cab": "a fallback notice (FlashInfer absent: PyTorch's own top-p/top-k sampling is used); the server "
                       "starts and samples correctly",
    "sglang-1c8de3112f": "SGLang logs it for every model module that fails to import at start-up, healthy CPU builds "
                         "included; it is a fault only for the architecture served, which the log does not tie to it "
                         "(log.model_import_errors keeps engine-too-old from blaming the release)",
    "vllm-7996b1518c": _WRAPPER,  # Engine core initialization failed. See root cause above. …
    "vllm-2bef527116": "a tool parser's catch-all around its own exception while serving: the model's output did not "
                       "parse, whether from the wrong parser (tool-parser-wrong: read from the command and the model) or "
                       "malformed output these words do not say",
    "lower-3b1a87a711": "Python's own NameError wording ('name 'x' is not defined'); Triton's site of the same words is a "
                        "coincidence of the template, and the fault is in the code that raised it",
    "lower-f2dd5a18a8": "Python's AttributeError wording ('X' object has no attribute 'y'; the catalog's nearest site of "
                        "it is Ray's actor.py, read since h22c): the code that raised it has the fault, no setting "
                        "causes it",
    "vllm-c1aa607279": _WRAPPER,  # EngineCore encountered a fatal error. (the exception follows)
    "vllm-fda0f7ffdb": _WRAPPER,  # Engine process failed to start (V0's frontend; the engine process logged why)
    "lower-a15b798d12": "CUDA's illegal memory access: a kernel's bug or a GPU fault, which the kernel log's Xid line "
                        "decides (gpu-xid-error), not these words",
    "lower-05371f716e": "Python's TypeError wording for a class built with a keyword it lacks (Triton's site of it, "
                        "triton/language/core.py:1655, is a coincidence of the template); for the engine's own argument "
                        "classes (EngineArgs, ServerArgs) the flag history of the keyword decides, not these words "
                        "(log.engine_kwargs_unknown: launch.kwargs_too_new, launch.removed_flags); a keyword the "
                        "installed release has names no cause",
    "sglang-c9d408794a": "the scheduler retracts decode requests before a step whose tokens do not fit "
                         "(sglang/srt/managers/scheduler.py:1034-1039, check_decode_mem and retract_decode, 0.4.3), so "
                         "the allocator failing after that check is the check's own estimate falling short, not a KV "
                         "pool too small for the load (which retraction absorbs)",
    "sglang-d9bca0f1ea": _WRAPPER,  # Initialization failed. warmup error: {traceback} (the warmup's own exception)
    "vllm-590105ee23": "a notice of which MoE kernel package serves gpt-oss-style experts on ROCm "
                       "(vllm/model_executor/layers/fused_moe/gpt_oss_triton_kernels_moe.py:56, 0.17.0-0.19.1, at "
                       "import); the server goes on with it",
}


def _measured_batches() -> set[int]:
    return {int(p.stem.split("_")[1].removeprefix("batch")) for p in (ROOT / "bench").glob("incidents_batch*_first.json")}


def _cases() -> list[dict]:
    batches = _measured_batches()
    cases = []
    for path in sorted((ROOT / "bench" / "incidents").glob("i*.yaml")):
        case = yaml.safe_load(path.read_text(encoding="utf-8"))
        if case["batch"] in batches and (case.get("evidence") or {}).get("log"):
            cases.append(case)
    return cases


def _patterns(engine: str | None) -> list[tuple[str, re.Pattern[str]]]:
    return [(cause, re.compile(sig["pattern"])) for cause, sigs in sorted(signatures().items()) for sig in sigs
            if "pattern" in sig and (engine is None or sig.get("engine", "any") in ("any", engine))]


def _fired() -> dict[str, tuple[str | None, bool, list[str]]]:
    """template id → (the cause the catalog maps it to specifically, or None; whether a cause's regex signature
    names its line; the cases whose log fired it)."""
    fired: dict[str, tuple[str | None, bool, list[str]]] = {}
    for case in _cases():
        version = str(case["version"]) if case.get("version") else None
        lines = str(case["evidence"]["log"]).splitlines()
        patterns = _patterns(case["engine"])
        # a log whose server started: what start-up code raised did not stop it (doctor/logs/catalog_facts.py)
        started = log_facts(LogText("case", tuple(lines), 0)).facts.get("log.started") is True
        for index, m in scan(lines, case["engine"], version):
            entry = cat.load(m.catalog).templates[m.template]
            cause, kind = how_mapped(m.catalog, m.template, entry, m.sites)
            specific = cause if kind not in (None, "stage") and not (started and m.by_place) else None
            named = next((c for c, pattern in patterns if pattern.search(lines[index])), None)
            known = fired.setdefault(m.template, (specific, False, []))
            fired[m.template] = (specific, known[1] or named is not None, [*known[2], case["id"]])
    return fired


def test_the_measured_batches_have_logs() -> None:
    assert {1, 2, 3, 4} <= _measured_batches()
    assert len(_cases()) >= 260  # batches 1-4: 260 cases with a log (98, 69, 38, 55)


def test_the_cases_on_old_releases_are_read_as_their_release() -> None:
    """The error catalogs hold vLLM 0.2.0-0.5.5 and SGLang 0.1.3-0.3.6.post3 (issue 22 point 5), so a 2023-2024 case
    is scanned with its own release's templates, not the oldest catalog's: 26 cases of batches 1-3 (20 vLLM)."""
    old = []
    for case in _cases():
        catalog = cat.load(case["engine"]) if case["engine"] in ("vllm", "sglang") else None
        if catalog is None or not case.get("version"):
            continue
        at = catalog.release_index(str(case["version"]))
        first = catalog.releases.index({"vllm": "0.6.0", "sglang": "0.4.0"}[case["engine"]])
        if at is not None and at < first:
            old.append(case["id"])
            assert catalog.releases[at] == str(case["version"]) or at == 0, case["id"]  # (0.1.x vLLM reads as 0.2.0)
    assert len(old) >= 25, old


def test_every_fired_template_names_a_specific_cause() -> None:
    unplaced = {tid: ids for tid, (cause, named, ids) in _fired().items()
                if cause is None and not named and tid not in GENERIC}
    assert not unplaced, "templates that fire in the incidents' logs and name no specific cause: " + "; ".join(
        f"{tid} (in {', '.join(ids[:3])})" for tid, ids in sorted(unplaced.items()))


def test_every_generic_exception_still_fires_and_is_unmapped() -> None:
    fired = _fired()
    stale = [tid for tid in GENERIC if tid not in fired]
    assert not stale, f"listed as generic but no longer fired by any measured case: {stale}"
    mapped = [tid for tid in GENERIC if fired[tid][0] is not None or fired[tid][1]]
    assert not mapped, f"listed as generic but now mapped to a specific cause (remove from GENERIC): {mapped}"
