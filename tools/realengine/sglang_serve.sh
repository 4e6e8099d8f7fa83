#!/usr/bin/env bash
# Run a REAL SGLang 0.5.23 on the CPU, in the foreground, on 127.0.0.1 with the tiny local model.
#   tools/realengine/sglang_serve.sh WORKDIR PORT [extra launch_server flags...]
# WORKDIR holds the model (built on first use by make_tiny_model.py: a 2-layer Qwen2 that always answers with one
# Hermes-style tool call) and the engine's caches. The venv comes from sglang_install.sh (installed on first use).
# The server's output goes to this script's stdout/stderr; stop it with SIGTERM to its process group.
# Run it in the background and wait for GET /health == 200 (~40 s on 2 cores).
#
# The fixed flags are what SGLang needs on a CPU without AMX:
#   --device cpu + SGLANG_USE_CPU_ENGINE=1   without the variable --device cpu does not select the CPU path
#   --attention-backend torch_native         the default backend needs sgl-kernel's CPU build (not on PyPI)
#   --disable-overlap-schedule               the overlap scheduler wants a CUDA stream
#   --max-total-tokens 32768                 otherwise SGLang reserves ~15 GB of host memory for KV
#   --enable-metrics                         /metrics, which llmdoctor reads
# Later flags win over these (argparse keeps the last value), so a test can pass its own.
set -euo pipefail
work=${1:?usage: sglang_serve.sh WORKDIR PORT [launch_server flags...]}; port=${2:?PORT}; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$work"; work=$(cd "$work" && pwd)
V=$("$here/sglang_install.sh")
if [ ! -f "$work/model/config.json" ]; then
  "$V/bin/python" "$here/make_tiny_model.py" "$work/model" >"$work/model.log" 2>&1 \
    || { tail -20 "$work/model.log" >&2; echo "tiny model build failed; log: $work/model.log" >&2; exit 1; }
fi
export PYTHONPATH="$here/sglang_shim" SGLANG_USE_CPU_ENGINE=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 \
  HF_HOME="$work/hf" TRITON_CACHE_DIR="$work/triton" XDG_CACHE_HOME="$work/xdg"
cmd=("$V/bin/python" -m sglang.launch_server --model-path "$work/model" --device cpu --host 127.0.0.1
  --port "$port" --enable-metrics --attention-backend torch_native --disable-overlap-schedule
  --max-total-tokens 32768 --max-running-requests 4 "$@")
# The exact command, first line of the log, shell-quoted: what `llmdoctor lint` is given in the tests.
{ printf 'sglang_serve.sh: exec'; printf ' %q' "${cmd[@]}"; echo; } >&2
exec "${cmd[@]}"
