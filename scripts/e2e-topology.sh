#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The whole mesh on one machine (root): an ingress host and two worker nodes on one L2
# segment made of network namespaces, veth pairs and a bridge, with the sample service graph
# (conf/e2e/graph.json: s0 -> (s1 || s2) -> s3) running as pods.
#
#   namespace <tag>-br   bridge joining the three links (its own namespace: no host firewall)
#   node1 (10.77.0.1)    dpumesh on af_packet veth "<tag>-n1": pods s0, s1, s3
#   node2 (10.77.0.2)    dpumesh on af_packet veth "<tag>-n2": pods s2 (two), s3
#   namespace <tag>-ing  10.77.0.10, dpumesh-gateway on 127.0.0.1:8080 (admin :9901)
#
#   scripts/e2e-topology.sh [--tag T] [--dir DIR] [-- CMD ...]
#
# Prints "TOPOLOGY READY ns=<ingress namespace> dir=<DIR>" when everything runs. Without
# CMD it waits for Ctrl-C/SIGTERM; with CMD it runs it (environment: DPUMESH_E2E_NS,
# DPUMESH_E2E_DIR, DPUMESH_E2E_URL) and exits with its status. Either way everything is torn
# down on exit: processes stopped, links and namespaces deleted. Pid files: DIR/pids/*.pid;
# logs: DIR/*.log. Example:
#   scripts/e2e-topology.sh -- sh -c 'ip netns exec $DPUMESH_E2E_NS curl -s $DPUMESH_E2E_URL/s0/hi -d hello -D -'
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUMESH_BUILD_DIR:-$root/build}
tag="dpme$(( $$ % 10000 ))"
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "e2e-topology.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "e2e-topology.sh: needs root (namespaces, veth pairs)" >&2; exit 1; }
for b in dpumesh dpumesh-gateway dpumesh-service; do
  [ -x "$build/bin/$b" ] || { echo "e2e-topology.sh: $build/bin/$b missing; build first" >&2; exit 1; }
done
[ ${#tag} -le 9 ] || { echo "e2e-topology.sh: --tag at most 9 characters (interface names)" >&2; exit 2; }
own_dir=0
if [ -z "$dir" ]; then dir=$(mktemp -d /tmp/dpumesh-e2e.XXXXXX); own_dir=1; fi
mkdir -p "$dir/pids"
ns_br=$tag-br ns_ing=$tag-ing
pids=()

cleanup() {
  trap - INT TERM EXIT
  set +e
  for f in "$dir"/pids/*.pid; do
    [ -f "$f" ] || continue
    p=$(cat "$f")
    case "$f" in *node*|*ingress*) kill -INT "$p" 2>/dev/null ;; *) kill -TERM "$p" 2>/dev/null ;; esac
  done
  for _ in $(seq 100); do
    alive=0
    for f in "$dir"/pids/*.pid; do [ -f "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break
    sleep 0.1
  done
  for f in "$dir"/pids/*.pid; do [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null; done
  wait 2>/dev/null
  for l in "$tag-n1" "$tag-n2"; do ip link del "$l" 2>/dev/null; done
  ip netns del "$ns_ing" 2>/dev/null
  ip netns del "$ns_br" 2>/dev/null
  rm -f "$dir"/pids/*.pid
  [ $own_dir = 1 ] && rm -rf "$dir"
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- links: three veth pairs onto a bridge in its own namespace ----
ip netns del "$ns_br" 2>/dev/null || true
ip netns del "$ns_ing" 2>/dev/null || true
ip netns add "$ns_br"
ip netns add "$ns_ing"
ip -n "$ns_br" link add name br0 type bridge
ip -n "$ns_br" link set br0 up
for n in n1 n2 i; do
  ip link del "$tag-$n" 2>/dev/null || true
  ip link add "$tag-$n" type veth peer name "$tag-${n}b"
  ip link set "$tag-${n}b" netns "$ns_br"
  ip -n "$ns_br" link set "$tag-${n}b" master br0
  ip -n "$ns_br" link set "$tag-${n}b" up
done
for n in n1 n2; do
  sysctl -qw "net.ipv6.conf.$tag-$n.disable_ipv6=1" || true
  ip link set "$tag-$n" up
done
ip link set "$tag-i" netns "$ns_ing"
ip -n "$ns_ing" link set lo up
ip -n "$ns_ing" link set "$tag-i" up
ip -n "$ns_ing" addr add 10.77.0.10/24 dev "$tag-i"
# whole UDP checksums from the gateway's kernel: over a veth it would leave them partial,
# DPDK 22.11's af_packet PMD does not say so, and dpumesh drops a wrong sum (bad_checksum).
# ethtool -K tx off without ethtool: SIOCETHTOOL / ETHTOOL_STXCSUM through python3.
ip netns exec "$ns_ing" python3 - "$tag-i" <<'PY'
import ctypes, fcntl, socket, struct, sys
SIOCETHTOOL, ETHTOOL_STXCSUM = 0x8946, 0x17
value = ctypes.create_string_buffer(struct.pack("II", ETHTOOL_STXCSUM, 0))
ifreq = struct.pack("16sP", sys.argv[1].encode(), ctypes.addressof(value)).ljust(40, b"\0")
with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
    fcntl.ioctl(s.fileno(), SIOCETHTOOL, ifreq)
PY
# dpumesh answers mesh traffic only (no ARP): static neighbours for the nodes
ip -n "$ns_ing" neigh add 10.77.0.1 lladdr 02:00:00:77:00:01 dev "$tag-i"
ip -n "$ns_ing" neigh add 10.77.0.2 lladdr 02:00:00:77:00:02 dev "$tag-i"

# ---- nodes ----
node_json() { # N OTHER ROUTES
  cat <<J
{
  "node": { "name": "node$1", "mac": "02:00:00:77:00:0$1", "ipv4": "10.77.0.$1",
            "control_socket": "$dir/node$1.sock" },
  "ports": [ { "name": "uplink", "dev": "net_af_packet$1,iface=$tag-n$1,framecnt=4096", "role": "external" } ],
  "pools": { "tx_body": { "slots": 64, "slot_size": 1114112 },
             "rx_body": { "slots": 64, "slot_size": 1114112 } },
  "lcores": { "idle": "adaptive", "stages": { "port_rx": 1, "port_tx": 1, "sidecar": 1, "dpa": 1 } },
  "services": [ { "name": "s0" }, { "name": "s1" }, { "name": "s2" }, { "name": "s3" } ],
  "peers": [ { "name": "node$2", "mac": "02:00:00:77:00:0$2", "ipv4": "10.77.0.$2" } ],
  "routes": [ $3 ]
}
J
}
node_json 1 2 '{ "service": "s0", "to": "local" }, { "service": "s1", "to": "local" },
             { "service": "s2", "to": "node2" }, { "service": "s3", "to": "local" }' > "$dir/node1.json"
node_json 2 1 '{ "service": "s0", "to": "node1" }, { "service": "s1", "to": "node1" },
             { "service": "s2", "to": "local" }, { "service": "s3", "to": "local" }' > "$dir/node2.json"

start_node() { # N
  local n=$1 sock=$dir/node$1.sock
  for _ in 1 2 3 4; do
    "$build/bin/dpumesh" -l 0-1 --no-huge -m 768 --no-pci --no-shconf \
      --file-prefix "$tag-node$n-$$" --log-level=lib.eal:warning -- \
      --config "$dir/node$n.json" --stats-period 0 > "$dir/node$n.log" 2>&1 &
    local pid=$!
    for _ in $(seq 150); do [ -S "$sock" ] && break; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if [ -S "$sock" ]; then echo "$pid" > "$dir/pids/node$n.pid"; return 0; fi
    # DPDK 22.11 af_packet: PACKET_FANOUT group pid^ifindex may collide; a new pid fixes it
    grep -q PACKET_FANOUT "$dir/node$n.log" || break
  done
  echo "e2e-topology.sh: node$n did not start:" >&2; cat "$dir/node$n.log" >&2; exit 1
}
start_node 1
start_node 2

# $DPUMESH_E2E_S2_CMD: the command that runs s2's pods instead of dpumesh-service (graph_test
# runs the graph again with s2 as a Python pod: "VENV/bin/python python/examples/service.py")
start_pod() { # NODE SERVICE NAME
  local cmd="$build/bin/dpumesh-service"
  if [ "$2" = s2 ] && [ -n "${DPUMESH_E2E_S2_CMD:-}" ]; then cmd=$DPUMESH_E2E_S2_CMD; fi
  $cmd --socket "$dir/node$1.sock" --graph "$root/conf/e2e/graph.json" \
    --service "$2" --node "node$1" > "$dir/$3.log" 2>&1 &
  echo $! > "$dir/pids/$3.pid"
}
start_pod 1 s0 s0
start_pod 1 s1 s1
start_pod 1 s3 s3-node1
start_pod 2 s2 s2-a
start_pod 2 s2 s2-b
start_pod 2 s3 s3-node2
for f in s0 s1 s3-node1 s2-a s2-b s3-node2; do
  for _ in $(seq 300); do grep -q READY "$dir/$f.log" 2>/dev/null && break; sleep 0.1; done
  grep -q READY "$dir/$f.log" || { echo "e2e-topology.sh: pod $f did not start:" >&2; cat "$dir/$f.log" >&2; exit 1; }
done

# ---- ingress ----
cat > "$dir/ingress.json" <<J
{
  "listen": "127.0.0.1:8080", "admin": "127.0.0.1:9901",
  "mesh": { "bind": "10.77.0.10:0" },
  "nodes": [ { "name": "node1", "address": "10.77.0.1:7000" },
             { "name": "node2", "address": "10.77.0.2:7000" } ],
  "routes": [ { "prefix": "/s0", "service": "s0", "nodes": ["node1"] },
              { "prefix": "/s1", "service": "s1", "nodes": ["node1"] },
              { "prefix": "/s2", "service": "s2", "nodes": ["node2"] },
              { "prefix": "/s3", "service": "s3", "nodes": ["node1", "node2"] } ],
  "limits": { "max_body_bytes": 1048576 },
  "timeouts": { "request_ms": 3000 }
}
J
ip netns exec "$ns_ing" "$build/bin/dpumesh-gateway" --config "$dir/ingress.json" > "$dir/ingress.log" 2>&1 &
echo $! > "$dir/pids/ingress.pid"
for _ in $(seq 100); do grep -q READY "$dir/ingress.log" 2>/dev/null && break; sleep 0.1; done
grep -q READY "$dir/ingress.log" || { echo "e2e-topology.sh: ingress did not start:" >&2; cat "$dir/ingress.log" >&2; exit 1; }

echo "TOPOLOGY READY ns=$ns_ing dir=$dir url=http://127.0.0.1:8080"
if [ $# -gt 0 ]; then
  rc=0
  DPUMESH_E2E_NS=$ns_ing DPUMESH_E2E_DIR=$dir DPUMESH_E2E_URL=http://127.0.0.1:8080 "$@" || rc=$?
  exit $rc
fi
while :; do sleep 1 & wait $! || true; done
