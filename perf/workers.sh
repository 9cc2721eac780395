#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One worker lcore next to several (`--workers N`, sidecar shards): Case 3 round trips
# through a dpumesh with two echo pods and a client (bodies up to 64 B, 64 outstanding),
# and the CPU time of dpumesh's worker lcore threads (utime + stime from /proc) per round
# trip. Prints one line per run; on a shared box run it next to `uptime`.
#
#   perf/workers.sh [BUILD_DIR] [ROUND_TRIPS] [WORKERS...]     # defaults: build 30000 1 2
#   L=0@0,1@1,2@0 perf/workers.sh build 30000 2                 # choose the EAL lcore map
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
count=${2:-30000}
shift $(($# > 2 ? 2 : $#))
workers=("$@")
[ ${#workers[@]} -gt 0 ] || workers=(1 2)
bin=$build/bin
hz=$(getconf CLK_TCK)

# CPU ticks (utime + stime) of the process's rte-worker-* threads
worker_ticks() {
  local pid=$1 t=0 f name rest
  for f in /proc/"$pid"/task/*/stat; do
    name=$(cut -d'(' -f2 "$f" | cut -d')' -f1)
    [[ $name == rte-worker* ]] || continue
    read -r -a rest <<< "$(cut -d')' -f2 "$f")"
    t=$((t + rest[11] + rest[12]))
  done
  echo "$t"
}

for w in "${workers[@]}"; do
  dir=$(mktemp -d /tmp/dpumesh-workers.XXXXXX)
  cat > "$dir/node.json" << EOF
{ "node": { "name": "n1", "mac": "02:00:00:00:00:01", "ipv4": "10.0.0.1",
            "control_socket": "$dir/ctl.sock" },
  "lcores": { "idle": "adaptive" }, "dpa": { "threads": 2 },
  "services": [ { "name": "echo", "max_pods": 4 }, { "name": "client", "max_pods": 4 } ] }
EOF
  lcores=${L:-}
  if [ -z "$lcores" ]; then
    # every worker on core 1: the 2-core layout of docs/benchmarks.md
    lcores=0@0
    for ((k = 1; k <= w; k++)); do lcores+=",$k@1"; done
  fi
  "$bin/dpumesh" --lcores "$lcores" --no-huge -m 512 --no-pci --no-shconf \
    --file-prefix "workers$$-$w" -- -c "$dir/node.json" --workers "$w" --stats-period 0 \
    > "$dir/node.log" 2>&1 &
  node=$!
  for _ in $(seq 100); do [ -S "$dir/ctl.sock" ] && break; sleep 0.1; done
  "$bin/dpumesh-pod" echo "$dir/ctl.sock" > "$dir/echo1.log" 2>&1 &
  e1=$!
  "$bin/dpumesh-pod" echo "$dir/ctl.sock" > "$dir/echo2.log" 2>&1 &
  e2=$!
  sleep 1
  c0=$(worker_ticks "$node")
  t0=$(date +%s.%N)
  DPUMESH_CLIENT_WINDOW=64 "$bin/dpumesh-pod" client "$dir/ctl.sock" "$count" 1 64 \
    > "$dir/client.log" 2>&1 || true
  t1=$(date +%s.%N)
  c1=$(worker_ticks "$node")
  kill "$e1" "$e2"
  wait "$e1" "$e2" 2> /dev/null || true
  kill -INT "$node"
  wait "$node" || true
  done_line=$(grep -m1 DONE "$dir/client.log" || echo "DONE missing (see $dir)")
  python3 -c "
n, s, c = $count, $t1 - $t0, ($c1 - $c0) / $hz
print(f'workers=$w lcores=$lcores round_trips={n} secs={s:.2f} rt_per_s={n / s:.0f} '
      f'worker_cpu_s={c:.2f} worker_cpu_us_per_rt={c / n * 1e6:.1f}')"
  echo "  ${done_line:0:120}"
  rm -rf "$dir"
done
