#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Case 3 cost per round trip, builds side by side (a benchmark, not a test): for each build
# given, in turns, `rounds` times: dpumesh (-l MAIN-WORKER, --no-huge), N echo pods behind
# service "echo" (or one pod in each of N services), one client (64 B, 64 outstanding) for S
# seconds. Per run: round trips/s, dpumesh's CPU per round trip (utime + stime of every
# thread, /proc/PID/stat, over the client's run), its user/kernel split, and eventfd writes
# per round trip (/dpumesh/dpa doorbells; blank for a build without the counter). Pods and
# the client run on the main lcore's CPU, as in the scaling suite.
#
#   perf/doorbells.sh old=/work/x/build-perf new=build-perf
#   perf/doorbells.sh --pods "1 64" --services "64" --seconds 3 --rounds 2 old=... new=...
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SECONDS_PER=3
ROUNDS=2
PODS="1"
SERVICES=""
LCORES=0-1
builds=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_PER=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --pods) PODS=$2; shift 2 ;;
    --services) SERVICES=$2; shift 2 ;;
    --lcores) LCORES=$2; shift 2 ;;
    -h|--help) sed -n 3,13p "$0"; exit 0 ;;
    *=*) builds+=("$1"); shift ;;
    *) echo "doorbells.sh: NAME=BUILD_DIR expected, got $1" >&2; exit 2 ;;
  esac
done
[ ${#builds[@]} -gt 0 ] || { echo "doorbells.sh: no build given" >&2; exit 2; }
MAIN_CPU=${LCORES%-*}
WORKER=${LCORES#*-}
WORK=$(mktemp -d /tmp/doorbells.XXXXXX)
PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
tel() { python3 "$ROOT/perf/lib/tel.py" "$@"; }
kv() { awk -v k="$2" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' <<< "$1"; }
# utime stime (clock ticks) of a process, all threads
cpu_ticks() { awk '{ sub(/^.*\) /, ""); print $12, $13 }' "/proc/$1/stat"; }
doorbells() { # sum over DPA threads, or nothing when the build has no such column
  python3 -c 'import json, sys
d = json.loads(sys.argv[1])["data"]["/dpumesh/dpa"]
print(sum(d["doorbells"]) if "doorbells" in d else "")' "$1"
}
HZ=$(getconf CLK_TCK)

# one NAME BIN DIMENSION N
one() {
  local name=$1 bin=$2 dim=$3 n=$4 i svcs="echo:64,client:4" list=echo
  for i in $(seq 0 63); do svcs="$svcs,svc$i:1"; done
  local cfg="$WORK/$name.json" sock="$WORK/$name.sock" prefix="doorbells-$name-$$"
  python3 "$ROOT/perf/lib/config.py" --worker "$WORKER" --sock "$sock" --services "$svcs" \
    --idle adaptive --timeout-ms 10000 > "$cfg"
  "$bin/dpumesh" -l "$LCORES" --no-huge -m 1024 --no-pci --no-shconf --file-prefix "$prefix" \
    -- --config "$cfg" --stats-period 0 > "$WORK/$name.log" 2>&1 &
  local dp=$!; PIDS+=("$dp")
  local teldir="/var/run/dpdk/$prefix"
  [ "$(id -u)" = 0 ] || teldir="${XDG_RUNTIME_DIR:-/tmp}/dpdk/$prefix"
  for _ in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
  local pods=()
  if [ "$dim" = pods ]; then
    for i in $(seq 1 "$n"); do
      DPUMESH_POD_GEOMETRY=small DPUMESH_POD_NOSUM=1 taskset -c "$MAIN_CPU" \
        "$bin/dpumesh-pod" echo "$sock" > /dev/null 2>&1 &
      pods+=($!); PIDS+=($!)
    done
  else
    list=""
    for i in $(seq 0 $((n - 1))); do
      DPUMESH_POD_GEOMETRY=small DPUMESH_POD_NOSUM=1 DPUMESH_POD_SERVICE="svc$i" taskset -c "$MAIN_CPU" \
        "$bin/dpumesh-pod" echo "$sock" > /dev/null 2>&1 &
      pods+=($!); PIDS+=($!); list="$list${list:+,}svc$i"
    done
  fi
  tel wait "$teldir/dpdk_telemetry.v2" /dpumesh/pods pod_id "$n" 60 > /dev/null
  local t0 t1 b0 b1 line
  t0=$(cpu_ticks "$dp"); b0=$(doorbells "$(tel get "$teldir/dpdk_telemetry.v2" /dpumesh/dpa)")
  line=$(env DPUMESH_CLIENT_SERVICE="$list" DPUMESH_CLIENT_FIXED=1 DPUMESH_POD_NOSUM=1 \
    DPUMESH_CLIENT_WINDOW=64 DPUMESH_CLIENT_SECONDS="$SECONDS_PER" DPUMESH_CLIENT_WARMUP=0 \
    taskset -c "$MAIN_CPU" "$bin/dpumesh-pod" client "$sock" 2000000 1 64 2>&1 | tr '\n' ' ') || true
  t1=$(cpu_ticks "$dp"); b1=$(doorbells "$(tel get "$teldir/dpdk_telemetry.v2" /dpumesh/dpa)")
  local p; for p in "${pods[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  kill -INT "$dp"; wait "$dp" 2>/dev/null || true
  local ok; ok=$(kv "$line" ok)
  python3 - "$name" "$dim" "$n" "$ok" "$(kv "$line" rps)" "$HZ" $t0 $t1 "$b0" "$b1" <<'PY'
import sys
name, dim, n, ok, rps, hz = sys.argv[1:7]
u0, s0, u1, s1 = (int(x) for x in sys.argv[7:11])
b0, b1 = (sys.argv[11:13] + ["", ""])[:2]
ok = int(ok or 0); hz = int(hz)
if ok == 0:
    print("%-6s %-8s %3s  client failed" % (name, dim, n)); sys.exit()
us = lambda t: t * 1e6 / hz / ok
per = "%.3f" % ((int(b1) - int(b0)) / ok) if b0 and b1 else "-"
print("%-6s %-8s %3s %9s rt/s  cpu %6.2f us/rt (user %5.2f, kernel %5.2f)  eventfd writes/rt %s  (%d rt)"
      % (name, dim, n, rps, us(u1 - u0 + s1 - s0), us(u1 - u0), us(s1 - s0), per, ok))
PY
}

echo "# $(date -u +%FT%TZ) $(uptime)"
for r in $(seq 1 "$ROUNDS"); do
  for n in $PODS; do
    for b in "${builds[@]}"; do one "${b%%=*}" "${b#*=}/bin" pods "$n"; done
  done
  for n in $SERVICES; do
    for b in "${builds[@]}"; do one "${b%%=*}" "${b#*=}/bin" services "$n"; done
  done
done
echo "# $(date -u +%FT%TZ) $(uptime)"
