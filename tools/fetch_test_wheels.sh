#!/usr/bin/env bash
# Download the engine wheels some tests read in place (never installed): the catalog regeneration tests and the
# active probes' cited lines read the engines' own source from them. ~360 MB, once, into a cache outside the
# checkout; a wheel already there is reused.
#
#   tools/fetch_test_wheels.sh            # into ${LLMDOCTOR_WHEEL_DIR:-~/.cache/llmdoctor-wheels}
#   export LLMDOCTOR_WHEEL_DIR=~/.cache/llmdoctor-wheels; pytest
#
# Without them those tests skip locally (with the reason) and fail under CI=true (tests/conftest.py).
set -euo pipefail
dir="${LLMDOCTOR_WHEEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/llmdoctor-wheels}"
mkdir -p "$dir"
fetch_wheel() {  # NAME VERSION [pip download options]: only when no NAME-VERSION-*.whl is cached
  local name=$1 version=$2
  shift 2
  if ! compgen -G "$dir/$name-$version-*.whl" >/dev/null; then
    python3 -m pip download -q --no-deps --only-binary=:all: -d "$dir" "$@" "$name==$version"
  fi
}
fetch_wheel vllm 0.33.0 --python-version 3.11 --platform manylinux_2_28_x86_64
fetch_wheel sglang 0.5.23 --python-version 3.11 --platform manylinux_2_34_x86_64
fetch_wheel sglang 0.1.3   # tests/test_catalog_generator.py: regenerate the history's first release
fetch_wheel sglang 0.4.3   # ... and a later one
fetch_wheel vllm 0.3.3 --python-version 3.10 --platform manylinux1_x86_64   # ... and vLLM's launchers (38 MB)
fetch_wheel transformers 5.19.0   # tests/test_architectures.py: model type -> architecture, as tools/errors_lower.txt pins it
echo "$dir"
