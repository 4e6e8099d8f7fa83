"""The engine-release half of the memory model: how a release lays out MLA KV, and what it holds besides
weights and KV (activation peak of the profile run, the sampler pass, non-torch allocations).

KV bytes per token come from doctor/model/kvcache.py (the newest layouts); this module answers the two things
that changed across releases and that a pasted incident from last spring depends on:

* MLA: vLLM cached every head (padded to 256, later at qk_head_dim) until 0.7.1 cached the latent — on DeepSeek
  V2-Lite 442,368 bytes per token instead of 31,104 (14×); 0.7.1 also forced prefix caching off for MLA;
* non-KV memory: the engine sizes its KV pool with what is left of ``total × utilization`` after the weights,
  the profile run's peak (activations at ``max_num_batched_tokens``; V1 adds a sampler pass over
  ``max_num_seqs`` rows of the vocabulary, fully sorted) and non-torch allocations.

Rules and their wheel file:line are data (doctor/model/engine_memory.yaml); the estimate is checked against
public logs in tests/data/kv_datapoints.yaml (tests/test_memory_datapoints.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from doctor.model.card import ModelCard
from doctor.versions import Rule

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DATA_PATH = Path(__file__).with_name("engine_memory.yaml")
GIB = 2**30
#: Activations are 16-bit; per token the profile holds the residual stream and its norm (2 × hidden), the attention
#: in/out (2 × hidden) and the gated MLP's up/gate output and product (3 × width / TP).
_ACT_BYTES = 2
#: Bytes per (row × vocab) element of the sampler pass's peak: the fp32 logits, the sort's fp32 values and int64
#: indices (4 + 4 + 8). vLLM 0.19's "torch peak memory increase" on one H100 (llm-d-planner PR 205's logs, 8192
#: batched tokens, 1024 rows) is this pass for every model whose vocabulary outweighs its activations:
#: 1.89 GiB at 128,256 (Llama 3.1 8B, at TP 1, 2 and 4 alike), 2.21 at 152,064 (Qwen2.5 7B), 3.62-3.99 at
#: 256,000-262,208 (Gemma 2/3), 2.87 at 201,088 (gpt-oss-20b): 14.8-15.5 bytes per element.
SAMPLER_BYTES_PER_ELEMENT = 16
#: CUDA context, cuBLAS workspace, NCCL and allocator slack outside torch's count, where a release counts them in
#: the budget (V0, SGLang): vLLM logged non_torch_memory 0.35 GiB on one RTX 3090 (vllm issue 10517) and
#: 0.34-0.43 GiB per rank at TP4 (vllm issue 16570). V1 counts only what the profile run adds (engine_memory.yaml
#: profile non_torch_gib).
NON_TORCH_BYTES = int(0.4 * GIB)
#: NCCL's buffers on an NVSwitch fabric (Hopper and newer): with TP > 1 on H100, vLLM's non-torch memory grows by
#: ~1.8 GiB per rank: 3.58 GiB at TP 2 against 1.79 GiB at TP 1 (vllm PR 10511, Llama-3-8B on vLLM 0.6.4; the
#: value taken), 2.06-2.21 GiB at TP 2 and 4 against 0.24-0.27 at TP 1 (vLLM 0.19, llm-d-planner PR 205,
#: 13 runs); absent on A100 at TP 2 (dennislee22/vLLM-benchmarking). Measured, not derived.
NVSWITCH_TP_BYTES = int(1.79 * GIB)
#: What nvidia-smi counts as the GPU's memory and CUDA does not hand out: the engines size from cudaMemGetInfo's
#: total, ~450 MiB under nvidia-smi's. Logged totals against the catalog's nvidia-smi readings: H100 79.19-79.22 GiB
#: of 81,559 MiB (vllm issues 16570, PR 10511: 438-468 MiB), RTX 3090 23.69 GiB of 24,576 (issue 10517: 317),
#: RTX 4090 23.58 of 24,564 (PR 14447: 418), L40S 44.42 of 46,068 (issue 15815: 582), RTX 5090 31.4 of 32,607
#: (club-3090 issue 1087: 453); the median is taken.
CUDA_UNREPORTED_BYTES = 453 * 2**20


def rule(topic: str, engine: str, version: str | None) -> Rule | None:
    """The rule of ``topic`` for this engine release (the newest rule when the version is unknown or not a version
    number: the memory model hedges rather than refuses)."""
    from doctor.versions import release_rule

    return release_rule(DATA_PATH, topic, engine, version)


@dataclass(frozen=True)
class MlaLayout:
    """How a release caches an MLA model: ``per_head`` (every head, K and V) or ``latent``."""

    layout: str
    bytes_per_token: int | None  # whole model, one copy (per_head: split by heads across TP)
    source: str


def mla_layout(card: ModelCard, raw: dict[str, Any], engine: str, version: str | None,
               kv_dtype_bytes: int = 2, flag: Callable[[str], Any] | None = None,
               env: Callable[[str], Any] | None = None) -> MlaLayout | None:
    """The MLA layout this release uses for ``card`` (None: not an MLA model, or no rule for the engine).
    ``flag(dest)``: a launch flag's value, for a rule whose layout a flag switches (SGLang's --enable-mla in
    0.2.10-0.3.1.post1, --disable-mla in 0.3.1.post2-0.4.5.post1); ``env(name)``: a variable of the launch
    environment, for a rule whose layout one switches (vLLM's VLLM_MLA_DISABLE=1 from 0.7.1)."""
    if card.kv_lora_rank is None or engine not in ("vllm", "sglang"):
        return None
    found = rule("mla_kv", engine, version)
    if found is None:
        return None
    where = f"{engine} {version or 'newest'}: {found.evidence}"
    values = found.values
    switch = values.get("flag")
    if switch and flag is not None and flag(switch["dest"]) is True:
        values = {**values, **{k: v for k, v in switch.items() if k != "dest"}}
        where = f"--{switch['dest'].replace('_', '-')} given; {where}"
    switch = values.get("env")
    if switch and env is not None and _env_on(env(switch["name"])):
        values = {**values, **{k: v for k, v in switch.items() if k != "name"}}
        where = f"{switch['name']}=1 in the launch environment; {engine} {version or 'newest'}: {values['env_evidence']}"
    if values["layout"] == "latent":
        return MlaLayout("latent", None, where)
    size = values["head_size"]
    if size == "qk_head_dim":
        text = raw.get("text_config") if isinstance(raw.get("text_config"), dict) else raw
        size = int(text.get("qk_nope_head_dim") or 0) + int(card.qk_rope_head_dim or 0)
    kv_layers = sum(g.layers for g in card.kv_groups)
    per_token = 2 * card.attention_heads * int(size) * kv_dtype_bytes * kv_layers
    return MlaLayout("per_head", per_token, where)


def _env_on(value: Any) -> bool:
    """vLLM's reading of a boolean variable (envs.py: ``bool(int(os.getenv(name, "0")))``): a nonzero integer."""
    try:
        return int(str(value).strip()) != 0
    except ValueError:
        return False


def prefix_caching_forced_off(card: ModelCard, engine: str, version: str | None) -> Rule | None:
    """The rule that turns prefix caching off for this MLA model on this release, else None."""
    if card.kv_lora_rank is None:
        return None
    found = rule("mla_prefix_caching_forced_off", engine, version)
    return found if found is not None and found.values.get("forced") else None


@dataclass(frozen=True)
class NonKV:
    """Per-GPU memory the engine holds besides weights and KV, part by part (bytes)."""

    activation: int
    sampler: int
    non_torch: int
    batched_tokens: int
    sampler_rows: int
    source: str
    #: what the engine's kernels add to the checkpoint's weights on load (MXFP4 MoE padding)
    weight_padding: int = 0
    #: a hybrid model's recurrent state, where the release allocates it outside the KV pool (vLLM V0)
    hybrid_state: int = 0
    #: the share of the memory CUDA does not report (CUDA_UNREPORTED_BYTES × fraction): the fraction applies to
    #: cudaMemGetInfo's total, the GPU's memory here is nvidia-smi's
    unreported: int = 0
    #: the CUDA graph memory a release takes off the KV pool before sizing it (vLLM ≥ 0.20; 0 with --enforce-eager)
    cudagraphs: int = 0

    @property
    def total(self) -> int:
        # The sampler runs after the forward pass has freed its activations: the profile's peak is the larger.
        return (max(self.activation, self.sampler) + self.non_torch + self.weight_padding + self.hybrid_state
                + self.unreported + self.cudagraphs)


def _default_tier(tiers: list[dict[str, Any]], gpu_name: str | None, memory: int | None) -> dict[str, Any]:
    """The first serve-defaults tier this GPU matches (by name and memory, as the engine's arg_utils picks)."""
    name = (gpu_name or "").upper()
    for tier in tiers:
        if tier.get("names") and not any(n in name for n in tier["names"]):
            continue
        if any(n in name for n in tier.get("not_names") or ()):
            continue
        if tier.get("min_gib") and (memory is None or memory < tier["min_gib"] * GIB):
            continue
        return tier
    return {}


def mlp_width_per_token(card: ModelCard) -> float:
    """The gated-MLP width one token passes through per layer (routed experts × active + shared + dense)."""
    parts = card.param_parts
    layers = max(1, card.layers.total)
    active = parts.get("dense_mlp", 0) + parts.get("shared_experts", 0)
    if card.moe is not None and card.moe.experts:
        active += parts.get("experts", 0) * card.moe.active / card.moe.experts
    return active / layers / (3 * max(1, card.hidden_size))


def non_kv_bytes(card: ModelCard, engine: str, version: str | None, *, tp: int = 1,
                 max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None,
                 max_model_len: int | None = None, gpu_name: str | None = None,
                 gpu_memory_bytes: int | None = None, mem_fraction: float | None = None,
                 gpu_sm: int | None = None, ep: int = 1, nvswitch: bool = False,
                 enforce_eager: bool = False, flashinfer_sampler: bool = False,
                 mxfp4_backend: str | None = None, cuda_total: bool = False,
                 estimate_cudagraphs: bool | None = None) -> NonKV | None:
    """What the engine takes from ``memory × fraction`` per GPU besides weights and KV (None: no rule).

    vLLM: the profile run's peak (activations, sampler pass) and non-torch allocations. SGLang: its fraction
    applies to the memory left after the CUDA context and NCCL, so only ``context × fraction`` is taken inside it;
    activations and (before 0.5.23) CUDA graphs live outside the fraction. ``nvswitch``: the GPUs share an NVSwitch
    fabric (NCCL's buffers there, NVSWITCH_TP_BYTES, when TP or EP spans GPUs). ``enforce_eager``: no CUDA graphs,
    so a release that takes their memory off the pool takes nothing. ``flashinfer_sampler``: the launch runs
    FlashInfer's top-k/top-p sampler, whose pass holds less than the release's default full sort. ``mxfp4_backend``:
    the MXFP4 MoE backend the engine says it runs, where the install decides it (mxfp4_padding_bytes).
    ``cuda_total``: ``gpu_memory_bytes`` is CUDA's own total (GpuModel.memory_is_cuda_total), so nothing of
    CUDA_UNREPORTED_BYTES is taken off. ``estimate_cudagraphs``: the launch sets the release's switch for taking the
    CUDA graph estimate off the pool (engine_memory.yaml cudagraph_pool env_switch); None: the release's default."""
    unreported = 0 if cuda_total else CUDA_UNREPORTED_BYTES
    if engine == "sglang":
        return _sglang_non_kv(version, mem_fraction, unreported)
    if engine != "vllm":
        return None
    found = rule("profile", engine, version)
    if found is None:
        return None
    values = found.values
    tp = max(1, tp)
    tier = _default_tier(values.get("defaults") or [], gpu_name, gpu_memory_bytes)
    if max_num_batched_tokens is None:
        max_num_batched_tokens = (_v0_batched_tokens(values, max_model_len) if values["engine"] == "v0"
                                  else int(tier.get("max_num_batched_tokens", 2048)))
    if max_num_seqs is None:
        max_num_seqs = int(tier.get("max_num_seqs", 256))
    max_num_seqs = min(max_num_seqs, max_num_batched_tokens)
    width = mlp_width_per_token(card)
    attention, attention_source = per_head_mla_attention(card, engine, version, tp)
    per_token = _ACT_BYTES * (2 * card.hidden_size + (attention or 2 * card.hidden_size) + 3 * width / tp)
    activation = int(max_num_batched_tokens * per_token) + moe_output_bytes(card, max_num_batched_tokens)
    dequant, dequant_source = bnb4_dequant_bytes(card, engine, version, max_num_batched_tokens, tp)
    activation += dequant
    rows = 0
    sampler = 0
    per_element = values.get("sampler_bytes_per_element", SAMPLER_BYTES_PER_ELEMENT)
    if values.get("sampler") and card.vocab_size:
        rows = min(max_num_seqs, max_num_batched_tokens)
        if flashinfer_sampler:
            per_element = values.get("flashinfer_sampler_bytes_per_element", per_element)
        sampler = int(rows * card.vocab_size * float(per_element))
    graphs = rule("cudagraph_pool", engine, version)
    taken_off = graphs is not None and bool(graphs.values.get("taken_off_kv"))
    if graphs is not None and graphs.values.get("env_switch") and estimate_cudagraphs is not None:
        taken_off = estimate_cudagraphs
    cudagraphs = 0 if enforce_eager or not taken_off else int(float(graphs.values.get("estimate_gib", 0)) * GIB)
    state, state_source = hybrid_state_bytes(card, engine, version, max_num_seqs)
    padding, padding_source = mxfp4_padding_bytes(card, engine, version, tp=tp, ep=ep, gpu_sm=gpu_sm,
                                                  backend=mxfp4_backend)
    fraction = mem_fraction if mem_fraction is not None and 0 < mem_fraction <= 1 else 0.9
    non_torch = int(values["non_torch_gib"] * GIB) if "non_torch_gib" in values else NON_TORCH_BYTES
    fabric = nvswitch and (tp > 1 or ep > 1) and (gpu_sm or 0) >= 90
    if fabric:
        non_torch += NVSWITCH_TP_BYTES
    return NonKV(activation, sampler, non_torch, max_num_batched_tokens, rows,
                 f"estimate: activations at {max_num_batched_tokens} batched tokens"
                 + (f" + sampler pass over {rows} × {card.vocab_size} vocab at {float(per_element):g} B an element"
                    + (" (FlashInfer's sampler)" if flashinfer_sampler and rows else "") if rows else "")
                 + f" + non-torch {non_torch / GIB:.2f} GiB"
                 + (" (NCCL on an NVSwitch fabric with TP or EP > 1: measured ~1.8 GiB per rank)" if fabric else "")
                 + (" + the memory CUDA does not report × the fraction" if unreported else
                    " (the GPU's memory is CUDA's own total)")
                 + ("; the multimodal encoder's profile (encoder cache budget) is not modelled: with images "
                    "allowed the KV is lower still" if card.multimodal else "")
                 + ("; --enforce-eager: no CUDA graphs to take off the KV pool" if taken_off and enforce_eager else
                    f"; this release also takes its measured CUDA graph memory off the KV pool (estimated at "
                    f"{cudagraphs / GIB:.2f} GiB, the median vLLM 0.19 logged on H100: the real one varies "
                    f"0.49-1.92 GiB; {graphs.evidence})" if taken_off and graphs is not None else
                    "; CUDA graphs are captured after the KV pool is sized and do not lower it"
                    + (f" ({graphs.evidence})" if graphs is not None else ""))
                 + f" ({engine} {version or 'newest'}: {found.evidence})"
                 + (f"; {padding_source}" if padding else "")
                 + (f"; {dequant_source}" if dequant else "")
                 + (f"; {attention_source}" if attention else "")
                 + (f"; {state_source}" if state else ""), padding, state, int(unreported * fraction),
                 cudagraphs)


def per_head_mla_attention(card: ModelCard, engine: str, version: str | None, tp: int) -> tuple[int, str]:
    """Elements one token's attention holds per GPU in the profile pass of a release that caches every head of an
    MLA model (engine_memory.yaml mla_kv ``profile_attention``: the projected query, kv_b_proj's output and the
    padded query, key, value and output, per local head), where the activation estimate otherwise counts the
    attention's input and output (2 × hidden); (0, "") for any other model or release."""
    if card.kv_lora_rank is None or not card.qk_nope_head_dim or card.mla_v_head_dim is None:
        return 0, ""
    found = rule("mla_kv", engine, version)
    widths = ((found.values.get("profile_attention") or {}).get("per_head") if found is not None else None)
    if not widths:
        return 0, ""
    named = {"qk_head_dim": card.qk_nope_head_dim + int(card.qk_rope_head_dim or 0),
             "qk_nope_plus_v": card.qk_nope_head_dim + card.mla_v_head_dim,
             "head_size": int(found.values["head_size"]) if str(found.values["head_size"]).isdigit() else 0}
    per_head = sum(named[w] for w in widths)
    heads = -(-card.attention_heads // max(1, tp))
    elems = heads * per_head
    return elems, (f"per-head MLA attention in the profile: {heads} heads × {per_head} values per token "
                   f"(q at qk_head_dim, kv_b_proj's output, q/k/v and output padded to "
                   f"{named['head_size']}) ({engine} {version or 'newest'}: {found.evidence})")


def on_nvswitch(interconnect: str | None, nvlink_domain: int | None) -> bool:
    """All GPUs of the node on one NVSwitch fabric (HGX and NVL systems: an NVLink domain of 8 or more), where NCCL
    keeps its NVSwitch buffers; bridged pairs and PCIe cards are not."""
    return interconnect == "nvlink" and (nvlink_domain or 0) >= 8


def _v0_batched_tokens(values: dict[str, Any], max_model_len: int | None) -> int:
    """What a V0 release profiles with by default: max(max_model_len, 2048), or — where the release turns chunked
    prefill on for long contexts — its chunk size."""
    length = max_model_len or 2048
    chunked = values.get("long_context_chunked")
    if chunked and length > chunked["over"]:
        return int(chunked["max_num_batched_tokens"])
    return max(length, 2048)


#: vLLM's fused MoE works through at most this many tokens at once (VLLM_FUSED_MOE_CHUNK_SIZE, 64 Ki by default
#: since 0.5.1: vllm 0.5.1 vllm/envs.py:35, vllm/model_executor/layers/fused_moe/fused_moe.py:428-456).
MOE_CHUNK_TOKENS = 65536


def moe_output_bytes(card: ModelCard, tokens: int) -> int:
    """The fused MoE's per-expert outputs, top-k × hidden per token before they are summed (the third of its
    intermediate caches; the first two are the experts' width, counted with the MLP)."""
    if card.moe is None or not card.moe.active:
        return 0
    return min(tokens, MOE_CHUNK_TOKENS) * card.moe.active * card.hidden_size * _ACT_BYTES


def bnb4_dequant_bytes(card: ModelCard, engine: str, version: str | None, tokens: int, tp: int) -> tuple[int, str]:
    """What a bitsandbytes 4-bit model's forward pass adds to its activations (0 and "" otherwise): the largest MLP
    shard (intermediate / TP × hidden) dequantized to 16-bit, and that shard's product at ``tokens`` rows before it
    is copied into the merged layer's output (engine_memory.yaml bnb4_dequant)."""
    quant = card.quantization
    found = rule("bnb4_dequant", engine, version)
    dense = card.param_parts.get("dense_mlp", 0)
    layers = card.layers.total - (card.moe.layers if card.moe else 0)
    if quant is None or quant.method != "bitsandbytes" or found is None or not dense or layers <= 0:
        return 0, ""
    intermediate = dense / layers / (3 * max(1, card.hidden_size)) / max(1, tp)
    size = int(_ACT_BYTES * intermediate * (card.hidden_size + tokens))
    return size, (f"bitsandbytes 4-bit: one MLP shard dequantized to 16-bit and its product at {tokens} tokens, "
                  f"{size / GIB:.2f} GiB ({engine} {version or 'newest'}: {found.evidence})")


def hybrid_state_bytes(card: ModelCard, engine: str, version: str | None, sequences: int) -> tuple[int, str]:
    """A hybrid model's recurrent state that the release allocates outside the KV pool (0 and "" otherwise):
    vLLM V0 sized it for ``max_num_seqs`` sequences in the profile run; V1 keeps it in the pool."""
    found = rule("hybrid_state", engine, version)
    if not card.states or found is None or found.values.get("placement") != "profile":
        return 0, ""
    from doctor.model.kvcache import state_bytes_per_sequence

    per_sequence = state_bytes_per_sequence(card, engine)
    total = per_sequence * sequences
    return total, (f"recurrent state of {sequences} sequences × {per_sequence / 2**20:.1f} MiB allocated in the "
                   f"profile run, outside the KV pool ({engine} {version or 'newest'}: {found.evidence})")


def mxfp4_padding_bytes(card: ModelCard, engine: str, version: str | None, *, tp: int = 1, ep: int = 1,
                        gpu_sm: int | None = None, backend: str | None = None) -> tuple[int, str]:
    """Bytes per GPU the release's MXFP4 MoE kernels add to the experts on load (0 and "" when none apply).

    The expert intermediate size is recovered from the expert parameter count (3 × hidden × intermediate per
    expert and layer), so no config field beyond the card is needed. Under TP each GPU pads its slice of every
    expert's intermediate size; under EP (``ep`` > 1) it pads whole experts. ``backend``: the one the engine says it
    runs ("Using Triton backend"), where the install decides (a tier marked ``installed`` is taken only then)."""
    quant = card.quantization
    if quant is None or quant.method != "mxfp4" or card.moe is None or not card.expert_weight_bytes:
        return 0, ""
    found = rule("mxfp4_moe_padding", engine, version)
    if found is None or gpu_sm is None:
        return 0, ""
    tiers = found.values["backends"]
    named = [b for b in tiers if backend and b["backend"].lower().startswith(backend.lower()) and gpu_sm <= b["max_sm"]]
    tier = named[0] if named else next((b for b in tiers if gpu_sm <= b["max_sm"] and not b.get("installed")), None)
    experts = card.param_parts.get("experts", 0)
    if tier is None or not experts or not card.hidden_size:
        return 0, ""
    split = max(1, tp) if ep <= 1 else 1
    shards = max(1, tp) if ep <= 1 else ep
    intermediate = experts / (card.moe.layers * card.moe.experts * 3 * card.hidden_size) / split
    hidden = card.hidden_size

    def up(value: float, multiple: int) -> int:
        return -(-int(round(value)) // multiple) * multiple

    factor = up(intermediate, tier["intermediate_multiple"]) * up(hidden, tier["hidden_multiple"]) / (
        intermediate * hidden)
    padding = int(card.expert_weight_bytes / shards * (factor - 1))
    if padding <= 0:
        return 0, ""
    assumed = " (assumed: on this GPU the backend depends on the installed kernels)" if tier.get("assumed") else ""
    return padding, (f"MXFP4 experts padded by the {tier['backend']} backend to hidden {up(hidden, tier['hidden_multiple'])}"
                     f" × intermediate {up(intermediate, tier['intermediate_multiple'])}: +{padding / GIB:.2f} GiB"
                     f"{assumed} ({engine} {version or 'newest'}: {found.evidence})")


def _sglang_non_kv(version: str | None, mem_fraction: float | None, unreported: int) -> NonKV | None:
    found = rule("sglang_pool", "sglang", version)
    if found is None or mem_fraction is None or not 0 < mem_fraction <= 1:
        return None
    inside = int(NON_TORCH_BYTES * mem_fraction)
    return NonKV(0, 0, inside, 0, 0,
                 f"estimate: CUDA context and NCCL ({NON_TORCH_BYTES / GIB:.1f} GiB) and the memory CUDA does not "
                 f"report ({unreported / 2**20:.0f} MiB) × mem_fraction_static {mem_fraction}: the "
                 "fraction applies to the memory free after them; activations"
                 + (" live" if found.values.get("cudagraphs_in_pool") else " and CUDA graphs live")
                 + " outside it"
                 + ("; CUDA graph memory is taken off the pool after capture (not modelled: the KV estimate is an "
                    "upper bound)" if found.values.get("cudagraphs_in_pool") else "")
                 + f" (sglang {version or 'newest'}: {found.evidence})",
                 unreported=int(unreported * mem_fraction))


def release_kv_facts(card: ModelCard, raw: dict[str, Any], engine: str | None, version: str | None,
                     kv_dtype: str, flag: Callable[[str], Any] | None = None,
                     env: Callable[[str], Any] | None = None) -> Any:
    """model.kv_layout (and, for an MLA model on a release that cached every head, the per-head
    model.kv_bytes_per_token) plus engine.mla_prefix_caching_forced_off, as Facts; ``flag(dest)``: the launch
    command's value of a flag, ``env(name)``: of a variable of its environment (mla_layout)."""
    from doctor.facts import Facts

    facts = Facts()
    if engine is None or card.kv_lora_rank is None:
        return facts
    dtype_bytes = {"fp8": 1, "fp32": 4}.get(kv_dtype, 2)
    layout = mla_layout(card, raw, engine, version, dtype_bytes, flag, env)
    if layout is None:
        return facts
    facts.set("model.kv_layout", layout.layout, layout.source)
    if layout.bytes_per_token is not None:
        source = f"derived: 2 × {card.attention_heads} heads × head size × {dtype_bytes} B × layers ({layout.source})"
        facts.set("model.kv_bytes_per_token", layout.bytes_per_token, source)
        facts.set("model.kv_bytes_per_token_growing", layout.bytes_per_token, source)
    forced = prefix_caching_forced_off(card, engine, version)
    # the release forces it off only where MLA runs (``if self.model_config.use_mla``, vllm 0.7.1
    # vllm/config.py:3255-3263): not where the launch environment turned MLA off (the per-head layout)
    if forced is not None and layout.layout == "latent":
        facts.set("engine.mla_prefix_caching_forced_off", True, f"{engine} {version}: {forced.evidence}")
    return facts


def attention_group_slots(card: ModelCard, draft: int = 0) -> tuple[int, int, int] | None:
    """(layer slots, attention layers, group size) when vLLM V1 splits ``card``'s layer types into equal groups
    sharing one page size: attention layers of one per-layer size whose windows differ, or attention beside
    linear/SSM state layers (each state kind is a type; its page is padded to the attention page, so every state
    layer slot costs one attention layer's bytes per token); None when one type only, or the attention layers'
    sizes differ (not one uniform page). ``draft``: full-attention layers a speculative draft adds (mtp_draft_layers)."""
    groups = card.kv_groups
    if any(g.kind not in ("attention", "mla") for g in groups) or not groups:
        return None
    if len({(g.kind, g.kv_heads, g.head_dim, g.v_head_dim) for g in groups}) != 1:
        return None
    per_type: dict[object, int] = {}
    for g in groups:
        per_type[g.window] = per_type.get(g.window, 0) + g.layers
    if draft:
        per_type[None] = per_type.get(None, 0) + draft
    for s in card.states:
        per_type[("state", s.kind)] = per_type.get(("state", s.kind), 0) + s.layers
    if len(per_type) < 2:
        return None
    size = min(per_type.values())
    slots = sum(-(-n // size) * size for n in per_type.values())
    layers = sum(g.layers for g in groups) + draft
    return (slots, layers, size) if slots != layers else None


def group_padding_facts(card: ModelCard, facts: Any, engine: str | None, version: str | None) -> Any:
    """model.kv_bytes_per_token with vLLM V1's padding layers counted, on the releases that pad and report the pool
    per layer slot (engine_memory.yaml hybrid_attention_groups); nothing where no padding applies."""
    from doctor.facts import Facts

    out = Facts()
    found = rule("hybrid_attention_groups", "vllm", version) if engine == "vllm" else None
    if found is None or not found.values.get("padded"):
        return out
    slots = attention_group_slots(card)
    base = facts.get("model.kv_bytes_per_token")
    if slots is None or not isinstance(base, int):
        return out
    total, layers, size = slots
    states = sum(s.layers for s in card.states)
    out.set("model.kv_bytes_per_token", base * total // layers,
            f"derived: {base} B × {total} layer slots / {layers} attention layers (groups of {size}"
            + (f", {states} state layer slots" if states else "")
            + f", {total - layers - states} padding layer(s); vllm {version or 'newest'}: {found.evidence})")
    return out


def group_aware_facts(card: ModelCard, facts: Any, engine: str | None = None) -> Any:
    """model.kv_bytes_per_token of what vLLM logs from 0.21.0 for a model of full-attention and state (GDN, Mamba)
    layers (engine_memory.yaml hybrid_attention_groups, group_aware): the group-aware capacity, num_blocks over the
    blocks one max_model_len request takes across all groups, times max_model_len. Per logged token that is a
    group's layer slots × the attention block's bytes × those blocks / max_model_len; nothing before 0.21, for
    SGLang, or for a model with sliding-window groups or without state layers."""
    from doctor.facts import Facts

    out = Facts()
    engine = engine or facts.get("launch.engine")
    if engine != "vllm" or not card.states or any(g.window for g in card.kv_groups):
        return out
    found = rule("hybrid_attention_groups", "vllm", facts.get("launch.version"))
    slots = attention_group_slots(card)
    base = facts.get("model.kv_bytes_per_token")
    if found is None or not found.values.get("group_aware") or slots is None or not isinstance(base, int):
        return out
    from doctor.errors import InputError
    from doctor.model.kvcache import kv_layout

    per_layer = base / slots[1]  # one attention layer's bytes per token, at the launch's KV dtype
    draft, draft_source = mtp_draft_layers(card, facts, engine)
    _, layers, size = attention_group_slots(card, draft) or slots
    try:
        page = max(s.bytes_per_sequence for s in kv_layout(card, "auto", "vllm").states)
    except InputError:  # a state layout vLLM's is not modelled for: the per-token layout stands
        return out
    align = int(found.values["kernel_block_alignment"])
    block = align * -(-page // int(align * per_layer))
    length = _int(facts.get("launch.max_model_len")) or _int(facts.get("launch.flags.max_model_len")) or card.max_context
    if not length:
        return out
    prefix = facts.get("launch.prefix_caching")
    prefix = facts.get("launch.flags.enable_prefix_caching") if prefix is None else prefix
    state_blocks = 1 if prefix is False else 2  # "align" mode with prefix caching, on by default
    attention_groups = -(-layers // size)
    state_groups = sum(-(-s.layers // size) for s in card.states)
    blocks = attention_groups * -(-length // block) + state_groups * state_blocks
    out.set("model.kv_bytes_per_token", round(size * block * per_layer * blocks / length),
            f"derived: the group-aware capacity vLLM logs: {size}-layer groups of {block}-token blocks "
            f"({block * per_layer:.0f} B per attention layer, the state page {page} B fits in it), a "
            f"{length}-token request taking {attention_groups} × {-(-length // block)} attention blocks + "
            f"{state_groups} × {state_blocks} state pages ({'align mode: prefix caching' if state_blocks == 2 else 'no prefix caching'}) "
            f"(vllm {facts.get('launch.version') or 'newest'}: {found.evidence})"
            + (f"; {draft_source}" if draft else ""))
    return out


def mtp_draft_layers(card: ModelCard, facts: Any, engine: str | None = None) -> tuple[int, str]:
    """Full-attention layers an MTP speculative draft adds to vLLM's KV cache (engine_memory.yaml mtp_draft_kv):
    the card's MTP layers when the launch's --speculative-config names an MTP method (every ``*_mtp`` is ``mtp``);
    (0, "") for another engine, method or release, or a model without MTP layers."""
    engine = engine or facts.get("launch.engine")
    spec = facts.get("launch.flags.speculative_config")
    if engine != "vllm" or not card.mtp_kv_groups or not isinstance(spec, dict):
        return 0, ""
    method = str(spec.get("method") or "")
    found = rule("mtp_draft_kv", "vllm", facts.get("launch.version"))
    if found is None or not (method == "mtp" or method.endswith("_mtp")):
        return 0, ""
    layers = sum(g.layers for g in card.mtp_kv_groups if g.window is None)
    return layers, (f"the MTP draft's {layers} attention layer(s) join the KV cache (--speculative-config method "
                    f"{method}; vllm {facts.get('launch.version') or 'newest'}: {found.evidence})")


def mtp_draft_facts(card: ModelCard, facts: Any, engine: str | None = None) -> Any:
    """model.kv_bytes_per_token with an MTP draft's attention layers (mtp_draft_layers) on a release that reports the
    pool per layer slot (padded groups: the draft's layer joins the attention type, which can change the group size
    and the padding) or for a model of one layer type (its per-token KV plus the draft's); the group-aware capacity
    counts the draft itself (group_aware_facts)."""
    from doctor.facts import Facts

    out = Facts()
    draft, source = mtp_draft_layers(card, facts, engine)
    base = facts.get("model.kv_bytes_per_token")
    if not draft or not isinstance(base, int):
        return out
    found = rule("hybrid_attention_groups", "vllm", facts.get("launch.version"))
    slots = attention_group_slots(card)
    if slots is not None:
        drafted = attention_group_slots(card, draft)
        if found is None or not found.values.get("padded") or drafted is None:
            return out  # group-aware releases count the draft in group_aware_facts
        out.set("model.kv_bytes_per_token", round(base / slots[0] * drafted[0]),
                f"derived: {base} B over {slots[0]} layer slots, {drafted[0]} slots with the draft (groups of "
                f"{drafted[2]}); {source}")
        return out
    extra = facts.get("model.mtp_kv_bytes_per_token")
    if card.states or not isinstance(extra, int) or not extra:
        return out
    out.set("model.kv_bytes_per_token", base + extra, f"derived: {base} B + the draft's {extra} B; {source}")
    return out


def engine_pool_facts(card: ModelCard, facts: Any, engine: str | None = None) -> Any:
    """What the launch's engine and release change in the pool and the weights per rank, as one set of facts:
    SGLang's SWA and Mamba pools (swa_pool_facts), vLLM's group-aware capacity (group_aware_facts), the weights
    every TP rank holds whole (replicated_weight_facts). `lint`, `check`, `plan` and the error record call this."""
    out = swa_pool_facts(card, facts, engine)
    out.update(group_aware_facts(card, facts, engine))
    if "model.kv_bytes_per_token" not in out:
        out.update(mtp_draft_facts(card, facts, engine))
    out.update(replicated_weight_facts(card, facts, engine))
    out.update(mtp_draft_weight_facts(card, facts, engine))
    return out


def mtp_draft_weight_facts(card: ModelCard, facts: Any, engine: str | None = None) -> Any:
    """model.weight_bytes with the MTP draft's layers, which vLLM loads beside the model when --speculative-config
    names an MTP method (engine_memory.yaml mtp_draft_weights; doctor/model/weights.py mtp_draft_bytes prices
    them); nothing for another engine, method or release, or a model without MTP layers."""
    from doctor.facts import Facts
    from doctor.model.weights import mtp_draft_bytes

    out = Facts()
    engine = engine or facts.get("launch.engine")
    spec = facts.get("launch.flags.speculative_config")
    base, experts = facts.get("model.weight_bytes"), facts.get("model.expert_weight_bytes")
    if engine != "vllm" or not isinstance(spec, dict) or not isinstance(base, int):
        return out
    method = str(spec.get("method") or "")
    found = rule("mtp_draft_weights", "vllm", facts.get("launch.version"))
    if found is None or not (method == "mtp" or method.endswith("_mtp")):
        return out
    extra, extra_experts = mtp_draft_bytes(card)
    if not extra:
        return out
    out.set("model.weight_bytes", base + extra,
            f"derived: {base} B + the MTP draft's {card.mtp_layers} layer(s), {extra} B at the model's format "
            f"(--speculative-config method {method}; vllm {facts.get('launch.version') or 'newest'}: {found.evidence})")
    if isinstance(experts, int):
        out.set("model.expert_weight_bytes", experts + extra_experts, "derived: the routed experts with the MTP draft's")
    return out


def swa_pool_facts(card: ModelCard, facts: Any, engine: str | None = None) -> Any:
    """model.kv_bytes_per_token of SGLang's hybrid SWA pool (engine_memory.yaml sglang_swa_pool): the sliding
    layers hold --swa-full-tokens-ratio x the full layers' tokens, and the logged pool counts full-layer tokens;
    nothing for another engine, a model without both kinds of layers, or --disable-hybrid-swa-memory. ``engine``:
    the engine planned for, where ``facts`` carry no launch (`plan`; the newest release and the default ratio)."""
    from doctor.facts import Facts

    out = Facts()
    engine = engine or facts.get("launch.engine")
    if engine != "sglang" or facts.get("launch.flags.disable_hybrid_swa_memory") is True:
        return out
    total, growing = facts.get("model.kv_bytes_per_token"), facts.get("model.kv_bytes_per_token_growing")
    if card.states:
        return _mamba_pool_facts(out, facts, card)
    if card.states or not isinstance(total, int) or not isinstance(growing, int) or not 0 < growing < total:
        return out
    found = rule("sglang_swa_pool", "sglang", facts.get("launch.version"))
    if found is None:
        return out
    archs, excepted = found.values.get("archs"), found.values.get("except") or []
    if any(a in excepted for a in card.architectures) or (
            archs is not None and not any(a in archs for a in card.architectures)):
        return out  # this release sizes the model's sliding layers as full ones
    try:
        given = float(facts.get("launch.flags.swa_full_tokens_ratio"))
    except (TypeError, ValueError):
        given = None
    ratio = given if given is not None and 0 <= given <= 1 else found.values["ratio"]
    where = "--swa-full-tokens-ratio" if ratio == given else "the default ratio"
    out.set("model.kv_bytes_per_token", int(growing + ratio * (total - growing)),
            f"derived: full layers {growing} B + {ratio} ({where}) × sliding layers {total - growing} B "
            f"(sglang {facts.get('launch.version') or 'newest'}: {found.evidence})")
    return out


def replicated_weight_facts(card: ModelCard, facts: Any, engine: str | None = None) -> Any:
    """What every TP rank holds whole: model.replicated_weight_bytes, SGLang's Gemma 3/3n/4 token embedding
    (engine_memory.yaml sglang_replicated_embedding: a plain nn.Embedding, not vocabulary-parallel), and
    model.rope_table_bytes, the rotary embeddings' cos/sin tables both engines keep beside the weights (rope_cache).
    ``engine``: the engine planned for, where ``facts`` carry no launch (`plan`: the newest release)."""
    from doctor.facts import Facts

    out = Facts()
    engine = engine or facts.get("launch.engine")
    if engine not in ("vllm", "sglang"):
        return out
    version = facts.get("launch.version")
    embed = card.param_parts.get("embed", 0)
    found = rule("sglang_replicated_embedding", engine, version) if engine == "sglang" else None
    if embed and found is not None and any(a in (found.values.get("archs") or ()) for a in card.architectures):
        out.set("model.replicated_weight_bytes", embed * 2,
                f"derived: the 16-bit token embedding ({embed / 1e9:.2f} B parameters) is held whole by every TP rank "
                f"(sglang {version or 'newest'}: {found.evidence})")
    tables = card.rope_tables_for(engine)
    rope = rule("rope_cache", engine, version)
    if tables and rope is not None:
        amd = str(facts.get("gpu.vendor") or "").lower() == "amd"
        per = rope.values.get("rocm_bytes_per_element") if amd else None
        per = per or rope.values["bytes_per_element"]
        if per == "model_dtype":
            dtype = str(facts.get("launch.flags.dtype") or card.dtype or "").lower()
            per = 4 if dtype in ("float32", "float", "fp32") else 2
        size = sum(positions * dim for positions, dim in tables) * int(per)
        shown = " + ".join(f"{positions:,} × {dim}" for positions, dim in tables)
        out.set("model.rope_table_bytes", size,
                f"derived: the rotary cos/sin table{'s' if len(tables) > 1 else ''} ({shown} values × {per} B, "
                f"doctor/model/rope.py) on every rank beside the weights ({engine} {version or 'newest'}: "
                f"{rope.evidence})")
    return out


def _mamba_pool_facts(out: Any, facts: Any, card: ModelCard) -> Any:
    """engine.kv_pool_share of SGLang's Mamba state pool (engine_memory.yaml sglang_mamba_pool): the state takes
    ratio / (1 + ratio) of what is left after the weights, the full-attention KV pool the rest; sized by slots
    (--max-mamba-cache-size, or --disable-radix-cache with --max-running-requests), engine.state_pool_bytes: that
    many requests' state, off the KV pool."""
    found = rule("sglang_mamba_pool", "sglang", facts.get("launch.version"))
    if found is None:
        return out
    slots, why = _int(facts.get("launch.flags.max_mamba_cache_size")), "--max-mamba-cache-size"
    if slots is None and facts.get("launch.flags.disable_radix_cache") is True:
        slots, why = _int(facts.get("launch.flags.max_running_requests")), "--disable-radix-cache: --max-running-requests"
    if slots is not None:
        from doctor.model.kvcache import state_bytes_per_sequence

        per_request = state_bytes_per_sequence(card, "sglang")
        out.set("engine.state_pool_bytes", slots * per_request,
                f"derived: {slots} state slots ({why}) × {per_request / 2**20:.1f} MiB of recurrent state per request, "
                f"split over the TP ranks (sglang {facts.get('launch.version') or 'newest'}: {found.evidence})")
        return out
    try:
        given = float(facts.get("launch.flags.mamba_full_memory_ratio"))
    except (TypeError, ValueError):
        given = None
    ratio = given if given is not None and given >= 0 else found.values["ratio"]
    where = "--mamba-full-memory-ratio" if ratio == given else "the default ratio"
    out.set("engine.kv_pool_share", 1 / (1 + ratio),
            f"derived: 1 / (1 + {ratio}, {where}): the Mamba state pool takes {ratio}/(1 + {ratio}) of the memory "
            f"left after the weights (sglang {facts.get('launch.version') or 'newest'}: {found.evidence})")
    return out


def _int(value: Any) -> int | None:
    """A positive whole number from a flag's value (given as text or number), else None."""
    try:
        number = int(str(value))
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def non_kv_facts(card: ModelCard, facts: Any) -> Any:
    """engine.non_kv_bytes_per_gpu from the launch (engine, version, TP, batching flags) and the GPU."""
    from doctor.facts import Facts

    out = Facts()
    engine = facts.get("launch.engine")
    if engine is None:
        return out

    def number(key: str) -> int | None:
        value = facts.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    estimate = non_kv_bytes(card, engine, facts.get("launch.version"), tp=number("launch.tp") or 1,
                            max_num_batched_tokens=number("launch.flags.max_num_batched_tokens"),
                            max_num_seqs=number("launch.flags.max_num_seqs"),
                            max_model_len=number("launch.max_model_len"), gpu_name=facts.get("gpu.name"),
                            gpu_memory_bytes=number("gpu.memory_bytes"),
                            mem_fraction=_mem_fraction(facts), gpu_sm=number("gpu.sm"), ep=_ep(facts),
                            nvswitch=on_nvswitch(facts.get("gpu.interconnect"), facts.get("gpu.nvlink_domain")),
                            enforce_eager=facts.get("launch.flags.enforce_eager") is True,
                            flashinfer_sampler=(str(facts.get("launch.env.VLLM_USE_FLASHINFER_SAMPLER")) == "1"
                                                or facts.get("log.sampler") == "flashinfer"),
                            mxfp4_backend=facts.get("log.mxfp4_backend")
                            or ("Marlin" if str(facts.get("launch.env.VLLM_MXFP4_USE_MARLIN")) == "1" else None),
                            cuda_total=_cuda_total(facts),
                            estimate_cudagraphs=_env_switch(facts, "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"))
    if estimate is None:
        out.error("engine.non_kv_bytes_per_gpu", f"{engine}: non-KV memory is not modelled for this engine or "
                                                 "its memory fraction is invalid")
        return out
    out.set("engine.non_kv_bytes_per_gpu", estimate.total, estimate.source)
    return out


def _env_switch(facts: Any, name: str) -> bool | None:
    """A 0/1 environment switch of the launch (None: not set, the release's default applies)."""
    value = facts.get(f"launch.env.{name}")
    return None if value is None else str(value).strip().lower() in ("1", "true")


def _cuda_total(facts: Any) -> bool:
    """gpu.memory_bytes is the catalog's CUDA total for this GPU (not a --gpu-mem the user gave)."""
    from doctor.hardware.catalog import lookup_gpu

    name = facts.get("gpu.name")
    gpu = lookup_gpu(name) if isinstance(name, str) and name else None
    return gpu is not None and gpu.memory_is_cuda_total and gpu.memory_bytes == facts.get("gpu.memory_bytes")


def _mem_fraction(facts: Any) -> float | None:
    from doctor.model.fit import mem_fraction

    return mem_fraction(facts)


def _ep(facts: Any) -> int:
    from doctor.model.fit import layout_from_facts

    layout = layout_from_facts(facts)
    return layout.ep if layout is not None else 1
