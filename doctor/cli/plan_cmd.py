"""`llmdoctor plan CONFIG --gpu NAME[:COUNT]`: a serving design — fit, concurrency, parallelism, flags, commands,
and whether it runs on this hardware (docs/plan.md)."""

from __future__ import annotations

import click

from doctor.cli.common import fail_on_option, format_option
from doctor.cli.manifest_opt import manifest_option
from doctor.cli.options import (  # _tokens: the --context parser all share
    _tokens,
    offline_option,
    option_group,
)
from doctor.cli.output import echo, emit_document, exit_code
from doctor.errors import EXIT_FINDINGS, InputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from doctor.plan.request import PlanRequest

EPILOG = """\b
Examples:
  llmdoctor plan example:seed-gqa-27b --gpu H200:8 --context 32k --users 100 --weights-dtype fp8
  llmdoctor plan deepseek-ai/DeepSeek-V3 --gpu 8xH200 --users 100
  llmdoctor plan ~/models/GLM-5.2 --gpu 8xB300 --weights-dtype nvfp4 --model-path nvidia/GLM-5.2-NVFP4
  llmdoctor plan ~/models/Qwen3.5-397B-A17B --gpu 8xH200 --rps 5 --text-only --engine vllm --format json
  llmdoctor plan Qwen/Qwen3-8B --manifest deploy.yaml      # its GPUs, engine and image version

\b
Exit codes: 0 it runs and no finding at or above --fail-on; 1 findings, or it does not run; 2 bad input
(unreadable config, an unknown GPU without --gpu-mem, a context beyond the model, --users with --rps).
`llmdoctor gpus` lists the GPUs llmdoctor knows; an ambiguous name (A100, RTX 6000) says which it assumed.
"""

# Kept in step with doctor/plan/rules.yaml and doctor/model/weights.py by tests (no YAML read at start-up).
LATENCY = ("strict", "balanced", "relaxed")
WEIGHT_DTYPES = ("auto", "bf16", "fp16", "fp8", "nvfp4", "mxfp4")


def _request(config: str, gpu: str | None, gpu_mem: str | None, manifest: str | None, context: int | None,
             users: int | None, rps: float | None, request_seconds: float | None, latency: str | None, engine: str,
             engine_version: str | None, weights_dtype: str, model_path: str | None, text_only: bool,
             offline: bool) -> PlanRequest:
    """The flags as the planner takes them: one ``PlanRequest`` (a --manifest's GPUs, engine and version filled
    in where the flags leave them)."""
    from doctor.plan.request import ENGINES, PlanRequest

    if manifest:
        gpu, engine, engine_version = _from_manifest(manifest, gpu, engine, engine_version)
    if not gpu:
        raise InputError("--gpu NAME[:COUNT] is required (or a --manifest whose pods name the GPU product)")
    return PlanRequest(config=config, gpu=gpu, context=context, users=users, rps=rps,
                       request_seconds=request_seconds, latency=latency,
                       engines=ENGINES if engine == "both" else (engine,), engine_version=engine_version,
                       weights_dtype=weights_dtype, model_path=model_path, text_only=text_only, offline=offline,
                       gpu_mem=gpu_mem)


#: CONFIG, --gpu … --offline: what to plan for (a ``PlanRequest``)
request_options = option_group("request", _request, [
    click.argument("config", metavar="CONFIG"),
    click.option("--gpu", metavar="NAME[:COUNT]", help="GPUs to serve on, e.g. H200:8, '8x B300' (required unless "
                                                      "--manifest names them)."),
    click.option("--gpu-mem", metavar="SIZE", help="Memory of each GPU (48G, 80GB): overrides the catalog's (a 48 GB "
                                                   "RTX 4090) and is required for a GPU the catalog lacks."),
    manifest_option,
    click.option("--context", callback=_tokens, metavar="N",
                 help="Tokens per request (prompt + output): 32768, 32k, 1M. Default 32k."),
    click.option("--users", type=int, metavar="N", help="Concurrent requests to serve."),
    click.option("--rps", type=float, metavar="N",
                 help="Requests per second instead of --users (turned into concurrency with Little's law)."),
    click.option("--request-seconds", type=float, metavar="S",
                 help="With --rps: how long a request stays in the server (default: an assumed 20 s)."),
    click.option("--latency", type=click.Choice(LATENCY), default=None,
                 help="strict: larger TP; relaxed: smaller TP, more replicas; default balanced (TP2 replicas)."),
    click.option("--engine", "engine", type=click.Choice(("vllm", "sglang", "both")), default="both",
                 show_default=True),
    click.option("--engine-version", metavar="V", help="Engine version to plan for (with --engine vllm|sglang; "
                                                       "default: the newest catalog)."),
    click.option("--weights-dtype", type=click.Choice(WEIGHT_DTYPES), default="auto", show_default=True,
                 help="Weights to size for: the checkpoint's own (auto), or fp8 (quantized while loading a 16-bit "
                      "checkpoint), or another checkpoint's format (name it with --model-path)."),
    click.option("--model-path", metavar="PATH|REPO",
                 help="What the command loads (default: CONFIG's repo or directory)."),
    click.option("--text-only", is_flag=True, help="No images or video will be sent (multimodal models)."),
    offline_option,
])


@click.command("plan", epilog=EPILOG)
@request_options
@format_option("text", "json", "markdown")
@fail_on_option
@click.option("-v", "--verbose", is_flag=True, help="Also show why each flag is set, the notes, what is left to the engine and every finding in full.")
def plan(request: PlanRequest, fmt: str, fail_on: str, verbose: bool) -> int:
    """Derive a serving design for CONFIG on these GPUs: weights and KV per GPU, how many users of the context
    fit (bf16 / fp8 / nvfp4 KV), TP/EP/DP-attention/replicas with the reasoning, the flags to set and the ones
    to leave to the engine, and a launch command per engine — checked by the same playbooks as `lint`.

    CONFIG is a config.json, a model directory, a Hugging Face repo id (the local cache, else the Hub unless
    --offline: config and safetensors headers only), or example:NAME for a bundled scenario.
    """
    from doctor.plan.planner import make_plan

    result = make_plan(request)
    from doctor.render.plan import plan_markdown, plan_text

    emit_document(fmt, result, text=lambda: plan_text(result, verbose=verbose), markdown=lambda: plan_markdown(result))
    rc = exit_code([f for f, _ in result.findings()], fail_on)
    if result.status == "does-not-run" and fail_on != "never":
        rc = EXIT_FINDINGS
    return rc


def _from_manifest(path: str, gpu: str | None, engine: str, engine_version: str | None
                   ) -> tuple[str | None, str, str | None]:
    """The deployment's GPUs, and its engine and image version when --engine was left at both."""
    from doctor.sources.manifest import note_lines, read_manifest

    launch = read_manifest(path)
    for line in note_lines(launch):
        echo(f"llmdoctor: {line}", err=True)
    if engine == "both" and launch.engine:
        engine, engine_version = launch.engine, engine_version or launch.engine_version
    return gpu or launch.gpu, engine, engine_version
