"""Derivation: facts computed from other facts, once every source has spoken and before the playbooks run.

analyzers.py holds the small analyzers (one concern each); the memory fit is doctor/model/fit.py's. The analyzers
that gathering needs between two inputs (the model's precision under the launch flags, the parsers the model
family expects, the flag spellings of the engine release) are in precision.py, parsers.py and spelling.py.
"""

from __future__ import annotations

from doctor.derive.analyzers import (
    derive_absent_counters,
    derive_allow_long_max_len,
    derive_capacity,
    derive_device,
    derive_engine_name,
    derive_ep_load,
    derive_from_log,
    derive_gpu_balance,
    derive_hybrid_block_size,
    derive_kernel_support,
    derive_kv_override,
    derive_mem_fraction_picked,
    derive_misaligned_chunks,
    derive_model_label,
    derive_no_tool_parser_effect,
    derive_quantization_match,
    derive_sglang_allow_long_context,
)
from doctor.derive.health import (
    derive_dcgm_gpu_faults,
    derive_gpu_shortfall,
    derive_missing_workers,
    derive_xid_events,
)
from doctor.facts import Facts
from doctor.model.fit import derive_fit


def derive_all(facts: Facts) -> Facts:
    derive_from_log(facts)
    derive_dcgm_gpu_faults(facts)
    derive_xid_events(facts)
    derive_engine_name(facts)
    derive_gpu_balance(facts)
    derive_device(facts)
    derive_allow_long_max_len(facts)
    derive_sglang_allow_long_context(facts)
    derive_no_tool_parser_effect(facts)
    derive_model_label(facts)
    derive_absent_counters(facts)
    derive_kernel_support(facts)
    derive_fit(facts)
    derive_quantization_match(facts)
    derive_hybrid_block_size(facts)
    derive_misaligned_chunks(facts)
    derive_ep_load(facts)
    derive_capacity(facts)
    derive_kv_override(facts)
    derive_mem_fraction_picked(facts)
    derive_missing_workers(facts)
    derive_gpu_shortfall(facts)
    from doctor.engines.refusals import derive_refused_values

    derive_refused_values(facts)
    return facts
