"""Which layers do what: full attention, sliding or chunked attention, linear/SSM, or no attention.

Every family encodes its layer plan differently (``layer_types``, ``full_attention_interval``,
``hybrid_override_pattern``, ``attn_layer_period``, ``linear_attn_config``, ``block_configs``,
``hybrid_layer_pattern``, ``attn_type_list``, or a sliding window with a transformers default
pattern). This module turns each encoding into one list of per-layer roles plus the evidence that
decided it, so the KV and state sizing never has to know which encoding a config used.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from doctor.model.card import Evidence
from doctor.model.fields import ConfigView, Field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FULL, SLIDING, CHUNKED, LINEAR, NONE = "full", "sliding", "chunked", "linear", "none"

#: layer_types / layers_block_type values -> role (transformers and engine spellings).
_LAYER_TYPE_ROLES = {
    "full_attention": FULL, "attention": FULL, "global_attention": FULL, "indexed_attention": FULL,
    "sliding_attention": SLIDING, "sliding_window_attention": SLIDING, "local_attention": SLIDING,
    "chunked_attention": CHUNKED,
    "linear_attention": LINEAR, "mamba": LINEAR, "mamba2": LINEAR, "ssm": LINEAR, "gated_deltanet": LINEAR,
}
#: Nemotron-H hybrid_override_pattern characters.
_PATTERN_ROLES = {"M": LINEAR, "*": FULL, "-": NONE, "E": NONE}


@dataclass
class LayerPlan:
    """The role of every decoder layer (full, sliding, chunked, linear or no attention), with its evidence."""

    roles: list[str]
    linear_kind: str | None = None
    sliding_window: int | None = None
    chunk_size: int | None = None
    evidence: list[Evidence] = field(default_factory=list)
    #: NAS models: KV heads per layer where they differ (block_configs n_heads_in_group).
    kv_heads_by_layer: list[int | None] | None = None

    def count(self, role: str) -> int:
        return sum(1 for r in self.roles if r == role)


def plan_layers(v: ConfigView, total: int, heads: int, defaults: dict[str, Any], *,
                dsv4: bool) -> LayerPlan:
    """The per-layer roles of the main model (MTP layers are not part of ``total``)."""
    plan = LayerPlan([FULL] * total, linear_kind=defaults.get("linear_kind"))
    explicit = (_from_block_configs(v, plan, total, heads) or _from_override_pattern(v, plan, total)
                or _from_layer_types(v, plan, total) or _from_kimi_linear(v, plan, total)
                or _from_attn_period(v, plan, total) or _from_interval(v, plan, total)
                or _from_mimo_pattern(v, plan, total) or _from_attn_type_list(v, plan, total))
    if not dsv4:
        _apply_sliding(v, plan, total, defaults, explicit=explicit)
        _apply_chunked(v, plan, total, defaults)
    return plan


def per_layer_list(v: ConfigView, found: Field, total: int) -> list[Any]:
    """The first ``total`` entries of a per-layer list field (lists may carry extra MTP entries)."""
    if not isinstance(found.value, list):
        raise v.fail(found.path, "expected a list with one entry per layer")
    if len(found.value) < total:
        raise v.fail(found.path, f"has {len(found.value)} entries for {total} layers (num_hidden_layers)")
    return found.value[:total]


def _from_block_configs(v: ConfigView, plan: LayerPlan, total: int, heads: int) -> bool:
    found = v.find("block_configs")
    if found is None:
        return False
    blocks = per_layer_list(v, found, total)
    plan.kv_heads_by_layer = []
    for i, block in enumerate(blocks):
        attn = block.get("attention") if isinstance(block, dict) else None
        if not isinstance(attn, dict):
            raise v.fail(f"{found.path}[{i}].attention", "expected an object")
        if attn.get("no_op") or attn.get("replace_with_linear"):
            plan.roles[i] = NONE
            plan.kv_heads_by_layer.append(None)
            continue
        group = attn.get("n_heads_in_group")
        if not isinstance(group, int) or group <= 0 or heads % group:
            raise v.fail(f"{found.path}[{i}].attention.n_heads_in_group",
                         f"expected a divisor of num_attention_heads={heads}, got {group!r}")
        plan.kv_heads_by_layer.append(heads // group)
        window = v.member_int(Field(f"{found.path}[{i}].attention", attn), "window_length")
        if window:
            plan.roles[i] = SLIDING
            plan.sliding_window = window
    plan.evidence.append(Evidence(
        f"{plan.count(NONE)} of {total} layers have no attention (NAS block_configs: attention no_op "
        "or replaced by a linear layer); they hold no KV", {found.path: found.value}))
    return True


def _from_override_pattern(v: ConfigView, plan: LayerPlan, total: int) -> bool:
    found = v.string("hybrid_override_pattern")
    if found is None:
        return False
    pattern = found.value
    if len(pattern) != total:
        raise v.fail(found.path, f"has {len(pattern)} characters for {total} layers (num_hidden_layers)")
    for i, ch in enumerate(pattern):
        if ch not in _PATTERN_ROLES:
            raise v.fail(found.path, f"unknown layer code {ch!r} at position {i} (expected M, *, - or E)")
        plan.roles[i] = _PATTERN_ROLES[ch]
    plan.linear_kind = "mamba2"
    plan.evidence.append(Evidence(
        f"hybrid Mamba-2/attention stack: {pattern.count('M')} Mamba-2 layers (M), {pattern.count('*')} "
        f"attention layers (*), {pattern.count('-') + pattern.count('E')} MLP/MoE-only layers (-/E)",
        {found.path: pattern}))
    return True


def _from_layer_types(v: ConfigView, plan: LayerPlan, total: int) -> bool:
    found = v.str_list("layer_types", "layers_block_type")
    if found is None:
        return False
    for i, kind in enumerate(per_layer_list(v, found, total)):
        role = _LAYER_TYPE_ROLES.get(kind)
        if role is None:
            raise v.fail(found.path, f"unknown layer type {kind!r} at layer {i}")
        plan.roles[i] = role
    if plan.count(LINEAR) and plan.linear_kind is None:
        plan.linear_kind = "mamba1" if "mamba" in found.value else "gdn"
    plan.evidence.append(Evidence(_roles_claim(plan, found.path), {found.path: found.value}))
    return True


def _from_kimi_linear(v: ConfigView, plan: LayerPlan, total: int) -> bool:
    found = v.mapping("linear_attn_config")
    if found is None or found.value.get("kda_layers") is None:
        return False
    kda = found.value["kda_layers"]
    if not isinstance(kda, list) or not all(isinstance(i, int) and 1 <= i <= total for i in kda):
        raise v.fail(f"{found.path}.kda_layers", f"expected 1-based layer numbers up to {total}")
    # Kimi numbers layers from 1: vLLM/SGLang test `(layer_idx + 1) in kda_layers`
    # (sglang 0.5.23 srt/configs/kimi_linear.py:158).
    for i in kda:
        plan.roles[i - 1] = LINEAR
    plan.linear_kind = "kda"
    plan.evidence.append(Evidence(
        f"{len(kda)} KDA linear-attention layers and {total - len(kda)} full-attention layers "
        "(linear_attn_config.kda_layers counts from 1)",
        {f"{found.path}.kda_layers": kda, f"{found.path}.full_attn_layers": found.value.get("full_attn_layers")}))
    return True


def _from_attn_period(v: ConfigView, plan: LayerPlan, total: int) -> bool:
    period = v.int("attn_layer_period", minimum=1)
    if period is None:
        return False
    offset = v.int("attn_layer_offset")
    off = offset.value if offset else 0
    for i in range(total):
        plan.roles[i] = FULL if i % period.value == off else LINEAR
    plan.linear_kind = plan.linear_kind or "mamba1"
    plan.evidence.append(Evidence(
        f"attention every {period.value} layers from layer {off} ({plan.count(FULL)} layers); the other "
        f"{plan.count(LINEAR)} are Mamba layers", {period.path: period.value, "attn_layer_offset": off}))
    return True


def _from_interval(v: ConfigView, plan: LayerPlan, total: int) -> bool:
    interval = v.int("full_attention_interval", minimum=1)
    if interval is None:
        return False
    for i in range(total):
        plan.roles[i] = FULL if (i + 1) % interval.value == 0 else LINEAR
    plan.linear_kind = plan.linear_kind or "gdn"
    plan.evidence.append(Evidence(
        f"every {interval.value}th layer is full attention ({plan.count(FULL)} layers); the other "
        f"{plan.count(LINEAR)} are Gated DeltaNet linear attention", {interval.path: interval.value}))
    return True


def _from_mimo_pattern(v: ConfigView, plan: LayerPlan, total: int) -> bool:
    found = v.int_list("hybrid_layer_pattern")
    if found is None:
        return False
    window = v.int("sliding_window_size", "sliding_window", minimum=1)
    for i, code in enumerate(per_layer_list(v, found, total)):
        plan.roles[i] = SLIDING if code == 1 else FULL
    plan.sliding_window = window.value if window else None
    fields = {found.path: found.value}
    if window:
        fields[window.path] = window.value
    plan.evidence.append(Evidence(
        f"{plan.count(SLIDING)} sliding-window layers (pattern 1) and {plan.count(FULL)} full-attention "
        "layers (pattern 0)", fields))
    return True


def _from_attn_type_list(v: ConfigView, plan: LayerPlan, total: int) -> bool:
    found = v.int_list("attn_type_list")
    if found is None:
        return False
    for i, code in enumerate(per_layer_list(v, found, total)):
        plan.roles[i] = FULL if code == 1 else LINEAR
    plan.evidence.append(Evidence(
        f"attn_type_list: {plan.count(FULL)} softmax-attention layers (1)"
        + (f", {plan.count(LINEAR)} lightning linear-attention layers (0)" if plan.count(LINEAR) else ""),
        {found.path: found.value}))
    return True


def _roles_claim(plan: LayerPlan, path: str) -> str:
    names = {FULL: "full attention", SLIDING: "sliding window", CHUNKED: "chunked", LINEAR: "linear attention",
             NONE: "no attention"}
    parts = [f"{plan.count(role)} {names[role]}" for role in names if plan.count(role)]
    return f"layer plan from {path}: " + ", ".join(parts)


def _apply_sliding(v: ConfigView, plan: LayerPlan, total: int, defaults: dict[str, Any], *,
                   explicit: bool) -> None:
    """Mark sliding layers when a window is configured but no per-layer list said which layers slide."""
    window = v.int("sliding_window", "sliding_window_size")
    use = v.flag("use_sliding_window")
    if window is None or window.value <= 0:
        return
    if use is not None and not use.value:
        plan.evidence.append(Evidence(
            f"not sliding: use_sliding_window is false, so sliding_window={window.value} is not applied",
            {use.path: False, window.path: window.value}))
        return
    if plan.count(SLIDING):
        plan.sliding_window = plan.sliding_window or window.value
        return
    if explicit:
        # A per-layer plan that names no sliding layer wins over a stray window field.
        return
    plan.sliding_window = window.value
    pattern = v.int("sliding_window_pattern", minimum=1)
    every = pattern.value if pattern else defaults.get("sliding_window_pattern")
    max_window = v.int("max_window_layers")
    fields: dict[str, Any] = {window.path: window.value}
    if every:
        for i in range(total):
            if plan.roles[i] == FULL and (i + 1) % every:
                plan.roles[i] = SLIDING
        fields[pattern.path if pattern else "sliding_window_pattern (transformers default)"] = every
        claim = f"{plan.count(SLIDING)} sliding layers (every {every}th layer is full attention)"
    elif use is not None and max_window is not None:
        for i in range(max_window.value, total):
            if plan.roles[i] == FULL:
                plan.roles[i] = SLIDING
        fields.update({use.path: True, max_window.path: max_window.value})
        claim = f"{plan.count(SLIDING)} sliding layers (layers from max_window_layers on)"
    else:
        plan.roles = [SLIDING if r == FULL else r for r in plan.roles]
        claim = f"all {plan.count(SLIDING)} attention layers slide"
    plan.evidence.append(Evidence(f"{claim}, window {window.value} tokens", fields))


def _apply_chunked(v: ConfigView, plan: LayerPlan, total: int, defaults: dict[str, Any]) -> None:
    """Llama 4: RoPE layers use chunked local attention, NoPE layers are global (vLLM llama4.py:251)."""
    chunk = v.int("attention_chunk_size", minimum=1)
    if chunk is None:
        return
    nope = v.int_list("no_rope_layers")
    if nope is not None:
        uses_rope = per_layer_list(v, nope, total)
        source = {nope.path: nope.value}
    else:
        interval = defaults.get("no_rope_layer_interval")
        if not interval:
            return
        uses_rope = [int((i + 1) % interval != 0) for i in range(total)]
        source = {"no_rope_layers (transformers default interval)": interval}
    for i, rope in enumerate(uses_rope):
        if rope and plan.roles[i] == FULL:
            plan.roles[i] = CHUNKED
    plan.chunk_size = chunk.value
    plan.evidence.append(Evidence(
        f"{plan.count(CHUNKED)} layers use chunked local attention ({chunk.value}-token chunks); "
        f"{plan.count(FULL)} global layers", {chunk.path: chunk.value, **source}))
