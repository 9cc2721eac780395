#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ThreadSanitizer over the tests where threads share the node's state: worker lcores (DPA
# threads, sidecar shards; one worker and two), the control thread (registrar, retirements)
# and a thread reading counters beside them (a test's snapshot, the console, telemetry),
# with pods on threads or in processes; the node's ports with the test or a second node on
# their other side (net_ring, net_pcap, memif, af_packet); and the dpumesh, gateway and
# replay processes themselves. Builds those tests and the programs they start with
# -DDPUMESH_TSAN=ON and runs them with CTest; any report fails the test (or the process,
# which its test sees). CI runs it after the native suite (.ci/run).
#
#   scripts/tsan.sh [BUILD_DIR]          # default build-tsan
#
# DPDK's libraries are not instrumented: the hand-offs inside them (an mbuf through a PMD or
# a mempool driver) are annotated in this build (dpumesh/common/tsan.h), and what their own
# threads do is left out (tests/tsan.supp). What it cannot check, and why these tests are not
# here (docs/memory-model.md, "ThreadSanitizer"):
# - netflood_test and net_fair_test assert rates and latencies under a flood, which the
#   sanitizer's slowdown breaks (they ran without a report);
# - graph_test's Python pod cannot load a sanitized libdpumesh (static TLS);
# - telemetry_test's dpdk-dumpcap case puts the primary at a --base-virtaddr inside the
#   sanitizer's own memory;
# - a pod's region is mapped twice in one process (the pod's view and the DPU's), so what
#   orders the pod's SQ writes before the DPU's reads is invisible to it, which leaves the
#   one coro_test case whose threads meet only through that memory.
# It finds data races, not orders too weak between atomics, and does not model standalone
# fences: the need-wakeup pairs are wakeup_test's and dpa_watch_test's to check.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-tsan}

tests=(sq_stress_test region_test dma_test wire_test lcore_test sidecar_stage_test
       sidecar_components_test node_test wakeup_test dpa_watch_test dpa_rules_test case3_test
       isolation_test shards_test coro_test console_test telemetry_test external_test
       mesh_policy_test pod_mesh_test dpumesh_app_test replay_gen_test gateway_test)
runs=("${tests[@]}" node_test_w2 wakeup_test_w2 case3_test_w2 console_test_w2 telemetry_test_w2
      external_test_w2 mesh_policy_test_w2 dpumesh_app_test_w2
      tsan_handoff_ordered tsan_handoff_race)
werror=OFF
if [ "${CI:-}" = "true" ]; then werror=ON; fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPUMESH_TSAN=ON \
  -DDPUMESH_WERROR=$werror
# tsan_handoff_test (this build's only): what the annotations of DPDK's hand-offs order, and
# a race they must still let it see
cmake --build "$build" -j "$(nproc)" --target "${tests[@]}" tsan_handoff_test dpumesh-pod

# Every report fails its test (exit code 66 at the end, after all of them are printed).
# tests/tsan.supp: what is DPDK's own (each with its reason).
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 history_size=4 suppressions=$root/tests/tsan.supp"
# coro_test's two-worker case: its worker and progress threads are ordered only through
# the SQs in the pod's region, which the pod and the in-process mover reach at two
# different addresses (see above); telemetry_test's dpdk-dumpcap case (see above)
export GTEST_FILTER='-coro.two_workers_send_on_their_own_tx_sqs_without_loss_duplication_or_reordering:Capture.DumpcapWritesTheRequestedPackets'
regex="^($(IFS='|'; echo "${runs[*]}"))\$"
cd "$build"
ctest -R "$regex" -j "$(nproc)" --output-on-failure --timeout 900
