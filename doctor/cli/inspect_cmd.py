"""``llmdoctor inspect CONFIG``: the architecture card of a model, from its config.json alone.

The text card is built to be read in five seconds during an incident (kind, layers, experts,
KV/token, state/sequence, what one user at the chosen context costs), followed by the evidence.
``--format json`` emits the versioned ``llmdoctor.inspect/1`` document described in docs/inspect.md.
"""

from __future__ import annotations

import json

import click

from doctor.cli.common import format_option
from doctor.cli.options import offline_option, option_group
from doctor.cli.output import echo, emit
from doctor.errors import EXIT_OK, EXIT_USAGE
from doctor.model.kvcache import ENGINES
from doctor.model.units import parse_bytes, parse_tokens

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.commands.inspect import Sizing

_KV_CHOICES = ("auto", "bf16", "fp16", "fp8", "fp4")


EPILOG = """\b
Examples:
  llmdoctor inspect example:seed-gqa-27b
  llmdoctor inspect ~/models/Qwen3-8B --context 128k --gpu-mem 80G
  llmdoctor inspect deepseek-ai/DeepSeek-V3 --kv-dtype fp8 --engine sglang --format json
  HF_TOKEN=hf_... llmdoctor inspect meta-llama/Llama-3.3-70B-Instruct   # a gated repo, from the Hub
  llmdoctor inspect Qwen/Qwen3-8B --offline   # only this machine: a path or the HF cache

\b
Exit codes: 0 the card is printed; 2 the config cannot be read or has a bad field, the model is not found
(locally, in the HF cache, or on the Hub: gated without HF_TOKEN, no such repo, Hub unreachable, --offline),
or its architecture is not known (the card is still printed, best-effort, with model.known = false).
"""


def _sizing(kv_dtype: str, engine: str | None, context: str, gpu_mem: str | None) -> Sizing:
    from doctor.commands.inspect import Sizing  # lazy: --help and the fast path never build one

    return Sizing(kv_dtype, engine, parse_tokens(context), parse_bytes(gpu_mem) if gpu_mem else None)


#: --kv-dtype, --engine, --context, --gpu-mem: what the card is sized for (a ``Sizing``, build_report's keywords)
sizing_options = option_group("sizing", _sizing, [
    click.option("--kv-dtype", type=click.Choice(_KV_CHOICES), default="auto", show_default=True,
                 help="KV cache dtype to size for (auto: the checkpoint's dtype, as the engines default)."),
    click.option("--engine", type=click.Choice(ENGINES), default=None,
                 help="Size the cache with this engine's layout where vLLM and SGLang differ (default: vLLM)."),
    click.option("--context", default="32k", show_default=True,
                 help="Tokens per request for the per-user line (32768, 32k, 1M)."),
    click.option("--gpu-mem", default=None,
                 help="One GPU's memory for a quick capacity line (80G = 80e9, 80GiB, 141GB)."),
])


@click.command("inspect", epilog=EPILOG)
@click.argument("config", metavar="CONFIG")
@format_option("text", "json")
@sizing_options
@offline_option
def inspect(config: str, fmt: str, sizing: Sizing, offline: bool) -> int:
    """Show the architecture card of CONFIG and the config fields behind every answer.

    CONFIG is a config.json, a model directory, a Hugging Face repo id — from the local cache (HF_HUB_CACHE /
    HF_HOME), else from the Hub (HF_ENDPOINT, HF_TOKEN; config, tokenizer config and safetensors headers, never
    weights) unless --offline or HF_HUB_OFFLINE=1 — or example:NAME for a bundled scenario. Weights are exact
    when the checkpoint's safetensors headers can be read (model.weight_source = safetensors), else estimated.
    """
    from doctor.commands.inspect import build_report
    from doctor.model.resolve import model_card
    from doctor.render.inspect import render_text

    sized = model_card(config, offline=offline)
    card = sized.card
    report = build_report(card, **sizing.keywords())
    report["resolution"] = {"origin": sized.resolved.origin, "where": sized.resolved.where,
                            "weights_note": sized.resolved.weights_note or None,
                            "chat_template": sized.resolved.chat_template}
    emit(json.dumps(report, indent=2) if fmt == "json" else render_text(card, report))
    if not card.known:
        what = ", ".join(card.architectures) or card.model_type or "none given"
        field = "architectures" if card.architectures else "model_type"
        echo(f"llmdoctor: {card.source}: {field}: {what} is not a known architecture; "
                   "the card above is best-effort (model.known = false)", err=True)
        return EXIT_USAGE
    return EXIT_OK
