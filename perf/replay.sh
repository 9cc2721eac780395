#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Replay benchmark (not a test): one generated mesh capture replayed through a net_pcap port
# (infinite_rx=1), first into dpdk-testpmd in 5tswap mode (the baseline), then into dpumesh
# with echo pods registered for the capture's service, on the same capture, the same EAL
# lcores and the same memory, in one run. Both are measured the same way: DPDK telemetry
# (/ethdev/stats,0, plus /dpumesh/... for dpumesh) is sampled after a warm-up and again
# DURATION seconds later, and rates are the differences over that window. Prints a Markdown
# table (frames/s, Gbps, messages/s, drops by reason, dpumesh/testpmd); the whole output,
# with the raw telemetry and both programs' final statistics, goes to
# perf/results/replay-<date>.txt.
#
#   perf/replay.sh                          # builds (Release) into build-perf/, then runs
#   perf/replay.sh --duration 10 --body 0:4096 --frames 8000
#   perf/replay.sh --help
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUMESH_PERF_BUILD_DIR:-$root/build-perf}

duration=10         # seconds measured, per program
warmup=2            # seconds before the window opens (capture loaded, pods registered)
messages=8000       # dpumesh-pcapgen --messages
frames=8000         # dpumesh-pcapgen --frames (the capture is held in mbufs: keep it small)
body=0:4096         # dpumesh-pcapgen --body MIN:MAX
services="echo"     # services in the capture; dpumesh-pod echo pods serve "echo"
malformed=0.01      # dpumesh-pcapgen --malformed-share
other=0.02          # dpumesh-pcapgen --other-share
ipv6=0.25           # dpumesh-pcapgen --ipv6-share
seed=1
lcores=0-1          # EAL -l for both programs: main lcore + one worker lcore
pods=1              # echo pods
idle=busy           # dpumesh /lcores/idle
mem=1024            # EAL -m (MB, --no-huge)
out=""              # default: perf/results/replay-<date>.txt

usage() {
  cat <<EOF
Usage: perf/replay.sh [options]
Replays one generated capture through net_pcap (infinite_rx=1) into dpdk-testpmd
(--forward-mode=5tswap) and into dpumesh with echo pods; prints a side-by-side table.
  --duration S          measured seconds per program (default $duration)
  --warmup S            seconds before measuring (default $warmup)
  --messages N          capture messages (default $messages)
  --frames N            capture frames, at most (default $frames)
  --body MIN:MAX        body sizes in bytes, log-uniform (default $body)
  --services a,b        services the capture's requests go to (default $services; only
                        "echo" has pods: dpumesh-pod echo registers as "echo")
  --malformed-share P   messages with one corrupted frame (default $malformed)
  --other-share P       non-mesh frames per message (default $other)
  --ipv6-share P        messages over IPv6 (default $ipv6)
  --seed N              capture seed (default $seed)
  --lcores LIST         EAL -l for both programs; first = main lcore, second = the one
                        forwarding/pipeline lcore (default $lcores)
  --pods N              echo pods, pinned to the main lcore's CPU (default $pods)
  --idle busy|adaptive  dpumesh idle policy (default $idle; testpmd always busy-polls)
  --mem MB              EAL -m with --no-huge (default $mem)
  --out FILE            where the whole output goes (default perf/results/replay-DATE.txt)
Environment: DPUMESH_PERF_BUILD_DIR (default build-perf/), DPUMESH_JOBS (default 2).
EOF
}

while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --messages) messages=$2; shift 2 ;;
    --frames) frames=$2; shift 2 ;;
    --body) body=$2; shift 2 ;;
    --services) services=$2; shift 2 ;;
    --malformed-share) malformed=$2; shift 2 ;;
    --other-share) other=$2; shift 2 ;;
    --ipv6-share) ipv6=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --lcores) lcores=$2; shift 2 ;;
    --pods) pods=$2; shift 2 ;;
    --idle) idle=$2; shift 2 ;;
    --mem) mem=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "replay.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

# -l LIST -> lcore ids: the first is EAL's main lcore (control in dpumesh, the stats loop in
# testpmd); the second runs testpmd's forwarding stream and all of dpumesh's stages.
expand_lcores() {
  local part a b
  for part in ${1//,/ }; do
    if [[ $part == *-* ]]; then a=${part%-*}; b=${part#*-}; seq "$a" "$b"
    else echo "$part"; fi
  done
}
mapfile -t lc < <(expand_lcores "$lcores")
[ "${#lc[@]}" -ge 2 ] || { echo "replay.sh: --lcores needs a main and a worker lcore" >&2; exit 2; }
main_lcore=${lc[0]}
worker=${lc[1]}

bash "$root/scripts/setup.sh" > /dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPUMESH_TESTS=OFF > /dev/null
cmake --build "$build" -j "${DPUMESH_JOBS:-2}" > /dev/null

[ -n "$out" ] || out="$root/perf/results/replay-$(date +%Y-%m-%d).txt"
mkdir -p "$(dirname "$out")"
exec > >(tee "$out") 2>&1

# EAL's runtime directory for a file prefix (eal_get_runtime_dir): the telemetry socket
rtdir() {
  if [ "$(id -u)" -eq 0 ]; then echo "/var/run/dpdk/$1"; else echo "${XDG_RUNTIME_DIR:-/tmp}/dpdk/$1"; fi
}

work=$(mktemp -d)
pids=()
cleanup() {
  trap - INT TERM EXIT
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
  # EAL leaves its (empty, with --no-shconf) runtime directories behind
  rmdir "$(rtdir "replay-testpmd-$$")" "$(rtdir "replay-dpumesh-$$")" 2>/dev/null || true
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM
# runs a helper in the background and waits for it, so that a signal is handled at once
bg() { "$@" & pids+=($!); wait $!; }

# DPDK telemetry snapshots and waits: perf/lib/tel.py, shared with perf/run.sh's suites
tel="$root/perf/lib/tel.py"

echo "# perf/replay.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
echo "# $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs, $(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release), DPDK $(pkg-config --modversion libdpdk 2>/dev/null || echo '?')"
echo "# dpumesh $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo '+dirty')"
echo "# load average at start: $(cut -d" " -f1-3 /proc/loadavg)"
echo "# options: --duration $duration --warmup $warmup --messages $messages --frames $frames --body $body --services $services --malformed-share $malformed --other-share $other --ipv6-share $ipv6 --seed $seed --lcores $lcores --pods $pods --idle $idle --mem $mem"
echo

# ---- (1) the capture ----
capture="$work/replay.pcap"
gen=$("$build/bin/dpumesh-pcapgen" --out "$capture" --messages "$messages" --frames "$frames" \
  --services "$services" --body "$body" --malformed-share "$malformed" --other-share "$other" \
  --ipv6-share "$ipv6" --seed "$seed")
echo "$gen"
summary=$(tail -1 <<< "$gen")
cap_frames=$(sed -n 's/.* frames=\([0-9]*\).*/\1/p' <<< "$summary")
echo

# Same EAL arguments for both programs, but the file prefix.
eal() {
  echo -l "$lcores" --no-huge -m "$mem" --no-pci --no-shconf --file-prefix "$1" \
    --vdev "net_pcap0,rx_pcap=$capture,infinite_rx=1"
}

# ---- (2) dpdk-testpmd, 5tswap ----
# net_pcap in DPDK 22.11 has no tx_drop devarg (probe fails on the unknown key); with no
# tx_pcap/tx_iface it drops on TX by itself ("Dropping packets on tx since no tx queues were
# provided"), counting the frames as sent. tx_pcap=/dev/null would add a libpcap dump per frame.
tp_prefix="replay-testpmd-$$"
# shellcheck disable=SC2046
dpdk-testpmd $(eal "$tp_prefix") -- --forward-mode=5tswap --nb-cores=1 --stats-period 1 \
  < /dev/null > "$work/testpmd.log" 2>&1 &
tp=$!; pids+=("$tp")
bg python3 "$tel" sample "$(rtdir "$tp_prefix")/dpdk_telemetry.v2" "$warmup" "$duration" \
  "$work/testpmd.json" /ethdev/stats,0
kill -INT "$tp"; wait "$tp" || true
# testpmd repaints its periodic stats with ANSI escapes: keep the final statistics only
sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$work/testpmd.log" |
  sed -n '/Telling cores to stop/,/^Bye/p' > "$work/testpmd.final"

# ---- (3) dpumesh with echo pods ----
sock="$work/ctl.sock"
mbufs=65535   # net_pcap holds the capture in mbufs (infinite_rx), reassembly up to 32768
while [ "$mbufs" -lt $((cap_frames + 49152)) ]; do mbufs=$((mbufs * 2 + 1)); done
svc_json=$(tr ',' '\n' <<< "echo,$services" | sort -u |
  awk '{ printf "%s{ \"name\": \"%s\", \"max_pods\": 16 }", (NR > 1 ? ", " : ""), $0 }')
route_json=$(tr ',' '\n' <<< "echo,$services" | sort -u |
  awk '{ printf "%s{ \"service\": \"%s\", \"to\": \"local\" }", (NR > 1 ? ", " : ""), $0 }')
# modelled on conf/default.json: same node addresses (the capture's destination), one replay
# port, every stage on the worker lcore (testpmd forwards on that one lcore too)
cat > "$work/node.json" <<JSON
{
  "version": 1,
  "node": { "name": "replay", "mac": "02:00:00:00:00:01", "ipv4": "192.168.50.1",
            "ipv6": "fd00:50::1", "mesh_port": 7000, "control_socket": "$sock" },
  "ports": [ { "name": "uplink", "dev": "net_pcap0", "role": "external" } ],
  "mempool": { "mbufs": $mbufs, "cache": 256, "data_room": 2176 },
  "lcores": { "idle": "$idle",
              "stages": { "port_rx": $worker, "port_tx": $worker, "sidecar": $worker, "dpa": $worker } },
  "pools": {
    "tx_header": { "slots": 256, "slot_size": 1024 },
    "tx_body":   { "slots": 256, "slot_size": 65536 },
    "rx_header": { "slots": 256, "slot_size": 1024 },
    "rx_body":   { "slots": 256, "slot_size": 65536 },
    "sq_depth": 256
  },
  "services": [ $svc_json ],
  "routes": [ $route_json ],
  "dpa": { "backend": "emu", "threads": 1 },
  "dma": { "backend": "cpu" }
}
JSON
dm_prefix="replay-dpumesh-$$"
# shellcheck disable=SC2046
"$build/bin/dpumesh" $(eal "$dm_prefix") -- --config "$work/node.json" --stats-period 0 \
  --wait-pods "$pods" \
  > "$work/dpumesh.log" 2>&1 &
dp=$!; pids+=("$dp")
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
[ -S "$sock" ] || { cat "$work/dpumesh.log"; echo "replay.sh: dpumesh did not open $sock" >&2; exit 1; }
for i in $(seq "$pods"); do
  # echo pods answer without checksumming bodies (DPUMESH_POD_NOSUM), as in perf/case3.sh
  DPUMESH_POD_NOSUM=1 taskset -c "$main_lcore" "$build/bin/dpumesh-pod" echo "$sock" \
    > "$work/pod$i.log" 2>&1 &
  pids+=($!)
done
dm_tel="$(rtdir "$dm_prefix")/dpdk_telemetry.v2"
bg python3 "$tel" wait "$dm_tel" /dpumesh/pods pod_id "$pods"
bg python3 "$tel" sample "$dm_tel" "$warmup" "$duration" "$work/dpumesh.json" \
  /ethdev/stats,0 /dpumesh/drops /dpumesh/sidecar /dpumesh/pods /dpumesh/dpa /dpumesh/stages \
  /dpumesh/lcores
for p in "${pids[@]}"; do [ "$p" = "$dp" ] || [ "$p" = "$tp" ] || kill "$p" 2>/dev/null || true; done
kill -INT "$dp"; wait "$dp" || true
grep -a '^final ' "$work/dpumesh.log" > "$work/dpumesh.final" || true

# ---- (4) the table ----
python3 - "$work/testpmd.json" "$work/dpumesh.json" "$work/testpmd.final" "$summary" <<'PY'
import json, re, sys

tp, dm = (json.load(open(p)) for p in sys.argv[1:3])
tp_final = open(sys.argv[3]).read()
cap = dict(kv.split("=") for kv in sys.argv[4].split()[1:])

def delta(run, cmd, key):
    a, b = run["start"]["data"][cmd], run["end"]["data"][cmd]
    va, vb = a.get(key), b.get(key)
    if isinstance(va, list):
        return sum(vb) - sum(va)
    return vb - va

def secs(run):
    return run["end"]["t"] - run["start"]["t"]

T, D = secs(tp), secs(dm)
rows = []
def row(name, t, d, ratio=True, fmt="{:.3f}"):
    f = lambda v: "—" if v is None else (fmt.format(v) if isinstance(v, float) else str(v))
    r = "—"
    if ratio and t and d is not None:
        r = "{:.3f}".format(d / t)
    rows.append("| {} | {} | {} | {} |".format(name, f(t), f(d), r))

e = "/ethdev/stats,0"
tp_rx, dm_rx = delta(tp, e, "ipackets"), delta(dm, e, "ipackets")
row("window (s)", T, D, False, "{:.2f}")
row("frames received (RX Mpps)", tp_rx / T / 1e6, dm_rx / D / 1e6)
row("RX Gbps (frame bytes, no preamble/IFG)", delta(tp, e, "ibytes") * 8 / T / 1e9,
    delta(dm, e, "ibytes") * 8 / D / 1e9)
row("frames sent (TX Mpps)", delta(tp, e, "opackets") / T / 1e6,
    delta(dm, e, "opackets") / D / 1e6, False)

d = "/dpumesh/drops"
# refused_overloaded, refused_saturated: requests port RX refused (among "messages");
# refused_frag: later frames of requests refused at their first (not malformed);
# rx_msgs_in_use, ingress_queued: gauges; reserve_empty: not even refused (shed)
flow = {"frames", "bytes", "accepted", "messages", "in_reassembly", "duplicates",
        "refused_overloaded", "refused_saturated", "refused_frag", "rx_msgs_in_use",
        "ingress_queued"}
handoff = {"no_consumer", "ring_full", "msg_pool_empty", "reserve_empty"}
keys = dm["end"]["data"][d].keys()
reasm = delta(dm, d, "messages") + sum(delta(dm, d, k) for k in handoff if k in keys)
msg_per_frame = int(cap["valid_messages"]) / int(cap["frames"])
row("messages in the capture at that frame rate (M/s)", tp_rx * msg_per_frame / T / 1e6,
    dm_rx * msg_per_frame / D / 1e6)
row("messages reassembled (M/s)", None, reasm / D / 1e6, False)
row("messages handed to the sidecar (M/s)", None, delta(dm, d, "messages") / D / 1e6, False)
sc = "/dpumesh/sidecar"
row("sidecar requests (M/s)", None, delta(dm, sc, "requests") / D / 1e6, False)
row("delivered into pods (M/s, DPA rx_delivered)", None,
    delta(dm, "/dpumesh/dpa", "rx_delivered") / D / 1e6, False)
row("answered by pods (M/s, pods tx_taken)", None,
    delta(dm, "/dpumesh/pods", "tx_taken") / D / 1e6, False)

def share(n, total):
    return "{} ({:.2f}% of RX)".format(n, 100.0 * n / total) if total else str(n)

# drops over the window, by reason; zero reasons are left out
for k, name in (("imissed", "rx_missed"), ("ierrors", "rx_errors"), ("rx_nombuf", "rx_nombuf"),
                ("oerrors", "tx_errors")):
    t, v = delta(tp, e, k), delta(dm, e, k)
    if t or v:
        rows.append("| drop: port {} | {} | {} | — |".format(name, share(t, tp_rx), share(v, dm_rx)))
m = re.search(r"Accumulated forward statistics.*?RX-dropped: (\d+).*?TX-dropped: (\d+)", tp_final, re.S)
if m and (int(m.group(1)) or int(m.group(2))):
    rows.append("| drop: testpmd RX-/TX-dropped (whole run) | {} / {} | — | — |".format(*m.groups()))
wire = 0
for k in keys:
    if k in flow:
        continue
    v = delta(dm, d, k)
    if k not in handoff:
        wire += v
    if v and k in handoff:  # whole messages, after reassembly
        rows.append("| drop: port_rx {} (messages) | — | {} ({:.2f}% of reassembled) | — |".format(
            k, v, 100.0 * v / reasm if reasm else 0))
    elif v:
        rows.append("| drop: port_rx {} | — | {} | — |".format(k, share(v, dm_rx)))
v = delta(dm, d, "duplicates")
if v:
    rows.append("| ignored: port_rx duplicates (repeated fragments) | — | {} | — |".format(share(v, dm_rx)))
skip = {"requests", "responses", "forwarded", "answered", "retries", "parked"}
for k in dm["end"]["data"][sc]:
    v = delta(dm, sc, k)
    if k not in skip and v:
        rows.append("| drop/error: sidecar {} | — | {} | — |".format(k, v))
for k in ("rx_no_slot", "rx_sq_full", "tx_refused"):
    v = delta(dm, "/dpumesh/pods", k)
    if v:
        rows.append("| drop: pods {} | — | {} | — |".format(k, v))
bad = (int(cap["malformed"]) + int(cap["other"])) / int(cap["frames"])
rows.append("| wire drops (malformed + non-mesh frames) | — | {:.2f}% of RX | expected {:.2f}% from the capture |".format(
    100.0 * wire / dm_rx if dm_rx else 0, 100 * bad))
st = dm["end"]["data"]["/dpumesh/stages"]
st0 = dm["start"]["data"]["/dpumesh/stages"]
lc, lc0 = dm["end"]["data"]["/dpumesh/lcores"], dm["start"]["data"]["/dpumesh/lcores"]
# TSC cycles per second, from the worker lcore's busy + idle cycles over the window
w = lc["lcore"].index(st["lcore"][0]) if st["lcore"] else None
hz = None
if w is not None:
    hz = (lc["busy_cycles"][w] + lc["idle_cycles"][w] - lc0["busy_cycles"][w] - lc0["idle_cycles"][w]) / D
if dm_rx and hz:
    busy = sum(b - a for b, a in zip(st["busy_cycles"], st0["busy_cycles"]))
    # testpmd's forwarding lcore never finds its queue empty with infinite_rx: all its
    # cycles are per-frame cycles
    row("cycles per received frame (dpumesh: stages' busy cycles; testpmd: TSC Hz / pps)",
        hz * T / tp_rx, busy / dm_rx, True, "{:.0f}")

print("| | testpmd 5tswap | dpumesh + {} echo pod(s) | dpumesh/testpmd |".format(
    len(dm["end"]["data"]["/dpumesh/pods"]["pod_id"])))
print("|---|---:|---:|---:|")
print("\n".join(rows))
PY

echo
echo "## raw: testpmd, /ethdev/stats,0 at the window's start and end, and its final statistics"
cat "$work/testpmd.json"; echo
cat "$work/testpmd.final"
echo
echo "## raw: dpumesh, telemetry at the window's start and end, and its final statistics"
cat "$work/dpumesh.json"; echo
cat "$work/dpumesh.final"
grep -a -v '^final ' "$work/dpumesh.log" | grep -a -i -w -E 'error|warning|failed' | head -20 || true
echo
echo "## dpumesh config"
cat "$work/node.json"
echo
echo "output: $out"
