"""The analyzer registry (doctor/derive/registry.py): the order comes from what each analyzer declares it reads
and produces, contradictions fail, and the declarations match what the analyzers really read and write when
they run over real inputs (live captures of real servers, real configs, real logs and scrapes)."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, SHARED_FIXTURES, requires_shared

from doctor.derive import ORDER, derive_all
from doctor.derive.analyzers import KERNEL_FACTS
from doctor.derive.registry import ANALYZERS, Analyzer, RegistryError, covers, ordered
from doctor.facts import Facts
from doctor.sources.offline import OfflineInputs, Workload, gather

LIVE = SHARED_FIXTURES / "live"
CONFIGS = SHARED_FIXTURES / "configs"
METRICS = SHARED_FIXTURES / "metrics"
LOGS = ROOT / "fixtures" / "logs" / "public"
NVIDIA_SMI = ROOT / "fixtures" / "nvidia-smi" / "public"


def _noop(facts: Facts) -> None:
    """An analyzer body for the registry's own tests: the order is decided from the declarations alone."""


def _a(name: str, reads: tuple[str, ...], produces: tuple[str, ...]) -> Analyzer:
    return Analyzer(name, _noop, reads, produces)


def test_a_producer_runs_before_its_readers_whatever_the_names() -> None:
    names = [a.name for a in ordered([_a("a_reads", ("x.y",), ("z",)), _a("b_makes", (), ("x.*",))])]
    assert names == ["b_makes", "a_reads"]


def test_a_fact_produced_twice_is_an_error() -> None:
    with pytest.raises(RegistryError, match=r"launch\.env\.\* produced by both one and two"):
        ordered([_a("one", (), ("launch.env.X",)), _a("two", (), ("launch.env.*",))])


def test_a_cycle_is_an_error_naming_what_waits_on_what() -> None:
    with pytest.raises(RegistryError, match=r"first \(waits on second\), second \(waits on first\)"):
        ordered([_a("first", ("b",), ("a",)), _a("second", ("a",), ("b",))])


def test_an_analyzer_may_refine_what_it_produces() -> None:
    assert [a.name for a in ordered([_a("refine", ("x",), ("x",))])] == ["refine"]


def test_the_built_in_registry_is_ordered_by_its_declarations() -> None:
    assert sorted(a.name for a in ORDER) == sorted(a.name for a in ANALYZERS)
    for i, item in enumerate(ORDER):
        later = {p for a in ORDER[i + 1:] for p in a.produces}
        assert not [r for r in item.reads for p in later if covers(r, p) or covers(p, r)], item.name


def test_derive_holds_registry_analyzers_only() -> None:
    """Issue 20 point 5: every module of doctor/derive (besides the registry) registers analyzers, and every public
    function there is one or answers from facts alone; what reads the parsed command or the model card is input
    reading and lives with its source (doctor/sources/launch.py, card.py)."""
    import inspect
    import pkgutil

    import doctor.derive as package

    registered = {a.run for a in ANALYZERS}
    for info in pkgutil.iter_modules(package.__path__):
        if info.name == "registry":
            continue
        module = __import__(f"doctor.derive.{info.name}", fromlist=["_"])
        own = [f for name, f in vars(module).items() if inspect.isfunction(f) and f.__module__ == module.__name__
               and not name.startswith("_")]
        assert any(f in registered for f in own), f"doctor/derive/{info.name}.py registers no analyzer"
        for f in own:
            if f not in registered:  # a helper: its inputs are facts (no command, no card)
                params = inspect.signature(f).parameters.values()
                assert all("Facts" in str(p.annotation) for p in params), f"{info.name}.{f.__name__} reads no facts"


def test_derive_runs_what_a_wanted_fact_needs() -> None:
    """``derive(facts, wanted)`` runs the producers of ``wanted`` and what they wait on, no more (the active probes'
    context asks only what the model's family expects), and they derive what the whole derivation does."""
    from doctor.derive import _needed, derive

    assert [a.name for a in _needed(("expect.*",))] == ["derive_family"]
    names = [a.name for a in _needed(("fit.fits",))]
    assert "derive_fit" in names and "derive_device" in names and "derive_family" not in names
    given = Facts()
    given.set("launch.engine", "vllm", "test")
    given.set("model.architectures", ["Qwen3ForCausalLM"], "test")
    given.set("model.name", "Qwen/Qwen3-8B", "test")
    whole = derive_all(_copy(given))
    part = derive(_copy(given), ("expect.*",))
    assert part.get("model.family") == "qwen3" and part.under("expect") == whole.under("expect")
    assert "engine.name" in whole and "engine.name" not in part


def test_kernel_facts_name_every_kernel_of_the_catalog() -> None:
    from doctor.hardware.gating import kernel_rules

    assert set(KERNEL_FACTS) == {f"gpu.{k}{end}" for k in kernel_rules() for end in ("", "_releases")}


class Recording(Facts):
    """Facts that note every key read and written (an ``under`` read is the family ``prefix.*``)."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: set[str] = set()
        self.writes: set[str] = set()

    def get(self, key: str, default: Any = None) -> Any:
        self.reads.add(key)
        return super().get(key, default)

    def fact(self, key: str) -> Any:
        self.reads.add(key)
        return super().fact(key)

    def __contains__(self, key: object) -> bool:
        self.reads.add(str(key))
        return super().__contains__(key)

    def under(self, prefix: str) -> Any:
        self.reads.add(prefix + ".*")
        return super().under(prefix)

    def unknown_reason(self, key: str) -> str | None:
        self.reads.add(key)
        return super().unknown_reason(key)

    def set(self, key: str, value: Any, source: str, **how: Any) -> None:
        self.writes.add(key)
        super().set(key, value, source, **how)

    def error(self, key: str, message: str) -> None:
        self.writes.add(key)
        super().error(key, message)

    def forget(self, key: str, message: str) -> None:
        self.writes.add(key)
        super().forget(key, message)

    def update(self, other: Facts, *, overwrite: bool = True) -> None:
        """A merge writes every key of ``other`` it takes: each fact, and each reason for a key still unknown."""
        self.writes.update(f.key for f in other if overwrite or not Facts.__contains__(self, f.key))
        self.writes.update(k for k in other.errors if not Facts.__contains__(self, k))
        super().update(other, overwrite=overwrite)


def _text(path: Path) -> str:
    return path.read_text().replace("\0", " ").strip()


def _incident_evidence(case: str, key: str) -> str:
    """One evidence item of a benchmark case (bench/incidents/<case>-*.yaml), as a file --log/--client-output read."""
    data = yaml.safe_load(next((ROOT / "bench" / "incidents").glob(f"{case}-*.yaml")).read_text(encoding="utf-8"))
    path = Path(tempfile.mkdtemp()) / f"{case}.{key}"
    path.write_text(data["evidence"][key], encoding="utf-8")
    return str(path)


def _inputs() -> dict[str, OfflineInputs]:
    """Real inputs that between them reach every analyzer."""
    sglang, vllm = LIVE / "sglang-0.5.23-cpu", LIVE / "vllm-0.32.0-cpu" / "plain-after"
    return {
        "sglang 0.5.23 live capture": OfflineInputs(
            command=_text(sglang / "cmdline.txt"), engine_version="0.5.23",
            server_info=str(sglang / "server_info.before.out"), metrics=str(sglang / "metrics.after.out"),
            log=str(sglang / "server.log")),
        "vllm 0.32.0 live capture on CPU": OfflineInputs(
            command="VLLM_TARGET_DEVICE=cpu VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 " + _text(vllm / "cmdline.txt"),
            engine_version="0.32.0", metrics=str(vllm / "metrics.txt"), log=str(vllm / "server.log")),
        "vllm hybrid MoE on H100s with a scrape": OfflineInputs(
            command="vllm serve Qwen/Qwen3-Next-80B-A3B-Thinking -tp 4 --enable-expert-parallel "
                    "--max-num-batched-tokens 8000 --quantization fp8 --tool-call-parser hermes",
            engine_version="0.11.0", config=str(CONFIGS / "Qwen__Qwen3-Next-80B-A3B-Thinking.json"), gpu="H100:4",
            metrics=str(METRICS / "vllm_1.prom"), workload=Workload(context=32768, users=8)),
        "sglang DP attention on H200s, version unknown": OfflineInputs(
            command="python -m sglang.launch_server --model-path Qwen/Qwen3-235B-A22B --tp 8 --dp 8 "
                    "--enable-dp-attention --ep-size 8 --max-total-tokens 100000",
            config=str(CONFIGS / "Qwen__Qwen3-235B-A22B.json"), gpu="H200:8", metrics=str(METRICS / "sglang_1.prom"),
            nvidia_smi=str(NVIDIA_SMI / "rtx3090x3-one-gpu-busy.txt")),
        "vllm -tp 4 on a box of three RTX 3090s": OfflineInputs(
            command="vllm serve Qwen/Qwen3-8B -tp 4", nvidia_smi=str(NVIDIA_SMI / "rtx3090x3-one-gpu-busy.txt")),
        # a real reporter's command (bench/incidents/i156-sglang-6669.yaml, sgl-project/sglang#6669)
        "sglang 0.4.6 decode server with a CUDA-graph batch list": OfflineInputs(
            command="python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --trust-remote-code "
                    "--disaggregation-mode decode --tp 8 --dp 8 --enable-dp-attention --enable-deepep-moe --ep-size 8 "
                    "--disable-radix-cache --attention-backend fa3 --mem-frac 0.7 --cuda-graph-bs 128",
            engine_version="0.4.6"),
        # a reporter's answer (vllm-project/vllm#12999) that closes a thinking block it never opened, on the
        # thread's release; the command is the serving form of the flags the thread names (it posted none)
        "a vLLM 0.7.2 answer with a closing think marker only": OfflineInputs(
            command="vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-32B --enable-reasoning --reasoning-parser "
                    "deepseek_r1", engine_version="0.7.2", client_output=_incident_evidence("i054", "client_output")),
        # a reporter's log of vLLM 0.8.3 refusing pipeline parallelism for Llama 4 (vllm-project/vllm#16231)
        "vLLM 0.8.3 refusing PP for an architecture a later release runs with it": OfflineInputs(
            command=yaml.safe_load(next((ROOT / "bench" / "incidents").glob("i461-*.yaml")).read_text())["evidence"][
                "command"], engine_version="0.8.3",
            config=str(CONFIGS / "meta-llama__Llama-4-Maverick-17B-128E-Instruct.json"),
            log=_incident_evidence("i461", "log")),
        # a reporter's log of vLLM 0.2.4's registry refusing Qwen2ForCausalLM (vllm-project/vllm#3463)
        "vLLM 0.2.4 refusing an architecture a later release registers": OfflineInputs(
            engine_version="0.2.4", log=_incident_evidence("i323", "log")),
        "a vLLM log that overrides the KV blocks": OfflineInputs(log=str(LOGS / "vllm-kv-blocks-override.log")),
        "a vLLM log with the hybrid block size": OfflineInputs(log=str(LOGS / "vllm-hybrid-block-size.log")),
        "an SGLang log with speculative decoding": OfflineInputs(log=str(LOGS / "sglang-hybrid-spec-decode.log")),
        # tokenizers 0.19.1's own refusal of a newer tokenizer.json (fixtures/logs/lower/SOURCES.md): engine.pins.*
        "a tokenizers refusal under vLLM 0.33.0": OfflineInputs(
            command="vllm serve Qwen/Qwen3-8B", engine_version="0.33.0",
            log=str(LOGS.parent / "lower" / "tokenizers-0.19.1-newer-tokenizer-json.log")),
    }


#: Analyzers whose inputs no offline input gives: the DCGM exporter's per-GPU lists (`report`, from Prometheus),
#: the live process tree, the kernel log's and NVML's Xid events; their own tests drive them.
LIVE_ONLY = ("derive_dcgm_gpu_faults", "derive_missing_workers", "derive_xid_events")


def _gathered() -> dict[str, Facts]:
    return {name: gather(inputs).facts for name, inputs in _inputs().items()}


def _declared(keys: set[str], patterns: tuple[str, ...]) -> set[str]:
    return {k for k in keys if not any(covers(p, k) for p in patterns)}


@requires_shared
def test_declared_reads_and_produces_are_what_each_analyzer_does() -> None:
    wrote: dict[str, set[str]] = {a.name: set() for a in ORDER}
    for case, gathered in _gathered().items():
        facts = Recording()
        facts.update(gathered)
        for item in ORDER:
            facts.reads, facts.writes = set(), set()
            item.run(facts)
            # what it reads besides what it produces itself (a refinement), and everything it writes
            undeclared_reads = _declared(facts.reads, item.reads + item.produces)
            assert not undeclared_reads, f"{case}: {item.name} reads {sorted(undeclared_reads)} it does not declare"
            undeclared_writes = _declared(facts.writes, item.produces)
            assert not undeclared_writes, f"{case}: {item.name} writes {sorted(undeclared_writes)} it does not declare"
            wrote[item.name] |= facts.writes
    idle = sorted(name for name, keys in wrote.items() if not keys)
    assert idle == sorted(LIVE_ONLY), f"analyzers no real input made write anything: {idle}"


@requires_shared
def test_any_order_the_declarations_allow_derives_the_same_facts() -> None:
    """The declarations are enough to order the analyzers: another valid order changes nothing."""
    rng = random.Random(20)
    for case, gathered in _gathered().items():
        expected = derive_all(_copy(gathered)).to_dict()
        for _ in range(3):
            facts = _copy(gathered)
            for item in _random_order(rng):
                item.run(facts)
            assert facts.to_dict() == expected, case


def _copy(facts: Facts) -> Facts:
    out = Facts()
    out.update(facts)
    return out


def _random_order(rng: random.Random) -> list[Analyzer]:
    """A random order in which every analyzer still runs after the producers of what it reads."""
    pending, done = list(ANALYZERS), []
    while pending:
        ready = [a for a in pending if not any(covers(r, p) or covers(p, r) for r in a.reads
                                               for b in pending if b is not a for p in b.produces)]
        pick = rng.choice(ready)
        done.append(pick)
        pending.remove(pick)
    return done


def test_what_the_analyzers_produce_is_registered_under_their_module() -> None:
    """Every fact an analyzer produces is in the fact registry (playbooks/facts/), and an entry that says
    derivation produces it names the analyzer's module, so a reader finds the code from the fact."""
    from doctor.playbook.loader import load_playbooks

    registry = load_playbooks().registry
    for item in ORDER:
        module = item.run.__module__.removeprefix("doctor.")
        for key in item.produces:
            if "." not in key:  # a whole namespace made unknown (the GPU of a CPU server): no fact of its own
                continue
            covered = [k for k in registry.specs if covers(key, k)] if key.endswith(".*") else [key]
            specs = [registry.spec(k) for k in covered]
            assert covered and all(specs), f"{item.name} produces {key}, which the fact registry lacks"
            wrong = [(k, s.producer) for k, s in zip(covered, specs, strict=True)
                     if s.producer.startswith("derive") and s.producer != module]
            assert not wrong, f"{item.name} ({module}) produces {wrong}"


def test_every_producer_in_the_fact_registry_is_a_module() -> None:
    from doctor.playbook.loader import load_playbooks

    package = ROOT / "doctor"
    missing = {spec.producer for spec in load_playbooks().registry.specs.values()
               if not (package / spec.producer.replace(".", "/")).with_suffix(".py").is_file()
               and not (package / spec.producer.replace(".", "/") / "__init__.py").is_file()}
    assert not missing, f"producers that name no module under doctor/: {sorted(missing)}"
