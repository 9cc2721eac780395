#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole tree (libraries, programs, tests, benchmarks' tools) built with Debian's clang,
# -Werror, AddressSanitizer and clang's UndefinedBehaviorSanitizer, and the whole test
# suite run on it. The main build and the arm64 build use GCC; DPDK builds with either, and
# so must a DPDK application. clang 14's C++20 differs (no lambda capture of a structured
# binding, which GCC allows), its warnings differ, and its UBSan checks what GCC's does not:
# an offset added to a null pointer (pointer-overflow: a prefetch of an empty slot's next
# line, 2026-12-06), and a double out of an integer's range converted to it
# (float-cast-overflow). The fuzz targets' clang build (scripts/test.sh) compiles only what
# they link. CI runs it after ThreadSanitizer (.ci/run).
#
#   scripts/clang.sh [BUILD_DIR] [ctest arguments]     # default build-clang, every test
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-clang}
shift || true

bash "$root/scripts/setup.sh"
CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDPUMESH_WERROR=ON -DDPUMESH_SANITIZE=ON -DDPUMESH_DOCA_CHECK=ON
cmake --build "$build" -j "$(nproc)"
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}
(cd "$build" && ctest --output-on-failure -j "$(nproc)" "$@")
