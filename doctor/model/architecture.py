"""From a raw config.json to a :class:`ModelCard`: attention kind, layer plan, KV layout, MoE, MTP,
multimodal, quantization and parameter estimates, each with the fields that decided it.

The rules follow the seed's "New Model Diagnosis Procedure" step 1 (a latent rank means MLA, an
indexer means DSA, linear/SSM layers mean hybrid, one KV head means MQA, KV heads equal to query
heads means MHA, else GQA) and the engines' own model code for the layouts (cited where used).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from doctor.errors import InputError
from doctor.model import layers as L
from doctor.model.card import Evidence, KVGroup, Layers, ModelCard, MoE, StateGroup
from doctor.model.fields import ConfigView, Field
from doctor.model.params import estimate_params, kda_shape, part_bytes, weight_bytes
from doctor.model.quantization import detect_quantization
from doctor.model.rope import rope_tables

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_KNOWN_FILE = Path(__file__).with_name("known.json")
#: Far above any real model (the deepest here has 126 layers); guards per-layer lists against nonsense.
MAX_LAYERS = 10_000
_DTYPES = {"bfloat16": "bfloat16", "bf16": "bfloat16", "float16": "float16", "fp16": "float16",
           "half": "float16", "float32": "float32", "fp32": "float32", "float": "float32"}


@cache
def _known() -> dict[str, Any]:
    return json.loads(_KNOWN_FILE.read_text(encoding="utf-8"))


def analyze(raw: dict[str, Any], *, name: str = "", source: str = "config.json") -> ModelCard:
    """Read ``raw`` (a parsed config.json) into a card; raise InputError naming a bad or missing field."""
    if not isinstance(raw, dict):
        raise InputError(f"{source}: expected a JSON object at the top level")
    return _Analysis(raw, name, source).card()


class _Analysis:
    def __init__(self, raw: dict[str, Any], name: str, source: str) -> None:
        self.v = ConfigView(raw, source)
        self.name = name
        self.source = source
        self.evidence: list[Evidence] = []
        self.notes: list[str] = []
        self.sources: dict[str, str] = {}

    # -- identity ----------------------------------------------------------------------------
    def _identity(self) -> tuple[tuple[str, ...], str, bool, dict[str, Any]]:
        v = self.v
        archs: list[str] = []
        for found in (v.root("architectures"), Field(v.prefix + "architectures", v.text.get("architectures"))):
            if found is None or found.value is None:
                continue
            if not isinstance(found.value, list) or not all(isinstance(a, str) for a in found.value):
                raise v.fail(found.path, "expected a list of class names")
            archs += [a for a in found.value if a not in archs]
        types = [t for t in (v.raw.get("model_type"), v.text.get("model_type")) if isinstance(t, str)]
        model_type = types[-1] if types else ""
        known_data = _known()
        defaults: dict[str, Any] = {}
        for t in types:
            defaults.update(known_data["model_types"].get(t, {}))
        known = any(a in known_data["architectures"] for a in archs) or any(
            t in known_data["model_types"] for t in types)
        if not known:
            what = ", ".join(archs) or model_type or "none given"
            self.notes.append(f"unknown architecture ({what}): best-effort card from the generic rules")
        return tuple(archs), model_type, known, defaults

    def _dtype(self) -> str:
        found = self.v.find("torch_dtype", "dtype")
        if found is None or not isinstance(found.value, str):
            self.evidence.append(Evidence("checkpoint dtype not given: assuming bfloat16", {"torch_dtype": None}))
            self.sources["dtype"] = "torch_dtype (absent: bfloat16 assumed)"
            return "bfloat16"
        dtype = _DTYPES.get(found.value.lower().removeprefix("torch."))
        if dtype is None:
            raise self.v.fail(found.path, f"unknown dtype {found.value!r}")
        self.sources["dtype"] = found.path
        return dtype

    # -- the card ----------------------------------------------------------------------------
    def card(self) -> ModelCard:
        v = self.v
        archs, model_type, known, defaults = self._identity()
        dtype = self._dtype()
        total = v.int("num_hidden_layers", "num_layers", "n_layer", "n_layers", minimum=1, required=True)
        if total.value > MAX_LAYERS:
            raise v.fail(total.path, f"{total.value} layers is not a plausible model (limit {MAX_LAYERS})")
        hidden = v.int("hidden_size", "d_model", "n_embd", minimum=1, required=True)
        heads = v.int("num_attention_heads", "n_head", "num_heads", minimum=1, required=True)
        self.sources.update(layers=total.path, attention_heads=heads.path, hidden_size=hidden.path)
        dsv4 = v.find("compress_ratios", "compress_rates") is not None
        plan = L.plan_layers(v, total.value, heads.value, defaults, dsv4=dsv4)
        self.evidence += plan.evidence
        kv_layers = sum(1 for r in plan.roles if r in (L.FULL, L.SLIDING, L.CHUNKED))
        if kv_layers == 0:
            raise v.fail(total.path, "no layer holds attention KV: cannot size the cache")

        kv_lora = v.int("kv_lora_rank")
        is_mla = kv_lora is not None and kv_lora.value > 0
        indexed_types = v.str_list("layer_types")
        is_dsa = v.find("index_topk", "index_n_heads", "indexer_types") is not None or (
            indexed_types is not None and "indexed_attention" in indexed_types.value)

        if dsv4:
            groups, mtp_groups, states, kv_heads, head_dim = self._dsv4(total.value, plan)
            full_kind = "dsa"
        else:
            if is_mla:
                groups, mtp_groups, kv_heads, head_dim = self._mla(plan, kv_lora, is_dsa)
                full_kind = "mla"
            else:
                groups, mtp_groups, kv_heads, head_dim, full_kind = self._attention(plan, heads, hidden)
            if is_dsa:
                main_index, mtp_index = self._indexer(plan)
                groups, mtp_groups, full_kind = [*groups, main_index], [*mtp_groups, mtp_index], "dsa"
            states = ()
        if plan.count(L.LINEAR):
            states = self._linear_states(plan, hidden.value, dtype)
        kind = "hybrid" if plan.count(L.LINEAR) else full_kind
        if kind == "hybrid":
            self.sources["attention"] = ", ".join(plan.evidence[0].fields)
            self.evidence.append(Evidence(
                f"hybrid: {plan.count(L.LINEAR)} of {total.value} layers are {plan.linear_kind} "
                f"linear/SSM layers with a fixed per-sequence state; the {plan.count(L.FULL)} others are "
                f"{full_kind.upper()} attention", {}))

        layer_counts = Layers(
            total=total.value, kv=kv_layers, linear=plan.count(L.LINEAR), sliding=plan.count(L.SLIDING),
            chunked=plan.count(L.CHUNKED), no_attention=plan.count(L.NONE),
            indexer=sum(g.layers for g in groups if g.kind == "indexer"))
        moe = self._moe(defaults, total.value, plan)
        mtp = self._mtp()
        if mtp == 0:
            mtp_groups = ()
        else:
            mtp_groups = tuple(
                KVGroup(g.kind, f"MTP {g.label}", mtp, g.kv_heads, g.head_dim, g.v_head_dim, g.window,
                        g.tokens_per_entry, g.sparse) for g in mtp_groups)
        multimodal, modalities = self._multimodal()
        quant = detect_quantization(v, self.evidence)
        max_context = v.int("max_position_embeddings", "model_max_length", "max_seq_len", "seq_length")
        vocab = v.int("vocab_size", "padded_vocab_size")
        quant_field = v.find("quantization_config")
        self.sources.setdefault("sliding_window", ", ".join(
            k for e in plan.evidence for k in e.fields if "window" in k) or "(no sliding window)")
        self.sources.update(
            quantization=f"{quant_field.path}.quant_method" if quant_field else "(no quantization_config)",
            max_context=max_context.path if max_context else "(no max_position_embeddings)",
            multimodal=", ".join(k for k in ("vision_config", "audio_config") if isinstance(v.raw.get(k), dict))
            or "(no vision/audio config)",
            layer_plan=", ".join(k for e in plan.evidence for k in e.fields) or "num_hidden_layers")
        estimate = estimate_params(v, plan, moe, defaults, full_kind=full_kind)
        sglang = defaults.get("sglang", True)
        if not sglang:
            self.notes.append(f"SGLang 0.5.23 has no implementation of {model_type}; SGLang sizes are not given")
        return ModelCard(
            name=self.name, source=self.source, architectures=archs, model_type=model_type, known=known,
            dtype=dtype, attention=kind, full_attention=full_kind, attention_heads=heads.value,
            kv_heads=kv_heads, head_dim=head_dim, layers=layer_counts, kv_groups=tuple(groups),
            states=tuple(states), mtp_kv_groups=tuple(mtp_groups), moe=moe, mtp_layers=mtp,
            multimodal=multimodal, modalities=modalities, quantization=quant, hidden_size=hidden.value,
            vocab_size=vocab.value if vocab else (defaults.get("vocab_size") or None),
            max_context=max_context.value if max_context else None,
            params=estimate.total, active_params=estimate.active, vision_params=estimate.vision,
            weight_bytes=weight_bytes(estimate, quant, dtype), param_parts=dict(estimate.parts),
            expert_weight_bytes=part_bytes(estimate, quant).get("experts", 0),
            evidence=tuple(self.evidence), notes=tuple(self.notes),
            kv_lora_rank=kv_lora.value if is_mla else None,
            qk_rope_head_dim=self._int_value("qk_rope_head_dim") if (is_mla or dsv4) else None,
            qk_nope_head_dim=self._int_value("qk_nope_head_dim") if is_mla else None,
            mla_v_head_dim=self._int_value("v_head_dim") if is_mla else None,
            index_topk=self._int_value("index_topk") if (is_dsa or dsv4) else None,
            index_head_dim=self._int_value("index_head_dim") if (is_dsa or dsv4) else None,
            sliding_window=plan.sliding_window, chunk_size=plan.chunk_size, text_prefix=v.prefix,
            sglang_supported=sglang, sources=dict(self.sources),
            rope_tables=tuple((engine, rope_tables(v.text, head_dim, rope_dim, engine)) for engine in ("vllm", "sglang")
                              for rope_dim in [self._int_value("qk_rope_head_dim") if (is_mla or dsv4) else None]),
        )

    def _int_value(self, name: str) -> int | None:
        found = self.v.int(name)
        return found.value if found else None

    # -- attention (MHA / MQA / GQA, sliding, chunked) ---------------------------------------------
    def _attention(self, plan: L.LayerPlan, heads: Field, hidden: Field
                   ) -> tuple[list[KVGroup], list[KVGroup], int, int, str]:
        v = self.v
        head_dim = v.int("head_dim", "attention_head_dim", "kv_channels", minimum=1)
        if head_dim is None:
            if hidden.value % heads.value:
                raise v.fail("head_dim", f"missing, and hidden_size={hidden.value} is not a multiple of "
                                         f"num_attention_heads={heads.value}")
            hd, hd_fields = hidden.value // heads.value, {hidden.path: hidden.value, heads.path: heads.value}
            hd_claim = f"head_dim = hidden_size / num_attention_heads = {hd}"
        else:
            hd, hd_fields = head_dim.value, {head_dim.path: head_dim.value}
            hd_claim = f"head_dim = {hd} (given; hidden_size / heads would be {hidden.value / heads.value:g})"
        v_dim = v.int("v_head_dim", minimum=1)
        vd = v_dim.value if v_dim else hd
        kv, kv_fields = self._kv_heads(heads)
        full_heads, full_hd = kv.value, hd
        global_kv = v.int("num_global_key_value_heads", minimum=1)
        global_hd = v.int("global_head_dim", minimum=1)
        if global_kv or global_hd:
            # Gemma 4: full-attention layers use their own KV heads and head size
            # (sglang 0.5.23 srt/utils/hf_transformers/config.py:115-141).
            full_heads = global_kv.value if global_kv else kv.value
            full_hd = global_hd.value if global_hd else hd
            self.evidence.append(Evidence(
                f"full-attention layers: {full_heads} KV heads × head_dim {full_hd}; sliding layers: "
                f"{kv.value} × {hd}", {**({global_kv.path: global_kv.value} if global_kv else {}),
                                       **({global_hd.path: global_hd.value} if global_hd else {})}))
        full_vd = full_hd if (global_hd and not v_dim) else vd

        groups: list[KVGroup] = []
        if plan.kv_heads_by_layer is not None:  # NAS: KV heads chosen per block
            by_shape: dict[tuple[int, str], int] = {}
            for role, n in zip(plan.roles, plan.kv_heads_by_layer, strict=True):
                if role != L.NONE and n is not None:
                    by_shape[(n, role)] = by_shape.get((n, role), 0) + 1
            for (n, role), count in sorted(by_shape.items(), reverse=True):
                window = plan.sliding_window if role == L.SLIDING else None
                groups.append(KVGroup("attention", f"{role} attention ({n} KV heads)", count, n, hd, vd, window))
            full_heads = max(n for n, _ in by_shape)
            kv_fields = {"block_configs[].attention.n_heads_in_group": sorted({heads.value // n for n, _ in by_shape})}
        else:
            if plan.count(L.FULL):
                groups.append(KVGroup("attention", "full attention", plan.count(L.FULL), full_heads, full_hd, full_vd))
            if plan.count(L.SLIDING):
                swa_kv = v.int("swa_num_key_value_heads", minimum=1)
                swa_hd = v.int("swa_head_dim", minimum=1)
                swa_vd = v.int("swa_v_head_dim", minimum=1)
                s_hd = swa_hd.value if swa_hd else hd
                groups.append(KVGroup(
                    "attention", "sliding window", plan.count(L.SLIDING), swa_kv.value if swa_kv else kv.value,
                    s_hd, swa_vd.value if swa_vd else (vd if not swa_hd else s_hd), window=plan.sliding_window))
                if swa_kv or swa_hd:
                    self.evidence.append(Evidence(
                        "sliding layers have their own KV shape",
                        {f.path: f.value for f in (swa_kv, swa_hd, swa_vd) if f}))
            if plan.count(L.CHUNKED):
                groups.append(KVGroup("attention", "chunked local", plan.count(L.CHUNKED), kv.value, hd, vd,
                                      window=plan.chunk_size))
        self.evidence.append(Evidence(hd_claim, hd_fields))
        kv_source = next(iter(kv_fields))
        if kv_fields[kv_source] is None:
            kv_source = f"{heads.path} (num_key_value_heads absent)"
        self.sources["kv_heads"] = global_kv.path if global_kv else kv_source
        self.sources["head_dim"] = global_hd.path if global_hd else ", ".join(hd_fields)
        if v_dim and vd != hd:
            self.evidence.append(Evidence(f"V heads are {vd} wide, K heads {hd} (K and V sized apart)",
                                          {v_dim.path: vd}))
        kind = self._gqa_kind(full_heads, heads, kv_fields)
        mtp_groups = [KVGroup("attention", "attention", 1, full_heads, full_hd, full_vd)]
        return groups, mtp_groups, full_heads, full_hd, kind

    def _kv_heads(self, heads: Field) -> tuple[Field, dict[str, Any]]:
        """KV heads and the fields that say so (Falcon's multi_query means one; absent means MHA)."""
        v = self.v
        kv = v.int("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num", minimum=1)
        if kv is not None:
            return kv, {kv.path: kv.value}
        mq = v.flag("multi_query")
        if mq is not None and mq.value:
            return Field(mq.path, 1), {mq.path: True}
        return Field(heads.path, heads.value), {"num_key_value_heads": None}

    def _gqa_kind(self, kv_heads: int, heads: Field, kv_fields: dict[str, Any]) -> str:
        fields = {heads.path: heads.value, **kv_fields}
        if kv_heads == 1:
            kind, claim = "mqa", f"MQA: one KV head shared by all {heads.value} query heads"
        elif kv_heads == heads.value:
            kind = "mha"
            claim = (f"MHA: num_key_value_heads absent, so KV heads = {heads.value} query heads"
                     if None in kv_fields.values() else f"MHA: {kv_heads} KV heads = {heads.value} query heads")
        else:
            kind = "gqa"
            claim = f"GQA: {kv_heads} KV heads for {heads.value} query heads ({heads.value // kv_heads} per group)"
        self.evidence.append(Evidence(claim, fields))
        self.sources["attention"] = ", ".join(k for k, val in fields.items() if val is not None)
        return kind

    # -- MLA and DSA (DeepSeek V2/V3/V3.2, Kimi K2, GLM-5) ------------------------------------------
    def _mla(self, plan: L.LayerPlan, kv_lora: Field, is_dsa: bool
             ) -> tuple[list[KVGroup], list[KVGroup], int, int]:
        v = self.v
        rope = v.int("qk_rope_head_dim", required=True)
        width = kv_lora.value + rope.value
        self.evidence.append(Evidence(
            f"MLA: each layer stores one latent of kv_lora_rank + qk_rope_head_dim = {width} values per "
            "token, shared by all heads (not split by TP)", {kv_lora.path: kv_lora.value, rope.path: rope.value}))
        self.sources.update(attention=kv_lora.path, kv_heads=kv_lora.path, head_dim=f"{kv_lora.path}, {rope.path}",
                            kv_lora_rank=kv_lora.path, qk_rope_head_dim=rope.path)
        groups = [KVGroup("mla", "MLA latent", plan.count(L.FULL), 1, width, 0, sparse=is_dsa)]
        mtp = [KVGroup("mla", "MLA latent", 1, 1, width, 0, sparse=is_dsa)]
        return groups, mtp, 1, width

    def _indexer(self, plan: L.LayerPlan) -> tuple[KVGroup, KVGroup]:
        """DSA indexer keys: the main layers that compute a top-k, and one per MTP layer
        (MTP layers always build their own indexer: vllm 0.33.0 deepseek_v2.py:1158-1168)."""
        v = self.v
        idx_dim = v.int("index_head_dim", minimum=1, required=True)
        full = [i for i, role in enumerate(plan.roles) if role == L.FULL]
        computing, fields = self._indexer_layers(full)
        self.evidence.append(Evidence(
            f"DSA: a lightning indexer (index_topk={self._int_value('index_topk')}) selects the tokens "
            f"attended; {len(computing)} of {len(full)} attention layers compute and cache indexer keys",
            {**fields, idx_dim.path: idx_dim.value}))
        self.sources["attention"] = ", ".join([*fields, self.sources.get("attention", "")]).rstrip(", ")
        self.sources.update(index_topk="index_topk", index_head_dim=idx_dim.path)
        return (KVGroup("indexer", "indexer keys", len(computing), 1, idx_dim.value, 0),
                KVGroup("indexer", "indexer keys", 1, 1, idx_dim.value, 0))

    def _indexer_layers(self, full: list[int]) -> tuple[list[int], dict[str, Any]]:
        """The layers (of ``full``) that compute and cache indexer keys; IndexShare layers reuse
        the previous layer's top-k and cache none.

        Same precedence as sglang 0.5.23 srt/configs/model_config.py:488-522 (indexer_types, then
        index_topk_pattern, then index_topk_freq with index_skip_topk_offset, default offset 2);
        vLLM 0.33.0 deepseek_v2.py:1142-1168 skips the same layers.
        """
        v = self.v
        types = v.str_list("indexer_types")
        if types is not None:
            return [i for i in full if i >= len(types.value) or types.value[i] != "shared"], {types.path: types.value}
        pattern = v.find("index_topk_pattern")
        if pattern is not None:
            if not isinstance(pattern.value, (str, list)):
                raise v.fail(pattern.path, "expected a string or list of 'F'/'S' codes")
            codes = list(pattern.value)
            return [i for i in full if i >= len(codes) or codes[i] != "S"], {pattern.path: pattern.value}
        freq = v.int("index_topk_freq", minimum=1)
        if freq is None or freq.value == 1:
            found = v.find("index_topk", "index_n_heads")
            return full, ({found.path: found.value} if found else {"layer_types": "indexed_attention"})
        offset = v.int("index_skip_topk_offset", minimum=1)
        off = offset.value if offset else 2
        return ([i for i in full if max(i - off + 1, 0) % freq.value == 0],
                {freq.path: freq.value, "index_skip_topk_offset": off})

    # -- DeepSeek V4 (compressed sparse attention) -----------------------------------------------------
    def _dsv4(self, total: int, plan: L.LayerPlan
              ) -> tuple[list[KVGroup], list[KVGroup], list[StateGroup], int, int]:
        """V4 layers: every layer keeps a sliding window of raw rows; c4 layers add rows compressed
        4:1 plus indexer keys (also 4:1); c128 layers add rows compressed 128:1; compressors keep a
        float32 ring of partial states per sequence (vllm 0.33.0 models/deepseek_v4/attention.py:
        240-420, compressor.py:150-190, 283)."""
        v = self.v
        ratios_f = v.find("compress_ratios")
        if ratios_f is not None:
            ratios = L.per_layer_list(v, ratios_f, total)
        else:
            rates = v.mapping("compress_rates")
            types = v.str_list("layer_types")
            if types is None:
                raise v.fail("layer_types", "missing (compress_rates needs per-layer types)")
            ratios = [int(rates.value.get(t, 0)) for t in L.per_layer_list(v, types, total)]
            ratios_f = Field(rates.path, rates.value)
        if any(r not in (0, 1, 4, 128) for r in ratios):
            raise v.fail(ratios_f.path, "expected compress ratios 0, 4 or 128")
        head_dim = v.int("head_dim", minimum=1, required=True).value
        window = v.int("sliding_window", minimum=1, required=True).value
        idx_dim = v.int("index_head_dim", minimum=1, required=True).value
        c4, c128 = ratios.count(4), ratios.count(128)
        for i, r in enumerate(ratios):
            plan.roles[i] = L.SLIDING if r in (0, 1) else L.FULL
        plan.sliding_window = window
        self.evidence.append(Evidence(
            f"DeepSeek V4 compressed sparse attention: {c4} c4 layers (KV rows compressed 4:1, with a "
            f"DSA indexer), {c128} c128 layers (128:1), {total - c4 - c128} window-only layers; every "
            f"layer also keeps the last {window} tokens uncompressed (head_dim {head_dim}, one KV row)",
            {ratios_f.path: ratios_f.value, "head_dim": head_dim, "sliding_window": window,
             "index_head_dim": idx_dim}))
        self.sources.update(attention=ratios_f.path, kv_heads="head_dim (one shared KV row)", head_dim="head_dim",
                            sliding_window="sliding_window", index_topk="index_topk", index_head_dim="index_head_dim")
        groups = [KVGroup("dsv4", "sliding window rows", total, 1, head_dim, 0, window=window)]
        if c4:
            groups.append(KVGroup("dsv4", "c4 compressed rows", c4, 1, head_dim, 0, tokens_per_entry=4))
            groups.append(KVGroup("indexer", "c4 indexer keys", c4, 1, idx_dim, 0, tokens_per_entry=4))
        if c128:
            groups.append(KVGroup("dsv4", "c128 compressed rows", c128, 1, head_dim, 0, tokens_per_entry=128))
        states: list[StateGroup] = []
        if c4:  # coff = 2: ring of 2*4 partial states of 2*coff*dim floats, for the KV and the indexer
            states.append(StateGroup("dsv4_compressor", "c4 compressor state", c4, 0,
                                     8 * 2 * 2 * head_dim + 8 * 2 * 2 * idx_dim))
        if c128:  # coff = 1: ring of 128 partial states of 2*dim floats
            states.append(StateGroup("dsv4_compressor", "c128 compressor state", c128, 0, 128 * 2 * head_dim))
        # MTP layers are window-only whatever the ratio list says past the main layers
        # (vllm models/deepseek_v4/attention.py:236-242 gives them compress_ratio 1).
        mtp = [KVGroup("dsv4", "sliding window rows", 1, 1, head_dim, 0, window=window)]
        return groups, mtp, states, 1, head_dim

    # -- linear attention / SSM state ------------------------------------------------------------
    def _linear_states(self, plan: L.LayerPlan, hidden: int, dtype: str) -> tuple[StateGroup, ...]:
        v = self.v
        n = plan.count(L.LINEAR)
        kind = plan.linear_kind or "gdn"
        ssm_dtype = v.string("mamba_ssm_dtype")
        ssm_cache_dtype = v.string("mamba_ssm_cache_dtype")
        pins = {"config_ssm_dtype": ssm_dtype.value if ssm_dtype else None,
                "config_ssm_cache_dtype": ssm_cache_dtype.value if ssm_cache_dtype else None}
        if kind == "gdn":
            kh = v.int("linear_num_key_heads", minimum=1, required=True)
            kd = v.int("linear_key_head_dim", minimum=1, required=True)
            vh = v.int("linear_num_value_heads", minimum=1, required=True)
            vd = v.int("linear_value_head_dim", minimum=1, required=True)
            k = self._int_value("linear_conv_kernel_dim") or 4
            # vllm 0.33.0 model_executor/layers/mamba/mamba_utils.py:272-294 (gated_delta_net_state_shape)
            conv = (2 * kh.value * kd.value + vh.value * vd.value) * (k - 1)
            ssm = vh.value * vd.value * kd.value
            fields = {f.path: f.value for f in (kh, kd, vh, vd)}
            claim = (f"Gated DeltaNet state per layer: conv ({2 * kh.value * kd.value + vh.value * vd.value} "
                     f"channels × {k - 1}) + recurrent {vh.value}×{vd.value}×{kd.value}")
            label = "Gated DeltaNet"
        elif kind == "kda":
            nh, hd, k = kda_shape(v)
            # vllm 0.33.0 mamba_utils.py:296-319 (kda_state_shape): q, k, v short convs + heads×d×d
            conv, ssm = 3 * nh * hd * (k - 1), nh * hd * hd
            fields = {"linear_attn_config.num_heads": nh, "linear_attn_config.head_dim": hd}
            claim = f"KDA state per layer: 3 short convs ({3 * nh * hd} channels × {k - 1}) + recurrent {nh}×{hd}×{hd}"
            label = "KDA"
        elif kind == "mamba2":
            nh = v.int("mamba_num_heads", minimum=1, required=True)
            hd = v.int("mamba_head_dim", minimum=1, required=True)
            groups = v.int("n_groups", "mamba_n_groups", minimum=1, required=True)
            state = v.int("ssm_state_size", "mamba_d_state", minimum=1, required=True)
            k = self._int_value("conv_kernel") or self._int_value("mamba_d_conv") or 4
            inner = nh.value * hd.value
            # vllm 0.33.0 mamba_utils.py:186-212 (mamba2_state_shape)
            conv = (inner + 2 * groups.value * state.value) * (k - 1)
            ssm = nh.value * hd.value * state.value
            fields = {f.path: f.value for f in (nh, hd, groups, state)}
            claim = (f"Mamba-2 state per layer: conv ({inner + 2 * groups.value * state.value} channels × "
                     f"{k - 1}) + SSM {nh.value}×{hd.value}×{state.value}")
            label = "Mamba-2"
        elif kind == "mamba1":
            expand = self._int_value("mamba_expand") or 2
            state = v.int("mamba_d_state", "ssm_state_size", minimum=1, required=True)
            k = self._int_value("mamba_d_conv") or 4
            inner = expand * hidden
            # vllm 0.33.0 mamba_utils.py:171-184 (mamba1_state_shape)
            conv, ssm = inner * (k - 1), inner * state.value
            fields = {"mamba_expand": expand, state.path: state.value, "mamba_d_conv": k}
            claim = f"Mamba state per layer: conv ({inner} channels × {k - 1}) + SSM {inner}×{state.value}"
            label = "Mamba"
        else:  # lightning linear attention: one heads×d×d state (vllm mamba_utils.py:154-161)
            heads = v.int("num_attention_heads", required=True).value
            hd = self._int_value("head_dim") or hidden // heads
            conv, ssm = 0, heads * hd * hd
            fields = {"num_attention_heads": heads, "head_dim": hd}
            claim = f"lightning-attention state per layer: {heads}×{hd}×{hd}"
            label = "lightning attention"
        pin_fields = {f.path: f.value for f in (ssm_dtype, ssm_cache_dtype) if f}
        self.evidence.append(Evidence(claim, {**fields, **pin_fields}))
        return (StateGroup(kind, label, n, conv, ssm, **pins),)

    # -- MoE, MTP, multimodal --------------------------------------------------------------------
    def _moe(self, defaults: dict[str, Any], total: int, plan: L.LayerPlan) -> MoE | None:
        v = self.v
        experts = v.int("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts")
        enabled = v.flag("enable_moe_block")
        if experts is None or experts.value <= 1 or (enabled is not None and not enabled.value):
            self.evidence.append(Evidence("dense: no routed experts",
                                          {experts.path: experts.value} if experts else {}))
            self.sources["moe"] = experts.path if experts else "(no expert-count field)"
            return None
        active = v.int("num_experts_per_tok", "num_experts_per_token", "top_k_experts", "experts_per_token",
                       "moe_topk", "moe_k", minimum=1)
        if active is None:
            raise v.fail("num_experts_per_tok", f"missing (the config has {experts.value} routed experts "
                                                f"in {experts.path} but no experts-per-token field)")
        shared, shared_fields = self._shared_experts(defaults)
        moe_layers = _count_moe_layers(v, total, plan)
        self.sources.update(moe=experts.path, moe_experts=experts.path, moe_active=active.path,
                            moe_shared=", ".join(shared_fields) or "(no shared-expert field)")
        self.evidence.append(Evidence(
            f"MoE: {experts.value} routed experts, {active.value} per token"
            + (f", {shared} shared" if shared else ", no shared expert")
            + f", in {moe_layers} of {total} layers",
            {experts.path: experts.value, active.path: active.value, **shared_fields}))
        return MoE(experts.value, active.value, shared, moe_layers)

    def _shared_experts(self, defaults: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        v = self.v
        count = v.int("n_shared_experts", "num_shared_experts")
        if count is not None:
            return count.value, {count.path: count.value}
        for size_name in ("shared_expert_intermediate_size", "moe_shared_expert_intermediate_size",
                          "shared_intermediate_size"):
            size = v.int(size_name)
            if size is not None:
                return (1 if size.value > 0 else 0), {size.path: size.value}
        if "shared_experts" in defaults:
            return defaults["shared_experts"], {"model_type (family has a shared expert)": self.v.text.get("model_type")}
        return 0, {}

    def _mtp(self) -> int:
        v = self.v
        found = v.int("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_layers", "mtp_num_layers")
        self.sources["mtp_layers"] = found.path if found else "(no MTP field)"
        if found is not None:
            if found.value:
                self.evidence.append(Evidence(f"{found.value} multi-token-prediction layer(s)", {found.path: found.value}))
            return found.value
        modules = v.int("num_mtp_modules")
        use = v.flag("use_mtp")
        if modules is not None and (use is None or use.value):
            per = v.int("mtp_transformer_layers", minimum=1)
            n = modules.value * (per.value if per else 1)
            self.sources["mtp_layers"] = modules.path
            self.evidence.append(Evidence(f"{n} multi-token-prediction layer(s)", {modules.path: modules.value}))
            return n
        return 0

    def _multimodal(self) -> tuple[bool, tuple[str, ...]]:
        raw = self.v.raw
        found: dict[str, Any] = {}
        for key, modality in (("vision_config", "vision"), ("vision_tower", "vision"), ("visual", "vision"),
                              ("vision_encoder", "vision"), ("audio_config", "audio"),
                              ("audio_encoder", "audio"), ("speech_config", "audio")):
            value = raw.get(key)
            if isinstance(value, dict) and value:
                found[key] = modality
        modalities = tuple(dict.fromkeys(found.values()))
        if modalities:
            self.evidence.append(Evidence(f"multimodal: {' and '.join(modalities)} tower in the config",
                                          {k: "{…}" for k in found}))
        return bool(modalities), modalities


def _count_moe_layers(v: ConfigView, total: int, plan: L.LayerPlan) -> int:
    """How many layers have routed experts (the rest are dense), in each family's own encoding."""
    types = v.str_list("mlp_layer_types")
    if types is not None:
        return sum(1 for t in types.value[:total] if t == "sparse")
    freq_list = v.find("moe_layer_freq")
    if freq_list is not None and isinstance(freq_list.value, list):  # MiMo: one 0/1 flag per layer
        return sum(1 for f in v.int_list("moe_layer_freq").value[:total] if f)
    pattern = v.string("hybrid_override_pattern")
    if pattern is not None:
        return pattern.value.count("E")
    period = v.int("expert_layer_period", minimum=1)
    if period is not None:
        offset = v.int("expert_layer_offset")
        return sum(1 for i in range(total) if i % period.value == (offset.value if offset else 0))
    interleave = v.int("interleave_moe_layer_step", minimum=1)
    if interleave is not None:
        return sum(1 for i in range(total) if (i + 1) % interleave.value == 0)
    first_dense = v.int("first_k_dense_replace")
    freq = v.int("moe_layer_freq", minimum=1)
    if first_dense is not None or freq is not None:
        k = first_dense.value if first_dense else 0
        f = freq.value if freq else 1
        return sum(1 for i in range(total) if i >= k and i % f == 0)
    step = v.int("decoder_sparse_step", minimum=1)
    only = v.int_list("mlp_only_layers")
    skip = set(only.value) if only else set()
    s = step.value if step else 1
    return sum(1 for i in range(total) if i not in skip and (i + 1) % s == 0)
