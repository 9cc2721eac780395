#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two dpumesh nodes on one machine, connected by a veth pair (af_packet ports), with the
# configs in conf/two-node/: a client pod on node1 calls service "billing", whose echo pod
# lives on node2 (Case 1 out of node1, Case 2 into node2, and back). Needs root.
#
#   scripts/two-node.sh [REQUESTS [MAXBODY]]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUMESH_BUILD_DIR:-$root/build}
requests=${1:-2000}
maxbody=${2:-8000}
[ "$(id -u)" = 0 ] || { echo "two-node.sh: needs root (veth pair)" >&2; exit 1; }
[ -x "$build/bin/dpumesh" ] || { echo "two-node.sh: build first (scripts/run.sh builds $build)" >&2; exit 1; }

ip link del dpmesh-n1 2>/dev/null || true
ip link add dpmesh-n1 type veth peer name dpmesh-n2
for i in dpmesh-n1 dpmesh-n2; do
  sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1" || true
  ip link set "$i" up
done
pids=()
cleanup() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  ip link del dpmesh-n1 2>/dev/null || true
}
trap cleanup INT TERM EXIT

start_node() { # N: node number
  local n=$1 sock=/tmp/dpumesh-two-node-$1.sock
  for attempt in 1 2 3 4; do
    "$build/bin/dpumesh" -l 0-1 --no-huge -m 512 --no-pci --no-shconf \
      --file-prefix "dpumesh-two-node-$n-$$" -- --config "$root/conf/two-node/node$n.json" \
      --stats-period 0 > "/tmp/dpumesh-two-node-$n.log" 2>&1 &
    local pid=$!
    for _ in $(seq 100); do [ -S "$sock" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if [ -S "$sock" ]; then pids+=("$pid"); return 0; fi
    # DPDK 22.11 af_packet: PACKET_FANOUT group pid^ifindex may collide; a new pid fixes it
    grep -q PACKET_FANOUT "/tmp/dpumesh-two-node-$n.log" || break
  done
  echo "two-node.sh: node$n did not start:" >&2; cat "/tmp/dpumesh-two-node-$n.log" >&2; exit 1
}
start_node 1
start_node 2
DPUMESH_POD_SERVICE=billing "$build/bin/dpumesh-pod" echo /tmp/dpumesh-two-node-2.sock > /dev/null &
pids+=($!)
sleep 0.5
DPUMESH_CLIENT_SERVICE=billing "$build/bin/dpumesh-pod" client /tmp/dpumesh-two-node-1.sock \
  "$requests" 1 "$maxbody" | grep -E "PERF|DONE"
kill -INT "${pids[0]}" "${pids[1]}"
wait "${pids[0]}" "${pids[1]}" 2>/dev/null || true
for n in 1 2; do echo "node$n:"; grep "final stage=sidecar" "/tmp/dpumesh-two-node-$n.log" | tr ' ' '\n' | grep -vE "=0$" | tr '\n' ' '; echo; done
