#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Case 3 benchmark, kept for its name: now the pod2pod suite of perf/run.sh (pod-to-pod
# round trips by body size, outstanding requests and DMA backend, memcpy alongside).
#   perf/case3.sh [perf/run.sh options]     == perf/run.sh pod2pod [options]
exec "$(dirname "${BASH_SOURCE[0]}")/run.sh" pod2pod "$@"
