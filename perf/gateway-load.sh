#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Load through the whole topology of scripts/e2e-topology.sh: wrk in the ingress namespace
# -> dpumesh-gateway -> node1 -> the service graph s0 -> (s1 || s2) -> s3 over two nodes,
# and back. Prints wrk's report and the gateway's response counts. A benchmark, not a test.
#
#   perf/gateway-load.sh [SECONDS [CONNECTIONS [PATH]]]     (root; default 30 16 /s0/load)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
secs=${1:-30} conns=${2:-16} path=${3:-/s0/load}
command -v wrk > /dev/null || { echo "ingress-load.sh: needs wrk (apt-get install wrk)" >&2; exit 1; }
echo "host: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg) before the run"
echo "command: wrk -t1 -c$conns -d${secs}s --latency http://127.0.0.1:8080$path"
"$root/scripts/e2e-topology.sh" -- sh -c "
  ip netns exec \"\$DPUMESH_E2E_NS\" wrk -t1 -c$conns -d${secs}s --latency \"\$DPUMESH_E2E_URL$path\"
  echo '--- gateway:'
  ip netns exec \"\$DPUMESH_E2E_NS\" curl -s http://127.0.0.1:9901/metrics |
    grep -E '^dpumesh_ingress_(responses_total|mesh_errors_total|unmatched_total|reassembly_drops)'
  for p in s0 s1 s2-a s2-b s3-node1 s3-node2; do kill -TERM \$(cat \"\$DPUMESH_E2E_DIR/pids/\$p.pid\"); done
  sleep 0.5
  echo '--- pods:'; cat \"\$DPUMESH_E2E_DIR\"/s*.log | grep DONE"
