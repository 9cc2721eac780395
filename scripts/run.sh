#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The main job: installs what is missing, builds, and runs a node on the embedded default
# config (conf/default.json) with
#   - sample pods: two "echo" pods, and a client pod that keeps calling service echo (Case 3);
#   - dpumesh-replay, the traffic generator, in its own process: it connects to the node's
#     net_memif port (/tmp/dpumesh-node1.memif) and replays a generated mesh capture at a
#     steady rate the node sustains (Case 2: network -> echo pods -> network), matching every
#     answer and printing sent/s, answers/s, lost and latency every second.
# The capture's requests all go to service echo; 1% of its messages have a deliberately
# corrupted frame and 2% extra frames are not mesh traffic: dpumesh drops and counts those
# under their reasons, the generator counts them as untracked or lost.
# dpumesh prints its statistics every second; Ctrl-C stops everything this script started.
#
#   scripts/run.sh                       # defaults: 2000 requests/s
#   DPUMESH_RUN_PPS=5000 scripts/run.sh  # another replay rate (frames/s)
#   DPUMESH_RUN_PPS=0 scripts/run.sh     # no generator: the node, the pods, the client
#   scripts/run.sh --stats-period 5      # extra arguments go to dpumesh (after --)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUMESH_BUILD_DIR:-$root/build}
# A rate this 2-vCPU class of machine sustains with zero loss while the client pod also
# runs (perf/run.sh ndr measures the NDR; see docs/benchmarks.md): well under it.
pps=${DPUMESH_RUN_PPS:-2000}

bash "$root/scripts/setup.sh"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPUMESH_TESTS=OFF
cmake --build "$build" -j "$(nproc)" --target dpumesh dpumesh-pod dpumesh-pcapgen dpumesh-replay

capture="$build/sample.pcap"
"$build/bin/dpumesh-pcapgen" --out "$capture" --messages 4000 --frames 4000 \
  --services echo --body 0:1000 --ipv6-share 0.25 --malformed-share 0.01 \
  --other-share 0.02 --seed 1

sock=/tmp/dpumesh-node1.sock     # /node/control_socket in conf/default.json
memif=/tmp/dpumesh-node1.memif   # the uplink port's memif server socket in conf/default.json
pids=()
gen=""
cleanup() {
  trap - INT TERM EXIT
  local p
  # the generator on SIGINT prints its totals; the pods stop on SIGTERM
  if [ -n "$gen" ]; then kill -INT "$gen" 2>/dev/null || true; wait "$gen" 2>/dev/null || true; fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${dp:-}" ]; then kill -INT "$dp" 2>/dev/null || true; wait "$dp" 2>/dev/null || true; fi
}
trap cleanup INT TERM EXIT

# a socket file left by a node that did not stop cleanly would pass the readiness check
# below before this node listens, and the pods would fail to connect
rm -f "$memif" "$sock"
"$build/bin/dpumesh" -l 0-1 --no-huge -m 512 --no-pci --no-shconf \
  --file-prefix "dpumesh-run-$$" -- --stats-period 1 "$@" &
dp=$!
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { echo "run.sh: dpumesh did not open $sock" >&2; exit 1; }

# sample pods: two echo pods, and a client that keeps calling service echo; a pod that
# cannot register says why (its "OPEN FAILED" line) and stops the job
podlog=$(mktemp -t dpumesh-run-pods.XXXXXX)
"$build/bin/dpumesh-pod" echo "$sock" >> "$podlog" & pids+=($!)
"$build/bin/dpumesh-pod" echo "$sock" >> "$podlog" & pids+=($!)
for _ in $(seq 100); do [ "$(grep -c '^READY' "$podlog")" -ge 2 ] && break; sleep 0.1; done
if [ "$(grep -c '^READY' "$podlog")" -lt 2 ]; then
  echo "run.sh: the echo pods did not register:" >&2
  cat "$podlog" >&2
  rm -f "$podlog"
  exit 1
fi
rm -f "$podlog"
( trap 'exit 0' INT TERM
  i=0; while true; do
    line=$("$build/bin/dpumesh-pod" client "$sock" 20000 "$i" 4096 | grep -E '^(DONE|OPEN FAILED)') || exit 0
    echo "$line"
    case $line in DONE*) ;; *) exit 0 ;; esac
    i=$((i + 1))
  done ) & pids+=($!)

# the generator: memif client of the node's uplink, on the main lcore's CPU, sleeping
# when idle so that the pods keep their share of it; runs until Ctrl-C, then prints its
# summary (sent, answered, lost by reason, latency percentiles)
if [ "$pps" != 0 ]; then
  sleep 1
  "$build/bin/dpumesh-replay" -l 0 --no-huge -m 256 --no-pci --no-shconf \
    --file-prefix "dpumesh-run-replay-$$" \
    --vdev "net_memif0,role=client,socket=$memif,socket-abstract=no" -- \
    --pcap "$capture" --match mesh --dut-ip 192.168.50.1,fd00:50::1 --pps "$pps" \
    --duration 31536000 --idle-sleep 50 --progress 1 --label node1 &
  gen=$!
fi
wait "$dp"
