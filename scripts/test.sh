#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The test command: installs what is missing, builds dpumesh with AddressSanitizer and
# UndefinedBehaviorSanitizer, and runs the whole test suite with CTest. The DOCA backend is
# compiled against the project's declarations of the DOCA calls (-DDPUMESH_DOCA_CHECK=ON) and
# its call sequences tested against link-time fakes (doca_sequence_test).
#
#   scripts/test.sh                 # everything
#   scripts/test.sh -L unit         # extra arguments go to ctest (labels: unit, integration, e2e)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUMESH_TEST_BUILD_DIR:-$root/build-asan}

bash "$root/scripts/setup.sh"

werror=OFF
if [ "${CI:-}" = "true" ]; then werror=ON; fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDPUMESH_SANITIZE=ON -DDPUMESH_WERROR=$werror -DDPUMESH_DOCA_CHECK=ON
cmake --build "$build" -j "$(nproc)"

# libFuzzer targets need clang: a second build with only them, run for a bounded time each.
fuzz_build=${DPUMESH_FUZZ_BUILD_DIR:-$root/build-fuzz}
CC=clang CXX=clang++ cmake -S "$root" -B "$fuzz_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DDPUMESH_FUZZ=ON -DDPUMESH_TESTS=OFF -DDPUMESH_WERROR=$werror
cmake --build "$fuzz_build" -j "$(nproc)" --target fuzz

# dpdk-dumpcap is a DPDK secondary process: it can attach only to a primary on hugepages
# (every other test runs --no-huge). As root, make sure 128 x 2 MiB are free so the capture
# test runs instead of skipping; never shrink a larger reservation.
if [ "$(id -u)" -eq 0 ] && [ -w /proc/sys/vm/nr_hugepages ]; then
  # hugepage files of an earlier run's capture test whose node is gone (killed, or a build
  # from before dpumesh removed its own at exit) hold their pages: give those back first
  for f in /dev/hugepages/dpumesh-tel-dumpcap-*map_*; do
    [[ "$f" =~ dpumesh-tel-dumpcap-([0-9]+)map_[0-9]+$ ]] || continue
    kill -0 "${BASH_REMATCH[1]}" 2>/dev/null || rm -f "$f"
  done
  free_pages=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
  total_pages=$(awk '/^HugePages_Total:/ {print $2}' /proc/meminfo)
  if [ "${free_pages:-0}" -lt 128 ]; then
    bash "$root/scripts/hugepages.sh" "$((total_pages + 128 - free_pages))" >/dev/null 2>&1 ||
      echo "test: could not reserve hugepages; the dpdk-dumpcap test will skip"
  elif ! mountpoint -q /dev/hugepages; then
    mkdir -p /dev/hugepages && mount -t hugetlbfs nodev /dev/hugepages || true
  fi
fi

# halt_on_error: the first ASan/UBSan report fails the test that triggered it.
export ASAN_OPTIONS=${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/lsan.supp:print_suppressions=0}
if [ $# -eq 0 ] || [[ " $* " == *" fuzz "* ]]; then
  (cd "$fuzz_build" && ctest --output-on-failure -L fuzz)
fi
cd "$build"
ctest --output-on-failure --timeout 600 -j "$(nproc)" "$@"
