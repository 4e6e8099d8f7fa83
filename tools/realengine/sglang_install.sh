#!/usr/bin/env bash
# Install a REAL SGLang 0.5.23 for CPU into a venv outside the checkout, once; later runs reuse it.
#   tools/realengine/sglang_install.sh            # prints the venv's path
# Where: $LLMDOCTOR_REALENGINE_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/llmdoctor/realengine)/sglang-0.5.23.
# Idempotent: a venv whose READY file (written last) matches this script's pins is reused untouched; a partial
# or outdated one is rebuilt. The pip log stays beside it (sglang-0.5.23-install.log).
# Why this shape (measured on 2 cores: ~3.5 min, ~7 GB):
#  - torch 2.14.1 / torchvision 0.29.1 are the CUDA builds SGLang pins; they run on CPU. torch 2.13.0+cpu does not
#    work: PyPI's torchvision is CUDA-built and fails to import against it, and sglang imports torchvision.
#  - sglang is installed --no-deps: its own requirements are the CUDA stack (flashinfer, sglang-kernel cu13, ...);
#    the pure-Python ones it needs on CPU are listed in sglang-cpu-deps.txt.
#  - the CPU build of sgl-kernel is not on PyPI (source-only): sglang_shim/sgl_kernel (see its docstring) stands in
#    for the import-time names; sglang_serve.sh puts it on PYTHONPATH.
set -euo pipefail
SGLANG_VERSION=0.5.23
here=$(cd "$(dirname "$0")" && pwd)
root=${LLMDOCTOR_REALENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/llmdoctor/realengine}
V="$root/sglang-$SGLANG_VERSION"
want="sglang==$SGLANG_VERSION torch==2.14.1 torchvision==0.29.1 $(sha256sum "$here/sglang-cpu-deps.txt" | cut -c1-16)"
if [ -f "$V/READY" ] && [ "$(cat "$V/READY")" = "$want" ] && [ -x "$V/bin/python" ]; then
  echo "$V"; exit 0
fi
rm -rf "$V"; mkdir -p "$root"
log="$root/sglang-$SGLANG_VERSION-install.log"
# (one && chain: `set -e` does not apply inside a list that ends in ||)
{ python3 -m venv "$V" \
  && "$V/bin/pip" install -q --upgrade pip \
  && "$V/bin/pip" install -q torch==2.14.1 torchvision==0.29.1 -r "$here/sglang-cpu-deps.txt" \
  && "$V/bin/pip" install -q --no-deps "sglang==$SGLANG_VERSION" \
  && "$V/bin/python" -c 'import sglang, torch, transformers'; } >"$log" 2>&1 \
  || { tail -20 "$log" >&2; echo "sglang $SGLANG_VERSION install failed; log: $log" >&2; exit 1; }
echo "$want" >"$V/READY"
echo "$V"
