#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Static checks of perf/'s scripts (CTest perf_scripts_check; runs nothing): bash -n and,
# when installed, shellcheck on the shell scripts; a byte-compile of the Python scripts.
set -euo pipefail
perf=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
shells=("$perf"/*.sh "$perf"/lib/*.sh "$perf"/suites/*.sh)
for f in "${shells[@]}"; do bash -n "$f"; done
if command -v shellcheck > /dev/null; then
  # the suites and helpers are sourced by run.sh: check them as bash, following sources;
  # SC2034 (unused variable) is off: globals cross the sourced files
  (cd "$perf/.." && shellcheck -x -s bash -S warning -e SC2034 "${shells[@]}")
else
  echo "check.sh: shellcheck not installed, bash -n only"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pys=("$perf"/lib/*.py "$perf"/*.py)
for f in "${pys[@]}"; do PYTHONPYCACHEPREFIX=$tmp python3 -m py_compile "$f"; done
echo "check.sh: ${#shells[@]} shell scripts and ${#pys[@]} Python scripts OK"
