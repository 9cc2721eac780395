# SPDX-License-Identifier: BSD-3-Clause
# Suite "scaling": 64 B round trips with 64 outstanding as echo pods grow 1 -> 64 (one
# service) and as services grow 1 -> 64 (one pod each); per point the round trips/s,
# latency, the mesh's stage cycles per round trip (should stay flat), which pods answered,
# and the RSS of dpumesh and of all pods. Pods use the small geometry
# (DPUMESH_POD_GEOMETRY=small, ~200 KiB of pools each). Every pod and the client run on the
# main lcore's CPU, so that the worker lcore's busy cycles are the mesh's own and not time
# the scheduler gave to 64 pods. Besides, per point the /proc CPU (user + kernel) of dpumesh
# and of every pod and the client per round trip, doorbells (eventfd writes to pods) per
# round trip, and the CPU the emulated DPA's threads spent writing them (on a BlueField-3 the
# DPA rings a pod, not an Arm core: the summary shows dpumesh's CPU without it too); the
# worker lcore's CPU split into polls that did work (per stage) and the rest (empty polls,
# sleeps and wake-ups, the loop), its sleeps per round trip, and the work-only figure (work polls less the DPA's eventfd writes: what the
# scaling target is judged on beside the whole process, docs/benchmarks.md); SQ heads a DPA
# TX look loads, the DPA's epoll_wait looks and the pods' TX doorbell writes per round trip.
# Beside each series, a paced one at its first and last point (dimensions pods-paced and
# services-paced): the client offers the same round trips/s at both (DPUMESH_CLIENT_RATE =
# DPUMESH_PERF_SCALE_RATE, default 10000), so that the worker lcore idles alike at 1 and at
# 64 and the ratio shows what the extra pods cost, not what a lower rate leaves idle. At the
# services series' first and last point, dimension idle-pods: the client to svc0 alone, so
# one pod has work and the others are registered and idle (what idle pods cost).
# Sourced by perf/run.sh; writes scaling.csv.

read -r -a SCALE_PODS <<< "${DPUMESH_PERF_SCALE_PODS:-1 4 16 64}"
read -r -a SCALE_SERVICES <<< "${DPUMESH_PERF_SCALE_SERVICES:-1 8 64}"
SCALE_RATE=${DPUMESH_PERF_SCALE_RATE:-10000}
# the profiled point (run.sh --profile): the most pods asked for, or DIMENSION-N from
# DPUMESH_PERF_PROFILE_AT_SCALING (pods-paced-64, services-64, idle-pods-64)
PROFILE_AT_scaling=${DPUMESH_PERF_PROFILE_AT_SCALING:-pods-${SCALE_PODS[-1]}}

scale_csv() {
  [ -s "$RESULTS/scaling.csv" ] ||
    echo "dimension,n,rps,p50_us,p99_us,p999_us,cycles_per_rt,answering_pods,dpumesh_rss_kb,pods_rss_kb,errors,dp_cpu_us_rt,dp_user_us_rt,dp_sys_us_rt,pods_cpu_us_rt,pods_user_us_rt,pods_sys_us_rt,doorbells_per_rt,doorbell_us_rt,lcore_us_rt,work_us_rt,work_only_us_rt,rest_us_rt,sleeps_per_rt,dpa_tx_us_rt,dpa_rx_us_rt,sidecar_us_rt,sq_heads_per_look,doorbell_cpu_us_rt,epoll_waits_per_rt,tx_rings_per_rt,doorbell_timed_us_rt,work_only_timed_us_rt" > "$RESULTS/scaling.csv"
  echo "$*" >> "$RESULTS/scaling.csv"
}

# scale_point DIMENSION N SERVICES(comma list) [RATE] [ANSWERING]: one client run, window
# 64, 64 B bodies; with RATE (0: unpaced), paced to RATE round trips/s; ANSWERING: the pods
# expected to answer (default N).
scale_point() {
  local before after line delta p rss=0 client_pid cpu="" cpu_file="$RAW/scaling-$1-$2.cpu.json" pods=()
  before=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/dpa)
  for p in "${SCALE_PIDS[@]}"; do pods+=("pod=$p"); done
  # the /proc window first: it waits for the client's registration, then its warm-up
  rm -f "$cpu_file" "$WORK/client.pid"
  cpu_window "$cpu_file" "$P2P_WARMUP" "$(cpu_secs "$P2P_SECONDS" "$P2P_WARMUP")" dpumesh="$DP_PID" \
    "${pods[@]}" client="@$WORK/client.pid" tel="$DP_TEL" waitnew=1
  profile_window scaling "$1-$2" "$P2P_WARMUP" "$(cpu_secs "$P2P_SECONDS" "$P2P_WARMUP")"
  sleep 0.3 # python's start-up, so that it sees the pods before the client
  env DPUMESH_CLIENT_SERVICE="$3" DPUMESH_CLIENT_RATE="${4:-0}" DPUMESH_CLIENT_FIXED=1 DPUMESH_POD_NOSUM=1 \
    DPUMESH_CLIENT_WINDOW=64 DPUMESH_CLIENT_SECONDS="$P2P_SECONDS" DPUMESH_CLIENT_WARMUP="$P2P_WARMUP" \
    taskset -c "$SCALE_CPU" "$BIN/dpumesh-pod" client "$DP_SOCK" 2000000 "$(next_seed)" 64 > "$WORK/scale-client.out" 2>&1 &
  client_pid=$!; track "$client_pid"
  echo "$client_pid" > "$WORK/client.pid"
  wait "$client_pid" 2>/dev/null || true
  wait "$CPU_WIN_PID" 2>/dev/null || true
  profile_wait
  line=$(tr '\n' ' ' < "$WORK/scale-client.out")
  after=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/dpa)
  delta=$(mesh_delta "$before" "$after")
  [ ! -s "$cpu_file" ] || cpu=$(cpu_words "$cpu_file" "$(kv "$line" rps)")
  if [ -n "$cpu" ] && [ "$(kv "$cpu" procs_gone)" != 0.000 ]; then
    # the client ended before the window did (a loaded machine delays the snapshot): its
    # CPU is lost, so the pods' figure is left out rather than shown too low
    anomaly WARN "scaling $1=$2: the client ended inside the /proc window, pods CPU left out"
    cpu=$(sed -E 's/pods_(cpu|user|sys)_us=[^ ]*//g' <<< "$cpu")
  fi
  echo "dimension=$1 n=$2 $line $delta $cpu" >> "$RAW/scaling.txt"
  for p in "${SCALE_PIDS[@]}"; do rss=$((rss + $(rss_kb "$p"))); done
  if [ -z "$(kv "$line" ok)" ]; then
    anomaly ERROR "scaling $1=$2: client failed: ${line:0:200}"
    scale_csv "$1,$2,0,0,0,0,0,0,$(rss_kb "$DP_PID"),$rss,1,,,,,,,,,,,,,,,,,,,,,,"
    return
  fi
  local ok sent err answering
  ok=$(kv "$line" ok); sent=$(kv "$line" sent)
  err=$(( $(num "$line" refused) + $(num "$line" mesh_err) + $(num "$line" bad) ))
  [ "$err" -eq 0 ] && [ "$ok" -eq "$sent" ] ||
    anomaly ERROR "scaling $1=$2: $ok/$sent answered, refused=$(kv "$line" refused) mesh_err=$(kv "$line" mesh_err) bad=$(kv "$line" bad) reasons=$(kv "$line" reasons)"
  local extra=${delta#busy=* }
  [ "$extra" = "$delta" ] || anomaly WARN "scaling $1=$2: mesh counters: $extra"
  answering=$(kv "$line" pods | tr ',' '\n' | grep -c . || true)
  [ "$answering" -ge "${5:-$2}" ] || anomaly WARN "scaling $1=$2: only $answering of ${5:-$2} pods answered (load balancing)"
  local db
  db=$(kv "$cpu" doorbells_per_unit)
  scale_csv "$1,$2,$(kv "$line" rps),$(kv "$line" rtt_p50_us),$(kv "$line" rtt_p99_us),$(kv "$line" rtt_p999_us),$(awk -v b="$(kv "$delta" busy)" -v n="$ok" 'BEGIN { printf "%.0f", n ? b / n : 0 }'),$answering,$(rss_kb "$DP_PID"),$rss,$err,$(kv "$cpu" dpumesh_cpu_us),$(kv "$cpu" dpumesh_user_us),$(kv "$cpu" dpumesh_sys_us),$(kv "$cpu" pods_cpu_us),$(kv "$cpu" pods_user_us),$(kv "$cpu" pods_sys_us),$db,$(kv "$cpu" doorbell_us),$(kv "$cpu" lcore_us),$(kv "$cpu" work_us),$(kv "$cpu" work_only_us),$(kv "$cpu" rest_us),$(kv "$cpu" sleeps_per_unit),$(kv "$cpu" stage.dpa_tx_us),$(kv "$cpu" stage.dpa_rx_us),$(kv "$cpu" stage.sidecar_us),$(kv "$cpu" sq_heads_per_look),$(kv "$cpu" doorbell_cpu_us),$(kv "$cpu" tx_ring_checks_per_unit),$(kv "$cpu" tx_rings_per_unit),$(kv "$cpu" doorbell_timed_us),$(kv "$cpu" work_only_timed_us)"
}

# scale_end N SERIES...: whether N is the series' first or last point.
scale_end() {
  local n=$1
  shift
  [ "$n" = "$1" ] || [ "$n" = "${*: -1}" ]
}

# scale_paced DIMENSION N SERVICES SERIES...: the paced point, at the series' first and last N.
scale_paced() {
  local dim=$1 n=$2 list=$3
  shift 3
  [ "$SCALE_RATE" != 0 ] && scale_end "$n" "$@" || return 0
  progress "scaling: $dim=$n paced at $SCALE_RATE round trips/s"
  scale_point "$dim-paced" "$n" "$list" "$SCALE_RATE"
}

# scale_idle N SERIES...: at the services series' first and last N, the client to svc0
# alone: one pod with work, N - 1 registered and idle (dimension idle-pods). Its ratio is
# what idle pods cost a round trip: "a DPA pass must not cost O(pods) when few pods have
# work" (issue 15), without the batching a load spread over every pod loses.
scale_idle() {
  local n=$1
  scale_end "$@" || return 0
  progress "scaling: $n pod(s) registered, one with work"
  scale_point idle-pods "$n" svc0 0 1
}

suite_scaling() {
  local svcs="echo:64,client:4" k
  for k in $(seq 0 63); do svcs="$svcs,svc$k:1"; done
  local cfg="$WORK/scaling.json"
  write_config "$cfg" --sock "$WORK/scaling.sock" --services "$svcs" --idle adaptive --timeout-ms 10000
  dp_start scaling "$cfg" || return
  SCALE_CPU=$MAIN_CPU
  local POD_CPU=$SCALE_CPU
  SCALE_PIDS=()
  local n have=0 i=0 total=$(( ${#SCALE_PODS[@]} + ${#SCALE_SERVICES[@]} ))
  for n in "${SCALE_PODS[@]}"; do
    i=$((i + 1)); progress "scaling: [$i/$total] $n echo pod(s) behind one service"
    while [ "$have" -lt "$n" ]; do
      pod "scale-echo$have" DPUMESH_POD_GEOMETRY=small DPUMESH_POD_NOSUM=1 -- echo "$DP_SOCK"
      SCALE_PIDS+=("$POD_PID"); have=$((have + 1))
    done
    tel wait "$DP_TEL" /dpumesh/pods pod_id "$n" 60 || anomaly ERROR "scaling: fewer than $n pods registered"
    scale_point pods "$n" echo
    scale_paced pods "$n" echo "${SCALE_PODS[@]}"
  done
  for p in "${SCALE_PIDS[@]}"; do stop_pid "$p"; done
  SCALE_PIDS=()
  tel waitn "$DP_TEL" /dpumesh/pods pod_id 0 30 || anomaly ERROR "scaling: stopped pods still registered"
  have=0
  local list=""
  for n in "${SCALE_SERVICES[@]}"; do
    i=$((i + 1)); progress "scaling: [$i/$total] $n service(s), one pod each"
    while [ "$have" -lt "$n" ]; do
      pod "scale-svc$have" DPUMESH_POD_GEOMETRY=small DPUMESH_POD_NOSUM=1 DPUMESH_POD_SERVICE="svc$have" -- echo "$DP_SOCK"
      SCALE_PIDS+=("$POD_PID"); list="$list${list:+,}svc$have"; have=$((have + 1))
    done
    tel wait "$DP_TEL" /dpumesh/pods pod_id "$n" 60 || anomaly ERROR "scaling: fewer than $n pods registered"
    scale_point services "$n" "$list"
    scale_paced services "$n" "$list" "${SCALE_SERVICES[@]}"
    scale_idle "$n" "${SCALE_SERVICES[@]}"
  done
  for p in "${SCALE_PIDS[@]}"; do stop_pid "$p"; done
  dp_stop
}
