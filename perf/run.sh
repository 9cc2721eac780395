#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark suite's one entry point (benchmarks, never tests; docs/benchmarks.md).
# Builds a Release tree of its own (build-perf/), runs the suites asked for, and writes
# perf/results/<date-time>/: raw data (CSV, JSON, logs), summary.md (dpumesh next to its
# baselines from the same run, ratios first) and PNG plots; prints the summary at the end.
# Exits 1 when any benchmark saw errors (they are listed in the summary), 2 on bad usage.
#
#   perf/run.sh                      # the default suites: replay forward pod2pod baselines scaling footprint ndr overload
#   perf/run.sh forward              # the Arm network path alone (relay to a peer) vs testpmd 5tswap
#   perf/run.sh ndr                  # NDR/PDR searches with dpumesh-replay: testpmd vs dpumesh
#   perf/run.sh overload             # one service offered 10x its capacity (issue 16)
#   perf/run.sh pod2pod baselines    # some of them
#   perf/run.sh soak --duration 600  # the soak (on demand only)
#   perf/run.sh filldrain            # 1 M requests through destinations that fill and drain (on demand)
#   perf/run.sh --baseline main --repeat 2 pod2pod   # old (main) and new build side by side
#   perf/run.sh --help
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DPUMESH_PERF_BUILD_DIR:-$ROOT/build-perf}
BIN=$BUILD/bin
DEFAULT_SUITES=(replay forward pod2pod baselines scaling footprint ndr overload)
ALL_SUITES=(replay forward pod2pod baselines scaling footprint soak ndr overload filldrain)

LCORES=0-1         # EAL -l of every dpumesh: main lcore + one worker lcore for all stages
MEM=1024           # EAL -m (MB, --no-huge)
P2P_SECONDS=2      # measured seconds per pod2pod/baselines point
P2P_WARMUP=0.3     # warm-up seconds before each such point
REPLAY_SECONDS=3   # measured seconds per replay run
SOAK_SECONDS=600
out=""
skip_build=0
PROFILE=auto       # perf record -g per suite when perf is installed
INSTRUCTIONS=auto  # forward: seconds of a callgrind run per row (10 when valgrind is installed)
baseline=""
REPEAT=1
pass=()            # the options a --baseline run hands to each of its runs

usage() {
  cat <<USAGE
Usage: perf/run.sh [options] [suite...]
Suites: ${ALL_SUITES[*]} (default: ${DEFAULT_SUITES[*]}; soak and filldrain only when named)
  --duration S     soak length in seconds (default $SOAK_SECONDS)
  --seconds S      measured seconds per pod2pod/baselines/scaling point (default $P2P_SECONDS)
  --replay-seconds S  measured seconds per replay run (default $REPLAY_SECONDS)
  --lcores A-B     EAL -l of every dpumesh and testpmd: the main lcore, then the worker
                   lcore that runs every stage (default $LCORES; pods run on the main one)
  --out DIR        results directory (default perf/results/<date-time>)
  --no-build       use build-perf/ as it is
  --profile, --no-profile
                   perf record -g on dpumesh over one measured window per suite, a top-N
                   table per stage in the summary (default: on when perf is installed)
  --instructions S forward: one more dpumesh run per row under valgrind's callgrind, S
                   seconds; instructions per message per stage and the top functions,
                   exact between runs (default 10 when valgrind is installed; 0: none)
  --quick          a narrower matrix: pod2pod 64 B and 4 KiB x 1 and 64 outstanding on the
                   cpu DMA backend; replay smallest and 512B; scaling 1 and 16
  --baseline REV   build REV (git archive into /tmp, its own build-perf) and run every
                   suite asked for with the old and the new build alternately; summary.md
                   has new/old ratios per row and old/old noise (docs/benchmarks.md)
  --repeat N       with --baseline: old, new, old, new, ... N times each (default 1)
Environment: DPUMESH_PERF_BUILD_DIR (default build-perf/), DPUMESH_JOBS (default 2),
DPUMESH_PERF_P2P_SIZES, _P2P_WINDOWS, _P2P_BACKENDS, _REPLAY_CAPTURES, _SCALE_PODS,
_SCALE_SERVICES (space-separated lists narrowing a suite's matrix); DPUMESH_PERF_SCALE_RATE
(round trips/s of the scaling suite's paced points, default 10000, 0: none);
DPUMESH_PERF_SPIN_US (lcores.spin_us of every dpumesh; a build that knows the key);
DPUMESH_PERF_P2P_PIN (main: pod2pod's pods on the main lcore's CPU, the default; none:
they float); DPUMESH_PERF_PROFILE_AT_SCALING (the scaling point --profile records, as
DIMENSION-N: pods-paced-64; default the last pods point).
USAGE
}

suites=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) SOAK_SECONDS=$2; pass+=("$1" "$2"); shift 2 ;;
    --seconds) P2P_SECONDS=$2; pass+=("$1" "$2"); shift 2 ;;
    --replay-seconds) REPLAY_SECONDS=$2; pass+=("$1" "$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --lcores) LCORES=$2; pass+=("$1" "$2"); shift 2 ;;
    --no-build) skip_build=1; shift ;;
    --profile) PROFILE=1; pass+=("$1"); shift ;;
    --no-profile) PROFILE=0; pass+=("$1"); shift ;;
    --instructions) INSTRUCTIONS=$2; pass+=("$1" "$2"); shift 2 ;;
    --quick)
      pass+=("$1"); shift
      export DPUMESH_PERF_P2P_SIZES=${DPUMESH_PERF_P2P_SIZES:-"64 4096"}
      export DPUMESH_PERF_P2P_WINDOWS=${DPUMESH_PERF_P2P_WINDOWS:-"1 64"}
      export DPUMESH_PERF_P2P_BACKENDS=${DPUMESH_PERF_P2P_BACKENDS:-cpu}
      export DPUMESH_PERF_REPLAY_CAPTURES=${DPUMESH_PERF_REPLAY_CAPTURES:-"smallest 512B"}
      export DPUMESH_PERF_SCALE_PODS=${DPUMESH_PERF_SCALE_PODS:-"1 16"}
      export DPUMESH_PERF_SCALE_SERVICES=${DPUMESH_PERF_SCALE_SERVICES:-"1 16"} ;;
    --baseline) baseline=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *)
      [[ " ${ALL_SUITES[*]} " == *" $1 "* ]] || { echo "run.sh: unknown suite $1 (${ALL_SUITES[*]})" >&2; exit 2; }
      suites+=("$1"); shift ;;
  esac
done
[ ${#suites[@]} -gt 0 ] || suites=("${DEFAULT_SUITES[@]}")
[[ $LCORES =~ ^[0-9]+-[0-9]+$ ]] || { echo "run.sh: --lcores wants MAIN-WORKER, e.g. 0-1" >&2; exit 2; }
MAIN_CPU=${LCORES%-*}    # control lcore; pods are pinned here where a suite pins them
WORKER=${LCORES#*-}      # every dpumesh stage
[[ $REPEAT =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --repeat wants a positive number" >&2; exit 2; }

# perf: Debian's linux-perf installs /usr/bin/perf (a wrapper) and perf_<version>
PERF_BIN=""
for p in perf $(compgen -c perf_ 2>/dev/null | sort -Vr); do
  if command -v "$p" > /dev/null 2>&1 && "$p" version > /dev/null 2>&1; then PERF_BIN=$(command -v "$p"); break; fi
done
if [ "$PROFILE" = auto ]; then
  if [ -n "$PERF_BIN" ]; then PROFILE=1; else PROFILE=0; fi
elif [ "$PROFILE" = 1 ] && [ -z "$PERF_BIN" ]; then
  echo "run.sh: --profile needs perf (apt-get install -y linux-perf)" >&2; exit 2
fi

if [ "$INSTRUCTIONS" = auto ]; then
  if command -v valgrind > /dev/null 2>&1; then INSTRUCTIONS=10; else INSTRUCTIONS=0; fi
elif ! [[ $INSTRUCTIONS =~ ^[0-9]+$ ]]; then
  echo "run.sh: --instructions wants whole seconds (0: none)" >&2; exit 2
elif [ "$INSTRUCTIONS" != 0 ] && ! command -v valgrind > /dev/null 2>&1; then
  echo "run.sh: --instructions needs valgrind (apt-get install -y valgrind)" >&2; exit 2
fi

T0=$(date +%s)
RESULTS=${out:-$ROOT/perf/results/$(date +%Y-%m-%d-%H%M%S)}
RAW=$RESULTS/raw
mkdir -p "$RAW"
: > "$RESULTS/anomalies.txt"
WORK=$(mktemp -d)
PIDS=()
# shellcheck source=perf/lib/common.sh
. "$ROOT/perf/lib/common.sh"
for s in "${ALL_SUITES[@]}"; do
  # shellcheck disable=SC1090
  [ ! -f "$ROOT/perf/suites/$s.sh" ] || . "$ROOT/perf/suites/$s.sh"
done

cleanup() {
  trap - INT TERM EXIT
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'anomaly ERROR "interrupted"; cleanup; exit 130' INT TERM

progress "perf/run.sh: suites ${suites[*]} -> ${RESULTS#"$ROOT"/}"

# build_tree SRC BUILD LOG: the Release tree of the benchmarks, with frame pointers (perf
# record -g walks them), through ccache when it is installed.
build_tree() {
  local src=$1 bld=$2 log=$3 launcher=()
  if command -v ccache > /dev/null; then
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  # CCACHE_BASEDIR=/: paths relative to the build directory, so that two source trees at the
  # same depth (the worktree and the baseline in /tmp) share the cache
  CCACHE_BASEDIR=/ cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPUMESH_TESTS=OFF \
    "${launcher[@]}" -DCMAKE_C_FLAGS=-fno-omit-frame-pointer -DCMAKE_CXX_FLAGS=-fno-omit-frame-pointer \
    > "$log" 2>&1 &&
  CCACHE_BASEDIR=/ cmake --build "$bld" -j "${DPUMESH_JOBS:-2}" --target dpumesh dpumesh-pod dpumesh-pcapgen \
    dpumesh-dma-bench dpumesh-http-load dpumesh-http-echo dpumesh-replay >> "$log" 2>&1 ||
    { tail -20 "$log"; echo "run.sh: build of $src failed ($log)" >&2; return 1; }
}

if [ "$skip_build" = 0 ]; then
  progress "build: scripts/setup.sh, then Release into ${BUILD#"$ROOT"/}"
  bash "$ROOT/scripts/setup.sh" > "$RAW/setup.log" 2>&1
  build_tree "$ROOT" "$BUILD" "$RAW/build.log" || exit 1
fi

# --baseline REV: the same harness (this tree's perf/) runs REV's binaries and this tree's,
# alternately, each run in a results directory of its own; compare.py writes the summary.
if [ -n "$baseline" ]; then
  sha=$(git -C "$ROOT" rev-parse --verify "$baseline^{commit}" 2>/dev/null) ||
    { echo "run.sh: --baseline $baseline is not a commit" >&2; exit 2; }
  BASE_SRC=${DPUMESH_PERF_BASELINE_SRC:-/tmp/dpumesh-baseline-${sha:0:12}}
  if [ ! -f "$BASE_SRC/CMakeLists.txt" ]; then
    progress "baseline: git archive ${sha:0:12} -> $BASE_SRC"
    mkdir -p "$BASE_SRC"
    git -C "$ROOT" archive "$sha" | tar -x -C "$BASE_SRC"
  fi
  progress "baseline: Release build of ${sha:0:12} in $BASE_SRC/build-perf"
  build_tree "$BASE_SRC" "$BASE_SRC/build-perf" "$RAW/build-baseline.log" || exit 1
  new_commit="$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty')"
  echo "baseline=$baseline ${sha:0:12} new=$new_commit repeat=$REPEAT suites=${suites[*]}" > "$RESULTS/compare.txt"
  rc=0
  for r in $(seq "$REPEAT"); do
    for side in old new; do
      if [ "$side" = old ]; then b="$BASE_SRC/build-perf" c="${sha:0:12} ($baseline)"; else b="$BUILD" c="$new_commit"; fi
      progress "compare: run $r, $side build ($c)"
      # the overload suite's pods are always this tree's (the load generator, not the node)
      DPUMESH_PERF_POD_BIN=$BUILD/bin/dpumesh-pod \
      DPUMESH_PERF_BUILD_DIR=$b DPUMESH_PERF_COMMIT="$c" "$ROOT/perf/run.sh" --no-build \
        --out "$RESULTS/$side-$r" "${pass[@]}" "${suites[@]}" > "$RAW/$side-$r.log" 2>&1 || rc=1
    done
  done
  python3 "$ROOT/perf/lib/compare.py" "$RESULTS" "$REPEAT" || { echo "run.sh: compare.py failed" >&2; exit 1; }
  cat "$RESULTS/summary.md"
  echo
  echo "results: ${RESULTS}"
  [ "$rc" = 0 ] || echo "run.sh: a run saw errors (see each run's summary.md)" >&2
  exit "$rc"
fi

# The machine, once: the summary's header.
{
  echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host=$(hostname)"
  echo "cpu=$(lscpu | sed -n 's/^Model name:\s*//p' | head -1)"
  echo "cpus=$(nproc)"
  echo "os=$(sed -n 's/^PRETTY_NAME="\(.*\)"/\1/p' /etc/os-release)"
  echo "dpdk=$(pkg-config --modversion libdpdk 2>/dev/null || echo '?')"
  echo "haproxy=$(haproxy -v 2>/dev/null | head -1 | awk '{ print $3 }')"
  echo "commit=${DPUMESH_PERF_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty')}"
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "suites=${suites[*]}"
  echo "p2p_seconds=$P2P_SECONDS replay_seconds=$REPLAY_SECONDS"
  echo "profile=$PROFILE${PERF_BIN:+ ($PERF_BIN)}"
  echo "instructions_s=$INSTRUCTIONS"
} > "$RESULTS/machine.txt"
lscpu > "$RAW/lscpu.txt"

for s in "${suites[@]}"; do
  t=$(date +%s)
  progress "suite $s: start"
  "suite_$s" || anomaly ERROR "suite $s stopped early (status $?)"
  progress "suite $s: done in $(( $(date +%s) - t )) s"
done
echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$RESULTS/machine.txt"
echo "elapsed_s=$(( $(date +%s) - T0 ))" >> "$RESULTS/machine.txt"

progress "report: summary.md and plots"
python3 "$ROOT/perf/lib/report.py" "$RESULTS" || anomaly ERROR "report.py failed"
cat "$RESULTS/summary.md"
echo
echo "results: ${RESULTS}"
if grep -q '^ERROR' "$RESULTS/anomalies.txt"; then
  echo "run.sh: errors were seen (see Anomalies in the summary)" >&2
  exit 1
fi
