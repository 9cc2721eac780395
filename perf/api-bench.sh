#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Round trips of 64 B and 4 KiB bodies through the three host APIs in one run: the C API
# (dpumesh-pod client), the coroutine API (dpumesh-coro-bench-client) and Python
# (perf/py_bench_client.py on the dpumesh package, installed offline into a venv), all
# against the same C echo pod (dpumesh-pod echo, no checksum) and the same DPU side
# (dpumesh-test-mesh: the CPU-copy mover of the tests). A benchmark, not a test: it prints.
# Usage: perf/api-bench.sh [--build DIR] [--n N] [--window W] [--rounds R]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build n=20000 window=1 rounds=2
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --n) n=$2; shift 2 ;;
    --window) window=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--n N] [--window W] [--rounds R]" >&2; exit 64 ;;
  esac
done
tmp=$(mktemp -d /tmp/dpumesh-api-bench.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
"$root/python/install-venv.sh" "$build" "$tmp"
sock=$tmp/mesh.sock
"$build/bin/dpumesh-test-mesh" "$sock" echo client > "$tmp/mesh.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do grep -q READY "$tmp/mesh.log" && break; sleep 0.1; done
DPUMESH_POD_NOSUM=1 "$build/bin/dpumesh-pod" echo "$sock" > "$tmp/echo.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do grep -q READY "$tmp/echo.log" && break; sleep 0.1; done

val() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" <<< "$2" | head -1; }
echo "api-bench: n=$n window=$window rounds=$rounds ($(nproc) CPUs)"
printf "%-6s %-6s %5s %12s %10s %10s\n" size api round rps p50_us p99_us
declare -A best p50
for size in 64 4096; do
  for r in $(seq "$rounds"); do
    c=$(DPUMESH_CLIENT_FIXED=1 DPUMESH_POD_NOSUM=1 DPUMESH_CLIENT_WINDOW=$window \
        "$build/bin/dpumesh-pod" client "$sock" "$n" 1 "$size" | grep PERF)
    k=$("$build/bin/dpumesh-coro-bench-client" "$sock" "$n" "$size" "$window" | grep PERF)
    p=$("$tmp/venv/bin/python" "$root/perf/py_bench_client.py" "$sock" "$((n / 4))" "$size" "$window" | grep PERF)
    for api in c coro python; do
      line=$c; [ $api = coro ] && line=$k; [ $api = python ] && line=$p
      rps=$(val rps "$line")
      printf "%-6s %-6s %5s %12s %10s %10s\n" "$size" "$api" "$r" "$rps" \
        "$(val rtt_p50_us "$line")" "$(val rtt_p99_us "$line")"
      key=$size.$api
      if [ -z "${best[$key]:-}" ] || awk "BEGIN{exit !($rps > ${best[$key]})}"; then best[$key]=$rps; fi
      p50[$key]="${p50[$key]:-} $(val rtt_p50_us "$line")"
    done
  done
done
# a loaded machine stretches the tails of a run (rps); the median p50 is steadier
med() { tr ' ' '\n' <<< "$1" | grep . | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "best round trips/s and median p50 of $rounds rounds:"
for size in 64 4096; do
  c=${best[$size.c]} k=${best[$size.coro]} p=${best[$size.python]}
  mc=$(med "${p50[$size.c]}") mk=$(med "${p50[$size.coro]}") mp=$(med "${p50[$size.python]}")
  awk -v s="$size" -v c="$c" -v k="$k" -v p="$p" -v mc="$mc" -v mk="$mk" -v mp="$mp" 'BEGIN {
    printf "  %5s B: C %.0f/s p50 %.1f us | coroutines %.0f/s (%+.1f%%) p50 %.1f us (%+.1f%%) | Python %.0f/s p50 %.1f us: %.1f us per call over C (p50)\n",
      s, c, mc, k, (k - c) * 100 / c, mk, (mk - mc) * 100 / mc, p, mp, mp - mc }'
done
