"""The error band of a predicted KV capacity, from the memory model's published record.

Every capacity llmdoctor prints is a prediction (GPU × fraction − weights − non-KV, over the bytes per token); how
far such predictions landed from what the engines logged is measured in tests/data/kv_datapoints.yaml. That
record is turned, at generation time (``python tools/capacity_record.py``), into ``capacity_record.json``: one row
per full prediction with its stratum (engine, GPU family, dense/MoE, attention kind, quantization) and its error.
At run time nothing is predicted again: the band is the 90th percentile of the absolute errors of the comparable
runs, the narrowest stratum that still holds ``MIN_RUNS`` of them, so `plan` and `inspect` stay fast.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

RECORD_PATH = Path(__file__).with_name("capacity_record.json")
#: Fewer comparable runs than this and a stratum is not narrowed further: a band from three runs says little.
MIN_RUNS = 5
#: The strata, from the broadest to the narrowest, in the order the band narrows them.
STRATA = ("engine", "quantization", "gpu_family", "moe", "attention")
_LABELS = {"vllm": "vLLM", "sglang": "SGLang", "ampere": "Ampere", "ada": "Ada", "hopper": "Hopper",
           "blackwell": "Blackwell", "unified": "unified memory", "turing": "Turing", "volta": "Volta", "moe": "MoE", "dense": "dense",
           "gqa": "GQA", "mha": "MHA", "mla": "MLA", "dsa": "DSA"}


#: Compute capabilities of the catalog's unified-memory GPUs (doctor/hardware/gpus.yaml: GB10, sm_121, whose
#: 128 GB LPDDR5x the CPU shares). An engine sizes its pool there from the memory the OS and other processes
#: leave, so their runs form a stratum of their own: blended into Blackwell's they widened every band.
UNIFIED_SM = frozenset((121,))
#: Why a unified-memory part's band is wide, said with it: a limit of prediction, not of the model. vLLM counts the
#: host's memory in use as non-torch memory there and SGLang sizes its pool from the memory free at start, so the
#: pool is what the OS and other processes leave (the record's GB10 runs: the same command logged 6,827 and 1.6 M
#: tokens on one rig).
UNIFIED_LIMIT = ("unified memory: the pool is what the OS and other processes leave of the shared memory, which "
                 "no config or catalog says; the engine's start-up line gives the real one")


def gpu_family(sm: int | None) -> str:
    """The GPU generation from its compute capability (the catalog's sm_XY), the record's GPU stratum."""
    if not isinstance(sm, int) or isinstance(sm, bool):
        return "unknown"
    if sm in UNIFIED_SM:
        return "unified"
    for floor, name in ((100, "blackwell"), (90, "hopper"), (89, "ada"), (80, "ampere"), (75, "turing"),
                        (70, "volta")):
        if sm >= floor:
            return name
    return "unknown"


def stratum_of(engine: str | None, sm: int | None, moe: Any, attention: Any, quantization: Any) -> dict[str, str]:
    """The stratum keys of one prediction, as the record stores them."""
    return {"engine": str(engine or "vllm"), "gpu_family": gpu_family(sm), "moe": "moe" if moe else "dense",
            "attention": str(attention or "unknown"), "quantization": str(quantization or "16-bit")}


@lru_cache(maxsize=1)
def record() -> tuple[dict[str, Any], ...]:
    """The generated rows (empty when the data file is missing: then every band says it has no data)."""
    try:
        return tuple(json.loads(RECORD_PATH.read_text(encoding="utf-8"))["runs"])
    except (OSError, ValueError, KeyError):
        return ()


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (no interpolation: with few runs the band is an observed error, not a blend)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


@dataclass(frozen=True)
class Band:
    """±``error`` (90th percentile of |error|) on ``runs`` comparable runs of the strata ``matched``."""

    error: float | None
    runs: int
    matched: tuple[str, ...]
    #: the first stratum value the record has too few runs of to narrow by ("none yet on Blackwell"), else ""
    thin: str = ""
    #: the user's calibration file, when the runs are the user's own (doctor/model/calibration.py), else ""
    own: str = ""
    #: a limit of prediction in this stratum, said with the band (UNIFIED_LIMIT), else ""
    limit: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The band in the JSON documents (``error``: the 90th-percentile absolute error, None without data)."""
        return {"error": None if self.error is None else round(self.error, 4), "runs": self.runs,
                "strata": list(self.matched), "note": self.thin or None, "text": self.text(),
                "source": "calibration" if self.own else "record", **({"file": self.own} if self.own else {}),
                **({"limit": self.limit} if self.limit else {})}

    def text(self) -> str:
        """"±9% on 37 comparable runs: vLLM, Hopper, MoE" (and what has no data); a band from the user's own
        runs says so: "±2% on 3 of your own runs: qwen/qwen3-8b, H100, vLLM; measured 1% above the computed; …"."""
        if self.own:
            names = ", ".join(_LABELS.get(m, m) for m in self.matched)
            return (f"±{max(1, math.ceil((self.error or 0) * 100))}% on {self.runs} of your own runs: {names}; "
                    f"{self.thin}; llmdoctor calibrate show")
        limit = f"; {self.limit}" if self.limit else ""
        if self.error is None:
            return f"no comparable runs in the memory model's record ({self.thin}){limit}"
        names = ", ".join(_LABELS.get(m, m) for m in self.matched)
        return f"±{math.ceil(self.error * 100)}% on {self.runs} comparable runs: {names}" + (
            f"; {self.thin}" if self.thin else "") + limit


def band_for(stratum: dict[str, str]) -> Band:
    """The band of a prediction in ``stratum``: narrowed stratum by stratum while ``MIN_RUNS`` runs remain."""
    return _band(tuple(stratum.get(key, "unknown") for key in STRATA))


@lru_cache(maxsize=256)
def _band(values: tuple[str, ...]) -> Band:
    stratum = dict(zip(STRATA, values, strict=True))
    # a unified-memory part's runs band only unified-memory parts, and theirs only them (UNIFIED_SM)
    unified = stratum.get("gpu_family") == "unified"
    runs = [r for r in record() if r["engine"] == stratum["engine"] and (r["gpu_family"] == "unified") == unified]
    limit = UNIFIED_LIMIT if unified else ""
    if not runs:
        return Band(None, 0, (), f"none on {_LABELS.get(stratum['engine'], stratum['engine'])}", limit=limit)
    matched, thin = [stratum["engine"]], ""
    for key in STRATA[1:]:
        value = stratum.get(key, "unknown")
        if value == "unknown":
            continue
        narrower = [r for r in runs if r[key] == value]
        if len(narrower) >= MIN_RUNS:
            runs, matched = narrower, [*matched, value]
        elif not thin and len(narrower) < len(runs):
            thin = (f"only {len(narrower)} on " if narrower else "none yet on ") + _LABELS.get(value, value)
    return Band(percentile([abs(r["error"]) for r in runs], 0.9), len(runs), tuple(matched), thin, limit=limit)


@lru_cache(maxsize=32)
def weights_band(quantization: str) -> Band:
    """The band of a predicted weights size: the 90th-percentile error of the record's runs whose log gives the
    weights ("Loading model weights took N GiB"), those of the quantization when ``MIN_RUNS`` of them remain."""
    runs = [r for r in record() if r.get("weights_error") is not None]
    if not runs:
        return Band(None, 0, (), "no logged weights")
    matched, thin = ("logged weights",), ""
    narrower = [r for r in runs if r["quantization"] == quantization]
    if len(narrower) >= MIN_RUNS:
        runs, matched = narrower, (*matched, quantization)
    else:
        thin = (f"only {len(narrower)} on " if narrower else "none yet on ") + quantization
    return Band(percentile([abs(r["weights_error"]) for r in runs], 0.9), len(runs), matched, thin)


def own_band(models: tuple[str, ...], gpu: str | None, engine: str | None) -> Band | None:
    """The band from the user's own measured runs of this model on this GPU and engine (`llmdoctor calibrate`),
    or None when there are none: measured beats computed, and the user's fleet beats the public record."""
    from doctor.model.calibration import bias_text, calibration_path, matching

    runs = matching(models, gpu, engine)
    if not runs:
        return None
    error = percentile([abs(run.error) for run in runs], 0.9)
    return Band(error, len(runs), (runs[0].models[0], str(gpu), str(engine)), bias_text(runs),
                own=str(calibration_path()))


def band_from_facts(facts: Any) -> Band:
    """The band of the capacity the facts predict (launch engine, GPU, model): the user's own runs of that model,
    GPU and engine when the calibration file has any, else the record's comparable runs."""
    from doctor.model.calibration import model_ids

    engine = facts.get("launch.engine")
    own = own_band(model_ids(facts.get("model.name"), facts.get("launch.model"), facts.get("server.model")),
                   facts.get("gpu.name"), engine)
    if own is not None:
        return own
    return band_for(stratum_of(engine, facts.get("gpu.sm"), facts.get("model.moe"),
                               facts.get("model.attention"),
                               facts.get("launch.quantization") or facts.get("model.quantization")))


def band_from_card(card: Any, engine: str, sm: int | None, quantization: str | None = None,
                   gpu_name: str | None = None) -> Band:
    """The band of a capacity `plan` or `inspect` computes from a model card (the launch's quantization, if any,
    overrides the checkpoint's); the user's own runs of the model on ``gpu_name`` first, as band_from_facts."""
    from doctor.model.calibration import model_ids

    own = own_band(model_ids(card.name), gpu_name, engine) if gpu_name else None
    if own is not None:
        return own
    quant = quantization or (card.quantization.method if card.quantization is not None else None)
    return band_for(stratum_of(engine, sm, card.moe is not None, card.attention, quant))


#: The engines' own account of the weights, the measurement that settles a borderline "does not fit".
WEIGHTS_SETTLED_BY = {"vllm": 'the "Loading model weights took N GiB" (or "Model loading took") line vLLM logs',
                      "sglang": 'the "Load weight end. … mem usage=N GB" line SGLang logs'}
#: The engines' own account of the pool, the measurement that settles a borderline prediction.
SETTLED_BY = {"vllm": 'the "GPU KV cache size: N tokens" line vLLM logs at start-up',
              "sglang": 'the "KV Cache is allocated. #tokens: N" line SGLang logs at start-up'}


def margin_note(margin: float, band: Band, engine: str | None, what: str, *, measured: bool = False,
                settled_by: dict[str, str] = SETTLED_BY) -> str:
    """How sure a verdict resting on a predicted capacity is: ``margin`` (a share) against the band. ``measured``:
    the engine's own count is already the other side, so a borderline case doubts the prediction."""
    settle = ("the measured side stands; the prediction, not the server, may be what is off" if measured else
              settled_by.get(str(engine), " or ".join(settled_by.values())) + " settles it")
    if band.error is None:
        return (f" The {what} margin is {margin:.0%}, and the memory model's record has no comparable runs: "
                f"{settle}.")
    if margin <= band.error:
        return (f" Borderline: the {what} margin ({margin:.0%}) is inside the prediction's band ({band.text()}); "
                f"{settle}.")
    return f" The {what} margin ({margin:.0%}) is outside the prediction's band ({band.text()})."


def capacity_summary(facts: Any) -> str | None:
    """`lint`'s and `check`'s fit line: the predicted KV tokens with their band (None: nothing predicted)."""
    tokens = facts.get("fit.kv_tokens_per_group")
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        return None
    band = facts.get("fit.kv_tokens_band_text") or band_from_facts(facts).text()
    line = f"≈ {approx_tokens(tokens)} KV tokens per pool, predicted ({band})"
    measured = facts.get("capacity.measured_tokens")
    if isinstance(measured, int) and measured > 0:  # measured beats computed: say it, and how far apart
        line += (f"; measured {measured:,} ({tokens / measured - 1:+.1%} off; llmdoctor calibrate add keeps "
                 "the pair)")
    return line


def approx_tokens(tokens: int) -> str:
    """A predicted token count to the precision its band allows (three significant figures): ≈ 41,000."""
    if tokens <= 0:
        return "0"
    digits = max(0, int(math.log10(tokens)) - 2)
    return f"{round(tokens, -digits):,}"
