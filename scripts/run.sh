#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: installs what is missing, builds dpumesh, and runs a node on the embedded
# default config (conf/default.json) with
#   - a net_pcap port replaying a generated mesh capture in a loop (Case 2 input), and
#   - sample pods: two "echo" pods and a client pod calling service echo (Case 3),
# printing live statistics every second until Ctrl-C, which stops everything it started.
#
#   scripts/run.sh                       # defaults
#   scripts/run.sh --stats-period 5      # extra arguments go to dpumesh (after --)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUMESH_BUILD_DIR:-$root/build}

bash "$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPUMESH_TESTS=OFF
cmake --build "$build" -j "$(nproc)"

# net_pcap with infinite_rx=1 holds the whole capture in mbufs: keep it well under
# /mempool/mbufs (8191 in conf/default.json).
capture="$build/sample.pcap"
"$build/bin/dpumesh-pcapgen" --out "$capture" --frames 4000 --messages 4000 \
  --services frontend,echo --body 0:1000 --ipv6-share 0.25 --malformed-share 0.01 \
  --other-share 0.02 --seed 1

sock=/tmp/dpumesh-node1.sock   # /node/control_socket in conf/default.json
pids=()
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -n "${dp:-}" ]; then kill -INT "$dp" 2>/dev/null || true; wait "$dp" 2>/dev/null || true; fi
}
trap cleanup INT TERM EXIT

"$build/bin/dpumesh" -l 0-1 --no-huge -m 512 --no-pci --no-shconf \
  --file-prefix "dpumesh-run-$$" \
  --vdev "net_pcap0,rx_pcap=$capture,infinite_rx=1" -- --stats-period 1 "$@" &
dp=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "run.sh: dpumesh did not open $sock" >&2; exit 1; }

# sample pods: two echo pods, and a client that keeps calling service echo
"$build/bin/dpumesh-pod" echo "$sock" > /dev/null & pids+=($!)
"$build/bin/dpumesh-pod" echo "$sock" > /dev/null & pids+=($!)
( i=0; while true; do
    "$build/bin/dpumesh-pod" client "$sock" 20000 "$i" 4096 | grep DONE || exit 0
    i=$((i + 1))
  done ) & pids+=($!)
wait "$dp"
