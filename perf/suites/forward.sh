# SPDX-License-Identifier: BSD-3-Clause
# Suite "forward": the Arm's network path alone, next to dpdk-testpmd 5tswap on the same
# capture, lcores and memory. A capture of network clients' requests (dpumesh-pcapgen)
# replays through net_pcap (infinite_rx=1); every request is for service "echo", which the
# peer p2 serves, so dpumesh relays it (Case 2 in, L7 decode, route and policy, Case 1 out
# to the peer): the frames leave through the same net_pcap port, whose TX drops them
# (nothing is written). No pods. Nothing answers, so every relayed request times out after
# FORWARD_TIMEOUT_MS and its client gets a 504 made here: each request costs one frame in and
# two out (the relayed request, the 504), as a refused one costs one in and one out.
# Every request of a capture comes from one client address: the node's per-address quota
# (pools.quota.requests_per_source, docs/quota.md) is raised to the table's 65536 so that the
# requests in flight (rate x FORWARD_TIMEOUT_MS, plus what a late sweep has not yet expired)
# are relayed, not refused 503 overloaded (with the default 4096 most were: the suite measured
# the refusal). The timeout was 10 ms until 2026-12-02: at 4.4-5.3 M requests/s (fbe0d1c on
# an AMD EPYC VM) ~50 k were in flight and a stalled sweep took a run past 65536 (up to 2,100
# refused a second); at 5 ms the table is half full at 6.5 M/s.
# Three policy variants: routes only; RBAC + rate limits that refuse nothing; a JWT (HS256,
# verified once, then from the cache) on every request. Sourced by perf/run.sh; writes
# forward.csv, forward_stages.csv; raw telemetry windows in raw/forward-*.json.
# With --instructions S (INSTRUCTIONS, when valgrind is installed) each row runs a second
# dpumesh under callgrind for S seconds: instructions per message per stage and the top
# functions (forward_instructions.csv, forward_instructions_top.csv; exact between runs).
#   perf/run.sh forward                    # both captures, the three variants
#   FORWARD_CAPTURES_ONLY=131B FORWARD_VARIANTS_ONLY=routes perf/run.sh --no-build forward
#   FORWARD_EAL_EXTRA=--mbuf-pool-ops-name=stack perf/run.sh forward   # more EAL options

# name|pcapgen options (IPv4 only: one address family for testpmd and dpumesh alike)
FORWARD_CAPTURES=(
  "131B|--frame-size 64 --ipv6-share 0"
  "512B|--frame-size 512 --ipv6-share 0"
)
FORWARD_VARIANTS=(routes rbac_ratelimit jwt)
FORWARD_TIMEOUT_MS=5
FORWARD_WARMUP=1.5
FORWARD_SECRET=perf-forward-hs256-secret-0123456789abcdef

# forward_policy VARIANT FILE: the /policy object of a variant (beside default_timeout_ms)
forward_policy() {
  local secret_b64
  secret_b64=$(python3 -c 'import base64, sys; print(base64.urlsafe_b64encode(sys.argv[1].encode()).decode().rstrip("="))' "$FORWARD_SECRET")
  case "$1" in
    routes) echo '{}' ;;
    rbac_ratelimit) cat <<JSON
{"rbac": [{"service": "echo", "default": "deny", "require_jwt": false, "rules": [
   {"methods": ["GET"], "prefix": "/admin/"}, {"methods": ["GET", "POST"], "prefix": "/"}]}],
 "rate_limits": [{"service": "echo", "key": "source", "rate": 100000000, "burst": 100000000},
                 {"service": "echo", "key": "route", "rate": 100000000, "burst": 100000000}]}
JSON
    ;;
    jwt) cat <<JSON
{"jwt": {"keys": [{"kid": "f1", "alg": "HS256", "secret": "$secret_b64"}], "cache_entries": 64},
 "rbac": [{"service": "echo", "default": "deny", "require_jwt": true, "rules": [
   {"prefix": "/", "claims": {"role": "client"}}]}]}
JSON
    ;;
  esac
}

# forward_jwt: an HS256 token (kid f1, role client, an hour to live) for every request
forward_jwt() {
  python3 - "$FORWARD_SECRET" <<'PY'
import base64, hashlib, hmac, json, sys, time
b = lambda x: base64.urlsafe_b64encode(x).decode().rstrip("=")
h = b(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "f1"}, separators=(",", ":")).encode())
p = b(json.dumps({"sub": "perf", "role": "client", "exp": int(time.time()) + 3600},
                 separators=(",", ":")).encode())
s = b(hmac.new(sys.argv[1].encode(), (h + "." + p).encode(), hashlib.sha256).digest())
print(h + "." + p + "." + s)
PY
}

# forward_cpu PID LCORE: "thread_ns process_ticks" of dpumesh: the worker lcore thread's
# CPU time (schedstat: time on a CPU, user and kernel) and the whole process's utime+stime,
# around the telemetry window (forward_row.py takes the figures the sampler read with its
# snapshots, TEL_CPU_PID, and these only where those are missing)
forward_cpu() {
  local pid=$1 t ns=0
  for t in /proc/"$pid"/task/*; do
    if [[ $(cat "$t/comm" 2>/dev/null) == *worker-"$2" ]]; then
      ns=$(cut -d' ' -f1 "$t/schedstat"); break
    fi
  done
  echo "$ns $(awk '{ print $14 + $15 }' "/proc/$pid/stat")"
}

forward_one() { # CAPTURE OPTIONS VARIANT
  local name=$1 opts=$2 variant=$3 run="$1-$3" cap gen summary frames extra=()
  cap="$WORK/forward-$name.pcap"
  if [ "$variant" = jwt ]; then
    cap="$WORK/forward-$name-jwt.pcap"
    extra=(--header "authorization:Bearer $(forward_jwt)")
  fi
  # shellcheck disable=SC2086
  gen=$("$BIN/dpumesh-pcapgen" --out "$cap" --messages 100000 --frames 8000 --services echo $opts \
    "${extra[@]}" --seed 1) || { anomaly ERROR "forward $run: dpumesh-pcapgen failed"; return; }
  echo "$gen" > "$RAW/forward-$run.pcapgen.txt"
  summary=$(tail -1 <<< "$gen")
  frames=$(kv "$summary" frames)

  progress "forward: $run ($frames frames, $(( $(kv "$summary" bytes) / frames )) B average): dpdk-testpmd 5tswap"
  local tp_prefix="perf-forward-testpmd-$$"
  # shellcheck disable=SC2046
  dpdk-testpmd $(replay_eal "$tp_prefix" "$cap" 1) -- --forward-mode=5tswap --nb-cores=1 \
    --stats-period 1 < /dev/null > "$RAW/forward-$run.testpmd.log" 2>&1 &
  local tp=$!; track "$tp"
  tel sample "$(rtdir "$tp_prefix")/dpdk_telemetry.v2" "$FORWARD_WARMUP" "$REPLAY_SECONDS" \
    "$RAW/forward-$run.testpmd.json" /ethdev/stats,0 ||
    anomaly ERROR "forward $run: no telemetry from testpmd (raw/forward-$run.testpmd.log)"
  stop_pid "$tp" INT
  rmdir "$(rtdir "$tp_prefix")" 2>/dev/null || true

  progress "forward: $run: dpumesh, relay to peer p2 (policy: $variant)"
  local cfg="$WORK/forward-$run.json" pol="$WORK/forward-$run.policy.json" mbufs=65535
  while [ "$mbufs" -lt $(( frames + 49152 )) ]; do mbufs=$((mbufs * 2 + 1)); done
  forward_policy "$variant" > "$pol"
  write_config "$cfg" --sock "$WORK/forward.sock" --port net_pcap0 --services echo:4 --relay echo \
    --idle busy --mbufs "$mbufs" --timeout-ms "$FORWARD_TIMEOUT_MS" --policy "$pol" \
    --requests-per-source 65536
  dp_start "forward-$run" "$cfg" --vdev "net_pcap0,rx_pcap=$cap,infinite_rx=1" ${FORWARD_EAL_EXTRA:-} || return
  sleep "$FORWARD_WARMUP"
  local c0 c1
  c0=$(forward_cpu "$DP_PID" "$WORKER")
  TEL_CPU_PID=$DP_PID tel sample "$DP_TEL" 0 "$REPLAY_SECONDS" "$RAW/forward-$run.dpumesh.json" \
    /ethdev/stats,0 /dpumesh/drops /dpumesh/sidecar /dpumesh/stages /dpumesh/lcores ||
    anomaly ERROR "forward $run: no telemetry from dpumesh"
  c1=$(forward_cpu "$DP_PID" "$WORKER")
  if [ -n "${FORWARD_PERF_RECORD:-}" ]; then
    perf record -g -o "$RAW/forward-$run.perf.data" -p "$DP_PID" -- sleep "$FORWARD_PERF_RECORD" \
      > "$RAW/forward-$run.perf.log" 2>&1 || anomaly WARN "forward $run: perf record failed"
  fi
  dp_stop
  [ "${INSTRUCTIONS:-0}" = 0 ] || forward_instructions "$name" "$variant" "$cfg" "$cap"
  local a
  a=$(python3 "$ROOT/perf/lib/forward_row.py" "$RESULTS" "$name" "$variant" "$summary" \
    "$RAW/forward-$run.testpmd.json" "$RAW/forward-$run.dpumesh.json" "$c0" "$c1" \
    "$(getconf CLK_TCK)") || { anomaly ERROR "forward $run: analysis failed"; return; }
  while IFS= read -r line; do
    [ -z "$line" ] || anomaly "${line%% *}" "${line#* }"
  done <<< "$a"
}

# forward_instructions CAPTURE VARIANT CONFIG PCAP: the same dpumesh under callgrind for
# $INSTRUCTIONS seconds, instructions counted inside the worker lcore's runner loop only
# (startup and the other threads left out), then perf/lib/instructions.py. valgrind runs a
# process's threads one at a time, ~50x slower: the figures are instructions, not time.
forward_instructions() {
  local name=$1 variant=$2 cfg=$3 cap=$4 run="$1-$2" cg a
  cg="$RAW/forward-$run.callgrind.out"
  progress "forward: $run: dpumesh under callgrind, ${INSTRUCTIONS} s (instructions per message)"
  DP_WRAP=(valgrind --tool=callgrind --fair-sched=yes "--callgrind-out-file=$cg" --collect-atstart=no
    "--toggle-collect=dpumesh::lcore::runner::loop*")
  DP_START_S=120
  dp_start "forward-$run-callgrind" "$cfg" --vdev "net_pcap0,rx_pcap=$cap,infinite_rx=1" \
    ${FORWARD_EAL_EXTRA:-} || { DP_WRAP=(); DP_START_S=10; return; }
  DP_WRAP=(); DP_START_S=10
  sleep "$INSTRUCTIONS"
  # bounded: under valgrind (its threads one at a time) a loaded box has starved the
  # control thread that takes the SIGINT for minutes (2026-12-03: a 10 s window ran 593 s);
  # past 180 s it is stopped harder, and a run without its callgrind file is an ERROR row
  DP_STOP_S=180 dp_stop
  forward_testpmd_instructions "$cap"
  a=$(python3 "$ROOT/perf/lib/instructions.py" "$RESULTS" "$name" "$variant" "$cg" \
    "$RAW/forward-$run-callgrind.final" 25 "$FORWARD_TP_CG" "$FORWARD_TP_LOG") ||
    { anomaly ERROR "forward $run: instruction count failed"; return; }
  while IFS= read -r line; do
    [ -z "$line" ] || anomaly "${line%% *}" "${line#* }"
  done <<< "$a"
}

# forward_testpmd_instructions PCAP: dpdk-testpmd 5tswap on the same capture under callgrind
# for $INSTRUCTIONS seconds, once per capture file (the rows of one capture share it): every
# thread in a file of its own (--separate-threads; testpmd is stripped, so no function can
# toggle the count), the forwarding lcore's is the largest after the main thread's, divided
# by the frames testpmd says it received (instructions.py). Sets FORWARD_TP_CG (the files'
# prefix) and FORWARD_TP_LOG; both empty when the run failed (an ERROR row, and the dpumesh
# figures are still written).
forward_testpmd_instructions() {
  local cap=$1 base
  base="$RAW/forward-testpmd-$(basename "$cap" .pcap)"
  FORWARD_TP_CG="$base.callgrind.out"; FORWARD_TP_LOG="$base.callgrind.log"
  if [ -e "$FORWARD_TP_LOG" ]; then # this capture's count, made for an earlier row
    compgen -G "$FORWARD_TP_CG-*" > /dev/null || { FORWARD_TP_CG=""; FORWARD_TP_LOG=""; }
    return 0
  fi
  progress "forward: dpdk-testpmd 5tswap under callgrind on $(basename "$cap"), ${INSTRUCTIONS} s"
  local prefix="perf-forward-testpmd-cg-$$"
  # shellcheck disable=SC2046
  valgrind --tool=callgrind --fair-sched=yes --separate-threads=yes "--callgrind-out-file=$FORWARD_TP_CG" \
    dpdk-testpmd $(replay_eal "$prefix" "$cap" 1) -- --forward-mode=5tswap --nb-cores=1 \
    --stats-period 1 < /dev/null > "$FORWARD_TP_LOG" 2>&1 &
  local tp=$!; track "$tp"
  # counted from when it forwards (its start under valgrind: the pool's 155 k mbufs, ~20 s)
  local t=0
  until grep -aq "start packet forwarding" "$FORWARD_TP_LOG" 2>/dev/null || [ "$t" -ge 1200 ] ||
    ! kill -0 "$tp" 2>/dev/null; do sleep 0.1; t=$((t + 1)); done
  sleep "$INSTRUCTIONS"
  stop_pid "$tp" INT 180
  rmdir "$(rtdir "$prefix")" 2>/dev/null || true
  if ! compgen -G "$FORWARD_TP_CG-*" > /dev/null || ! grep -aq "RX-packets" "$FORWARD_TP_LOG"; then
    anomaly ERROR "forward: testpmd under callgrind failed (status $STOP_RC, raw/$(basename "$FORWARD_TP_LOG"))"
    FORWARD_TP_CG=""; FORWARD_TP_LOG=""
  fi
}

suite_forward() {
  local c v i=0 n
  n=$(( ${#FORWARD_CAPTURES[@]} * ${#FORWARD_VARIANTS[@]} ))
  for c in "${FORWARD_CAPTURES[@]}"; do
    [ -z "${FORWARD_CAPTURES_ONLY:-}" ] || [[ " $FORWARD_CAPTURES_ONLY " == *" ${c%%|*} "* ]] || continue
    for v in "${FORWARD_VARIANTS[@]}"; do
      [ -z "${FORWARD_VARIANTS_ONLY:-}" ] || [[ " $FORWARD_VARIANTS_ONLY " == *" $v "* ]] || continue
      i=$((i + 1))
      progress "forward: [$i/$n] capture ${c%%|*}, policy $v"
      forward_one "${c%%|*}" "${c#*|}" "$v"
    done
  done
}
