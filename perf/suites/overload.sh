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
#   isolation paired rounds (ovl_iso_rounds): the "quiet" client alone, then at once the
#             same client beside the flood again: its p50/p99 under flood over its own quiet.
# Then the same from the network (Case 2), through the node's port (net_memif, a server; the
# generator dpumesh-replay is its client, in its own process on the pods' CPU), single-frame
# requests (131 B frames) paced at OVL_NET_FACTOR x capacity:
#   net-delivered that rate to "quiet" from the network, every request answered: the worker
#             lcore's CPU per delivered network request;
#   net-flood that rate to "echo": admitted (200) and refused (503) counts, where they were
#             refused (port RX or sidecar), the lcore CPU per refused network request;
#   net-isolation paired rounds: the "quiet" client (pod to pod) alone, then beside the
#             network flood again.
# Then the flood unpaced (the issue's x113 came from one), twice: net-unpaced-shared with the
# generator at the pods' priority on their CPU (info rows: it took their CPU), then
#   net-unpaced   paired rounds, with the generator at SCHED_IDLE (it stands for another
#             machine: the pods get their CPU when they want it), dpumesh-replay --pps max to
#             "echo" (as fast as the memif ring takes frames, OVL_UNPACED_SECS seconds of TX)
#             with the "quiet" round trips beside it after a quiet round of their own:
#             their p50/p99 against quiet, the flooded service's goodput against its
#             capacity, and, per stage of the worker lcore (port RX, sidecar, DPA, port
#             TX), thread CPU per message here (nearly all refused) against net-delivered
#             (all delivered): the refusal's cost where it is paid. The lcore is busy the
#             whole phase, so its sampled thread clock has thousands of samples per stage.
# Every flooded request must get exactly one answer (the generator matches them: lost and
# duplicates are ERRORs). The net- rows' CPU columns are the worker lcore's, every stage
# (port RX, sidecar, DPA, port TX): a network message costs port RX and port TX too.
# Rows go to overload.csv (phase,...); the targets are computed into overload.csv's
# "target" rows: goodput >= 0.9 x capacity, refused/delivered CPU <= 0.25, admitted p99
# <= 3 x capacity p99, isolation p50 <= 2 x quiet and p99 <= 3 x quiet, each the median of
# OVL_ISO_ROUNDS paired rounds' ratios (the quiet phase near the start is too far from the
# floods on a shared box whose load swings: its ratios are info rows, *_over_single_quiet).
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
OVL_NET_FACTOR=${DPUMESH_PERF_OVL_NET_FACTOR:-$OVL_FACTOR}
OVL_NET=${DPUMESH_PERF_OVL_NET:-1}   # 0: no port, no network phases (the six above only)
OVL_NET_RATE=${DPUMESH_PERF_OVL_NET_RATE:-}  # frames/s of the network phases, instead of a factor of C
OVL_UNPACED=${DPUMESH_PERF_OVL_UNPACED:-1}  # 0: no unpaced network flood phase
OVL_UNPACED_SECS=${DPUMESH_PERF_OVL_UNPACED_SECS:-}  # its TX seconds (default: round trips' + 6)
OVL_WARMUP=0.5
# the isolation targets, paired: per flood (isolation, net-isolation, net-unpaced) this many
# rounds of a quiet measurement followed at once by the same measurement beside the flood,
# each OVL_ISO_SECS long (OVL_WARMUP of it not measured); the target is the median of the
# rounds' ratios (docs/benchmarks.md "overload")
OVL_ISO_ROUNDS=${DPUMESH_PERF_OVL_ISO_ROUNDS:-3}
OVL_ISO_SECS=${DPUMESH_PERF_OVL_ISO_SECS:-2}
# a round whose quiet or flood window measured fewer round trips than this is left out of
# the median (its p99 is a handful of answers: a stalled client), with a WARN
OVL_ISO_MIN_SAMPLES=${DPUMESH_PERF_OVL_ISO_MIN_SAMPLES:-1000}
# the profiled window (run.sh --profile): the refused phase, the cost the issue bounds, or
# DPUMESH_PERF_OVL_PROFILE_AT=net-flood: the network flood's generator run
PROFILE_AT_overload=${DPUMESH_PERF_OVL_PROFILE_AT:-refused}
# the pods' binary: the tree's own even in a --baseline run (the pods are the load
# generator; only the node is compared)
OVL_POD_BIN=${DPUMESH_PERF_POD_BIN:-$BIN/dpumesh-pod}
# the network flood's generator and captures: the tree's too (beside its dpumesh-pod)
OVL_GEN_DIR=$(dirname "$OVL_POD_BIN")

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

# lcore_cost BEFORE AFTER [unclipped]: as sidecar_cost, over every stage (the worker lcore's
# whole work: port RX, sidecar, DPA, port TX): "thread_ns busy_cycles". With "unclipped",
# the samples as they were before each was bounded by its poll's TSC time (cpu_clipped_ns
# added back; docs/benchmarks.md "overload"; 0 in a build without the column).
lcore_cost() {
  python3 -c 'import json, sys
a, b = (json.loads(x)["data"]["/dpumesh/stages"] for x in sys.argv[1:3])
keys = ["cpu_ns"] + (["cpu_clipped_ns"] if sys.argv[3:] == ["unclipped"] else [])
ns = busy = 0
for i, n in enumerate(b["name"]):
    j = a["name"].index(n)
    units = b["cpu_work"][i] - a["cpu_work"][j]
    if units:
        cpu = sum(b.get(k, [0] * len(b["name"]))[i] - a.get(k, [0] * len(a["name"]))[j] for k in keys)
        ns += cpu / units * (b["work"][i] - a["work"][j])
    busy += b["busy_cycles"][i] - a["busy_cycles"][j]
print("%.0f %d" % (ns, busy))' "$@"
}

# net_per_delivered BEFORE AFTER "NS CYCLES": a window's lcore cost over the messages port
# RX took in it: "ns cycles" per delivered network request (request in, answer out).
net_per_delivered() {
  python3 -c 'import json, sys
a, b = (json.loads(x)["data"]["/dpumesh/stages"] for x in sys.argv[1:3])
rx = lambda d: sum(v for n, v in zip(d["name"], d["work"]) if n.startswith("port_rx"))
n = rx(b) - rx(a)
ns, cyc = (float(v) for v in sys.argv[3].split())
print("%.0f %.0f" % (ns / n, cyc / n) if n else "0 0")' "$@"
}

# net_per_refused BEFORE AFTER "NS CYCLES" "DELIVERED_NS DELIVERED_CYCLES": what the window
# cost beyond its admitted requests' share (each at a delivered one's cost), over its
# refusals (port RX's and the sidecar's): "ns cycles" per refused network request.
net_per_refused() {
  python3 -c 'import json, sys
a, b = (json.loads(x)["data"] for x in sys.argv[1:3])
d = lambda e, k: b[e].get(k, 0) - a[e].get(k, 0)
rx = lambda x: sum(v for n, v in zip(x["/dpumesh/stages"]["name"], x["/dpumesh/stages"]["work"]) if n.startswith("port_rx"))
refused = d("/dpumesh/drops", "refused_saturated") + d("/dpumesh/sidecar", "saturated")
admitted = max(rx(b) - rx(a) - refused, 0)
ns, cyc = (float(v) for v in sys.argv[3].split())
dns, dcyc = (float(v) for v in sys.argv[4].split())
print("%.0f %.0f" % (max(ns - admitted * dns, 0) / refused, max(cyc - admitted * dcyc, 0) / refused) if refused else "0 0")' "$@"
}

# stage_costs BEFORE AFTER: per stage of the worker lcore, "name:ns_per_unit:units" (thread
# CPU of the sampled polls over the messages they handled, and every message handled in
# the window), one per line; stages of one kind (port_rx*, sidecar*, dpa*, port_tx*) summed.
stage_costs() {
  python3 -c 'import json, sys
a, b = (json.loads(x)["data"]["/dpumesh/stages"] for x in sys.argv[1:3])
kinds = {}
for i, n in enumerate(b["name"]):
    j = a["name"].index(n)
    k = n.split("/")[0].rstrip("0123456789")
    t = kinds.setdefault(k, [0, 0, 0])
    for x, key in enumerate(("cpu_ns", "cpu_work", "work")):
        t[x] += b[key][i] - a[key][j]
for k, (ns, units, work) in sorted(kinds.items()):
    print("%s:%.1f:%d" % (k, ns / units if units else 0, work))' "$1" "$2"
}

# ovl_tel_raw PHASE BEFORE AFTER: the telemetry around a phase, kept in raw/
ovl_tel_raw() {
  printf '%s\n' "$2" > "$RAW/overload-tel-$1-before.json"
  printf '%s\n' "$3" > "$RAW/overload-tel-$1-after.json"
}

# ovl_gen NAME CAPTURE RATE SECONDS: dpumesh-replay in the background (OVL_GEN_PID), the
# capture paced at RATE frames/s out of the memif client, every answer matched; its
# summary in $WORK/ovl-gen-NAME/summary.json. On the pods' CPU, sleeping when idle.
ovl_gen() {
  local name=$1 cap=$2 rate=$3 secs=$4 dir="$WORK/ovl-gen-$1"
  local sched=()
  [ "${OVL_GEN_SCHED:-}" != idle ] || sched=(chrt --idle 0)
  mkdir -p "$dir"
  "${sched[@]}" "$OVL_GEN_DIR/dpumesh-replay" -l "$MAIN_CPU" --no-huge -m 256 --no-pci --no-shconf \
    --file-prefix "perf-ovl-gen-$$" \
    --vdev "net_memif0,role=client,socket=$OVL_MEMIF,socket-abstract=no,rsize=12" -- \
    --pcap "$cap" --match mesh --mode fixed --pps "$rate" --duration "$secs" --drain 1 \
    --idle-sleep 20 --wait-link 30 --label "$name" --out "$dir" > "$dir/replay.log" 2>&1 < /dev/null &
  OVL_GEN_PID=$!; track "$OVL_GEN_PID"
}

# ovl_wait_rx: until the port receives (the generator's memif link is up and it sends), at
# most 15 s.
ovl_wait_rx() {
  local f0 f i
  f0=$(tel get "$DP_TEL" /dpumesh/drops | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["/dpumesh/drops"]["frames"])')
  for i in $(seq 150); do
    sleep 0.1
    f=$(tel get "$DP_TEL" /dpumesh/drops | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"]["/dpumesh/drops"]["frames"])')
    [ "$f" = "$f0" ] || return 0
  done
  anomaly WARN "overload: the port received nothing from the generator in 15 s"
}

# ovl_gen_row PHASE NAME COST SECONDS: a row from a generator's summary (sent = tx frames,
# ok = 2xx, refused = every other answer); sets OVL_ok OVL_refused OVL_sent OVL_ok_rps.
# A request without exactly one answer (lost, duplicate) is an ERROR.
ovl_gen_row() {
  local phase=$1 dir="$WORK/ovl-gen-$2" cost=$3 secs=$4 f
  cp "$dir/replay.log" "$RAW/overload-gen-$2.log" 2>/dev/null || true
  cp "$dir/summary.json" "$RAW/overload-gen-$2.json" 2>/dev/null || true
  [ -s "$dir/summary.json" ] ||
    { anomaly ERROR "overload $phase: no generator summary (raw/overload-gen-$2.log: $(tail -1 "$dir/replay.log"))"; return 1; }
  read -r -a f <<< "$(python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))["fixed"]
a = t["answers"]
print(t["tx_frames"], a["2xx"], a["4xx"] + a["5xx"] + a["mesh_error"] + a["other"], t["lost"],
      t["duplicates"], t["latency_us"]["p50"], t["latency_us"]["p99"])' "$dir/summary.json")"
  OVL_sent=${f[0]} OVL_ok=${f[1]} OVL_refused=${f[2]}
  echo "phase=$phase sent=${f[0]} ok=${f[1]} refused=${f[2]} lost=${f[3]} dup=${f[4]} p50_us=${f[5]} p99_us=${f[6]} cost=$cost" >> "$RAW/overload.txt"
  [ "${f[3]}" = 0 ] && [ "${f[4]}" = 0 ] ||
    anomaly ERROR "overload $phase: sent=${f[0]}, lost=${f[3]} dup=${f[4]} (a network request without exactly one answer)"
  local ns=${cost%% *} cyc=${cost#* }
  OVL_ok_rps=$(awk -v n="${f[1]}" -v s="$secs" 'BEGIN { printf "%.0f", n / s }')
  ovl_csv "$phase,$(awk -v n="${f[0]}" -v s="$secs" 'BEGIN { printf "%.0f", n / s }'),$OVL_ok_rps,$(awk -v n="$(( f[1] + f[2] ))" -v s="$secs" 'BEGIN { printf "%.0f", n / s }'),,,${f[5]},${f[6]},${f[0]},${f[1]},${f[2]},$ns,$(awk -v b="$ns" -v n="${f[1]}" 'BEGIN { printf "%.0f", n ? b / n : 0 }'),,$cyc,$(awk -v b="$cyc" -v n="${f[1]}" 'BEGIN { printf "%.0f", n ? b / n : 0 }'),,,,"
}

# ovl_counters BEFORE AFTER: where network requests were refused: port RX's refusals and
# the sidecar's saturated/overloaded refusals in the window ("rx=N sidecar=N").
ovl_counters() {
  python3 -c 'import json, sys
a, b = (json.loads(x)["data"] for x in sys.argv[1:3])
d = lambda e, k: b[e].get(k, 0) - a[e].get(k, 0)
print("rx=%d sidecar=%d" % (d("/dpumesh/drops", "refused_saturated"), d("/dpumesh/sidecar", "saturated")))' "$1" "$2"
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

# ovl_median V...: the median of the numbers given (the mean of the middle two when even).
ovl_median() {
  printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR) printf "%.4g", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; else print 0 }'
}

# ovl_ratio A B: A / B with two decimals (0 when B is 0).
ovl_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }

# ovl_lcore_tel: the worker lcores' CPU accounting now (/dpumesh/lcore_cpu).
ovl_lcore_tel() { tel get "$DP_TEL" /dpumesh/lcore_cpu; }

# ovl_runq_pct BEFORE AFTER: the share of the window the worker lcores waited in the run
# queue (runq_ns over wall_ns, %): the box taking the node's CPU, not the node's work.
ovl_runq_pct() {
  python3 -c 'import json, sys
a, b = (json.loads(x)["data"]["/dpumesh/lcore_cpu"] for x in sys.argv[1:3])
d = lambda k: sum(b[k]) - sum(a[k])
print("%.1f" % (100.0 * d("runq_ns") / d("wall_ns")) if d("wall_ns") > 0 else "")' "$1" "$2" 2>/dev/null || true
}

# ovl_iso_rounds PHASE STEP BESIDE [ARGS...]: the paired isolation measurement. OVL_ISO_ROUNDS
# rounds, each a quiet measurement (64 B round trips to "quiet", window 1, OVL_ISO_SECS;
# row PHASE-quiet-rN) followed at once by the same client beside a flood: BESIDE NAME
# SECONDS [ARGS...] runs it (row NAME = PHASE-rN) and sets OVL_b50 OVL_b99 OVL_bline, and
# OVL_bt0 OVL_bt1 (ovl_lcore_tel just before and after its client).
# Every round's figures as info rows (info:TAG_rN_*: quiet and flood p50, p99, samples,
# the client's run-queue wait per answer, the worker lcore's run-queue share of the
# client's window, the two ratios); sets OVL_iso50 OVL_iso99 (the
# median of the rounds' p50 and p99 ratios: the targets) and OVL_isof50 OVL_isof99 (the
# median of the rounds' flood p50 and p99, for the single-quiet figure).
ovl_iso_rounds() {
  local phase=$1 step=$2 beside=$3 tag=${1//-/_} r qline q50 q99 r50 r99 t0 qrunq
  shift 3
  local a50=() a99=() f50=() f99=()
  # a round left out (too few samples) is followed by another, up to OVL_ISO_ROUNDS more,
  # so that the median is of OVL_ISO_ROUNDS rounds (of two, it would be their mean)
  r=0
  while [ "${#a50[@]}" -lt "$OVL_ISO_ROUNDS" ] && [ "$r" -lt $(( 2 * OVL_ISO_ROUNDS )) ]; do
    r=$(( r + 1 ))
    progress "overload: $step $phase round $r (${#a50[@]} of $OVL_ISO_ROUNDS kept): quiet round trips, then beside the flood (${OVL_ISO_SECS} s each)"
    t0=$(ovl_lcore_tel)
    ovl_client "$WORK/ovl-$phase-quiet-r$r.out" "$OVL_ISO_SECS" 1 0 quiet
    wait "$OVL_CLIENT_PID" 2>/dev/null || true
    qrunq=$(ovl_runq_pct "$t0" "$(ovl_lcore_tel)")
    qline=$(tr '\n' ' ' < "$WORK/ovl-$phase-quiet-r$r.out")
    ovl_row "$phase-quiet-r$r" "$qline" 0 || true
    q50=$OVL_p50 q99=$OVL_p99
    OVL_b50=0 OVL_b99=0 OVL_bline='' OVL_bt0='' OVL_bt1=''
    "$beside" "$phase-r$r" "$OVL_ISO_SECS" "$@"
    r50=$(ovl_ratio "$OVL_b50" "$q50") r99=$(ovl_ratio "$OVL_b99" "$q99")
    if [ "$(num "$qline" samples)" -ge "$OVL_ISO_MIN_SAMPLES" ] &&
       [ "$(num "$OVL_bline" samples)" -ge "$OVL_ISO_MIN_SAMPLES" ]; then
      a50+=("$r50") a99+=("$r99") f50+=("$OVL_b50") f99+=("$OVL_b99")
    else
      anomaly WARN "overload $phase round $r: $(num "$qline" samples) quiet and $(num "$OVL_bline" samples) flood samples (< $OVL_ISO_MIN_SAMPLES): left out of the median, another round in its place (at most ${OVL_ISO_ROUNDS} extra)"
    fi
    local k v
    for k in quiet_p50_us:$q50 quiet_p99_us:$q99 quiet_samples:$(num "$qline" samples) \
      quiet_runq_per_answer_us:$(kv "$qline" runq_per_answer_us) quiet_worker_runq_pct:$qrunq \
      flood_p50_us:$OVL_b50 flood_p99_us:$OVL_b99 flood_samples:$(num "$OVL_bline" samples) \
      flood_runq_per_answer_us:$(kv "$OVL_bline" runq_per_answer_us) \
      flood_worker_runq_pct:$(ovl_runq_pct "$OVL_bt0" "$OVL_bt1") p50_over_quiet:$r50 \
      p99_over_quiet:$r99; do
      v=${k#*:}
      ovl_csv "info:${tag}_r${r}_${k%%:*},,,,,,,,,,,,,,,,,$v,,"
    done
    echo "$phase round $r: quiet p50=$q50 p99=$q99, beside the flood p50=$OVL_b50 p99=$OVL_b99: x$r50, x$r99" >> "$RAW/overload.txt"
  done
  # no round with enough samples: no figure (the target is not met)
  [ "${#a50[@]}" -gt 0 ] || { anomaly ERROR "overload $phase: no round measured enough round trips"; a50=(inf) a99=(inf) f50=(inf) f99=(inf); }
  OVL_iso50=$(ovl_median "${a50[@]}") OVL_iso99=$(ovl_median "${a99[@]}")
  OVL_isof50=$(ovl_median "${f50[@]}") OVL_isof99=$(ovl_median "${f99[@]}")
}

# ovl_quiet_beside NAME SECONDS: the quiet client (64 B round trips to "quiet", window 1) for
# SECONDS while a flood runs, and its row NAME; sets OVL_bline OVL_b50 OVL_b99, and OVL_bt0
# OVL_bt1 (ovl_lcore_tel just before and after the client).
ovl_quiet_beside() {
  local name=$1 secs=$2
  OVL_bt0=$(ovl_lcore_tel)
  ovl_client "$WORK/ovl-$name.out" "$secs" 1 0 quiet
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  OVL_bt1=$(ovl_lcore_tel)
  OVL_bline=$(tr '\n' ' ' < "$WORK/ovl-$name.out")
  ovl_row "$name" "$OVL_bline" 0 || true
  OVL_b50=$OVL_p50 OVL_b99=$OVL_p99
}

# ovl_beside_pod NAME SECONDS RATE: the pod flood (RATE requests/s to "echo", window 256)
# and, from 0.5 s into it, the quiet client beside it (rows NAME, NAME-flood).
ovl_beside_pod() {
  local name=$1 secs=$2 rate=$3 fsecs flood_pid
  fsecs=$(awk -v s="$secs" 'BEGIN { print s + 1 }')
  ovl_client "$WORK/ovl-$name-flood.out" "$fsecs" 256 "$rate" echo
  flood_pid=$OVL_CLIENT_PID
  sleep 0.5
  ovl_quiet_beside "$name" "$secs"
  wait "$flood_pid" 2>/dev/null || true
  OVL_SECS_SENT=$fsecs ovl_row "$name-flood" "$(tr '\n' ' ' < "$WORK/ovl-$name-flood.out")" 0 || true
}

# ovl_beside_net NAME SECONDS RATE: the paced network flood (RATE frames/s to "echo") and,
# once the port receives, the quiet client beside it (rows NAME, NAME-flood).
ovl_beside_net() {
  local name=$1 secs=$2 rate=$3 gsecs ngen
  # long enough for the round trips to start (the generator's link, a loaded box) and end
  # inside the flood
  gsecs=$(awk -v s="$secs" 'BEGIN { print s + 8 }')
  ovl_gen "$name" "$WORK/ovl-net-echo.pcap" "$rate" "$gsecs"
  ngen=$OVL_GEN_PID
  ovl_wait_rx
  ovl_quiet_beside "$name" "$secs"
  kill -0 "$ngen" 2>/dev/null || anomaly WARN "overload $name: the flood ended before the round trips did"
  wait "$ngen" 2>/dev/null || true
  ovl_gen_row "$name-flood" "$name" "0 0" "$gsecs" || true
}

# ovl_beside_unpaced NAME SECONDS STEP: the unpaced network flood with its generator at
# SCHED_IDLE and the quiet client beside it (ovl_unpaced: rows NAME, NAME-flood, info:TAG_*);
# the flooded service's goodput of each round collected in OVL_ugoods.
ovl_beside_unpaced() {
  ovl_unpaced "$1" idle "$2" "$3"
  OVL_ugoods+=("$OVL_ugood")
}

# ovl_target NAME VALUE OP LIMIT: a target row (met yes/no).
ovl_target() {
  local met
  met=$(awk -v v="$2" -v l="$4" -v op="$3" 'BEGIN { print ((op == "<=" ? v <= l : v >= l) ? "yes" : "no") }')
  ovl_csv "target:$1,,,,,,,,,,,,,,,,,$2,$3 $4,$met"
  progress "overload: $1 = $2 (target $3 $4): $met"
}

# ovl_unpaced PHASE SCHED SECONDS STEP: the network flood to "echo" unpaced (the generator
# at SCHED_IDLE when SCHED is "idle", else at the pods' priority) with 64 B round trips to
# "quiet" beside it; its rows (PHASE, PHASE-flood, info:PHASE_*); sets what
# ovl_quiet_beside sets (OVL_b50 OVL_b99 OVL_bline OVL_bt0 OVL_bt1), OVL_ugood and the
# telemetry around it (OVL_ubefore, OVL_uafter).
ovl_unpaced() {
  local phase=$1 gen_sched=$2 secs=$3 usecs ngen line uwhere tag=${1//-/_}
  usecs=${OVL_UNPACED_SECS:-$(awk -v s="$secs" 'BEGIN { print s + 6 }')}
  progress "overload: $4 $phase: the network flood to \"echo\" unpaced for $usecs s (generator ${gen_sched:-normal}), 64 B round trips to \"quiet\" beside it"
  OVL_ubefore=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/drops /dpumesh/lcore_cpu)
  OVL_GEN_SCHED=$gen_sched ovl_gen "$phase" "$WORK/ovl-net-echo.pcap" max "$usecs"
  ngen=$OVL_GEN_PID
  ovl_wait_rx
  profile_window overload "$phase" 0.5 "$(cpu_secs "$secs" 0.5)"
  ovl_quiet_beside "$phase" "$secs"
  profile_wait
  kill -0 "$ngen" 2>/dev/null || anomaly WARN "overload $phase: the flood ended before the round trips did"
  wait "$ngen" 2>/dev/null || true
  OVL_uafter=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/drops /dpumesh/lcore_cpu)
  ovl_tel_raw "$phase" "$OVL_ubefore" "$OVL_uafter"
  line=$OVL_bline
  uwhere=$(ovl_counters "$OVL_ubefore" "$OVL_uafter")
  echo "$phase refused at: $uwhere" >> "$RAW/overload.txt"
  ovl_gen_row "$phase-flood" "$phase" "$(lcore_cost "$OVL_ubefore" "$OVL_uafter")" "$usecs" || true
  OVL_ugood=$OVL_ok_rps
  ovl_csv "info:${tag}_offered_rps,,,,,,,,,,,,,,,,,$(awk -v n="$OVL_sent" -v s="$usecs" 'BEGIN { printf "%.0f", n / s }'),,"
  ovl_csv "info:${tag}_refused_at_port_rx,,,,,,,,,,,,,,,,,$(kv "$uwhere" rx),,"
  ovl_csv "info:${tag}_refused_in_sidecar,,,,,,,,,,,,,,,,,$(kv "$uwhere" sidecar),,"
  ovl_csv "info:${tag}_client_runq_per_answer_us,,,,,,,,,,,,,,,,,$(kv "$line" runq_per_answer_us),,"
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
  # the node's network port: a memif server the network flood's generator connects to
  OVL_MEMIF="$WORK/overload.memif"
  rm -f "$OVL_MEMIF"
  local port=()
  [ "$OVL_NET" = 0 ] || port=(--port "net_memif0,role=server,socket=$OVL_MEMIF,socket-abstract=no,rsize=12" --mbufs 32767)
  write_config "$cfg" --sock "$WORK/overload.sock" --services echo:16,quiet:4,full:1,client:16 \
    "${port[@]}" --idle adaptive --header-slots 256 --timeout-ms 5000 "${bound[@]}"
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
  progress "overload: [1/11] capacity ($OVL_ECHO_PODS pods x $OVL_SLOTS slots, ${OVL_DELAY_US} us each)"
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

  progress "overload: [2/11] quiet: 64 B round trips to another pod, one outstanding"
  ovl_client "$WORK/ovl-quiet.out" "$secs" 1 0 quiet
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  line=$(tr '\n' ' ' < "$WORK/ovl-quiet.out")
  ovl_row quiet "$line" 0 || true
  local q50=$OVL_p50 q99=$OVL_p99

  # the sidecar's cost of a delivered request at the flood's rate (the same batching): the
  # flood's rate offered to "quiet", which answers them all
  progress "overload: [3/11] delivered: $rate requests/s to \"quiet\" (all answered)"
  before=$(tel get "$DP_TEL" /dpumesh/stages)
  ovl_client "$WORK/ovl-del.out" "$secs" 256 "$rate" quiet
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  after=$(tel get "$DP_TEL" /dpumesh/stages)
  ovl_tel_raw delivered "$before" "$after"
  busy=$(sidecar_cost "$before" "$after")
  line=$(tr '\n' ' ' < "$WORK/ovl-del.out")
  OVL_SECS_SENT=$secs ovl_row delivered "$line" "$busy" || true
  cyc_del=$OVL_cyc_ok tsc_del=$OVL_tsc_ok

  # the sidecar's cost of a refused request: the same rate to "full", whose one pod takes
  # requests and never answers (sink: it releases them, so nothing waits for RX slots):
  # once its slots and queue's worth are in flight, every request is refused at the first
  # look until they time out
  progress "overload: [4/11] refused: $rate requests/s to \"full\" (a pod that never answers)"
  before=$(tel get "$DP_TEL" /dpumesh/stages)
  profile_window overload refused "$OVL_WARMUP" "$(cpu_secs "$secs" "$OVL_WARMUP")"
  ovl_client "$WORK/ovl-ref.out" "$secs" 256 "$rate" full
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  profile_wait
  after=$(tel get "$DP_TEL" /dpumesh/stages)
  ovl_tel_raw refused "$before" "$after"
  busy=$(sidecar_cost "$before" "$after")
  line=$(tr '\n' ' ' < "$WORK/ovl-ref.out")
  OVL_SECS_SENT=$secs ovl_row refused "$line" "$busy" || true
  local ref_cpu=${busy%% *} ref_cyc=${busy#* } ref_n=$OVL_refused

  progress "overload: [5/11] flood: $rate requests/s offered (${OVL_FACTOR}x $cap)"
  before=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/dpa)
  ovl_client "$WORK/ovl-flood.out" "$secs" 256 "$rate" echo
  wait "$OVL_CLIENT_PID" 2>/dev/null || true
  after=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/dpa)
  busy=$(sidecar_cost "$before" "$after")
  line=$(tr '\n' ' ' < "$WORK/ovl-flood.out")
  OVL_SECS_SENT=$secs ovl_row flood "$line" "$busy" || true
  # mesh_delta (pod2pod.sh) reads the DPA's counters too: without them it wrote nothing
  echo "flood: $(mesh_delta "$before" "$after")" >> "$RAW/overload.txt" || true
  local good=$OVL_rps p99=$OVL_okp99 cyc_ref
  cyc_ref=$(awk -v b="$ref_cpu" -v r="$ref_n" 'BEGIN { printf "%.0f", r ? b / r : 0 }')
  tsc_ref=$(awk -v b="$ref_cyc" -v r="$ref_n" 'BEGIN { printf "%.0f", r ? b / r : 0 }')
  ovl_csv "per-message,,,,,,,,,,,,$cyc_del,$cyc_ref,,$tsc_del,$tsc_ref,,,"

  # isolation, paired: quiet then beside the pod flood, OVL_ISO_ROUNDS times
  ovl_iso_rounds isolation "[6/11]" ovl_beside_pod "$rate"
  local i50=$OVL_iso50 i99=$OVL_iso99 i1_50=$OVL_isof50 i1_99=$OVL_isof99

  # Case 2: the same rate from the network (net_memif), single-frame requests; each
  # window is the generator's whole run (the node is idle before and after it)
  local nrate nsecs=$secs cost ncost_del ncost_del_u="0 0" nref_u="0 0" nwhere nref_ns=0 nref_cyc=0 n50=0 n99=0 n1_50=0 n1_99=0
  if [ "$OVL_NET" != 0 ]; then
  nrate=${OVL_NET_RATE:-$(awk -v c="$cap" -v f="$OVL_NET_FACTOR" 'BEGIN { printf "%.0f", c * f }')}
  for i in quiet echo; do
    "$OVL_GEN_DIR/dpumesh-pcapgen" --out "$WORK/ovl-net-$i.pcap" --messages 4000 --frames 4000 \
      --services "$i" --frame-size 64 --ipv6-share 0 --seed 1 > /dev/null ||
      { anomaly ERROR "overload: dpumesh-pcapgen failed"; break; }
  done
  progress "overload: [7/11] net-delivered: $nrate requests/s to \"quiet\" from the network"
  before=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/lcore_cpu)
  ovl_gen net-delivered "$WORK/ovl-net-quiet.pcap" "$nrate" "$nsecs"
  wait "$OVL_GEN_PID" 2>/dev/null || true
  after=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/lcore_cpu)
  ovl_tel_raw net-delivered "$before" "$after"
  cost=$(lcore_cost "$before" "$after")
  OVL_DEL_STAGES=$(stage_costs "$before" "$after" | tr '\n' ' ')
  ovl_gen_row net-delivered net-delivered "$cost" "$nsecs" || true
  ncost_del=$(net_per_delivered "$before" "$after" "$cost")
  ncost_del_u=$(net_per_delivered "$before" "$after" "$(lcore_cost "$before" "$after" unclipped)")

  progress "overload: [8/11] net-flood: $nrate requests/s to \"echo\" from the network (capacity $cap)"
  before=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/drops /dpumesh/lcore_cpu)
  ovl_gen net-flood "$WORK/ovl-net-echo.pcap" "$nrate" "$nsecs"
  profile_window overload net-flood 1 "$(cpu_secs "$nsecs" 1)"
  wait "$OVL_GEN_PID" 2>/dev/null || true
  profile_wait
  after=$(tel get "$DP_TEL" /dpumesh/stages /dpumesh/sidecar /dpumesh/drops /dpumesh/lcore_cpu)
  ovl_tel_raw net-flood "$before" "$after"
  cost=$(lcore_cost "$before" "$after")
  nwhere=$(ovl_counters "$before" "$after")
  echo "net-flood refused at: $nwhere" >> "$RAW/overload.txt"
  ovl_gen_row net-flood net-flood "$cost" "$nsecs" || true
  read -r nref_ns nref_cyc <<< "$(net_per_refused "$before" "$after" "$cost" "$ncost_del")"
  nref_u=$(net_per_refused "$before" "$after" "$(lcore_cost "$before" "$after" unclipped)" "$ncost_del_u")
  ovl_csv "net-per-message,,,,,,,,,,,,${ncost_del%% *},$nref_ns,,${ncost_del#* },$nref_cyc,,,"
  ovl_csv "info:net_refused_at_port_rx,,,,,,,,,,,,,,,,,$(kv "$nwhere" rx),,"
  ovl_csv "info:net_refused_in_sidecar,,,,,,,,,,,,,,,,,$(kv "$nwhere" sidecar),,"

  # net-isolation, paired: quiet then beside the paced network flood, OVL_ISO_ROUNDS times
  ovl_iso_rounds net-isolation "[9/11]" ovl_beside_net "$nrate"
  n50=$OVL_iso50 n99=$OVL_iso99 n1_50=$OVL_isof50 n1_99=$OVL_isof99
  fi

  # the same flood unpaced: as fast as the generator gets frames into the memif ring; first
  # with the generator at the pods' priority (as until 2026-11-24: info rows), then at
  # SCHED_IDLE (the targets: it stands for another machine, docs/benchmarks.md "overload")
  local u50=0 u99=0 u1_50=0 u1_99=0 ugood=0 ustages st k uns dns
  if [ "$OVL_NET" != 0 ] && [ "$OVL_UNPACED" != 0 ]; then
  ovl_unpaced net-unpaced-shared "" "$secs" "[10/11]"
  ovl_csv "info:net_unpaced_shared_p50_over_quiet,,,,,,,,,,,,,,,,,$(ovl_ratio "$OVL_b50" "$q50"),,"
  ovl_csv "info:net_unpaced_shared_p99_over_quiet,,,,,,,,,,,,,,,,,$(ovl_ratio "$OVL_b99" "$q99"),,"
  # net-unpaced, paired: quiet then beside the unpaced flood (generator at SCHED_IDLE)
  OVL_ugoods=()
  ovl_iso_rounds net-unpaced "[11/11]" ovl_beside_unpaced "[11/11]"
  u50=$OVL_iso50 u99=$OVL_iso99 u1_50=$OVL_isof50 u1_99=$OVL_isof99
  ugood=$(ovl_median "${OVL_ugoods[@]}")
  # per stage: thread CPU per message handled under the unpaced flood (nearly all refused)
  # against net-delivered's (all delivered), in the last round's window
  ustages=$(stage_costs "$OVL_ubefore" "$OVL_uafter")
  echo "net-unpaced stages (name:ns_per_unit:units): $(echo "$ustages" | tr '\n' ' ')" >> "$RAW/overload.txt"
  echo "net-delivered stages (name:ns_per_unit:units): ${OVL_DEL_STAGES:-}" >> "$RAW/overload.txt"
  for st in $ustages; do
    k=${st%%:*}; uns=$(echo "$st" | cut -d: -f2)
    dns=$(echo "${OVL_DEL_STAGES:-}" | tr ' ' '\n' | awk -F: -v k="$k" '$1 == k { print $2 }')
    ovl_csv "stage:$k,,,,,,,,,,,,${dns:-},$uns,,,,$(awk -v u="$uns" -v d="${dns:-0}" 'BEGIN { printf "%.3f", d ? u / d : 0 }'),,"
  done
  fi

  ovl_target goodput_over_capacity "$(awk -v g="$good" -v c="$cap" 'BEGIN { printf "%.3f", g / c }')" ">=" 0.9
  ovl_target refused_over_delivered_cpu "$(awk -v r="$cyc_ref" -v d="$cyc_del" 'BEGIN { printf "%.3f", d ? r / d : 0 }')" "<=" 0.25
  ovl_csv "info:refused_over_delivered_cycles,,,,,,,,,,,,,,,,,$(awk -v r="$tsc_ref" -v d="$tsc_del" 'BEGIN { printf "%.3f", d ? r / d : 0 }'),,"
  ovl_target admitted_p99_over_capacity_p99 "$(awk -v a="$p99" -v b="$cap_p99" 'BEGIN { printf "%.2f", b ? a / b : 0 }')" "<=" 3
  # the isolation targets: the median of the paired rounds' ratios; beside each, the old
  # figure (the rounds' median flood p50, p99 over the one quiet phase near the start)
  ovl_target isolation_p50_over_quiet "$(ovl_ratio "$i50" 1)" "<=" 2
  ovl_target isolation_p99_over_quiet "$(ovl_ratio "$i99" 1)" "<=" 3
  ovl_csv "info:isolation_p50_over_single_quiet,,,,,,,,,,,,,,,,,$(ovl_ratio "$i1_50" "$q50"),,"
  ovl_csv "info:isolation_p99_over_single_quiet,,,,,,,,,,,,,,,,,$(ovl_ratio "$i1_99" "$q99"),,"
  [ "$OVL_NET" = 0 ] || {
  ovl_target net_refused_over_delivered_cpu "$(awk -v r="$nref_ns" -v d="${ncost_del%% *}" 'BEGIN { printf "%.3f", d ? r / d : 0 }')" "<=" 0.25
  ovl_csv "info:net_refused_over_delivered_cycles,,,,,,,,,,,,,,,,,$(awk -v r="$nref_cyc" -v d="${ncost_del#* }" 'BEGIN { printf "%.3f", d ? r / d : 0 }'),,"
  ovl_csv "info:net_refused_over_delivered_cpu_unclipped,,,,,,,,,,,,,,,,,$(awk -v r="${nref_u%% *}" -v d="${ncost_del_u%% *}" 'BEGIN { printf "%.3f", d ? r / d : 0 }'),,"
  ovl_target net_isolation_p50_over_quiet "$(ovl_ratio "$n50" 1)" "<=" 2
  ovl_target net_isolation_p99_over_quiet "$(ovl_ratio "$n99" 1)" "<=" 3
  ovl_csv "info:net_isolation_p50_over_single_quiet,,,,,,,,,,,,,,,,,$(ovl_ratio "$n1_50" "$q50"),,"
  ovl_csv "info:net_isolation_p99_over_single_quiet,,,,,,,,,,,,,,,,,$(ovl_ratio "$n1_99" "$q99"),,"
  }
  [ "$OVL_NET" = 0 ] || [ "$OVL_UNPACED" = 0 ] || {
  ovl_target net_unpaced_p50_over_quiet "$(ovl_ratio "$u50" 1)" "<=" 2
  ovl_target net_unpaced_p99_over_quiet "$(ovl_ratio "$u99" 1)" "<=" 3
  ovl_csv "info:net_unpaced_p50_over_single_quiet,,,,,,,,,,,,,,,,,$(ovl_ratio "$u1_50" "$q50"),,"
  ovl_csv "info:net_unpaced_p99_over_single_quiet,,,,,,,,,,,,,,,,,$(ovl_ratio "$u1_99" "$q99"),,"
  ovl_target net_unpaced_goodput_over_capacity "$(awk -v g="$ugood" -v c="$cap" 'BEGIN { printf "%.3f", g / c }')" ">=" 0.9
  }

  for i in "${pids[@]}"; do stop_pid "$i"; done
  dp_stop
  grep -a '^final ' "$RAW/overload.final" > /dev/null 2>&1 || true
}
