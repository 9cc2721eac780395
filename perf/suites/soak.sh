# SPDX-License-Identifier: BSD-3-Clause
# Suite "soak" (on demand: perf/run.sh soak --duration 600): mixed traffic for a long time,
# with pods restarting now and then, sampled every few seconds through the telemetry socket.
#   Case 2: dpumesh-replay (its own process, a net_memif client of the node's port) replays
#           the mix capture at DPUMESH_SOAK_PPS frames/s (default 30000: far more than the
#           two echo pods answer on this class of machine) into two echo pods and matches
#           every answer: each request it sent must get exactly one (an answer, a refusal or
#           a timeout), as the Case 3 clients check theirs
#   Case 3: two client pods in a loop (random bodies up to 64 KiB, every byte checked, 8
#           outstanding) to service "svc" (two echo pods)
#   restarts: every ~15 s one "svc" echo pod is stopped (SIGTERM, or SIGKILL every third
#           time: a crash) and a new one started; every ~40 s one of the Case 2 echo pods
#           (the replay offers them far more than they answer: Case 2 overload)
#   tenants: beside the clients, a pod that takes more than its share of the node
#           (docs/quota.md): `dpumesh-pod nodrain` and `dpumesh-pod flood` in turn, each
#           for ~20 s then killed, calling "svc" like the clients
# Fails (ERROR) when anything grows without bound (dpumesh RSS, the DPA's header buffers or
# messages in reassembly), when a buffer is not back in its pool at exit, when stale pods
# stay registered, when a client run loses an answer
# (hangs), gets an answer twice or a corrupted body, or when a never-expected counter moves
# (responses_lost among them). Writes soak.csv,
# soak_series.csv and raw/soak-telemetry.jsonl. Diagnostic knobs (environment):
# DPUMESH_SOAK_REPLAY=0 starts no Case 2 generator (no Case 2 load),
# DPUMESH_SOAK_RESTARTS=0 restarts no pod, DPUMESH_SOAK_TENANTS=0 starts no greedy tenant,
# DPUMESH_SOAK_GEN_PAUSE=S stops the Case 2 generator (SIGSTOP) for S seconds every 30 s, a
# peer that reads nothing for a while (port TX owes it its answers: docs/overload.md).
# DPUMESH_SOAK_CONTROL_PRIORITY=N runs dpumesh's control thread as SCHED_FIFO N (default 10
# as root; 0: time-sharing, as the soaks before 2026-11-24 ran).
# DPUMESH_SOAK_WORKERS=N (default 1) runs dpumesh with `--workers N` (sidecar shards), worker
# k on EAL lcore k, every worker lcore on the worker's CPU (`--lcores 0@0,1@1,2@1` for two:
# docs/config.md "Several workers"), the memif port with N RX and TX queues and the Case 2
# generator sending on N (`dpumesh-replay --queues N`: each flow on the queue its addresses
# and ports hash to), so Case 2 enters on every worker; the pods' SQs are spread over the
# shards. DPUMESH_SOAK_QUEUES=Q (1 to 16, default N) sets the port's and the generator's
# queues apart from the workers (1: Case 2 enters on worker 0 alone, as the soaks of
# 2026-12-04 ran).

soak_count() { # NAME VALUE: VALUE is 1 to 16 (workers, queues), else an ERROR naming NAME
  [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -ge 1 ] && [ "$2" -le 16 ] && return
  anomaly ERROR "soak: $1=$2 is not 1 to 16"
  return 1
}

soak_client_loop() { # NAME: runs clients until $WORK/soak.stop exists; one line per run
  local name=$1 i=0 line rc
  while [ ! -e "$WORK/soak.stop" ]; do
    i=$((i + 1))
    rc=0
    line=$(DPUMESH_CLIENT_SERVICE=svc DPUMESH_CLIENT_WINDOW=8 DPUMESH_TEST_BODY_SLOT=65536 DPUMESH_CLIENT_STALL=20 \
      timeout 60 "$BIN/dpumesh-pod" client "$DP_SOCK" 2000 "$(( RANDOM * 100 + i ))" 65536 2>&1 | tr '\n' ' ') || rc=$?
    echo "client=$name run=$i rc=$rc $line" >> "$RAW/soak-clients.txt"
  done
}

# The pods serve until the traffic has stopped: the clients' last runs and the Case 2
# generator's drain (suite_soak writes soak.traffic_done; at most 120 s), with or without
# restarts, so that no request of the end is refused no_live_pod as if a restart had done it.
soak_wait_traffic() {
  local n=0
  while [ ! -e "$WORK/soak.traffic_done" ] && [ "$n" -lt 600 ]; do sleep 0.2; n=$((n + 1)); done
}

soak_restarter() { # restarts one svc echo pod every ~15 s
  local k=0 victim pids=("$@")
  while [ ! -e "$WORK/soak.stop" ]; do
    sleep 15
    [ ! -e "$WORK/soak.stop" ] || break
    k=$((k + 1))
    victim=${pids[$((k % ${#pids[@]}))]}
    if [ $((k % 3)) -eq 0 ]; then kill -KILL "$victim" 2>/dev/null || true; else kill -TERM "$victim" 2>/dev/null || true; fi
    wait "$victim" 2>/dev/null || true
    DPUMESH_POD_SERVICE=svc DPUMESH_TEST_BODY_SLOT=65536 "$BIN/dpumesh-pod" echo "$DP_SOCK" >> "$RAW/soak-svc-pods.log" 2>&1 &
    pids[$((k % ${#pids[@]}))]=$!
    echo "$(date +%s) restart $k: $victim -> $! ($([ $((k % 3)) -eq 0 ] && echo KILL || echo TERM))" >> "$RAW/soak-restarts.txt"
    echo "${pids[*]}" > "$WORK/soak.svcpids"
  done
  soak_wait_traffic
  for victim in "${pids[@]}"; do kill "$victim" 2>/dev/null || true; done
  for victim in "${pids[@]}"; do wait "$victim" 2>/dev/null || true; done
}

soak_replay_restarter() { # restarts one Case 2 echo pod every ~40 s
  local k=0 victim pids=("$@")
  while [ ! -e "$WORK/soak.stop" ]; do
    sleep 40
    [ ! -e "$WORK/soak.stop" ] || break
    k=$((k + 1))
    victim=${pids[$((k % ${#pids[@]}))]}
    kill -TERM "$victim" 2>/dev/null || true
    wait "$victim" 2>/dev/null || true
    DPUMESH_POD_NOSUM=1 "$BIN/dpumesh-pod" echo "$DP_SOCK" >> "$RAW/soak-echo-pods.log" 2>&1 &
    pids[$((k % ${#pids[@]}))]=$!
    echo "$(date +%s) case2 restart $k: $victim -> $!" >> "$RAW/soak-restarts.txt"
  done
  soak_wait_traffic
  for victim in "${pids[@]}"; do kill "$victim" 2>/dev/null || true; done
  for victim in "${pids[@]}"; do wait "$victim" 2>/dev/null || true; done
}

soak_tenants() { # a greedy tenant (nodrain, then flood, ...) for ~20 s of every ~30 s
  local k=0 mode pid
  while [ ! -e "$WORK/soak.stop" ]; do
    k=$((k + 1))
    mode=nodrain; [ $((k % 2)) -eq 0 ] && mode=flood
    DPUMESH_CLIENT_SERVICE=svc "$BIN/dpumesh-pod" "$mode" "$DP_SOCK" > "$RAW/soak-tenant-$k.log" 2>&1 &
    pid=$!
    sleep 20
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "$(date +%s) tenant $k $mode $(grep STAT "$RAW/soak-tenant-$k.log" | tail -1)" >> "$RAW/soak-tenants.txt"
    [ ! -e "$WORK/soak.stop" ] || break
    sleep 10
  done
}

suite_soak() {
  local cap="$WORK/soak.pcap" cfg="$WORK/soak.json" memif="$WORK/soak.memif"
  # every mesh request in it expects an answer (no malformed frames: the generator could not
  # tell a frame the node rightly dropped from a lost answer); 2% foreign frames stay
  "$BIN/dpumesh-pcapgen" --out "$cap" --messages 100000 --frames 8000 --services echo --body 0:4096 \
    --malformed-share 0 --other-share 0.02 --ipv6-share 0.25 --seed 7 > "$RAW/soak-pcapgen.txt"
  local held=0
  rm -f "$memif"
  local workers=${DPUMESH_SOAK_WORKERS:-1} lopt=() wopt=() qopt=() map k
  soak_count DPUMESH_SOAK_WORKERS "$workers" || return
  if [ "$workers" -gt 1 ]; then
    map="0@$MAIN_CPU"
    for k in $(seq 1 "$workers"); do map+=",$k@$WORKER"; done
    lopt=(--lcores "$map")
    wopt=(--workers "$workers")
  fi
  local queues=${DPUMESH_SOAK_QUEUES:-$workers}
  soak_count DPUMESH_SOAK_QUEUES "$queues" || return
  [ "$queues" -eq 1 ] || qopt=(--queues "$queues")
  write_config "$cfg" --sock "$WORK/soak.sock" \
    --port "net_memif0,role=server,socket=$memif,socket-abstract=no" --services echo:4,svc:8,client:8 \
    --idle adaptive --mbufs 65535 --timeout-ms 2000 "${qopt[@]}"
  progress "soak: ${SOAK_SECONDS} s of replay + pod-to-pod traffic with pod restarts"
  # the control thread real-time (docs/config.md "The control thread's priority"): on this
  # 2-vCPU box the soak's pods, tenants and generator share its CPU, and the time-sharing
  # scheduler left it runnable and not running for up to 10 s at a time (its REGISTERED
  # answers timed out). 0, or a user without CAP_SYS_NICE, runs it time-sharing.
  local prio=${DPUMESH_SOAK_CONTROL_PRIORITY:-10} popt=()
  [ "$(id -u)" -eq 0 ] || prio=0
  [ "$prio" = 0 ] || popt=(--control-priority "$prio")
  echo "control_priority $prio" >> "$RAW/soak-settings.txt"
  echo "workers $workers ${lopt[*]} queues $queues" >> "$RAW/soak-settings.txt"
  dp_start soak "$cfg" "${lopt[@]}" -- --wait-pods 4 "${popt[@]}" "${wopt[@]}" || return
  local p replay_pods=() svc_pods=()
  for p in 1 2; do
    DPUMESH_POD_NOSUM=1 "$BIN/dpumesh-pod" echo "$DP_SOCK" >> "$RAW/soak-echo-pods.log" 2>&1 &
    replay_pods+=($!)
  done
  for p in 1 2; do
    DPUMESH_POD_SERVICE=svc DPUMESH_TEST_BODY_SLOT=65536 "$BIN/dpumesh-pod" echo "$DP_SOCK" >> "$RAW/soak-svc-pods.log" 2>&1 &
    svc_pods+=($!)
  done
  tel wait "$DP_TEL" /dpumesh/pods pod_id 4 || anomaly ERROR "soak: pods did not register"
  rm -f "$WORK/soak.stop"
  TEL_PID=$DP_PID python3 "$ROOT/perf/lib/tel.py" watch "$DP_TEL" 5 "$RAW/soak-telemetry.jsonl" \
    /ethdev/stats,0 /dpumesh/pods /dpumesh/dpa /dpumesh/sidecar /dpumesh/drops /dpumesh/dma &
  local watcher=$!; track "$watcher"
  soak_client_loop a & local c1=$!; track "$c1"
  soak_client_loop b & local c2=$!; track "$c2"
  if [ "${DPUMESH_SOAK_RESTARTS:-1}" = 0 ]; then
    (soak_wait_traffic; kill "${svc_pods[@]}"; wait) & 
    local rs=$!; track "$rs"
    (soak_wait_traffic; kill "${replay_pods[@]}"; wait) &
  else
    soak_restarter "${svc_pods[@]}" &
    local rs=$!; track "$rs"
    soak_replay_restarter "${replay_pods[@]}" &
  fi
  local rr=$!; track "$rr"
  local tn=""
  if [ "${DPUMESH_SOAK_TENANTS:-1}" != 0 ]; then
    soak_tenants & tn=$!; track "$tn"
  fi
  # the network's client: sends for the whole soak, then waits 5 s for the last answers
  # (past the requests' 2 s deadline: every one has its answer, refusal or 504 by then)
  local gen="" replay_sum=""
  if [ "${DPUMESH_SOAK_REPLAY:-1}" != 0 ]; then
    "$BIN/dpumesh-replay" -l "$MAIN_CPU" --no-huge -m 512 --no-pci --no-shconf \
      --file-prefix "perf-soak-gen-$$" \
      --vdev "net_memif0,role=client,socket=$memif,socket-abstract=no" -- \
      --pcap "$cap" --match mesh --dut-ip 192.168.50.1,fd00:50::1 --pps "${DPUMESH_SOAK_PPS:-30000}" \
      --duration "$SOAK_SECONDS" --drain 5 --idle-sleep 50 --wait-link 30 --progress 10 "${qopt[@]}" \
      --label soak-case2 --out "$RAW/soak-replay" > "$RAW/soak-replay.log" 2>&1 < /dev/null &
    gen=$!; track "$gen"
    replay_sum="$RAW/soak-replay/summary.json"
    if [ -n "${DPUMESH_SOAK_GEN_PAUSE:-}" ]; then
      (while sleep 30 && [ ! -e "$WORK/soak.stop" ] && kill -STOP "$gen" 2>/dev/null; do
         echo "$(date +%s) stopped" >> "$RAW/soak-gen-pauses.txt"
         sleep "$DPUMESH_SOAK_GEN_PAUSE"; kill -CONT "$gen" 2>/dev/null
       done; kill -CONT "$gen" 2>/dev/null) &
      track "$!"
    fi
  fi
  local t0 left
  t0=$(date +%s)
  while :; do
    left=$(( SOAK_SECONDS - ($(date +%s) - t0) ))
    [ "$left" -gt 0 ] || break
    progress "soak: $left s left, $(grep -c . "$RAW/soak-clients.txt" 2>/dev/null || echo 0) client runs, dpumesh RSS $(( $(rss_kb "$DP_PID") / 1024 )) MiB"
    sleep $(( left < 30 ? left : 30 ))
  done
  touch "$WORK/soak.stop"
  progress "soak: stopping traffic (clients finish their runs)"
  wait "$c1" "$c2" 2>/dev/null || true
  if [ -n "$gen" ]; then
    progress "soak: waiting for the Case 2 generator's last answers"
    wait "$gen" 2>/dev/null || true
    rmdir "$(rtdir "perf-soak-gen-$$")" 2>/dev/null || true
  fi
  touch "$WORK/soak.traffic_done" # the pods may stop now (soak_wait_traffic)
  wait "$rs" "$rr" $tn 2>/dev/null || true
  # let the last pending requests time out, then take the final samples
  sleep 12
  stop_pid "$watcher"
  tel get "$DP_TEL" /dpumesh/pods /dpumesh/dpa /dpumesh/sidecar /dpumesh/drops /dpumesh/stages \
    /dpumesh/lcores > "$RAW/soak-final.json" || true
  dp_stop
  # control passes that came late (the node's watchdog, docs/overload.md): registrations and
  # unregistrations waited as long
  local stalls
  stalls=$(awk '/control thread: [0-9]+ ms since its previous pass/ {
      n++; for (i = 1; i <= NF; i++) if ($i == "ms" && $(i - 1) ~ /^[0-9]+$/) { if ($(i - 1) > m) m = $(i - 1); break } }
    END { if (n) printf "%d %d", n, m }' "$DP_LOG")
  if [ -n "$stalls" ]; then
    anomaly WARN "soak: the control thread came late ${stalls% *} times (500 ms or more since its previous pass; the longest ${stalls#* } ms): see raw/soak.dpumesh.log"
  fi
  local a
  a=$(python3 "$ROOT/perf/lib/soak_check.py" "$RESULTS" "$RAW/soak-telemetry.jsonl" "$RAW/soak-clients.txt" \
    "$RAW/soak-final.json" "$RAW/soak.final" "$held" "$RAW/soak-tenants.txt" $replay_sum) || anomaly ERROR "soak: analysis failed"
  while IFS= read -r line; do
    [ -z "$line" ] || anomaly "${line%% *}" "${line#* }"
  done <<< "$a"
}
