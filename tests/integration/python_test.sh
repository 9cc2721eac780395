#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# python_test: libdpumesh and the dpumesh package installed offline into a temporary venv
# (python/install-venv.sh: cmake --install, pip install --no-index), then python/tests run
# with pytest. Usage: python_test.sh BINARY_DIR SOURCE_DIR
set -euo pipefail
bin=$1 src=$2
tmp=$(mktemp -d /tmp/dpumesh-pytest.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
"$src/python/install-venv.sh" "$bin" "$tmp"
cd "$tmp"
DPUMESH_TEST_MESH="$bin/bin/dpumesh-test-mesh" DPUMESH_POD="$bin/bin/dpumesh-pod" \
DPUMESH_DOCS="$src/docs/host-api.md" PYTHONDONTWRITEBYTECODE=1 \
  "$tmp/venv/bin/python" -m pytest -q -p no:cacheprovider "$src/python/tests"
