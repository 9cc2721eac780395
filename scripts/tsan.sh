#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ThreadSanitizer over the tests where the threads of one process share the node's state:
# worker lcores (DPA threads, sidecar shards; one worker and two), the control thread
# (registrar, retirements) and a thread reading counters beside them (a test's snapshot, the
# console), with pods on threads or in processes, and the dpumesh process itself (its
# console test). Builds those tests and the programs they start with -DDPUMESH_TSAN=ON and
# runs them with CTest; any report fails the test (or the process, which its test sees).
# CI runs it after the native suite (.ci/run).
#
#   scripts/tsan.sh [BUILD_DIR]          # default build-tsan
#
# What it cannot check, and why some tests are not here (docs/memory-model.md,
# "ThreadSanitizer"): DPDK's own libraries are not instrumented, so an mbuf handed from one
# thread to another through a PMD (net_ring, memif, pcap) or a mempool is a hand-off it
# cannot see (lcore_test, shards_test and net_fair_test report those mbufs' bytes; the
# other tests that start dpumesh with such a port and a peer are not run here either);
# telemetry_test's dpdk-dumpcap case puts the primary at a --base-virtaddr inside the
# sanitizer's own memory; and a pod's region is mapped twice in one process (the pod's view
# and the DPU's), so what orders the pod's SQ writes before the DPU's reads is invisible to
# it, which leaves the one coro_test case whose threads meet only through that memory.
# It finds data races, not orders too weak between atomics, and does not model standalone
# fences: the need-wakeup pairs are wakeup_test's and dpa_watch_test's to check.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build-tsan}

tests=(sq_stress_test sidecar_stage_test node_test wakeup_test case3_test isolation_test coro_test
       console_test)
runs=("${tests[@]}" node_test_w2 wakeup_test_w2 case3_test_w2 console_test_w2)
werror=OFF
if [ "${CI:-}" = "true" ]; then werror=ON; fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDPUMESH_TSAN=ON \
  -DDPUMESH_WERROR=$werror
cmake --build "$build" -j "$(nproc)" --target "${tests[@]}" dpumesh-pod

# Every report fails its test (exit code 66 at the end, after all of them are printed).
# tests/tsan.supp: what is DPDK's own (each with its reason).
export TSAN_OPTIONS="halt_on_error=0 exitcode=66 second_deadlock_stack=1 history_size=4 suppressions=$root/tests/tsan.supp"
# coro_test's two-worker case: its worker and progress threads are ordered only through
# the SQs in the pod's region, which the pod and the in-process mover reach at two
# different addresses (see above)
export GTEST_FILTER='-coro.two_workers_send_on_their_own_tx_sqs_without_loss_duplication_or_reordering'
regex="^($(IFS='|'; echo "${runs[*]}"))\$"
cd "$build"
ctest -R "$regex" -j "$(nproc)" --output-on-failure --timeout 900
