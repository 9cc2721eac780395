#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole tree (libraries, programs, tests, benchmarks' tools) built with Debian's clang
# and -Werror, then its unit tests run. The main build and the arm64 build use GCC; DPDK
# builds with either, and so must a DPDK application: this keeps clang's C++20 (clang 14
# here: no lambda capture of a structured binding, which GCC allows) and its warnings from
# drifting away unseen. The fuzz targets' clang build (scripts/test.sh) compiles only what
# they link. CI runs it after the native suite (.ci/run).
#
#   scripts/clang.sh [BUILD_DIR]          # default build-clang
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-clang}

bash "$root/scripts/setup.sh"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDPUMESH_WERROR=ON -DDPUMESH_DOCA_CHECK=ON
cmake --build "$build" -j "$(nproc)"
(cd "$build" && ctest --output-on-failure -j "$(nproc)" -L unit)
