# SPDX-License-Identifier: BSD-3-Clause
# Suite "replay": generated captures replayed through net_pcap (infinite_rx=1), into
# dpdk-testpmd 5tswap (the baseline) and into dpumesh with an echo pod, on the same capture,
# lcores and memory; then a latency mode (x-ts round trips of a client pod, the port quiet
# and under replay). Sourced by perf/run.sh. Writes replay.csv, replay_stages.csv,
# replay_latency.csv; raw telemetry windows in raw/replay-*.json.

# name|pcapgen options: every capture has at most 8000 frames (net_pcap holds it in mbufs).
# "smallest": 64 B asked, one mesh frame as small as the headers allow (131 B: Ethernet,
# IPv4, UDP, the 32 B fragment header and a minimal L7 request header, no body).
REPLAY_CAPTURES=(
  "smallest|--frame-size 64 --ipv6-share 0"
  "512B|--frame-size 512 --ipv6-share 0"
  "1500B|--frame-size 1514 --ipv6-share 0"
  "64KiB-fragmented|--body 65536:65536 --ipv6-share 0"
  "mix|--body 0:4096 --malformed-share 0.01 --other-share 0.02 --ipv6-share 0.25"
)
REPLAY_WARMUP=1.5
# the captures to run (names above; run.sh --quick narrows them), the profiled one
read -r -a REPLAY_ONLY <<< "${DPUMESH_PERF_REPLAY_CAPTURES:-}"
PROFILE_AT_replay=512B

replay_eal() { # PREFIX CAPTURE INFINITE
  echo -l "$LCORES" --no-huge -m "$MEM" --no-pci --no-shconf --file-prefix "$1" \
    --vdev "net_pcap0,rx_pcap=$2,infinite_rx=$3"
}

# replay_config FILE CAPTURE_FRAMES: every stage on the worker lcore, busy polling, an
# external port whose replies net_pcap drops on TX, a pool that holds the capture.
replay_config() {
  local mbufs=65535
  while [ "$mbufs" -lt $(( $2 + 49152 )) ]; do mbufs=$((mbufs * 2 + 1)); done
  write_config "$1" --sock "$WORK/replay.sock" --port net_pcap0 --services echo:16,lat:4,client:4 \
    --idle busy --mbufs "$mbufs" --body-slots 256 --body-size 65536 --timeout-ms 1000
}

replay_one() { # NAME OPTIONS
  local name=$1 opts=$2 cap="$WORK/replay-$1.pcap" gen summary frames
  # shellcheck disable=SC2086
  gen=$("$BIN/dpumesh-pcapgen" --out "$cap" --messages 100000 --frames 8000 --services echo $opts --seed 1) ||
    { anomaly ERROR "replay $name: dpumesh-pcapgen failed"; return; }
  echo "$gen" > "$RAW/replay-$name.pcapgen.txt"
  summary=$(tail -1 <<< "$gen")
  frames=$(kv "$summary" frames)

  progress "replay: $name ($frames frames, $(( $(kv "$summary" bytes) / frames )) B average): dpdk-testpmd 5tswap"
  local tp_prefix="perf-replay-testpmd-$$"
  # shellcheck disable=SC2046
  dpdk-testpmd $(replay_eal "$tp_prefix" "$cap" 1) -- --forward-mode=5tswap --nb-cores=1 \
    --stats-period 1 < /dev/null > "$RAW/replay-$name.testpmd.log" 2>&1 &
  local tp=$!; track "$tp"
  # /proc CPU over (about) the telemetry window: tel.py connects, then waits REPLAY_WARMUP
  cpu_window "$RAW/replay-$name.testpmd.cpu.json" "$REPLAY_WARMUP" "$REPLAY_SECONDS" testpmd="$tp"
  tel sample "$(rtdir "$tp_prefix")/dpdk_telemetry.v2" "$REPLAY_WARMUP" "$REPLAY_SECONDS" \
    "$RAW/replay-$name.testpmd.json" /ethdev/stats,0 ||
    anomaly ERROR "replay $name: no telemetry from testpmd (raw/replay-$name.testpmd.log)"
  wait "$CPU_WIN_PID" 2>/dev/null || true
  stop_pid "$tp" INT
  rmdir "$(rtdir "$tp_prefix")" 2>/dev/null || true

  progress "replay: $name: dpumesh + 1 echo pod"
  local cfg="$WORK/replay-$name.json"
  replay_config "$cfg" "$frames"
  dp_start "replay-$name" "$cfg" --vdev "net_pcap0,rx_pcap=$cap,infinite_rx=1" -- --wait-pods 1 || return
  POD_CPU=$MAIN_CPU pod "replay-$name-echo" DPUMESH_POD_NOSUM=1 DPUMESH_TEST_BODY_SLOT=65536 -- echo "$DP_SOCK"
  local echo_pid=$POD_PID
  tel wait "$DP_TEL" /dpumesh/pods pod_id 1 || anomaly ERROR "replay $name: echo pod did not register"
  cpu_window "$RAW/replay-$name.dpumesh.cpu.json" "$REPLAY_WARMUP" "$REPLAY_SECONDS" \
    dpumesh="$DP_PID" pod="$echo_pid" tel="$DP_TEL"
  local cpu_pid=$CPU_WIN_PID
  profile_window replay "$name" "$REPLAY_WARMUP" "$REPLAY_SECONDS"
  tel sample "$DP_TEL" "$REPLAY_WARMUP" "$REPLAY_SECONDS" "$RAW/replay-$name.dpumesh.json" \
    /ethdev/stats,0 /dpumesh/drops /dpumesh/sidecar /dpumesh/pods /dpumesh/dpa /dpumesh/stages \
    /dpumesh/lcores || anomaly ERROR "replay $name: no telemetry from dpumesh"
  wait "$cpu_pid" 2>/dev/null || true
  profile_wait
  stop_pid "$echo_pid"
  dp_stop
  local a
  a=$(python3 "$ROOT/perf/lib/replay_row.py" "$RESULTS" "$name" "$summary" \
    "$RAW/replay-$name.testpmd.json" "$RAW/replay-$name.dpumesh.json" \
    "$RAW/replay-$name.testpmd.cpu.json" "$RAW/replay-$name.dpumesh.cpu.json") ||
    { anomaly ERROR "replay $name: analysis failed"; return; }
  while IFS= read -r line; do
    [ -z "$line" ] || anomaly "${line%% *}" "${line#* }"
  done <<< "$a"
}

# replay_latency CONDITION CAPTURE INFINITE: a client pod's round trips to service "lat"
# (its own echo pod) while CAPTURE replays (INFINITE=1) or after it played once (0).
replay_latency() {
  local cond=$1 cap=$2 inf=$3 cfg="$WORK/replay-lat.json"
  replay_config "$cfg" 8000
  dp_start "replay-latency-$cond" "$cfg" --vdev "net_pcap0,rx_pcap=$cap,infinite_rx=$inf" -- --wait-pods 3 || return
  local cpu=$MAIN_CPU
  POD_CPU=$cpu pod "lat-$cond-echo" DPUMESH_POD_NOSUM=1 DPUMESH_TEST_BODY_SLOT=65536 -- echo "$DP_SOCK"
  local e1=$POD_PID
  POD_CPU=$cpu pod "lat-$cond-lat" DPUMESH_POD_NOSUM=1 DPUMESH_POD_SERVICE=lat -- echo "$DP_SOCK"
  local e2=$POD_PID
  tel wait "$DP_TEL" /dpumesh/pods pod_id 2 || anomaly ERROR "replay latency: echo pods did not register"
  local line
  line=$(env DPUMESH_CLIENT_SERVICE=lat DPUMESH_CLIENT_FIXED=1 DPUMESH_POD_NOSUM=1 \
    DPUMESH_CLIENT_WINDOW=1 DPUMESH_CLIENT_SECONDS="$REPLAY_SECONDS" DPUMESH_CLIENT_WARMUP=1 \
    taskset -c "$cpu" "$BIN/dpumesh-pod" client "$DP_SOCK" 2000000 "$(next_seed)" 64 2>&1 | tr '\n' ' ') || true
  echo "condition=$cond $line" >> "$RAW/replay-latency.txt"
  tel get "$DP_TEL" /ethdev/stats,0 /dpumesh/sidecar /dpumesh/drops > "$RAW/replay-latency-$cond.json" || true
  stop_pid "$e1"; stop_pid "$e2"
  dp_stop
  [ -s "$RESULTS/replay_latency.csv" ] || echo "condition,rps,p50_us,p90_us,p99_us,p999_us,samples,errors" > "$RESULTS/replay_latency.csv"
  if [ -z "$(kv "$line" ok)" ]; then
    anomaly ERROR "replay latency $cond: client failed: ${line:0:200}"; return
  fi
  local err=$(( $(num "$line" refused) + $(num "$line" mesh_err) + $(num "$line" bad) ))
  [ "$err" -eq 0 ] || anomaly ERROR "replay latency $cond: refused=$(kv "$line" refused) mesh_err=$(kv "$line" mesh_err) bad=$(kv "$line" bad) reasons=$(kv "$line" reasons)"
  echo "$cond,$(kv "$line" rps),$(kv "$line" rtt_p50_us),$(kv "$line" rtt_p90_us),$(kv "$line" rtt_p99_us),$(kv "$line" rtt_p999_us),$(kv "$line" samples),$err" >> "$RESULTS/replay_latency.csv"
}

suite_replay() {
  local c i=0
  if [ ${#REPLAY_ONLY[@]} -gt 0 ]; then
    local keep=() k
    for c in "${REPLAY_CAPTURES[@]}"; do
      for k in "${REPLAY_ONLY[@]}"; do [ "${c%%|*}" != "$k" ] || keep+=("$c"); done
    done
    REPLAY_CAPTURES=("${keep[@]}")
  fi
  for c in "${REPLAY_CAPTURES[@]}"; do
    i=$((i + 1))
    progress "replay: [$i/$(( ${#REPLAY_CAPTURES[@]} + 2 ))] capture ${c%%|*}"
    replay_one "${c%%|*}" "${c#*|}"
  done
  progress "replay: [$((i + 1))/$((i + 2))] latency, port quiet (10 messages played once)"
  "$BIN/dpumesh-pcapgen" --out "$WORK/replay-quiet.pcap" --messages 10 --services echo > /dev/null
  replay_latency quiet "$WORK/replay-quiet.pcap" 0
  progress "replay: [$((i + 2))/$((i + 2))] latency, port under replay (mix capture, infinite_rx=1)"
  [ -f "$WORK/replay-mix.pcap" ] || "$BIN/dpumesh-pcapgen" --out "$WORK/replay-mix.pcap" --messages 100000 \
    --frames 8000 --services echo --body 0:4096 --malformed-share 0.01 --other-share 0.02 \
    --ipv6-share 0.25 --seed 1 > /dev/null
  replay_latency loaded "$WORK/replay-mix.pcap" 1
}
