# SPDX-License-Identifier: BSD-3-Clause
# Helpers shared by perf/run.sh and the suites in perf/suites/ (sourced, never run).
# Globals from run.sh: ROOT BIN RESULTS RAW WORK LCORES MAIN_CPU WORKER MEM T0; PIDS collects every
# process a suite starts, so that run.sh's exit trap stops exactly those.

# A progress line (elapsed time, then the text) on stderr and in progress.log.
progress() {
  local s=$(( $(date +%s) - T0 ))
  printf '[%02d:%02d] %s\n' $((s / 60)) $((s % 60)) "$*" | tee -a "$RESULTS/progress.log" >&2
}

# anomaly ERROR|WARN TEXT: recorded for the summary; any ERROR makes run.sh exit 1.
anomaly() {
  local level=$1; shift
  echo "$level $*" >> "$RESULTS/anomalies.txt"
  progress "  $level: $*"
}

# kv LINE KEY: the value of KEY=value in a line of key=value words ("" when absent).
kv() {
  awk -v k="$2" '{ for (i = 1; i <= NF; i++) if (index($i, k "=") == 1) { print substr($i, length(k) + 2); exit } }' <<< "$1"
}

# num LINE KEY: as kv, 0 when absent.
num() { local v; v=$(kv "$1" "$2"); echo "${v:-0}"; }

# EAL's runtime directory for a file prefix (eal_get_runtime_dir): the telemetry socket.
rtdir() {
  if [ "$(id -u)" -eq 0 ]; then echo "/var/run/dpdk/$1"; else echo "${XDG_RUNTIME_DIR:-/tmp}/dpdk/$1"; fi
}

track() { PIDS+=("$1"); }

# stop_pid PID [SIGNAL [BOUND_S]]: signal one process this run started and reap it; its
# status is left in STOP_RC. With BOUND_S, one still running that long after the signal is
# sent TERM, then KILL. dp_stop passes $DP_STOP_S (unset: no bound).
stop_pid() {
  STOP_RC=0
  kill "-${2:-TERM}" "$1" 2>/dev/null || true
  if [ -n "${3:-}" ]; then
    # bounded: a process that has not exited $3 s after the signal gets TERM, then KILL 10 s
    # later (STOP_RC then says so: 143 or 137), instead of a wait without end
    local t=0
    while kill -0 "$1" 2>/dev/null && [ "$t" -lt "$(( $3 * 10 ))" ]; do sleep 0.1; t=$((t + 1)); done
    if kill -0 "$1" 2>/dev/null; then
      kill -TERM "$1" 2>/dev/null || true
      t=0
      while kill -0 "$1" 2>/dev/null && [ "$t" -lt 100 ]; do sleep 0.1; t=$((t + 1)); done
      kill -KILL "$1" 2>/dev/null || true
    fi
  fi
  wait "$1" 2>/dev/null || STOP_RC=$?
}

# next_seed: a new seed per client run. It names the run in x-seq, so that the echo pod
# checks each run's order on its own. A file, because callers use it in $(...).
SEED_FILE=$WORK/seed
echo 100 > "$SEED_FILE"
next_seed() {
  local s; s=$(( $(cat "$SEED_FILE") + 1 )); echo "$s" > "$SEED_FILE"; echo "$s"
}

tel() { python3 "$ROOT/perf/lib/tel.py" "$@"; }

# write_config FILE [config.py options]: a node config for a suite (perf/lib/config.py).
write_config() {
  local f=$1; shift
  python3 "$ROOT/perf/lib/config.py" --worker "$WORKER" "$@" > "$f"
}

# dp_start NAME CONFIG [EAL args...] [-- dpumesh args...]: starts dpumesh on $LCORES with
# --no-huge and its own file prefix; sets DP_PID DP_SOCK DP_TEL DP_PREFIX DP_LOG DP_NAME and
# returns once its control socket exists. DP_WRAP (an array, empty by default) goes before
# the binary (the forward suite's callgrind run); DP_START_S is how long it may take to start.
# An EAL `--lcores MAP` among the EAL args replaces `-l $LCORES` (the soak's workers:
# `--lcores 0@0,1@1,2@1`; EAL takes only one of the two).
DP_WRAP=()
DP_START_S=10
dp_start() {
  DP_NAME=$1; local cfg=$2; shift 2
  local eal=() opts=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do eal+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  opts=("$@")
  DP_PREFIX="perf-$DP_NAME-$$"
  DP_LOG="$RAW/$DP_NAME.dpumesh.log"
  DP_SOCK=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["node"]["control_socket"])' "$cfg")
  DP_TEL="$(rtdir "$DP_PREFIX")/dpdk_telemetry.v2"
  rm -f "$DP_SOCK"
  # a session of its own (setsid execs in place: $! stays dpumesh's pid): with autogroups,
  # a process's weight on a CPU follows its load there, so a dpumesh sharing the pods'
  # group, whose load is on the pods' CPU, got a tiny weight on its worker's CPU and waited
  # seconds behind other spinners whenever its lcore had slept (docs/benchmarks.md). A
  # deployment runs dpumesh apart from the pods too.
  local lc=(-l "$LCORES") a
  for a in "${eal[@]}"; do [[ $a != --lcores* ]] || lc=(); done
  setsid "${DP_WRAP[@]}" "$BIN/dpumesh" "${lc[@]}" --no-huge -m "$MEM" --no-pci --no-shconf --file-prefix "$DP_PREFIX" \
    "${eal[@]}" -- --config "$cfg" --stats-period 0 "${opts[@]}" > "$DP_LOG" 2>&1 &
  DP_PID=$!; track "$DP_PID"

  for _ in $(seq $((DP_START_S * 20))); do
    [ -S "$DP_SOCK" ] && return 0
    kill -0 "$DP_PID" 2>/dev/null || break
    sleep 0.05
  done
  anomaly ERROR "$DP_NAME: dpumesh did not start (log: raw/$DP_NAME.dpumesh.log: $(tail -1 "$DP_LOG"))"
  return 1
}

# dp_stop: SIGINT, then its final counters go to raw/NAME.final; a non-zero exit or a
# crash is an ERROR.
dp_stop() {
  stop_pid "$DP_PID" INT "${DP_STOP_S:-}"
  if [ "$STOP_RC" -ne 0 ]; then
    anomaly ERROR "$DP_NAME: dpumesh exited with status $STOP_RC (raw/$DP_NAME.dpumesh.log)"
  fi
  grep -a '^final ' "$DP_LOG" > "$RAW/$DP_NAME.final" || true
  # every request gets one answer (docs/quota.md): a response the mesh dropped is a WARN in
  # every suite's summary
  local lost
  lost=$(num "$(grep -a '^final stage=sidecar' "$RAW/$DP_NAME.final" | tail -1)" responses_lost)
  [ "$lost" = 0 ] || anomaly WARN "$DP_NAME: sidecar responses_lost=$lost (raw/$DP_NAME.final)"
  # a request port RX could not even refuse (its message pool and the reserve both empty)
  local unrefused
  unrefused=$(num "$(grep -a '^final stage=port_rx' "$RAW/$DP_NAME.final" | tail -1)" reserve_empty)
  [ "${unrefused:-0}" = 0 ] || anomaly WARN "$DP_NAME: port RX reserve_empty=$unrefused: network requests dropped without an answer (raw/$DP_NAME.final)"
  # errors logged by dpumesh itself; not the memif PMD's notice that EAL has no multi-process
  # channel under --no-shconf (dpumesh is one process: memif works without it)
  local errs
  errs=$(grep -a -v -e '^final ' -e 'Failed to register mp action callback' "$DP_LOG" |
    grep -a -c -i -w -E 'error|failed|panic' || true)
  [ "${errs:-0}" -eq 0 ] || anomaly WARN "$DP_NAME: dpumesh logged $errs error line(s) (raw/$DP_NAME.dpumesh.log)"
  rmdir "$(rtdir "$DP_PREFIX")" 2>/dev/null || true
  rm -f "$DP_SOCK"
}

# pod NAME [VAR=value...] -- MODE ARGS...: starts dpumesh-pod in the background (output in
# raw/pod-NAME.log); POD_PID is its pid. POD_CPU pins it with taskset when set; POD_BIN
# names another dpumesh-pod (the overload suite's: the tree's own in a --baseline run).
pod() {
  local name=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  shift
  local pin=()
  [ -z "${POD_CPU:-}" ] || pin=(taskset -c "$POD_CPU")
  env "${envs[@]}" "${pin[@]}" "${POD_BIN:-$BIN/dpumesh-pod}" "$@" > "$RAW/pod-$name.log" 2>&1 &
  POD_PID=$!; track "$POD_PID"
}

# stages_busy JSON_SNAPSHOT: the sum of every stage's busy cycles in a tel.py get answer.
stages_busy() {
  python3 -c 'import json, sys; d = json.loads(sys.argv[1])["data"]["/dpumesh/stages"]; print(sum(d["busy_cycles"]))' "$1"
}

# cpu_window OUT DELAY SECONDS ROLE=PID...: snapshots of /proc CPU (user, kernel; every
# thread) DELAY s from now and SECONDS s later, to OUT, in the background (CPU_WIN_PID), so
# that it brackets a client's measured window. perf/lib/proccpu.py; roles: dpumesh, pod*,
# client* (summed as the pods), or another name (testpmd).
cpu_window() {
  local out=$1 delay=$2 secs=$3; shift 3
  python3 "$ROOT/perf/lib/proccpu.py" window "$delay" "$secs" "$out" "$@" &
  CPU_WIN_PID=$!; track "$CPU_WIN_PID"
}

# cpu_secs SECONDS WARMUP: the /proc window next to a client that runs SECONDS and measures
# after WARMUP: 75% of SECONDS - WARMUP, so that it ends while the client still runs (its own
# window starts a little after the registration cpu_window waits for); the per-unit figures
# scale by the rate, not the count.
cpu_secs() { awk -v s="$1" -v w="$2" 'BEGIN { printf "%.3f", (s - w) * 0.75 }'; }

# cpu_words FILE RATE: key=value words from a cpu_window file, per unit at RATE units/s.
cpu_words() { python3 "$ROOT/perf/lib/proccpu.py" delta "$1" "$2" 2>/dev/null || true; }

# profile_window SUITE TAG DELAY SECONDS [PODS]: when profiling is on (run.sh --profile) and
# SUITE has no profile yet, `perf record -g` on dpumesh ($DP_PID) from DELAY s from now (from
# when PODS pods are registered) for SECONDS s, in the background; profile_wait then reduces it to raw/profile-SUITE.* and
# profile.csv (the top symbols of each stage, perf/lib/profile.py). A suite calls it on the
# one measured window it wants profiled (see PROFILE_AT in the suites).
PROFILE_PID=""
profile_window() {
  local suite=$1 tag=$2 delay=$3 secs=$4 pods=${5:-0}
  [ "${PROFILE:-0}" = 1 ] && [ -n "${PERF_BIN:-}" ] || return 0
  [ ! -e "$RAW/profile-$suite.txt.gz" ] && [ -z "$PROFILE_PID" ] || return 0
  local at="PROFILE_AT_$suite"
  [ -z "${!at:-}" ] || [ "${!at}" = "$tag" ] || return 0
  PROFILE_SUITE=$suite PROFILE_TAG=$tag
  PROFILE_DATA="$WORK/profile-$suite.data"
  ( [ "$pods" = 0 ] || tel wait "$DP_TEL" /dpumesh/pods pod_id "$pods" 60 > /dev/null 2>&1 || true
    sleep "$delay"
    # DPUMESH_PERF_PROFILE_ALL=1: every CPU (the pods and the client beside dpumesh)
    local who=(-p "$DP_PID")
    [ "${DPUMESH_PERF_PROFILE_ALL:-0}" = 1 ] && who=(-a)
    exec "$PERF_BIN" record -F "${PROFILE_FREQ:-999}" -g "${who[@]}" \
      -o "$PROFILE_DATA" -- sleep "$secs" ) > "$RAW/profile-$suite.record.log" 2>&1 &
  PROFILE_PID=$!; track "$PROFILE_PID"
}

profile_wait() {
  [ -n "$PROFILE_PID" ] || return 0
  wait "$PROFILE_PID" 2>/dev/null || true
  PROFILE_PID=""
  if [ ! -s "$PROFILE_DATA" ]; then
    anomaly WARN "profile $PROFILE_SUITE: perf record wrote nothing (raw/profile-$PROFILE_SUITE.record.log)"
    return 0
  fi
  "$PERF_BIN" script -i "$PROFILE_DATA" -F comm,tid,ip,sym,dso > "$WORK/profile.script" 2> /dev/null ||
    anomaly WARN "profile $PROFILE_SUITE: perf script failed"
  python3 "$ROOT/perf/lib/profile.py" "$WORK/profile.script" "$PROFILE_SUITE" "$PROFILE_TAG" \
    "$RESULTS/profile.csv" "${PROFILE_TOP:-8}" >> "$RAW/profile-$PROFILE_SUITE.record.log" 2>&1 ||
    anomaly WARN "profile $PROFILE_SUITE: profile.py failed (raw/profile-$PROFILE_SUITE.record.log)"
  # what stays: perf report's text (flat, self time) and the data, compressed; the script
  # output is rebuilt from the data when wanted
  "$PERF_BIN" report -i "$PROFILE_DATA" --stdio --no-children -g none --percent-limit 0.2 \
    2> /dev/null | gzip -c > "$RAW/profile-$PROFILE_SUITE.txt.gz"
  gzip -c "$PROFILE_DATA" > "$RAW/profile-$PROFILE_SUITE.data.gz"
  rm -f "$PROFILE_DATA" "$WORK/profile.script"
}

# rss_kb PID and pss_kb PID: resident and proportional set size in KiB.
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
pss_kb() { awk '/^Pss:/ { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0; }
