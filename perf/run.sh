#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The benchmark suite's one entry point (benchmarks, never tests; docs/benchmarks.md).
# Builds a Release tree of its own (build-perf/), runs the suites asked for, and writes
# perf/results/<date-time>/: raw data (CSV, JSON, logs), summary.md (dpumesh next to its
# baselines from the same run, ratios first) and PNG plots; prints the summary at the end.
# Exits 1 when any benchmark saw errors (they are listed in the summary), 2 on bad usage.
#
#   perf/run.sh                      # the default suites: replay forward pod2pod baselines scaling footprint ndr
#   perf/run.sh forward              # the Arm network path alone (relay to a peer) vs testpmd 5tswap
#   perf/run.sh ndr                  # NDR/PDR searches with dpumesh-replay: testpmd vs dpumesh
#   perf/run.sh pod2pod baselines    # some of them
#   perf/run.sh soak --duration 600  # the soak (on demand only)
#   perf/run.sh --help
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${DPUMESH_PERF_BUILD_DIR:-$ROOT/build-perf}
BIN=$BUILD/bin
DEFAULT_SUITES=(replay forward pod2pod baselines scaling footprint ndr)
ALL_SUITES=(replay forward pod2pod baselines scaling footprint soak ndr)

LCORES=0-1         # EAL -l of every dpumesh: main lcore + one worker lcore for all stages
MEM=1024           # EAL -m (MB, --no-huge)
P2P_SECONDS=2      # measured seconds per pod2pod/baselines point
P2P_WARMUP=0.3     # warm-up seconds before each such point
REPLAY_SECONDS=3   # measured seconds per replay run
SOAK_SECONDS=600
out=""
skip_build=0

usage() {
  cat <<USAGE
Usage: perf/run.sh [options] [suite...]
Suites: ${ALL_SUITES[*]} (default: ${DEFAULT_SUITES[*]}; soak only when named)
  --duration S     soak length in seconds (default $SOAK_SECONDS)
  --seconds S      measured seconds per pod2pod/baselines/scaling point (default $P2P_SECONDS)
  --replay-seconds S  measured seconds per replay run (default $REPLAY_SECONDS)
  --lcores A-B     EAL -l of every dpumesh and testpmd: the main lcore, then the worker
                   lcore that runs every stage (default $LCORES; pods run on the main one)
  --out DIR        results directory (default perf/results/<date-time>)
  --no-build       use build-perf/ as it is
Environment: DPUMESH_PERF_BUILD_DIR (default build-perf/), DPUMESH_JOBS (default 2).
USAGE
}

suites=()
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) SOAK_SECONDS=$2; shift 2 ;;
    --seconds) P2P_SECONDS=$2; shift 2 ;;
    --replay-seconds) REPLAY_SECONDS=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --lcores) LCORES=$2; shift 2 ;;
    --no-build) skip_build=1; shift ;;
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
if [ "$skip_build" = 0 ]; then
  progress "build: scripts/setup.sh, then Release into ${BUILD#"$ROOT"/}"
  bash "$ROOT/scripts/setup.sh" > "$RAW/setup.log" 2>&1
  cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDPUMESH_TESTS=OFF > "$RAW/build.log" 2>&1
  cmake --build "$BUILD" -j "${DPUMESH_JOBS:-2}" --target dpumesh dpumesh-pod dpumesh-pcapgen \
    dpumesh-dma-bench dpumesh-http-load dpumesh-http-echo dpumesh-replay >> "$RAW/build.log" 2>&1 ||
    { tail -20 "$RAW/build.log"; echo "run.sh: build failed (${RAW#"$ROOT"/}/build.log)" >&2; exit 1; }
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
  echo "commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$ROOT" diff --quiet HEAD 2>/dev/null || echo '+dirty')"
  echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "suites=${suites[*]}"
  echo "p2p_seconds=$P2P_SECONDS replay_seconds=$REPLAY_SECONDS"
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
