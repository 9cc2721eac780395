// SPDX-License-Identifier: BSD-3-Clause
// What the DOCA tests' hand-driven pods share: draining an RX SQ, and the need-wakeup word
// built as libdpumesh builds it (an epoch above the ASLEEP and TX_DONE flags).
#pragma once

#include <cstdint>
#include <vector>

#include "dpumesh/abi/abi.h"
#include "dpumesh/podlayout/pod_layout.h"
#include "dpumesh/ring/sq.h"

namespace dpumesh::test {

/** Every descriptor waiting on `q`, in order. */
inline std::vector<sw_descriptor> take_all(dpumesh_sq &q)
{
	std::vector<sw_descriptor> v;
	sw_descriptor d;
	while (dpumesh_sq_dequeue_burst(&q, &d, 1) == 1)
		v.push_back(d);
	return v;
}

/**
 * A pod's need-wakeup word as lib/host/dpumesh.cc keeps it (docs/memory-model.md
 * "Doorbells"): a new epoch each time it falls asleep or wakes, ASLEEP while asleep, TX_DONE
 * only when a sender asked for its completions. `epoch` is the pod's counter.
 */
inline uint64_t rx_wait_word(uint64_t *epoch, bool *was_asleep, bool asleep)
{
	if (*was_asleep != asleep) {
		(*epoch)++;
		*was_asleep = asleep;
	}
	return (*epoch << DPUMESH_RX_WAIT_EPOCH_SHIFT) | (asleep ? uint64_t(DPUMESH_RX_WAIT_ASLEEP) : 0);
}

} // namespace dpumesh::test
