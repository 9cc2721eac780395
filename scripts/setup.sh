#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs exactly the Debian 12 packages dpumesh needs to build, test and run.
# Idempotent: a second run installs nothing new. Needs root (or sudo).
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config ninja-build
  # DPDK 22.11 (libraries, PMDs incl. net_pcap/net_ring/net_memif/af_packet/tap,
  # dma_skeleton, dpdk-testpmd, dpdk-telemetry.py, dpdk-dumpcap)
  dpdk dpdk-dev libdpdk-dev
  # runtime of DPDK's mlx5 PMD, so the same build runs on a BlueField-3's Arm cores
  rdma-core ibverbs-providers libibverbs1 libibverbs-dev
  # libraries
  libjansson-dev libpcap-dev libssl-dev libnuma-dev
  # ingress gateway (evhttp)
  libevent-dev
  # tests, fuzzing, benchmarks
  googletest libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev
  # use_after_move_check (tests/unit/CMakeLists.txt): run-clang-tidy
  clang-tidy
  python3 tcpdump iproute2 procps
  # a test whose process does not exit prints every thread's stack (tests/support/subprocess.cc)
  gdb
  # the Python binding (python/): headers to build it, venv + pytest to test it
  python3-dev python3-venv python3-pytest
  # end-to-end tests and the ingress load run: HTTP client, load generator, manifest check
  curl wrk python3-yaml
  # perf/run.sh: the HAProxy sidecar baseline, plots, pinning pods (util-linux: taskset),
  # the per-suite profile (linux-perf: perf record -g), cached builds of old and new trees,
  # the forward suite's instruction count (valgrind: callgrind)
  haproxy gnuplot-nox util-linux linux-perf ccache valgrind
  # freestanding RISC-V build of the DPA kernels
  gcc-riscv64-unknown-elf
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
