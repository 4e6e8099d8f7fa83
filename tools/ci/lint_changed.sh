#!/usr/bin/env bash
# Lint the launch scripts and manifests a change touches, and write SARIF for code scanning.
#
#   tools/ci/lint_changed.sh BASE [PATTERN...]
#
# BASE: the commit to compare with (a pull request's base); the files changed between BASE and HEAD that match
# a PATTERN (git pathspecs; default: YAML and shell files) are linted with `llmdoctor lint --files`. Writes
# $LLMDOCTOR_SARIF (default llmdoctor.sarif) and prints the findings; exits as llmdoctor does (0, 1 findings at or
# above $LLMDOCTOR_FAIL_ON, 2 an unreadable file). The repository's GitHub Action (action.yml) runs this.
set -euo pipefail
base=${1:?usage: lint_changed.sh BASE [PATTERN...]}
shift
patterns=("$@")
[ ${#patterns[@]} -gt 0 ] || patterns=('*.yaml' '*.yml' '*.sh' '*.bash')
sarif=${LLMDOCTOR_SARIF:-llmdoctor.sarif}
fail_on=${LLMDOCTOR_FAIL_ON:-warning}
mapfile -t files < <(git diff --name-only --diff-filter=ACMR "$base"...HEAD -- "${patterns[@]}")
status=0
llmdoctor lint --offline --files --fail-on "$fail_on" --format sarif "${files[@]}" >"$sarif" || status=$?
llmdoctor lint --offline --files --fail-on "$fail_on" "${files[@]}" || true
exit "$status"
