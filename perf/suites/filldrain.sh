# SPDX-License-Identifier: BSD-3-Clause
# Suite "filldrain" (on demand: perf/run.sh filldrain): issue 16's fill-and-drain check over a
# million requests, too long for CTest (about 100-150 s on this class of machine; CTest's
# Case3Order in tests/integration/case3_test.cc runs the same shape over 20000).
# Two slow echo pods (FILLDRAIN_SLOTS RX body slots, FILLDRAIN_DELAY_US per request) and a
# client keeping FILLDRAIN_WINDOW requests out (about 10x their slots, its 64 TX slots hold
# what waits): the destinations fill and drain again and again. Fails (ERROR) unless every
# request got exactly one answer (sent = ok + refused + mesh errors, no duplicate or wrong
# answer), no delivery reached an echo pod out of order per (source SQ, destination pod) and
# no answer came back out of order, nothing was re-routed around a full pod (retries 0) and
# responses_lost stayed 0. Writes filldrain.csv (one row: the counts, requests/s, the node's
# dest_full/resumes/parked).

FILLDRAIN_REQUESTS=${DPUMESH_PERF_FILLDRAIN_REQUESTS:-1000000}
FILLDRAIN_SLOTS=${DPUMESH_PERF_FILLDRAIN_SLOTS:-6}
FILLDRAIN_DELAY_US=${DPUMESH_PERF_FILLDRAIN_DELAY_US:-20}
FILLDRAIN_WINDOW=${DPUMESH_PERF_FILLDRAIN_WINDOW:-128}

suite_filldrain() {
  local cfg="$WORK/filldrain.json" i pids=() t0 t1 line
  write_config "$cfg" --sock "$WORK/filldrain.sock" --services echo:4,client:4 --idle adaptive \
    --body-slots 64 --body-size 1048576 --timeout-ms 10000
  # the client keeps 128 out with 64 RX slots, so up to 64 of its answers wait for it; on a
  # shared box it may be descheduled past the quota's rx_stall_ms (500 ms), and a requester
  # that took nothing that long has its answers refused (docs/quota.md): it would never
  # hear of those requests. This suite checks order and exactly-once, not tenant isolation.
  python3 - "$cfg" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["pools"].setdefault("quota", {})["rx_stall_ms"] = 10000
json.dump(c, open(sys.argv[1], "w"), indent=1)
PY
  dp_start filldrain "$cfg" || return
  for i in 1 2; do
    POD_CPU=$MAIN_CPU pod "filldrain-echo$i" DPUMESH_POD_BODY_SLOTS="$FILLDRAIN_SLOTS" \
      DPUMESH_ECHO_DELAY_US="$FILLDRAIN_DELAY_US" -- echo "$DP_SOCK"
    pids+=("$POD_PID")
  done
  tel wait "$DP_TEL" /dpumesh/pods pod_id 2 60 ||
    { anomaly ERROR "filldrain: echo pods did not register"; dp_stop; return; }
  progress "filldrain: $FILLDRAIN_REQUESTS requests, $FILLDRAIN_WINDOW outstanding, to 2 echo pods x $FILLDRAIN_SLOTS slots"
  t0=$(date +%s.%N)
  local rc=0
  DPUMESH_CLIENT_WINDOW="$FILLDRAIN_WINDOW" DPUMESH_CLIENT_STALL=30 \
    "$BIN/dpumesh-pod" client "$DP_SOCK" "$FILLDRAIN_REQUESTS" "$(next_seed)" 256 \
    > "$RAW/filldrain-client.log" 2>&1 || rc=$?
  t1=$(date +%s.%N)
  for i in "${pids[@]}"; do stop_pid "$i"; done
  dp_stop
  line=$(grep -a '^DONE' "$RAW/filldrain-client.log" | tail -1)
  [ "$rc" -eq 0 ] || anomaly ERROR "filldrain: the client exited $rc ($(tail -1 "$RAW/filldrain-client.log"))"
  [ -n "$line" ] || { anomaly ERROR "filldrain: no DONE line from the client"; return; }
  local sent ok refused mesh side final
  sent=$(num "$line" sent); ok=$(num "$line" ok); refused=$(num "$line" refused); mesh=$(num "$line" mesh_err)
  final=$(grep -a '^final stage=sidecar' "$RAW/filldrain.final" | tail -1)
  [ "$sent" = "$FILLDRAIN_REQUESTS" ] || anomaly ERROR "filldrain: sent $sent of $FILLDRAIN_REQUESTS"
  [ "$(( ok + refused + mesh ))" = "$sent" ] ||
    anomaly ERROR "filldrain: sent=$sent but ok=$ok + refused=$refused + mesh_err=$mesh (a request without exactly one answer)"
  for side in bad dup order_bad resp_order_bad; do
    [ "$(num "$line" "$side")" = 0 ] || anomaly ERROR "filldrain: $side=$(num "$line" "$side")"
  done
  [ "$(num "$final" retries)" = 0 ] || anomaly ERROR "filldrain: retries=$(num "$final" retries) (a full pod bypassed)"
  [ "$(num "$final" dest_full)" -gt 0 ] || anomaly WARN "filldrain: dest_full=0: the destinations never filled"
  echo "requests,seconds,rps,ok,refused,mesh_err,bad,dup,order_bad,resp_order_bad,dest_full,parked,resumes,park_expired,park_refused,responses_lost" \
    > "$RESULTS/filldrain.csv"
  echo "$sent,$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'),$(awk -v a="$t0" -v b="$t1" -v n="$sent" 'BEGIN { printf "%.0f", n / (b - a) }'),$ok,$refused,$mesh,$(num "$line" bad),$(num "$line" dup),$(num "$line" order_bad),$(num "$line" resp_order_bad),$(num "$final" dest_full),$(num "$final" parked),$(num "$final" resumes),$(num "$final" park_expired),$(num "$final" park_refused),$(num "$final" responses_lost)" \
    >> "$RESULTS/filldrain.csv"
  progress "filldrain: $(tail -1 "$RESULTS/filldrain.csv")"
}
