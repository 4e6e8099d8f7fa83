"""A vLLM or SGLang server log → ``log.*`` facts (docs/facts.md), and the excerpt that reproduces them.

Every fact here is something the engine itself printed while it ran, so each is *observed*. The patterns are
the engines' own format strings (cited per pattern, vLLM 0.32.0 and SGLang 0.5.23 wheels). Each pattern runs
once over the whole excerpt (``re.MULTILINE``), never line by line: a 4 MB excerpt is ~40,000 lines.

The lines that gave a fact (and the last traceback) are the *excerpt*: a snapshot records it (redacted), and
parsing the excerpt again gives the same facts, so ``check --snapshot`` replays a log without the log.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import accumulate

from doctor.facts import Facts
from doctor.logs.read import LogText
from doctor.redact import is_secret_name, redact_obj, redact_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: What a log collector puts before the engine's own line: journald's short format (``Dec 01 12:41:11 host
#: vllm[123]: ``), an RFC 3339 timestamp (``kubectl logs --timestamps``, Loki), docker compose's ``svc  | ``.
_OUTER = (r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w.@/-]+(?:\[\d+\])?: "
          r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) )?(?:[\w.-]+ +\| )?")
#: What one line may carry before the message: vLLM's ``(Worker pid=1) INFO 12-01 12:41:11 [file.py:12] `` and
#: SGLang's ``[2026-12-01 13:28:54 TP0] ``.
_PREFIX = (r"^" + _OUTER + r"(?:\([^()\n]*\bpid=\d+[^()\n]*\) )?"
           r"(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\d-]+ [\d:.]+ (?:\[[^\]\n]*\]|[\w.]+:\d+\]) )?"
           r"(?:\[\d{4}-\d\d-\d\d [\d:]+[^\]\n]*\] )?")
#: vLLM's own line format (``INFO 12-01 12:41:11 [file.py:12]``; before 0.8 without the brackets' opening).
_VLLM_LINE = re.compile(r"^" + _OUTER + r"(?:\([^()\n]*\bpid=\d+[^()\n]*\) )?(?:INFO|WARNING|ERROR) "
                        r"\d\d-\d\d [\d:.]+ \[?[\w.]+\.py:\d+\]", re.M)
#: SGLang's (``[2026-12-01 13:28:54 TP0] ``) — no level, a full date.
_SGL_LINE = re.compile(r"^" + _OUTER + r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [^\]\n]*)?\] ", re.M)

@dataclass(frozen=True)
class _Rule:
    """A pattern and a literal every line it matches contains (the fast prefilter)."""

    keyword: str
    pattern: re.Pattern[str]


def _rule(keyword: str, pattern: str, flags: int = 0) -> _Rule:
    return _Rule(keyword, re.compile(pattern, flags))


# Message patterns: searched (not anchored) in the lines that hold their literal, so a line's prefix — the
# engine's, a collector's — does not matter.
# vLLM (0.32.0 wheel)
_VLLM_BANNER = _rule('█', r"█.*\bversion (\S+)\s*$", re.M)  # serve/utils/api_utils.py:347
_VLLM_ENGINE = _rule('Initializing a V1 LLM engine', r"Initializing a V1 LLM engine \(v([^)\s]+)\)", re.M)  # v1/engine/core.py:133
_VLLM_OLD_VERSION = _rule('vLLM API server version', r"vLLM API server version (\S+)", re.M)  # older releases
#: a launcher that builds the engine's arguments itself (LLaMA-Factory, verl, …) passing one the release lacks:
#: Python's TypeError from the generated EngineArgs / ServerArgs dataclass __init__
_ENGINE_KWARG = _rule('unexpected keyword argument', r"__init__\(\) got an unexpected keyword argument '(\w+)'", re.M)
#: Ray Serve LLM sorts the engine_kwargs of an LLMConfig into vLLM's FrontendArgs and AsyncEngineArgs fields and
#: refuses any other key (ray-project/ray python/ray/llm/_internal/serve/engines/vllm/vllm_models.py at b4061b5,
#: VLLMEngineConfig.from_llm_config: raise ValueError(f"Unknown engine argument: {key}")): the key is a field of vLLM's arguments
_RAY_ENGINE_KWARG = _rule('Unknown engine argument: ', r"Unknown engine argument: (\w+)", re.M)
_ENGINE_ARGS_CLASS = re.compile(r"\b(?:Async)?EngineArgs\b|\bServerArgs\b")
#: the V0 engine's start line (vllm/engine/llm_engine.py:88 in 0.3.3, without the version; "(vX)" from 0.4)
_VLLM_V0_ENGINE = _rule('Initializing an LLM engine', r"Initializing an LLM engine (?:\(v([^)\s]+)\) )?with config:", re.M)
_VLLM_ARGS = _rule('non-default args: ', r"non-default args: (\{.*\})\s*$", re.M)  # serve/utils/api_utils.py:286
_VLLM_KV = _rule('KV cache size: ',   # v1/core/kv_cache_utils.py:2328
    r"(GPU|CPU|XPU|TPU)? ?KV cache size: ([\d,]+) tokens", re.M)
_VLLM_CONCURRENCY = _rule('Maximum concurrency for', r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x", re.M)
_VLLM_BACKEND = _rule('Using ',   # platforms/cuda.py:507, platforms/cpu.py:163
    r"Using (?:AttentionBackendEnum\.)?([A-Z][A-Z0-9_]+) (?:attention )?backend\b", re.M)
#: which top-k/top-p sampler the profile's sampler pass ran (its peak differs: doctor/model/memory.py non_kv_bytes):
#: vllm 0.11.0 v1/sample/ops/topk_topp_sampler.py:50-69 logs one of these at start-up
_VLLM_SAMPLER = _rule('top-p & top-k sampling',
    r"(Using FlashInfer for top-p & top-k sampling|PyTorch-native implementation of top-p & top-k sampling)", re.M)
#: the MXFP4 MoE backend (vllm 0.11.0 model_executor/layers/quantization/mxfp4.py:96-102)
_VLLM_MXFP4 = _rule('backend', r"\bUsing (Marlin|Triton) backend\b", re.M)
_VLLM_WEIGHTS = _rule('Model loading took',   # v1/worker/gpu_model_runner.py:5150
    r"Model loading took ([\d.]+) ?GiB memory", re.M)
_VLLM_KV_MEMORY = _rule('Available KV cache memory', r"Available KV cache memory: ([\d.]+) ?GiB", re.M)  # v1/worker/gpu_worker.py:760
_VLLM_CPU_KV_MEMORY = _rule('for KV cache', r"Explicitly set \(([\d.]+)/[\d.]+\) GiB for KV cache", re.M)
# v1/worker/gpu_model_runner.py:6517 (0.33.0); the V0 worker said it without the memory (vllm/worker/model_runner.py:756
# in 0.3.3: "Graph capturing finished in N secs.")
_VLLM_GRAPHS = _rule('Graph capturing finished',
    r"Graph capturing finished in ([\d.]+) secs?(?:, took ([\d.]+) GiB)?", re.M)
# "Capturing CUDA graphs (…)" (V1's progress bar, 0.33.0 gpu_model_runner.py:6592); V0: "Capturing the model for CUDA
# graphs." (vllm/worker/model_runner.py:684, 0.3.3) and "Capturing cudagraphs for decoding." (0.6.x
# worker/model_runner.py:1413, as vllm-project/vllm#11251's log prints its site)
_VLLM_GRAPH_START = _rule('Capturing ', r"Capturing (?:CUDA graphs?\b|the model for CUDA graphs|cudagraphs\b)", re.M)
_VLLM_STATS = _rule('Avg prompt throughput',   # v1/metrics/loggers.py:283
    r"Engine (\d+): Avg prompt throughput: ([\d.]+) tokens/s, Avg generation throughput: ([\d.]+) tokens/s, "
    r"Running: (\d+) reqs, Waiting: (\d+) reqs.*?KV cache usage: ([\d.]+)%(?:, Prefix cache hit rate: ([\d.]+)%)?",
    re.M)
# 0.32.0 prints "Mean acceptance length" first; releases of late 2025 put "Draft acceptance rate: N%" before it
# (vllm-project/vllm#24127, fixtures/logs/public/vllm-spec-decode-good-acceptance.log) and the first V1
# releases had no mean length at all (vllm-project/vllm#15902): accepted / drafted is in every one.
_VLLM_SPEC = _rule('SpecDecoding metrics',   # v1/spec_decode/metrics.py:121
    r"SpecDecoding metrics: (?:Draft acceptance rate: [\d.]+%, )?(?:Mean acceptance length: ([\d.]+), )?"
    r".*?Accepted: (\d+) tokens, Drafted: (\d+) tokens", re.M)
_VLLM_BLOCK = _rule("Setting attention block size to",  # platforms/interface.py:1097 (hybrid models)
                    r"Setting attention block size to (\d+) tokens")
_VLLM_OVERRIDE = _rule("num_gpu_blocks_override",  # v1/core/kv_cache_utils.py:2620
                       r"Overriding num_gpu_blocks=(\d+) with num_gpu_blocks_override=(\d+)")
_VLLM_KV_BYTES = _rule("as specified by kv_cache_memory_bytes",  # v1/worker/gpu_worker.py:659
                       r"reserved ([\d.]+) ?GiB memory for KV Cache as specified by kv_cache_memory_bytes")
_VLLM_GRAPH_ESTIMATE = _rule("Estimated CUDA graph memory",  # v1/worker/gpu_model_runner.py:6475
                             r"Estimated CUDA graph memory: ([\d.]+) GiB")
_VLLM_V0_PROFILE = _rule("the rest of the memory reserved for KV Cache",  # V0 worker.py (0.6)
                         r"model weights take ([\d.]+) ?GiB;.*the rest of the memory reserved for KV Cache is "
                         r"([\d.]+) ?GiB")
_VLLM_UTILIZATION = _rule("x gpu_memory_utilization (",
                          r"total_gpu_memory \(([\d.]+) ?GiB\) x gpu_memory_utilization \(([\d.]+)\)")
_VLLM_READY = _rule('Starting vLLM', r"Starting vLLM (?:API )?server on ", re.M)

# SGLang (0.5.23 wheel)
_SGL_ARGS = _rule('server_args=', r"server_args=(\{.*\}|ServerArgs\(.*\))\s*$", re.M)  # srt/entrypoints/engine.py:311
_SGL_KV = _rule('KV Cache is allocated', r"KV Cache is allocated\. dtype: (\S+), #tokens: (\d+)", re.M)  # mem_cache/memory_pool.py
_SGL_POOL = _rule('max_total_num_tokens=', r"max_total_num_tokens=(\d+), .*?max_running_requests=(\d+), context_len=(\d+)", re.M)
_SGL_WEIGHTS = _rule('Load weight end', r"Load weight end\..*?mem usage=([\d.]+) GB", re.M)
_SGL_GRAPH = _rule('graph end',   # model_runner_components/cuda_graph_setup.py:696 (and the decode graph's line)
    r"Capture (?:[\w ]*?)cuda graph end\. .*?mem usage=([\d.]+) GB", re.M | re.I)
_SGL_GRAPH_START = _rule('graph begin', r"Capture (?:[\w ]*?)cuda graph begin", re.M | re.I)
_SGL_GRAPH_OFF = _rule('Cuda graph is disabled', r"(Cuda graph is disabled .*)$", re.M)
# Hybrid models print "#full token: N, full token usage: X, mamba ..." instead (pool_stats_observer.py:119-147),
# speculative decoding "accept len: L, accept rate: R" (metrics_reporter.py:1005; R = accepted / drafted).
# 0.4.x wrote "Decode batch. #running-req: …" (sglang 0.4.3 srt/managers/scheduler.py:796-818), later ", "
_SGL_STATS = _rule('Decode batch',   # managers/scheduler_components/metrics_reporter.py:963
    r"Decode batch(?: \[\d+\])?[.,] #running-req: (\d+), #(?:full )?token: (\d+), (?:full )?token usage: ([\d.]+),"
    r"(?:.*?accept len: ([\d.]+),)?(?: accept rate: ([\d.]+),)?.*?#queue-req: (\d+)", re.M)
# The acceptance length alone, in any engine's wording: SGLang's "accept len: L" (metrics_reporter.py:1005) and its
# test runner's "accept_len: L" (test/run_combined_tests.py:196), both 0.5.23. L is the tokens kept per verify step
# and request, the target model's own token included (metrics_reporter.py:973, spec_num_accept_tokens /
# spec_num_forward_ct; batch_result_processor.py:986-989 adds the step's generated tokens): 1.00 keeps no draft.
_SPEC_LENGTH = _rule('accept', r"\baccept(?: len|_len|_length| length): ([\d.]+)", re.M)
# A thinking block closed but never opened in what the model returned (a client's answer, a logged output): the
# prompt opened it (a chat template that ends the prompt with "<think>"), so the output holds only "</think>".
_THINK_END = _rule('</think>', r"^(.*</think>.*)$", re.M)
_SGL_READY = _rule('fired up', r"The server is fired up and ready to roll", re.M)
#: a request refused at admission (managers/utils.py:282-285, 0.5.23; 0.4.3 :33-36): the limit is
#: min(context_len - 1, KV pool tokens - 1) - 5 (managers/tp_worker.py:568-572, 0.5.23; 0.4.3 :110-114)
_SGL_INPUT_LIMIT = _rule('exceeds the maximum allowed length',
                         r"Input length \((\d+) tokens\) exceeds the maximum allowed length \((\d+) tokens\)", re.M)
#: SGLang's refusal to size an empty KV pool quotes the static fraction it ran under (sglang 0.5.23
#: srt/model_executor/pool_configurator.py:95-99 "Current value: mem_fraction_static=X"; releases of late 2025 wrote
#: the f-string's debug form "self.server_args.mem_fraction_static=X"; 0.4.3 model_runner.py:627-630 quoted none)
_SGL_POOL_REFUSED = _rule('Not enough memory', r"Not enough memory\. Please try to increase --mem-fraction-static\."
                          r"\s*Current value: (?:self\.server_args\.)?mem_fraction_static=([0-9]*\.?[0-9]+)", re.M)
_SGL_MARK = re.compile(r"sglang|\] server_args=|#running-req", re.M)

# any engine
_WARNING = _rule('WARNING ', r"^" + _OUTER + r"(?:\([^()\n]*\bpid=\d+[^()\n]*\) )?WARNING [\d-]+ [\d:.]+ "
                      r"(?:\[[^\]\n]*\]|[\w.]+:\d+\]) (.+)$", re.M)
#: vLLM's ERROR/CRITICAL lines (the message after the prefix): what no traceback's last line says
_ERROR_LEVEL = _rule('ERROR ', r"^" + _OUTER + r"(?:\([^()\n]*\bpid=\d+[^()\n]*\) )?(?:ERROR|CRITICAL) [\d-]+ [\d:.]+ "
                           r"(?:\[[^\]\n]*\]|[\w.]+:\d+\]) (.+)$", re.M)
_PY_WARNING = _rule('Warning: ', r"^" + _OUTER + r"\S+\.py:\d+: (\w*Warning: .+)$", re.M)
_TRACEBACK = _rule('Traceback (most recent call last)', _PREFIX + r"Traceback \(most recent call last\):\s*$", re.M)
_EXCEPTION = re.compile(
    _PREFIX + r"((?:[A-Za-z_]\w*\.)*(?:[A-Za-z_]\w*)?(?:Error|Exception|Exit)(?::\s.*)?)$", re.M)
_ARGPARSE = _rule(': error: ', r"^" + _OUTER + r"\S+(?: serve)?: error: (.+)$", re.M)
#: How much of each end the engine is guessed from when no start-up line names it.
_WINDOW = 64 * 1024
#: At most this many distinct warnings, errors and traceback lines are kept as facts.
MAX_ITEMS = 20
MAX_TRACEBACK_LINES = 40


@dataclass
class _Scan:
    """The log's text with fast, literal-first searching; remembers which lines gave facts (the excerpt).

    Every pattern is paired with a literal its line must contain: ``str.find`` (C speed) finds the candidate
    lines and the regular expression runs on those lines only, so a 2 MB excerpt of request lines costs a
    few milliseconds per pattern instead of a full regex pass each.
    """

    lines: tuple[str, ...]
    text: str = ""
    starts: list[int] = field(default_factory=list)
    kept: set[int] = field(default_factory=set)
    #: excerpt lines written differently from the log: an argument dict, re-printed from its redacted value
    #: (redacting its text would turn ``'api_key': None`` into a masked value the replay could not read)
    rewritten: dict[int, str] = field(default_factory=dict)
    #: the line index of the last match ``last`` returned
    where: int = -1

    def __post_init__(self) -> None:
        self.text = "\n".join(self.lines)
        self.starts = [0, *accumulate(len(line) + 1 for line in self.lines)][:len(self.lines)]

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset) - 1

    def keep(self, m: re.Match[str]) -> re.Match[str]:
        first, last = self.line_of(m.start()), self.line_of(max(m.end() - 1, m.start()))
        self.kept.update(range(first, last + 1))
        return m

    def _candidates(self, keyword: str, *, reverse: bool = False) -> Iterator[int]:
        seen = -1
        if reverse:
            end = len(self.text)
            while (at := self.text.rfind(keyword, 0, end)) >= 0:
                index = self.line_of(at)
                yield index
                end = self.starts[index]
            return
        pos = 0
        while (at := self.text.find(keyword, pos)) >= 0:
            index = self.line_of(at)
            if index != seen:
                seen = index
                yield index
            pos = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.text)

    def all(self, rule: _Rule) -> list[tuple[int, re.Match[str]]]:
        found = []
        for index in self._candidates(rule.keyword):
            m = rule.pattern.search(self.lines[index])
            if m:
                self.kept.add(index)
                found.append((index, m))
        return found

    def last(self, rule: _Rule) -> re.Match[str] | None:
        for index in self._candidates(rule.keyword, reverse=True):
            m = rule.pattern.search(self.lines[index])
            if m:
                self.kept.add(index)
                self.where = index
                return m
        return None

    def rewrite_literal(self, m: re.Match[str], value: dict[str, Any]) -> None:
        """The excerpt keeps the line of ``m`` (from ``last``) with its literal replaced by ``value``'s repr
        (already redacted; a secret-named key whose value is no string — ``'api_key': None`` — is guarded, so a
        later redaction pass cannot turn None into a masked string)."""
        line = self.lines[self.where]
        shown = repr(value)
        for key, item in value.items():
            if is_secret_name(key) and not isinstance(item, str) and repr(key) == f"'{key}'":
                shown = shown.replace(f"'{key}': ", f"'{_guard_name(key)}': ")  # the character, not its escape
        self.rewritten[self.where] = _redact_line(line[:m.start(1)]) + shown + _redact_line(line[m.end(1):])

    def first(self, rule: _Rule) -> re.Match[str] | None:
        for index in self._candidates(rule.keyword):
            m = rule.pattern.search(self.lines[index])
            if m:
                self.kept.add(index)
                return m
        return None

    def line(self, index: int) -> str:
        return self.lines[index]


@dataclass(frozen=True)
class LogReading:
    """The facts a log gave, and the redacted lines that give them again (what a snapshot records)."""

    facts: Facts
    excerpt: dict[str, Any]


def log_facts(log: LogText, signatures: dict[str, list[dict[str, Any]]] | None = None) -> LogReading:
    """Facts from a log; ``signatures`` (cause id → [{pattern, engine}]) name the causes the log shows."""
    scan = _Scan(log.lines)
    facts = Facts()
    label = _redact(log.label)
    src = f"log {label.removeprefix('--log ')}"

    # The log is searched as it is and what is kept is redacted: every value here, and every excerpt line
    # (redacting 2 MB of request lines first would cost a second; a replay parses the redacted lines and
    # reaches the same values, tests/test_logs.py).
    def put(key: str, value: Any, what: str) -> None:
        if value is None:  # unknown, with the reason
            facts.error(key, f"{src}: {what}")
        else:
            facts.set(key, _redact_value(value), f"{src}: {what}", observed=True)

    put("log.bytes", log.total_bytes, "size")
    if log.skipped_bytes:
        put("log.skipped_bytes", log.skipped_bytes, "bytes between the head and the tail that were not read")
    engine = _engine(scan, put)
    if engine == "vllm":
        _vllm(scan, put)
    elif engine == "sglang":
        _sglang(scan, put)
    _problems(scan, put)
    _pool_refusal(scan, put)
    _engine_kwargs(scan, put, engine)
    _xid_events(scan, put)
    _rocm(scan, put)
    _spec_length(scan, put, facts)
    _reasoning_end_only(scan, put)
    if "log.started" not in facts:  # no ready line: it died starting, or that part of the log was not read
        put("log.started", False if "log.error" in facts else None,
            "an error, and no line saying the server is ready" if "log.error" in facts
            else "no line saying the server is ready in the part of the log read")
    if signatures is not None:
        _named(scan, put, engine, signatures, log, facts)
    lines = [scan.rewritten.get(i) or _redact_line(scan.line(i)) for i in sorted(scan.kept)]
    excerpt = {"label": label, "total_bytes": log.total_bytes, "skipped_bytes": log.skipped_bytes, "lines": lines}
    return LogReading(facts, excerpt)


def _engine(scan: _Scan, put: Any) -> str | None:
    for pattern, what in ((_VLLM_BANNER, "the start-up banner"), (_VLLM_ENGINE, "'Initializing a V1 LLM engine'"),
                          (_VLLM_OLD_VERSION, "'vLLM API server version'")):
        m = scan.first(pattern)
        if m:
            put("log.engine", "vllm", what)
            put("log.version", m.group(1).lstrip("v"), what)
            return "vllm"
    m = scan.first(_VLLM_V0_ENGINE)
    if m:
        put("log.engine", "vllm", "'Initializing an LLM engine' (the V0 engine)")
        if m.group(1):
            put("log.version", m.group(1).lstrip("v"), "'Initializing an LLM engine (vX)'")
        return "vllm"
    # the KV capacity line is vLLM's own (vllm 0.33.0 vllm/v1/core/kv_cache_utils.py:1147-1150; V0's executor)
    if scan.first(_VLLM_ARGS) or scan.first(_VLLM_STATS) or scan.first(_VLLM_CONCURRENCY):
        put("log.engine", "vllm", "vLLM's start-up lines")
        return "vllm"
    if scan.first(_SGL_ARGS) or scan.first(_SGL_STATS) or scan.first(_SGL_KV):
        put("log.engine", "sglang", "SGLang's start-up lines")
        return "sglang"
    window = scan.text[:_WINDOW] + scan.text[-_WINDOW:]
    if _SGL_MARK.search(window) or _SGL_LINE.search(window):
        put("log.engine", "sglang", "SGLang's line format or paths in the log")
        return "sglang"
    if _VLLM_LINE.search(window) or "/vllm/" in window:
        put("log.engine", "vllm", "vLLM's line format or paths in the log")
        return "vllm"
    return None


def _vllm(scan: _Scan, put: Any) -> None:
    m = scan.last(_VLLM_ARGS)
    if m:
        args = _literal(m.group(1))
        if isinstance(args, dict):
            args = _redact_value(args)  # the command rebuilt below must not carry a secret either
            scan.rewrite_literal(m, args)
            put("log.args", args, "non-default args")
            model = args.get("model_tag") or args.get("model")
            if isinstance(model, str):
                put("log.model", model, "non-default args model")
            command = vllm_command(args)
            if command:
                put("log.launch_command", command, "rebuilt from the non-default args vLLM printed")
    m = scan.last(_VLLM_KV)
    if m:
        put("log.kv_cache_tokens", int(m.group(2).replace(",", "")), f"{m.group(1) or 'GPU'} KV cache size")
    m = scan.last(_VLLM_CONCURRENCY)
    if m:
        put("log.max_concurrency", float(m.group(2)),
            f"maximum concurrency for {m.group(1)} tokens per request")
        put("log.max_concurrency_tokens", int(m.group(1).replace(",", "")),
            "the tokens per request of 'Maximum concurrency for N tokens per request' (max_model_len)")
    m = scan.last(_VLLM_BACKEND)
    if m:
        put("log.attention_backend", m.group(1), "attention backend chosen")
    m = scan.last(_VLLM_SAMPLER)
    if m:
        put("log.sampler", "flashinfer" if m.group(1).startswith("Using FlashInfer") else "native",
            "the top-k/top-p sampler vLLM chose")
    m = scan.last(_VLLM_MXFP4)
    if m:
        put("log.mxfp4_backend", m.group(1), "the MXFP4 MoE backend vLLM chose")
    m = scan.last(_VLLM_WEIGHTS)
    profile = scan.last(_VLLM_V0_PROFILE)
    if m:
        put("log.weights_gib", float(m.group(1)), "model loading")
    elif profile:
        put("log.weights_gib", float(profile.group(1)), "memory profile: model weights")
    m = scan.last(_VLLM_KV_MEMORY) or scan.last(_VLLM_CPU_KV_MEMORY)
    if m:
        put("log.kv_cache_gib", float(m.group(1)), "KV cache memory")
    elif profile:
        put("log.kv_cache_gib", float(profile.group(2)), "memory profile: reserved for KV cache")
    m = scan.last(_VLLM_UTILIZATION)
    if m:
        put("log.gpu_memory_gib", float(m.group(1)), "memory profile: total_gpu_memory")
        put("log.gpu_memory_utilization", float(m.group(2)), "memory profile: gpu_memory_utilization")
    m = scan.last(_VLLM_BLOCK)
    if m:
        put("log.block_size", int(m.group(1)), "attention block size set for the hybrid model")
    overrides = []
    m = scan.last(_VLLM_OVERRIDE)
    if m:
        overrides.append(f"num_gpu_blocks_override={m.group(2)} (measured: {m.group(1)} blocks)")
    m = scan.last(_VLLM_KV_BYTES)
    if m:
        overrides.append(f"kv_cache_memory_bytes ({m.group(1)} GiB)")
    if overrides:
        put("log.kv_override", overrides, "KV size set by hand, as the engine logged it")
    graphs = scan.last(_VLLM_GRAPHS)
    estimate = scan.last(_VLLM_GRAPH_ESTIMATE)
    if graphs:
        put("log.cuda_graph", "captured", "graph capturing finished")
        if graphs.group(2) is not None:
            put("log.cuda_graph_gib", float(graphs.group(2)), "graph capturing finished")
    elif scan.last(_VLLM_GRAPH_START):
        put("log.cuda_graph", "capturing", "capture started, never finished")
    elif estimate:
        put("log.cuda_graph", "estimated", "CUDA graph memory estimated before capture")
    if estimate and not graphs:
        put("log.cuda_graph_gib", float(estimate.group(1)), "estimated CUDA graph memory")
    m = scan.last(_VLLM_STATS)
    if m:
        stats = {"running": int(m.group(4)), "waiting": int(m.group(5)), "kv_usage": float(m.group(6)) / 100}
        if m.group(7) is not None:
            stats["prefix_hit_rate"] = float(m.group(7)) / 100
        put("log.stats", stats, "the last engine stats line")
    m = scan.last(_VLLM_SPEC)
    if m and int(m.group(3)) > 0:
        if m.group(1) is not None:
            put("log.spec_accept_length", float(m.group(1)), "SpecDecoding metrics")
        put("log.spec_accept_rate", round(int(m.group(2)) / int(m.group(3)), 4), "SpecDecoding metrics "
            "accepted / drafted")
    if scan.last(_VLLM_READY):
        put("log.started", True, "'Starting vLLM server on'")


def _sglang(scan: _Scan, put: Any) -> None:
    m = scan.last(_SGL_ARGS)
    full: dict[str, Any] = {}
    if m:
        full = _redact_value(_sglang_all_args(m.group(1)))
        if full:
            scan.rewrite_literal(m, full)
        args = _sglang_args(full)
        if args:
            put("log.args", args, "server_args as resolved at start-up, where they differ from the defaults")
            if isinstance(args.get("model_path"), str):
                put("log.model", args["model_path"], "server_args model_path")
        # SGLang prints the *resolved* arguments: mem_fraction_static, chunked_prefill_size, attention_backend,
        # page_size... are filled in by SGLang itself (sglang/srt/server_args.py), so they cannot be told apart
        # from flags the operator gave, and a command rebuilt from them would blame the operator for them.
        why = ("SGLang logs its resolved server_args, not the command line: values it chose itself cannot be "
                      "told from flags that were given")
        put("log.launch_command", None, why)
    m = scan.last(_SGL_KV)
    pool = scan.last(_SGL_POOL)
    if pool:
        put("log.kv_cache_tokens", int(pool.group(1)), "max_total_num_tokens")
        put("log.max_running_requests", int(pool.group(2)), "max_running_requests")
    elif m:
        put("log.kv_cache_tokens", int(m.group(2)), "KV Cache is allocated")
    if m:
        put("log.kv_cache_dtype", m.group(1).removeprefix("torch."), "KV Cache is allocated")
    if full.get("attention_backend"):
        put("log.attention_backend", full["attention_backend"], "server_args attention_backend")
    m = scan.last(_SGL_WEIGHTS)
    if m:
        put("log.weights_gib", round(float(m.group(1)) * 1e9 / 2**30, 3), "Load weight end (GB)")
    graphs = scan.all(_SGL_GRAPH)
    off = scan.last(_SGL_GRAPH_OFF)
    if graphs:
        put("log.cuda_graph", "captured", "Capture cuda graph end")
        put("log.cuda_graph_gib", round(sum(float(g.group(1)) for _, g in graphs) * 1e9 / 2**30, 3),
            "Capture cuda graph end (GB)")
    elif scan.last(_SGL_GRAPH_START):
        put("log.cuda_graph", "capturing", "capture began, never ended")
    elif off:
        put("log.cuda_graph", "disabled", off.group(1)[:200])
    m = scan.last(_SGL_STATS)
    if m:
        stats: dict[str, Any] = {"running": int(m.group(1)), "waiting": int(m.group(6)),
                                 "kv_usage": float(m.group(3))}
        if m.group(4) is not None:
            stats["spec_accept_length"] = float(m.group(4))
        put("log.stats", stats, "the last Decode batch line")
        if m.group(5) is not None:
            put("log.spec_accept_rate", float(m.group(5)), "the last Decode batch line's accept rate")
    m = scan.last(_SGL_INPUT_LIMIT)
    if m:
        put("log.max_request_limit", int(m.group(2)) + 6,
            "'exceeds the maximum allowed length' + 6: min(context length, KV pool tokens)")
    if scan.last(_SGL_READY):
        put("log.started", True, "'The server is fired up and ready to roll'")
    put("log.version", None, "SGLang does not print its version at start-up (ask GET /version or /server_info)")


def _engine_kwargs(scan: _Scan, put: Any, engine: str | None) -> None:
    """log.engine_kwargs_unknown, and the engine its argument class names when nothing else did (vLLM's
    EngineArgs / AsyncEngineArgs, SGLang's ServerArgs)."""
    ray = scan.all(_RAY_ENGINE_KWARG)
    if ray:
        put("log.engine_kwargs_unknown", list(dict.fromkeys(m.group(1) for _, m in ray))[:MAX_ITEMS],
            "Ray Serve LLM's 'Unknown engine argument' (a key that is no field of vLLM's engine arguments)")
        if engine is None:
            put("log.engine", "vllm", "Ray Serve LLM checks its engine_kwargs against vLLM's AsyncEngineArgs")
        return
    found = scan.all(_ENGINE_KWARG)
    kwargs = [m.group(1) for _, m in found]
    cls = _ENGINE_ARGS_CLASS.search(scan.text) if kwargs else None
    if cls is None:
        return
    scan.keep(cls)  # the excerpt (what check replays) keeps both lines
    scan.kept.update(index for index, _ in found)
    put("log.engine_kwargs_unknown", list(dict.fromkeys(kwargs))[:MAX_ITEMS],
        f"'__init__() got an unexpected keyword argument' where {cls.group(0)} is built")
    if engine is None:
        put("log.engine", "sglang" if cls.group(0) == "ServerArgs" else "vllm", f"{cls.group(0)} in the traceback")


def _pool_refusal(scan: _Scan, put: Any) -> None:
    """log.refused_mem_fraction: the static fraction SGLang quotes when it refuses to start with no room for the KV
    pool. Read whatever the engine guess (the line is SGLang's own, and an excerpt of one line names no engine)."""
    m = scan.last(_SGL_POOL_REFUSED)
    if m:
        put("log.refused_mem_fraction", float(m.group(1)), "'Not enough memory … Current value: mem_fraction_static='")


def _problems(scan: _Scan, put: Any) -> None:
    warnings: list[str] = []
    for _, m in [*scan.all(_WARNING), *scan.all(_PY_WARNING)]:
        message = m.group(1).strip()
        if message not in warnings and len(warnings) < MAX_ITEMS:
            warnings.append(message)
    if warnings:
        put("log.warnings", warnings, "WARNING lines (distinct, first 20)")
    # the last line of each distinct message, the last 20 of them: only those go to the excerpt (a traceback
    # printed at ERROR level is hundreds of lines, and the traceback fact already keeps it)
    last: dict[str, int] = {}
    for index in scan._candidates(_ERROR_LEVEL.keyword):
        m = _ERROR_LEVEL.pattern.search(scan.lines[index])
        if m:
            last.pop(m.group(1).strip(), None)
            last[m.group(1).strip()] = index
    if last:
        chosen = list(last.items())[-MAX_ITEMS:]
        scan.kept.update(index for _, index in chosen)
        put("log.error_lines", [message for message, _ in chosen], "ERROR/CRITICAL lines (distinct, the last 20)")
    errors = sorted({(index, m.group(1).strip()) for keyword in ("Error", "Exception", "Exit")
                     for index, m in scan.all(_rule(keyword, _EXCEPTION.pattern, _EXCEPTION.flags))}
                    | {(index, m.group(1).strip()) for index, m in scan.all(_ARGPARSE)})
    if errors:
        distinct = list(dict.fromkeys(e for _, e in errors))
        put("log.errors", distinct[-MAX_ITEMS:], "exception lines (distinct, in order)")
        put("log.error", errors[-1][1], "the last exception line")
    tb = scan.last(_TRACEBACK)
    if tb:
        first = scan.where
        end = next((i for i in range(first, len(scan.lines)) if _EXCEPTION.match(scan.line(i))),
                   min(first + MAX_TRACEBACK_LINES, len(scan.lines) - 1))
        lines = [_strip_prefix(scan.line(i)) for i in range(first, end + 1)]
        scan.kept.update(range(first, end + 1))
        if len(lines) > MAX_TRACEBACK_LINES:
            lines = lines[:2] + ["..."] + lines[-(MAX_TRACEBACK_LINES - 3):]
        put("log.traceback", lines, "the last traceback")


#: the GPU's own ROCm target in a refusal ("mla_gluon requires gfx950 (CDNA4), got gfx942": ROCm/aiter#4831) or
#: a ROCm runtime line (HIP's rocdevice.cpp, HSA status codes): only a ROCm build on an AMD GPU prints them
_ROCM = (_rule('got gfx', r"\bgot (gfx\d{3,4}[a-z]?)\b", re.M),
         _rule('HSA_STATUS_ERROR_', r"\b(HSA_STATUS_ERROR_[A-Z_]+)", re.M),
         _rule('rocdevice.cpp', r"\b(rocdevice\.cpp)", re.M))


def _spec_length(scan: _Scan, put: Any, facts: Facts) -> None:
    """log.spec_accept_length from a line that gives only the acceptance length (SGLang 0.4.x's Decode batch line
    has no accept rate; a benchmark's summary line), and log.spec_accept_rate 0 where that length is 1.00 or less:
    the length counts the target model's own token, so 1.00 means every draft token was rejected. A longer length
    without the number of draft tokens per step decides no rate, and a rate the engine printed wins."""
    if "log.spec_accept_rate" in facts:
        return
    m = scan.last(_SPEC_LENGTH)
    if not m:
        return
    try:
        length = float(m.group(1))
    except ValueError:  # "accept len: ." is no number
        return
    if "log.spec_accept_length" not in facts:
        put("log.spec_accept_length", length, "the last acceptance length printed")
    if 0 < length <= 1.0:
        put("log.spec_accept_rate", 0.0, f"acceptance length {m.group(1)}: the target's own token only, no draft "
            "token kept (sglang 0.5.23 metrics_reporter.py:973)")


def _reasoning_end_only(scan: _Scan, put: Any) -> None:
    """log.reasoning_end_only: the text closes a thinking block ("</think>") and opens none. The model's turn was
    opened by the prompt, so a parser that looks for the opening marker in the output finds none and leaves the
    thinking in the answer (vLLM 0.7.2 vllm/entrypoints/openai/reasoning_parsers/deepseek_r1_reasoning_parser.py:
    112-114 returns no reasoning without "<think>"; 0.7.3 :130-135 puts the marker back)."""
    if "<think>" in scan.text:
        return
    m = scan.first(_THINK_END)
    if m:
        put("log.reasoning_end_only", m.group(1).strip()[:200], "a '</think>' with no '<think>' before it")


def _rocm(scan: _Scan, put: Any) -> None:
    """log.rocm: the ROCm target the GPU reported, or the ROCm runtime's own line: the log is from an AMD GPU."""
    for rule in _ROCM:
        m = scan.first(rule)
        if m:
            put("log.rocm", m.group(1), "a ROCm target or runtime line (an AMD GPU)")
            return


def _xid_events(scan: _Scan, put: Any) -> None:
    """The NVIDIA driver's Xid lines, when the log given is (or includes) the kernel log: dmesg, journalctl -k;
    and its multi-line "fallen off the bus" report that comes without one. One pass finds every ``NVRM:`` line
    (both forms have it), so a log without them costs a single literal search, as before the second form."""
    from doctor.hardware.xid import XID_LINE, fallen_off_bus, parse_line

    driver = list(scan._candidates("NVRM:"))
    events = []
    for index in driver:
        m = XID_LINE.search(scan.lines[index])
        if m and (found := parse_line(m.group(0))):
            scan.kept.add(index)
            events.append(found)
    if any("fallen off the bus" in scan.lines[i] for i in driver):
        for found, start, end in fallen_off_bus(scan.text, events):
            scan.kept.update(range(scan.line_of(start), scan.line_of(end) + 1))  # the excerpt replays them
            events.append(found)
    if events:
        put("log.xid_events", events[-MAX_ITEMS:], "NVRM: Xid lines (the kernel log)")


def _named(scan: _Scan, put: Any, engine: str | None, signatures: dict[str, list[dict[str, Any]]], log: LogText,
           facts: Facts) -> None:
    """``log.causes``: the causes the log names, by their regex signatures and by the error catalogs."""
    from doctor.logs.catalog_facts import catalog_facts

    named = _signatures(scan, put, engine, signatures) if signatures else []
    kept, more = catalog_facts(log.lines, engine, facts.get("log.version"), put, started=facts.get("log.started"))
    scan.kept.update(kept)
    # a line a cause's own pattern already named is that cause's, not also its catalog class's
    more = [m for m in more if not any(m["line"] in n["line"] or n["line"] in m["line"] for n in named)]
    for m in more:
        if m["cause"] in {n["cause"] for n in named}:
            continue
        named.append(m)
        put(f"log.seen.{m['cause'].replace('-', '_')}", m["line"], f"the line that names {m['cause']}")
    refusals = facts.get("log.catalog.unmapped_refusals")
    # only a cause that explains a failed start hides the start-up refusals nobody placed (a deprecation warning's
    # cause, a running server's, does not)
    starts = {cause for cause, sigs in signatures.items()
              if any(s.get("symptom", "launch-failure") == "launch-failure" for s in sigs)}
    if refusals and any(m["cause"] in starts for m in named):  # the unplaced errors stay in log.catalog.unmapped
        put("log.catalog.unmapped_refusals", [], "none: the causes the log names explain the failure")
    elif refusals:  # never silent: the engine's own error is the finding (engine-error-unplaced)
        named.append({"cause": "engine-error-unplaced", "line": refusals[0]["message"]})
    put("log.signatures", named, "lines matching the causes' log_signatures (playbooks/causes/) and the error catalogs")
    put("log.causes", [m["cause"] for m in named], "causes named by their log signatures")


def _signatures(scan: _Scan, put: Any, engine: str | None,
                signatures: dict[str, list[dict[str, Any]]]) -> list[dict[str, str]]:
    """Which causes' regex log signatures (playbooks/causes/<id>.yaml ``log_signatures`` with a ``pattern``) the
    log carries; the error-catalog ones (``catalog``: issue 22) are matched line by line by
    doctor.logs.catalog_facts."""
    matched: list[dict[str, str]] = []
    for cause, sigs in signatures.items():
        for sig in sigs:
            if "pattern" not in sig:
                continue
            if sig.get("engine", "any") not in ("any", engine) and engine is not None:
                continue
            m = re.search(sig["pattern"], scan.text, re.M)
            if m:
                scan.keep(m)
                line = _strip_prefix(scan.line(scan.line_of(m.end() - 1))).strip()[:300]
                matched.append({"cause": cause, "line": line})
                put(f"log.seen.{cause.replace('-', '_')}", line, f"the line that names {cause}")
                break
    return matched


#: SGLang's batch lines count tokens (``#token: 24``, ``#new-token: 14``, a hybrid model's ``#full token: 350592``):
#: numbers, not secrets named "token".
_TOKEN_COUNT = re.compile(r"(#(?:full )?[\w-]*tok)(en: \d)")
#: A word joiner inside a name ("tok⁠en") hides it from redaction. Excerpt lines keep it — a snapshot redacts its
#: extra section once more, and must find nothing left to change — and a replay takes it out (GUARD).
GUARD = "\u2060"


def _guard_name(name: str) -> str:
    """Before the last letter: redaction reads a name up to the separator, so every tail it could read is cut."""
    return name[:-1] + GUARD + name[-1:]


def _redact_line(line: str) -> str:
    """An excerpt line: redacted, the non-secrets that look like secrets guarded."""
    return redact_text(_TOKEN_COUNT.sub(rf"\1{GUARD}\2", line))


@lru_cache(maxsize=8192)  # a log's facts repeat their strings (each template's guard, file, function), twice a run
def _redact(text: str) -> str:
    return _redact_line(text).replace(GUARD, "")


def _redact_value(value: Any) -> Any:
    """A fact's value with secrets masked: by key in a dict (``'api_key': …``), by shape in text."""
    if isinstance(value, str):
        return _redact(value)
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _redact_value(v) for k, v in redact_obj(value).items()}
    return value


def _strip_prefix(line: str) -> str:
    return re.sub(_PREFIX, "", line, count=1)


def _literal(text: str) -> Any:
    """A Python literal the engine printed (``{'max_model_len': 512}``); None when it is not one."""
    # redaction turned a secret's value into a bare *** (``'api_key': ***``): quote it back into a literal
    text = re.sub(r"(?<=: )\*\*\*(?=[,}])", "'***'", text)
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _sglang_all_args(text: str) -> dict[str, Any]:
    if text.startswith("ServerArgs("):  # older releases print the dataclass repr: key=value, ...
        text = "dict(" + text[len("ServerArgs("):]
        try:
            tree = ast.parse(text, mode="eval")
            call = tree.body
            return {k.arg: ast.literal_eval(k.value) for k in call.keywords  # type: ignore[attr-defined]
                    if k.arg and _is_literal(k.value)}
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return {}
    value = _literal(text)
    return value if isinstance(value, dict) else {}


def _is_literal(node: ast.AST) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return False
    return True


def _sglang_args(args: dict[str, Any]) -> dict[str, Any]:
    """SGLang prints every argument; keep those that differ from this release's defaults (the catalog's)."""
    if not args:
        return {}
    from doctor.engines.catalog import load_catalog

    catalog = load_catalog("sglang")
    out = {}
    for dest, value in args.items():
        spec = catalog.flag(dest)
        if spec is None or (spec.default_known and _same(spec.default, value)):
            continue
        out[dest] = value
    return out


def _same(default: Any, value: Any) -> bool:
    return default == value or (default in (None, "") and value in (None, "")) or str(default) == str(value)


def vllm_command(args: dict[str, Any]) -> str | None:
    """``vllm serve MODEL --flag value …`` from vLLM's non-default args (their dests, mapped by the catalog)."""
    from doctor.engines.catalog import load_catalog

    model = args.get("model_tag") or args.get("model")
    if not isinstance(model, str):
        return None
    catalog = load_catalog("vllm")
    words = ["vllm", "serve", model]
    for dest, value in args.items():
        if dest in ("model_tag", "model") and value == model:
            continue
        words += _flag_words(catalog, dest, value)
    return _join(words)


def _flag_words(catalog: Any, dest: str, value: Any) -> list[str]:
    spec = catalog.flag(dest)
    if spec is None or value is None:
        return []
    if spec.is_boolean:
        negation = next((o for o in spec.options if spec.is_negation(o)), None)
        if value is True:
            return [spec.name]
        return [negation] if value is False and negation else []
    if isinstance(value, (dict, list)):
        if isinstance(value, list) and spec.nargs in ("+", "*"):
            return [spec.name, *(str(v) for v in value)]
        return [spec.name, json.dumps(value)]
    return [spec.name, str(value)]


def _join(words: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(w) for w in words)
