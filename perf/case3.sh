#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Case 3 benchmark (not a test): pod -> service -> pod round trips through dpumesh on one
# node, for 64 B, 4 KiB, 64 KiB and 1 MiB bodies and each DMA backend, next to a plain
# memcpy measured in the same run. Closed loop (1 outstanding: latency) and 16 outstanding
# (throughput). Prints a Markdown table; raw lines go to perf/results/<date>/case3.txt.
#
#   perf/case3.sh                 # builds (Release) into build-perf/, then runs
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DPUMESH_PERF_BUILD_DIR:-$root/build-perf}
out_dir="$root/perf/results/$(date +%Y-%m-%d)"
mkdir -p "$out_dir"
raw="$out_dir/case3.txt"
: > "$raw"

bash "$root/scripts/setup.sh" > /dev/null
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPUMESH_TESTS=OFF > /dev/null
cmake --build "$build" -j "$(nproc)" > /dev/null

work=$(mktemp -d)
trap 'pkill -P $$ 2>/dev/null || true; rm -rf "$work"' EXIT
sock="$work/ctl.sock"
cat > "$work/node.json" <<JSON
{
  "node": { "name": "bench", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "$sock" },
  "lcores": { "idle": "adaptive", "stages": { "sidecar": 1, "dpa": 1 } },
  "pools": { "tx_body": { "slots": 64, "slot_size": 1048576 },
             "rx_body": { "slots": 64, "slot_size": 1048576 } },
  "services": [ { "name": "echo" }, { "name": "client" } ]
}
JSON

# The pods neither generate nor checksum bodies here (DPUMESH_CLIENT_FIXED, DPUMESH_POD_NOSUM):
# the numbers are the mesh's, plus the pods' own copy of each body into their TX buffers.
# At most 8 outstanding: the echo pod has 16 RX body slots of 1 MiB.
# memcpy and the raw DMA engines at the same sizes, same run
"$build/bin/dpumesh-dma-bench" > "$work/dma.txt" 2>&1 || true
cat "$work/dma.txt" >> "$raw"

sizes=(64 4096 65536 1048576)
declare -A count=([64]=20000 [4096]=20000 [65536]=4000 [1048576]=400)
printf '| backend | body | outstanding | round trips/s | p50 µs | p99 µs | p99.9 µs | body GB/s (both ways) |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---:|\n'
for backend in cpu dmadev:dma_skeleton; do
  eal=(-l 0-1 --no-huge -m 1024 --no-pci --no-shconf --file-prefix "dpumesh-bench-$$")
  [ "$backend" = cpu ] || eal+=(--vdev dma_skeleton,lcore=0)
  rm -f "$sock"
  "$build/bin/dpumesh" "${eal[@]}" -- --config "$work/node.json" --stats-period 0 \
    --dma "$backend" > "$work/dpumesh.log" 2>&1 &
  dp=$!
  for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
  DPUMESH_TEST_BODY_SLOT=1048576 DPUMESH_POD_NOSUM=1 "$build/bin/dpumesh-pod" echo "$sock" > /dev/null &
  echo_pid=$!
  sleep 0.5
  for size in "${sizes[@]}"; do
    for window in 1 8; do
      n=${count[$size]}
      line=$(DPUMESH_TEST_BODY_SLOT=1048576 DPUMESH_CLIENT_FIXED=1 DPUMESH_POD_NOSUM=1 \
        DPUMESH_CLIENT_WINDOW=$window \
        "$build/bin/dpumesh-pod" client "$sock" "$n" 1 "$size" | tr '\n' ' ')
      echo "backend=$backend size=$size window=$window $line" >> "$raw"
      rps=$(sed -n 's/.*PERF rps=\([0-9.]*\).*/\1/p' <<< "$line")
      p50=$(sed -n 's/.*rtt_p50_us=\([0-9.]*\).*/\1/p' <<< "$line")
      p99=$(sed -n 's/.*rtt_p99_us=\([0-9.]*\).*/\1/p' <<< "$line")
      p999=$(sed -n 's/.*rtt_p999_us=\([0-9.]*\).*/\1/p' <<< "$line")
      ok=$(sed -n 's/.*DONE sent=[0-9]* ok=\([0-9]*\).*/\1/p' <<< "$line")
      gbps=$(awk -v r="$rps" -v s="$size" 'BEGIN { printf "%.3f", r * s * 2 / 1e9 }')
      note=""
      [ "$ok" = "$n" ] || note=" (only $ok/$n answered)"
      printf '| %s | %s | %s | %s | %s | %s | %s | %s%s |\n' "$backend" "$size" "$window" \
        "$rps" "$p50" "$p99" "$p999" "$gbps" "$note"
    done
  done
  kill "$echo_pid" 2>/dev/null || true
  kill -INT "$dp"; wait "$dp" || true
  grep -a "^final stage=sidecar\|^final dpa" "$work/dpumesh.log" >> "$raw" || true
done
echo
echo "Same run, plain memcpy and the raw DMA engines (dpumesh-dma-bench):"
cat "$work/dma.txt"
echo
echo "raw: $raw"
