# SPDX-License-Identifier: BSD-3-Clause
# Suite "overload" (issue 16): one service offered 10x what its pods answer, and what that
# does to the node. Sourced by perf/run.sh; docs/benchmarks.md "overload".
#
# The slow service: "echo" with OVL_ECHO_PODS pods that each wait OVL_DELAY_US per request
# (DPUMESH_ECHO_DELAY_US) and have OVL_SLOTS RX body slots, so its capacity is small and
# stable. Beside it "quiet": one ordinary echo pod that nobody floods, and "full" (below). Six
# phases, one node:
#   capacity  a client with a window of twice the service's slots, no pacing: what the
#             service answers per second (ok/s), the p99 of its answers, sidecar CPU
#             per delivered request;
#   quiet     64 B round trips to "quiet", one outstanding: p50/p99 on a quiet node;
#   delivered that rate (OVL_FACTOR x capacity) to "quiet", which answers them all: the
#             sidecar's CPU per delivered request (request and answer);
#   refused   that rate to "full", whose one pod takes requests and never answers (sink):
#             once its slots and queue's worth are in flight every request is refused at
#             the first look: the sidecar's CPU per refused request;
#   flood     a client paced at that rate to "echo" (window 256): goodput (ok/s) and the
#             p99 of admitted (200) requests;
#   isolation the flood again, and the "quiet" client beside it: its p50/p99 under flood.
# Rows go to overload.csv (phase,...); the targets are computed into overload.csv's
# "target" rows: goodput >= 0.9 x capacity, refused/delivered CPU <= 0.25, admitted p99
# <= 3 x capacity p99, isolation p50 <= 2 x quiet and p99 <= 3 x quiet.
# CPU is the sidecar stage's thread CPU (sidecar_cost: the runner's thread-clock samples
# per message, times the messages handled): the Arm's cost of a message, without the time
# the lcore was descheduled on a shared box. Beside it the same split on the stage's busy
# TSC cycles (polls that did work, descheduled time included): the two disagree on this
# box (docs/benchmarks.md "overload"), so both are reported, the target on thread CPU.

OVL_ECHO_PODS=${DPUMESH_PERF_OVL_ECHO_PODS:-2}
OVL_SLOTS=${DPUMESH_PERF_OVL_SLOTS:-4}
OVL_DELAY_US=${DPUMESH_PERF_OVL_DELAY_US:-1000}
OVL_FACTOR=${DPUMESH_PERF_OVL_FACTOR:-10}
# requests that may wait for a pod beyond its RX slots (pools.dest_queue.admit_beyond_slots):
# none (docs/overload.md "Decisions": 0 against 4 side by side)
OVL_BEYOND=${DPUMESH_PERF_OVL_BEYOND:-0}
OVL_WARMUP=0.5
# the profiled window (run.sh --profile): the refused phase, the cost the issue bounds
PROFILE_AT_overload=refused
# the pods' binary: the tree's own even in a --baseline run (the pods are the load
# generator; only the node is compared)
OVL_POD_BIN=${DPUMESH_PERF_POD_BIN:-$BIN/dpumesh-pod}

ovl_csv() {
  [ -s "$RESULTS/overload.csv" ] ||
    echo "phase,offered_rps,ok_rps,answers_rps,ok_p50_us,ok_p99_us,p50_us,p99_us,sent,ok,refused,sidecar_cpu_ns,cpu_ns_per_ok,cpu_ns_per_refused,sidecar_cycles,cycles_per_ok,cycles_per_refused,value,target,met" > "$RESULTS/overload.csv"
  echo "$*" >> "$RESULTS/overload.csv"
}

# sidecar_cost BEFORE AFTER: the sidecar stages' thread CPU (ns) between two tel.py get
# answers: the runner samples the thread clock around some polls (cpu_ns over cpu_work
# messages); that per-message figure times every message handled (work). Thread CPU, so
# time the lcore was descheduled is not in it.
sidecar_cost() {
  python3 -c 'import json, sys
a, b = (json.loads(x)["data"]["/dpumesh/stages"] for x in sys.argv[1:3])
def tot(d, k): return sum(v for n, v in zip(d["name"], d[k]) if n.startswith("sidecar"))
ns, units, work, busy = (tot(b, k) - tot(a, k) for k in ("cpu_ns", "cpu_work", "work", "busy_cycles"))
print("%.0f %d" % (ns / units * work if units else 0, busy))' "$1" "$2"
}

# ovl_client OUT SECONDS WINDOW RATE SERVICE: one dpumesh-pod client in the background
# (OVL_CLIENT_PID), 64 B bodies, TX header slots 256.
ovl_client() {
  local out=$1 secs=$2 window=$3 rate=$4 svc=$5
  env DPUMESH_CLIENT_SERVICE="$svc" DPUMESH_CLIENT_FIXED=1 DPUMESH_POD_NOSUM=1 \
    DPUMESH_CLIENT_WINDOW="$window" DPUMESH_CLIENT_RATE="$rate" DPUMESH_CLIENT_SECONDS="$secs" \
    DPUMESH_CLIENT_WARMUP="$OVL_WARMUP" DPUMESH_CLIENT_STALL=20 \
    "$OVL_POD_BIN" client "$DP_SOCK" 100000000 "$(next_seed)" 64 paced 256 > "$out" 2>&1 &
  OVL_CLIENT_PID=$!; track "$OVL_CLIENT_PID"
}

# ovl_row PHASE LINE BUSY: a phase's row from a client's output; sets OVL_<field> globals.
ovl_row() {
  local phase=$1 line=$2 busy=${3%% *} cycles=${3#* }
  [ "$cycles" != "$3" ] || cycles=0
  OVL_ok=$(num "$line" ok); OVL_sent=$(num "$line" sent)
  OVL_refused=$(( $(num "$line" refused) + $(num "$line" mesh_err) ))
  OVL_rps=$(kv "$line" rps); OVL_okp99=$(kv "$line" ok_p99_us)
  OVL_p50=$(kv "$line" rtt_p50_us); OVL_p99=$(kv "$line" rtt_p99_us)
  OVL_cyc_ok=$(awk -v b="$busy" -v n="$OVL_ok" 'BEGIN { printf "%.0f", n ? b / n : 0 }')
  OVL_tsc_ok=$(awk -v b="$cycles" -v n="$OVL_ok" 'BEGIN { printf "%.0f", n ? b / n : 0 }')
  OVL_cycles=$cycles
  local secs offered
  secs=$(kv "$line" secs)
  offered=$(awk -v s="$OVL_sent" -v t="${OVL_SECS_SENT:-$secs}" 'BEGIN { printf "%.0f", (t > 0) ? s / t : 0 }')
  echo "phase=$phase $line busy=$busy" >> "$RAW/overload.txt"
  [ -n "$(kv "$line" ok)" ] || { anomaly ERROR "overload $phase: client failed: ${line:0:200}"; return 1; }
  [ "$(num "$line" bad)" = 0 ] || anomaly ERROR "overload $phase: bad=$(kv "$line" bad) dup=$(kv "$line" dup) (wrong or duplicate answers)"
  [ "$(num "$line" order_bad)" = 0 ] || anomaly ERROR "overload $phase: order_bad=$(kv "$line" order_bad)"
  [ "$(( OVL_ok + OVL_refused ))" = "$OVL_sent" ] ||
    anomaly ERROR "overload $phase: sent=$OVL_sent but ok=$OVL_ok + refused=$OVL_refused (a request without exactly one answer)"
  ovl_csv "$phase,$offered,$OVL_rps,$(kv "$line" answers_per_s),$(kv "$line" ok_p50_us),$OVL_okp99,$OVL_p50,$OVL_p99,$OVL_sent,$OVL_ok,$OVL_refused,$busy,$OVL_cyc_ok,,$cycles,$OVL_tsc_ok,,,,"
}

# ovl_target NAME VALUE OP LIMIT: a target row (met yes/no).
ovl_target() {
  local met
  met=$(awk -v v="$2" -v l="$4" -v op="$3" 'BEGIN { print ((op == "<=" ? v <= l : v >= l) ? "yes" : "no") }')
  ovl_csv "target:$1,,,,,,,,,,,,,,,,,$2,$3 $4,$met"
  progress "overload: $1 = $2 (target $3 $4): $met"
}

suite_overload() {
  local cfg="$WORK/overload.json" secs=${P2P_SECONDS} i before after busy line bound
  [ "$(awk -v s="$secs" 'BEGIN { print (s < 3) }')" = 0 ] || secs=3
  # the bound on what waits for a pod, at the first look, where the build has it; an older
  # build (a --baseline run) runs as it ships: its destination queues' default share
  bound=()
  if grep -q -a admit_beyond_slots "$BIN/dpumesh"; then
    bound=(--admit-beyond-slots "$OVL_BEYOND")
  fi
  echo "bound=${bound[*]:-default}" >> "$RAW/overload.txt"
  write_config "$cfg" --sock "$WORK/overload.sock" --services echo:16,quiet:4,full:1,client:16 \
    --idle adaptive --header-slots 256 --timeout-ms 5000 "${bound[@]}"
  dp_start overload "$cfg" || return
  local pids=()
  for i in $(seq "$OVL_ECHO_PODS"); do
    POD_BIN=$OVL_POD_BIN POD_CPU=$MAIN_CPU pod "ovl-echo$i" DPUMESH_POD_BODY_SLOTS="$OVL_SLOTS" \
      DPUMESH_ECHO_DELAY_US="$OVL_DELAY_US" DPUMESH_POD_NOSUM=1 -- echo "$DP_SOCK"
    pids+=("$POD_PID")
  done
  POD_BIN=$OVL_POD_BIN POD_CPU=$MAIN_CPU pod ovl-quiet DPUMESH_POD_SERVICE=quiet DPUMESH_POD_NOSUM=1 -- echo "$DP_SOCK"
  pids+=("$POD_PID")
  POD_BIN=$OVL_POD_BIN POD_CPU=$MAIN_CPU pod ovl-full DPUMESH_POD_SERVICE=full -- sink "$DP_SOCK"
  pids+=("$POD_PID")
  tel wait "$DP_TEL" /dpumesh/pods pod_id $(( OVL_ECHO_PODS + 2 )) 60 ||
    { anomaly ERROR "overload: pods did not register"; dp_stop; return; }

  # capacity: enough outstanding to keep every slot busy, never more than twice that
  progress "overload: [1/6] capacity ($OVL_ECHO_PODS pods x $OVL_SLOTS slots, ${OVL_DELAY_US} us each)"
  before=$(tel get "$DP_TEL" /dpumesh/stages)
  ovl_client "$WORK/ovl-cap.out" "$secs" $(( 2 * OVL_ECHO_PODS * OVL_SLOTS )) 0 echo
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  after=$(tel get "$DP_TEL" /dpumesh/stages)
  busy=$(sidecar_cost "$before" "$after")
  line=$(tr '\n' ' ' < "$WORK/ovl-cap.out")
  ovl_row capacity "$line" "$busy" || { dp_stop; return; }
  local cap=$OVL_rps cap_p99=$OVL_okp99 cyc_del tsc_del tsc_ref
  [ "$(awk -v c="$cap" 'BEGIN { print (c > 0) }')" = 1 ] || { anomaly ERROR "overload: capacity 0"; dp_stop; return; }
  local rate
  rate=$(awk -v c="$cap" -v f="$OVL_FACTOR" 'BEGIN { printf "%.0f", c * f }')

  progress "overload: [2/6] quiet: 64 B round trips to another pod, one outstanding"
  ovl_client "$WORK/ovl-quiet.out" "$secs" 1 0 quiet
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  line=$(tr '\n' ' ' < "$WORK/ovl-quiet.out")
  ovl_row quiet "$line" 0 || true
  local q50=$OVL_p50 q99=$OVL_p99

  # the sidecar's cost of a delivered request at the flood's rate (the same batching): the
  # flood's rate offered to "quiet", which answers them all
  progress "overload: [3/6] delivered: $rate requests/s to \"quiet\" (all answered)"
  before=$(tel get "$DP_TEL" /dpumesh/stages)
  ovl_client "$WORK/ovl-del.out" "$secs" 256 "$rate" quiet
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  after=$(tel get "$DP_TEL" /dpumesh/stages)
  busy=$(sidecar_cost "$before" "$after")
  line=$(tr '\n' ' ' < "$WORK/ovl-del.out")
  OVL_SECS_SENT=$secs ovl_row delivered "$line" "$busy" || true
  cyc_del=$OVL_cyc_ok tsc_del=$OVL_tsc_ok

  # the sidecar's cost of a refused request: the same rate to "full", whose one pod takes
  # requests and never answers (sink: it releases them, so nothing waits for RX slots):
  # once its slots and queue's worth are in flight, every request is refused at the first
  # look until they time out
  progress "overload: [4/6] refused: $rate requests/s to \"full\" (a pod that never answers)"
  before=$(tel get "$DP_TEL" /dpumesh/stages)
  profile_window overload refused "$OVL_WARMUP" "$(cpu_secs "$secs" "$OVL_WARMUP")"
  ovl_client "$WORK/ovl-ref.out" "$secs" 256 "$rate" full
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  profile_wait
  after=$(tel get "$DP_TEL" /dpumesh/stages)
  busy=$(sidecar_cost "$before" "$after")
  line=$(tr '\n' ' ' < "$WORK/ovl-ref.out")
  OVL_SECS_SENT=$secs ovl_row refused "$line" "$busy" || true
  local ref_cpu=${busy%% *} ref_cyc=${busy#* } ref_n=$OVL_refused

  progress "overload: [5/6] flood: $rate requests/s offered (${OVL_FACTOR}x $cap)"
  before=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar)
  ovl_client "$WORK/ovl-flood.out" "$secs" 256 "$rate" echo
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  after=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar)
  busy=$(sidecar_cost "$before" "$after")
  line=$(tr '\n' ' ' < "$WORK/ovl-flood.out")
  OVL_SECS_SENT=$secs ovl_row flood "$line" "$busy" || true
  mesh_delta "$before" "$after" >> "$RAW/overload.txt" 2>/dev/null || true
  local good=$OVL_rps p99=$OVL_okp99 cyc_ref
  cyc_ref=$(awk -v b="$ref_cpu" -v r="$ref_n" 'BEGIN { printf "%.0f", r ? b / r : 0 }')
  tsc_ref=$(awk -v b="$ref_cyc" -v r="$ref_n" 'BEGIN { printf "%.0f", r ? b / r : 0 }')
  ovl_csv "per-message,,,,,,,,,,,,$cyc_del,$cyc_ref,,$tsc_del,$tsc_ref,,,"

  progress "overload: [6/6] isolation: the flood again, 64 B round trips to \"quiet\" beside it"
  ovl_client "$WORK/ovl-flood2.out" "$(awk -v s="$secs" 'BEGIN { print s + 1 }')" 256 "$rate" echo
  local flood_pid=$OVL_CLIENT_PID
  sleep 0.5
  ovl_client "$WORK/ovl-iso.out" "$secs" 1 0 quiet
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  wait "$flood_pid" 2>/dev/null || true
  line=$(tr '\n' ' ' < "$WORK/ovl-iso.out")
  ovl_row isolation "$line" 0 || true
  local i50=$OVL_p50 i99=$OVL_p99
  line=$(tr '\n' ' ' < "$WORK/ovl-flood2.out")
  OVL_SECS_SENT=$(awk -v s="$secs" 'BEGIN { print s + 1 }') ovl_row isolation-flood "$line" 0 || true

  ovl_target goodput_over_capacity "$(awk -v g="$good" -v c="$cap" 'BEGIN { printf "%.3f", g / c }')" ">=" 0.9
  ovl_target refused_over_delivered_cpu "$(awk -v r="$cyc_ref" -v d="$cyc_del" 'BEGIN { printf "%.3f", d ? r / d : 0 }')" "<=" 0.25
  ovl_csv "info:refused_over_delivered_cycles,,,,,,,,,,,,,,,,,$(awk -v r="$tsc_ref" -v d="$tsc_del" 'BEGIN { printf "%.3f", d ? r / d : 0 }'),,"
  ovl_target admitted_p99_over_capacity_p99 "$(awk -v a="$p99" -v b="$cap_p99" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" "<=" 3
  ovl_target isolation_p50_over_quiet "$(awk -v a="$i50" -v b="$q50" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" "<=" 2
  ovl_target isolation_p99_over_quiet "$(awk -v a="$i99" -v b="$q99" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" "<=" 3

  for i in "${pids[@]}"; do stop_pid "$i"; done
  dp_stop
  grep -a '^final ' "$RAW/overload.final" > /dev/null 2>&1 || true
}
