# SPDX-License-Identifier: BSD-3-Clause
# Suites "pod2pod" (Case 3 through dpumesh, both DMA backends, memcpy alongside) and
# "baselines" (the same sizes and outstanding requests over TCP loopback, and through two
# HAProxy sidecars in HTTP mode). Sourced by perf/run.sh. Rows go to pod2pod.csv:
#   system,size,outstanding,rps,p50_us,p90_us,p99_us,p999_us,ok,errors,retries,cycles_per_rt,
#   dp_cpu_us_rt,dp_user_us_rt,dp_sys_us_rt,pods_cpu_us_rt,pods_user_us_rt,pods_sys_us_rt,doorbells_per_rt
# The CPU columns are /proc user and kernel time over the client's measured window (dpumesh:
# every thread; pods: the echo pod and the client) per round trip; doorbells = eventfd writes
# to pods per round trip ("n/a" when the build has no such counter).

# the matrix; run.sh --quick (or these variables) narrows it
read -r -a P2P_SIZES <<< "${DPUMESH_PERF_P2P_SIZES:-64 4096 65536 1048576}"
read -r -a P2P_WINDOWS <<< "${DPUMESH_PERF_P2P_WINDOWS:-1 8 64}"
read -r -a P2P_BACKENDS <<< "${DPUMESH_PERF_P2P_BACKENDS:-cpu dmadev:dma_skeleton}"
# the profiled point (run.sh --profile): Case 3 of issue 15, 64 B, 64 outstanding
PROFILE_AT_pod2pod=dpumesh-cpu-64-64

p2p_csv() {
  [ -s "$RESULTS/pod2pod.csv" ] ||
    echo "system,size,outstanding,rps,p50_us,p90_us,p99_us,p999_us,ok,errors,retries,cycles_per_rt,dp_cpu_us_rt,dp_user_us_rt,dp_sys_us_rt,pods_cpu_us_rt,pods_user_us_rt,pods_sys_us_rt,doorbells_per_rt,doorbell_us_rt" > "$RESULTS/pod2pod.csv"
  echo "$*" >> "$RESULTS/pod2pod.csv"
}

# mesh_delta BEFORE AFTER: "busy=<stage busy cycles> <counter>=<delta> ..." for the sidecar
# and DPA counters that mean trouble in a closed loop (non-zero ones only).
mesh_delta() {
  python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.loads(x)["data"] for x in sys.argv[1:3])
out = ["busy=%d" % (sum(b["/dpumesh/stages"]["busy_cycles"]) - sum(a["/dpumesh/stages"]["busy_cycles"]))]
# counters of normal work; every other one that moves is listed as an anomaly
normal = {"requests", "responses", "forwarded", "answered", "net_requests", "net_responses",
          "to_peer", "to_network", "zero_copy", "copied_out", "request_ids", "traceparents",
          "held", "held_done", "policy_swaps",
          "expiry_cycles"}  # the deadline sweep's own TSC clock: moves every millisecond
for k, v in b["/dpumesh/sidecar"].items():
    d = v - a["/dpumesh/sidecar"].get(k, 0)
    if d and k not in normal:
        out.append("%s=%d" % (k, d))
for k in ("completion_ring_full",):
    d = sum(b["/dpumesh/dpa"][k]) - sum(a["/dpumesh/dpa"][k])
    if d:
        out.append("dpa_%s=%d" % (k, d))
print(" ".join(out))
PY
}

# p2p_client SYSTEM SIZE WINDOW [extra env...]: one timed client run against $DP_SOCK.
p2p_client() {
  local system=$1 size=$2 window=$3; shift 3
  local before after line delta ok sent err cpu_file="$RAW/p2p-$system-$size-$window.cpu.json" client_pid
  before=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/dpa)
  # the /proc window first: it waits for the client's registration, then its warm-up
  rm -f "$cpu_file" "$WORK/client.pid"
  cpu_window "$cpu_file" "$P2P_WARMUP" "$(cpu_secs "$P2P_SECONDS" "$P2P_WARMUP")" dpumesh="$DP_PID" \
    "${P2P_POD_PIDS[@]}" client="@$WORK/client.pid" tel="$DP_TEL" waitnew=1
  profile_window "pod2pod" "$system-$size-$window" "$P2P_WARMUP" "$(cpu_secs "$P2P_SECONDS" "$P2P_WARMUP")"
  sleep 0.3 # python's start-up, so that it sees the pods before the client
  env DPUMESH_TEST_BODY_SLOT=1048576 DPUMESH_POD_BODY_SLOTS=64 DPUMESH_CLIENT_FIXED=1 \
    DPUMESH_POD_NOSUM=1 DPUMESH_CLIENT_WINDOW="$window" DPUMESH_CLIENT_SECONDS="$P2P_SECONDS" \
    DPUMESH_CLIENT_WARMUP="$P2P_WARMUP" "$@" \
    ${P2P_PIN[@]+"${P2P_PIN[@]}"} "$BIN/dpumesh-pod" client "$DP_SOCK" 2000000 "$(next_seed)" \
    "$size" > "$WORK/p2p-client.out" 2>&1 &
  client_pid=$!; track "$client_pid"
  echo "$client_pid" > "$WORK/client.pid"
  wait "$client_pid" 2>/dev/null || true
  wait "$CPU_WIN_PID" 2>/dev/null || true
  profile_wait
  line=$(tr '\n' ' ' < "$WORK/p2p-client.out")
  after=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/dpa)
  delta=$(mesh_delta "$before" "$after")
  local cpu=""
  [ ! -s "$cpu_file" ] || cpu=$(cpu_words "$cpu_file" "$(kv "$line" rps)")
  if [ -n "$cpu" ] && [ "$(kv "$cpu" procs_gone)" != 0.000 ]; then
    # the client ended before the window did (a loaded machine delays the snapshot): its
    # CPU is lost, so the pods' figure is left out rather than shown too low
    anomaly WARN "$system size=$size outstanding=$window: the client ended inside the /proc window, pods CPU left out"
    cpu=$(sed -E 's/pods_(cpu|user|sys)_us=[^ ]*//g' <<< "$cpu")
  fi
  echo "system=$system size=$size window=$window $line $delta $cpu" >> "$RAW/pod2pod.txt"
  ok=$(kv "$line" ok); sent=$(kv "$line" sent)
  if [ -z "$ok" ] || [ -z "$sent" ]; then
    anomaly ERROR "$system size=$size outstanding=$window: client failed: ${line:0:200}"
    p2p_csv "$system,$size,$window,0,0,0,0,0,0,1,0,0"
    return
  fi
  err=$(( $(num "$line" refused) + $(num "$line" mesh_err) + $(num "$line" bad) ))
  [ "$err" -eq 0 ] && [ "$ok" -eq "$sent" ] ||
    anomaly ERROR "$system size=$size outstanding=$window: $ok/$sent answered, refused=$(kv "$line" refused) mesh_err=$(kv "$line" mesh_err) bad=$(kv "$line" bad) reasons=$(kv "$line" reasons)"
  [ "$(kv "$line" order_bad)" = 0 ] || anomaly ERROR "$system size=$size: $(kv "$line" order_bad) answers out of order"
  local extra=${delta#busy=* }
  [ "$extra" = "$delta" ] || anomaly WARN "$system size=$size outstanding=$window: mesh counters: $extra"
  local busy cyc rps db
  busy=$(kv "$delta" busy); rps=$(kv "$line" rps)
  # stage cycles per round trip over the whole client run (warm-up included)
  cyc=$(awk -v b="$busy" -v n="$ok" 'BEGIN { printf "%.0f", n ? b / n : 0 }')
  # doorbells per round trip: telemetry read with the /proc snapshots, over the same window
  db=$(kv "$cpu" doorbells_per_unit)
  p2p_csv "$system,$size,$window,$rps,$(kv "$line" rtt_p50_us),$(kv "$line" rtt_p90_us),$(kv "$line" rtt_p99_us),$(kv "$line" rtt_p999_us),$ok,$err,$(kv "$line" again),$cyc,$(kv "$cpu" dpumesh_cpu_us),$(kv "$cpu" dpumesh_user_us),$(kv "$cpu" dpumesh_sys_us),$(kv "$cpu" pods_cpu_us),$(kv "$cpu" pods_user_us),$(kv "$cpu" pods_sys_us),$db,$(kv "$cpu" doorbell_us)"
}

suite_pod2pod() {
  # the echo pod and the client on the main lcore's CPU, off the worker lcore's, as every
  # other suite with pods places them (and as a DPU's Arm cores never run pods); floating,
  # a woken pod was put on the worker's CPU and preempted it inside its eventfd write
  # (docs/benchmarks.md "2. pod2pod"). DPUMESH_PERF_P2P_PIN=none lets them float.
  P2P_PIN_CPU=$MAIN_CPU; P2P_PIN=(taskset -c "$MAIN_CPU")
  case "${DPUMESH_PERF_P2P_PIN:-main}" in
    main) ;;
    none) P2P_PIN_CPU=""; P2P_PIN=() ;;
    *) anomaly ERROR "pod2pod: DPUMESH_PERF_P2P_PIN must be main or none, not '$DPUMESH_PERF_P2P_PIN'"; return ;;
  esac
  progress "pod2pod: memcpy and raw DMA engines (dpumesh-dma-bench)"
  "$BIN/dpumesh-dma-bench" > "$RAW/dma-bench.txt" 2>&1 || anomaly ERROR "pod2pod: dpumesh-dma-bench failed (raw/dma-bench.txt)"
  {
    echo "size,memcpy_gbps,cpu_gbps,dmadev_gbps"
    awk '$2 ~ /^[0-9]+$/ && NF == 4 { g[$1 "," $2] = $3; s[$2] = 1 }
         END { for (k in s) print k "," g["memcpy," k] "," g["cpu," k] "," g["dmadev(dma_skeleton)," k] }' \
      "$RAW/dma-bench.txt" | sort -t, -k1n
  } > "$RESULTS/memcpy.csv"
  local cfg="$WORK/p2p.json" backend system n=0 total=$(( ${#P2P_BACKENDS[@]} * ${#P2P_SIZES[@]} * ${#P2P_WINDOWS[@]} ))
  write_config "$cfg" --sock "$WORK/p2p.sock" --services echo:16,client:16 --idle adaptive \
    --body-slots 64 --body-size 1048576 --timeout-ms 10000
  for backend in "${P2P_BACKENDS[@]}"; do
    system="dpumesh-${backend%%:*}"
    local eal=()
    [ "$backend" = cpu ] || eal=(--vdev "dma_skeleton,lcore=$MAIN_CPU")
    dp_start "p2p-${backend%%:*}" "$cfg" "${eal[@]}" -- --dma "$backend" || continue
    POD_CPU=$P2P_PIN_CPU pod "echo-$system" DPUMESH_TEST_BODY_SLOT=1048576 \
      DPUMESH_POD_BODY_SLOTS=64 DPUMESH_POD_NOSUM=1 -- echo "$DP_SOCK"
    local echo_pid=$POD_PID
    P2P_POD_PIDS=("pod=$echo_pid")
    tel wait "$DP_TEL" /dpumesh/pods pod_id 1 || anomaly ERROR "$system: echo pod did not register"
    for size in "${P2P_SIZES[@]}"; do
      for window in "${P2P_WINDOWS[@]}"; do
        n=$((n + 1))
        progress "pod2pod: [$n/$total] $system body=$size outstanding=$window"
        p2p_client "$system" "$size" "$window"
      done
    done
    stop_pid "$echo_pid"
    dp_stop
  done
}

# ---- baselines ----
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# haproxy_cfg LISTEN_PORT SERVER_PORT: one sidecar, HTTP mode, keep-alive on both sides.
haproxy_cfg() {
  cat <<CFG
global
  nbthread 1
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
  option http-keep-alive
  http-reuse always
frontend in
  bind 127.0.0.1:$1
  default_backend out
backend out
  server s1 127.0.0.1:$2
CFG
}

base_point() { # SYSTEM PORT SIZE CONNS
  local line
  line=$("$BIN/dpumesh-http-load" --port "$2" --conns "$4" --size "$3" --seconds "$P2P_SECONDS" \
    --warmup "$P2P_WARMUP" 2>&1 | tr '\n' ' ') || true
  echo "system=$1 size=$3 window=$4 $line" >> "$RAW/baselines.txt"
  if [ -z "$(kv "$line" ok)" ]; then
    anomaly ERROR "$1 size=$3 outstanding=$4: load failed: ${line:0:200}"
    p2p_csv "$1,$3,$4,0,0,0,0,0,0,1,0,"
    return
  fi
  local err=$(( $(num "$line" non2xx) + $(num "$line" bad_body) + $(num "$line" errors) + $(num "$line" unanswered) + $(num "$line" unconnected) ))
  [ "$err" -eq 0 ] && [ "$(kv "$line" ok)" -gt 0 ] ||
    anomaly ERROR "$1 size=$3 outstanding=$4: ok=$(kv "$line" ok) non2xx=$(kv "$line" non2xx) bad_body=$(kv "$line" bad_body) errors=$(kv "$line" errors) retries=$(kv "$line" retries) unanswered=$(kv "$line" unanswered) unconnected=$(kv "$line" unconnected)"
  p2p_csv "$1,$3,$4,$(kv "$line" rps),$(kv "$line" p50_us),$(kv "$line" p90_us),$(kv "$line" p99_us),$(kv "$line" p999_us),$(kv "$line" ok),$err,$(kv "$line" retries),"
}

suite_baselines() {
  command -v haproxy > /dev/null || { anomaly ERROR "baselines: haproxy not installed (scripts/setup.sh)"; return; }
  "$BIN/dpumesh-http-echo" > "$RAW/http-echo.log" 2>&1 &
  local srv=$!; track "$srv"
  local port=""
  for _ in $(seq 100); do
    port=$(sed -n 's/^LISTEN port=//p' "$RAW/http-echo.log"); [ -n "$port" ] && break; sleep 0.05
  done
  [ -n "$port" ] || { anomaly ERROR "baselines: dpumesh-http-echo did not start"; return; }
  # client -> haproxy (client's sidecar) -> haproxy (server's sidecar) -> server
  local pa pb
  pa=$(free_port); pb=$(free_port)
  haproxy_cfg "$pb" "$port" > "$WORK/haproxy-b.cfg"
  haproxy_cfg "$pa" "$pb" > "$WORK/haproxy-a.cfg"
  haproxy -db -f "$WORK/haproxy-b.cfg" > "$RAW/haproxy-b.log" 2>&1 & local hb=$!; track "$hb"
  haproxy -db -f "$WORK/haproxy-a.cfg" > "$RAW/haproxy-a.log" 2>&1 & local ha=$!; track "$ha"
  sleep 0.5
  kill -0 "$ha" 2>/dev/null && kill -0 "$hb" 2>/dev/null ||
    anomaly ERROR "baselines: haproxy did not start (raw/haproxy-*.log)"
  local n=0 total=$(( 2 * ${#P2P_SIZES[@]} * ${#P2P_WINDOWS[@]} )) size window
  for size in "${P2P_SIZES[@]}"; do
    for window in "${P2P_WINDOWS[@]}"; do
      n=$((n + 1)); progress "baselines: [$n/$total] tcp-loopback body=$size outstanding=$window"
      base_point tcp-loopback "$port" "$size" "$window"
      n=$((n + 1)); progress "baselines: [$n/$total] haproxy-http body=$size outstanding=$window"
      base_point haproxy-http "$pa" "$size" "$window"
    done
  done
  stop_pid "$ha"; stop_pid "$hb"
  stop_pid "$srv" INT
  grep '^DONE' "$RAW/http-echo.log" || true
  grep -q 'bad=0 ' "$RAW/http-echo.log" || anomaly ERROR "baselines: the echo server saw malformed requests (raw/http-echo.log)"
}
