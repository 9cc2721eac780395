# SPDX-License-Identifier: BSD-3-Clause
# Suite "ndr": zero-loss (NDR) and partial-loss (PDR) throughput searches with dpumesh-replay,
# a generator in its own process connected over net_memif, against dpdk-testpmd 5tswap (a
# reflector: the baseline) and dpumesh (Case 2 into an echo pod), on the same captures,
# lcores and search settings; each search is run NDR_REPEATS times, then latency at
# NDR_LOADS % of each one's NDR. Sourced by perf/run.sh. Writes ndr.csv, ndr_trials.csv;
# every generator run's trials.csv/json, summary.json and plots in raw/ndr-*/.

# name|pcapgen options (no malformed or foreign frames: every request expects an answer)
NDR_CAPTURES=(
  "smallest|--frame-size 64 --ipv6-share 0"
  "1KiB|--body 1000:1000 --ipv6-share 0"
)
NDR_REPEATS=${NDR_REPEATS:-2}
NDR_LOADS=${NDR_LOADS:-50}
NDR_TRIAL_S=${NDR_TRIAL_S:-1}      # binary-search trial
NDR_FINAL_S=${NDR_FINAL_S:-3}      # verification trial
NDR_PRECISION=${NDR_PRECISION:-0.05}
NDR_PDR_LOSS=${NDR_PDR_LOSS:-0.5}  # percent
NDR_MAX_RATE=${NDR_MAX_RATE:-2M}
NDR_LAT_S=${NDR_LAT_S:-3}
# memif rings of 2^14 slots on both sides and for both devices: on a shared machine a
# forwarding thread is descheduled for tens of ms, and the ring is what absorbs it
NDR_RSIZE=${NDR_RSIZE:-14}
# the generator sleeps this many us when it has nothing to do (0 = it polls a whole CPU,
# which on a 2-CPU machine is the CPU the echo pod and dpumesh's main lcore share)
NDR_IDLE_US=${NDR_IDLE_US:-0}

# ndr_gen NAME CAPTURE MATCH SOCKET: one generator run (NDR+PDR search, latency) against the
# memif server at SOCKET; on the main lcore only (the DUT's worker keeps its CPU).
ndr_gen() {
  local name=$1 cap=$2 match=$3 sock=$4 dir="$RAW/ndr-$1"
  mkdir -p "$dir"
  "$BIN/dpumesh-replay" -l "$MAIN_CPU" --no-huge -m 512 --no-pci --no-shconf \
    --file-prefix "perf-ndr-gen-$$" \
    --vdev "net_memif0,role=client,socket=$sock,socket-abstract=no,rsize=$NDR_RSIZE" -- \
    --pcap "$cap" --match "$match" --mode ndr --loads "$NDR_LOADS" \
    --max-rate "$NDR_MAX_RATE" --min-rate 1000 --trial-seconds "$NDR_TRIAL_S" \
    --final-seconds "$NDR_FINAL_S" --precision "$NDR_PRECISION" --pdr-loss "$NDR_PDR_LOSS" \
    --latency-seconds "$NDR_LAT_S" --idle-sleep "$NDR_IDLE_US" --drain 0.5 --wait-link 30 --label "$name" --out "$dir" \
    > "$dir/replay.log" 2>&1 < /dev/null
  local rc=$?
  [ "$rc" -eq 0 ] || anomaly WARN "ndr $name: dpumesh-replay exited $rc (raw/ndr-$name/replay.log: $(tail -1 "$dir/replay.log"))"
  [ -f "$dir/summary.json" ] || { anomaly ERROR "ndr $name: no summary.json"; return 1; }
  tail -n +2 "$dir/trials.csv" >> "$RESULTS/ndr_trials.csv"
  python3 - "$dir/summary.json" "$5" "$6" "$7" >> "$RESULTS/ndr.csv" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
lat = (s.get("latency") or [{}])[0].get("trial", {}).get("latency_us", {})
lrate = (s.get("latency") or [{}])[0].get("trial", {}).get("tx_pps", "")
print(",".join(str(x) for x in [sys.argv[2], sys.argv[3], sys.argv[4],
      s["ndr"]["rate"], int(s["ndr"]["verified"]), s.get("pdr", {}).get("rate", ""),
      int(s.get("pdr", {}).get("verified", False)), lrate, lat.get("p50", ""), lat.get("p90", ""),
      lat.get("p99", ""), lat.get("p99.9", ""), lat.get("max", ""),
      s["ndr"]["trials"] + s.get("pdr", {}).get("trials", 0)]))
PY
}

ndr_one() { # NAME OPTIONS
  local name=$1 opts=$2 cap="$WORK/ndr-$1.pcap" gen summary sock="$WORK/ndr.memif" rep
  # shellcheck disable=SC2086
  gen=$("$BIN/dpumesh-pcapgen" --out "$cap" --messages 4000 --frames 4000 --services echo $opts --seed 1) ||
    { anomaly ERROR "ndr $name: dpumesh-pcapgen failed"; return; }
  echo "$gen" > "$RAW/ndr-$name.pcapgen.txt"
  summary=$(tail -1 <<< "$gen")
  local bytes=$(( $(kv "$summary" bytes) / $(kv "$summary" frames) ))
  for rep in $(seq "$NDR_REPEATS"); do
    progress "ndr: $name ($bytes B average) run $rep/$NDR_REPEATS: dpdk-testpmd 5tswap"
    rm -f "$sock"
    dpdk-testpmd -l "$LCORES" --no-huge -m "$MEM" --no-pci --no-shconf \
      --file-prefix "perf-ndr-testpmd-$$" \
      --vdev "net_memif0,role=server,socket=$sock,socket-abstract=no,rsize=$NDR_RSIZE" -- \
      --forward-mode=5tswap --nb-cores=1 --stats-period 5 < /dev/null \
      > "$RAW/ndr-$name-testpmd-$rep.testpmd.log" 2>&1 &
    local tp=$!; track "$tp"
    # the generator connects once testpmd forwards (a memif server drops earlier clients)
    for _ in $(seq 300); do
      grep -q "packet forwarding - ports=" "$RAW/ndr-$name-testpmd-$rep.testpmd.log" 2>/dev/null && break
      sleep 0.1
    done
    ndr_gen "$name-testpmd-$rep" "$cap" frame "$sock" "$name" testpmd-5tswap "$rep"
    stop_pid "$tp" INT
    rmdir "$(rtdir "perf-ndr-testpmd-$$")" 2>/dev/null || true

    progress "ndr: $name run $rep/$NDR_REPEATS: dpumesh (Case 2) + 1 echo pod"
    local cfg="$WORK/ndr-$name.json"
    rm -f "$sock"
    write_config "$cfg" --sock "$WORK/ndr.sock" \
      --port "net_memif0,role=server,socket=$sock,socket-abstract=no,rsize=$NDR_RSIZE" \
      --services echo:16,client:4 --idle busy --mbufs 65535 --body-slots 256 \
      --body-size 65536 --timeout-ms 1000
    dp_start "ndr-$name-$rep" "$cfg" -- --wait-pods 1 || return
    POD_CPU=$MAIN_CPU pod "ndr-$name-$rep-echo" DPUMESH_POD_NOSUM=1 DPUMESH_TEST_BODY_SLOT=65536 -- echo "$DP_SOCK"
    local echo_pid=$POD_PID
    tel wait "$DP_TEL" /dpumesh/pods pod_id 1 || anomaly ERROR "ndr $name: echo pod did not register"
    ndr_gen "$name-dpumesh-$rep" "$cap" mesh "$sock" "$name" dpumesh "$rep"
    tel get "$DP_TEL" /dpumesh/drops > "$RAW/ndr-$name-dpumesh-$rep.drops.json" 2>/dev/null || true
    stop_pid "$echo_pid"
    dp_stop
  done
}

suite_ndr() {
  echo "capture,system,repeat,ndr_pps,ndr_verified,pdr_pps,pdr_verified,lat_rate_pps,lat_p50_us,lat_p90_us,lat_p99_us,lat_p999_us,lat_max_us,trials" \
    > "$RESULTS/ndr.csv"
  echo "label,phase,target,kind,seconds,tx_frames,tx_pps,tx_gbps,expected,answered,lost,loss_ratio,duplicates,stale,rx_other,untracked,tx_full,answers_2xx,answers_4xx,answers_5xx,mesh_errors,lat_min_us,lat_p50_us,lat_p90_us,lat_p99_us,lat_p999_us,lat_max_us" \
    > "$RESULTS/ndr_trials.csv"
  local c
  for c in "${NDR_CAPTURES[@]}"; do
    ndr_one "${c%%|*}" "${c#*|}"
  done
}
