// SPDX-License-Identifier: BSD-3-Clause
// The port TX stage: frames the sidecar built (Case 1 out, replies to the network) leave
// through a port queue.
//
// The sidecar is the only producer of each stage's input ring, the stage its only consumer,
// so the sidecar and port TX can run on different lcores (or the same one). A burst the
// NIC cannot take at once stays in the stage and is retried on the next polls; after
// `give_up_ms` of polls without progress it is dropped and counted (a dead link must not
// hold mbufs - and with them zero-copy pod buffers - for ever). The bound is time, not a
// count of polls: a peer descheduled for a while (a memif client on a loaded machine) must
// not lose answers it reads a moment later (docs/overload.md, "One answer for every
// request: the soak").
#pragma once

#include <cstdint>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpumesh/common/counter.h"
#include "dpumesh/lcore/runner.h"

namespace dpumesh::port {

struct alignas(64) tx_stats {
	counter frames;      /**< handed to the NIC */
	counter bytes;       /**< handed to the NIC, L2 */
	counter stalls;      /**< polls where the NIC took nothing of a waiting burst */
	counter dropped;     /**< frames given up after give_up_ms without progress */
};

struct tx_ctx {
	static constexpr unsigned burst = 32;
	/** Longer than a request's default deadline (2 s): the peer then lost nothing it
	 * could still have been answered with. */
	static constexpr unsigned give_up_ms = 3000;
	static constexpr unsigned max_bursts = 8; /**< per poll, while the NIC takes whole bursts */
	uint16_t port = 0;
	uint16_t queue = 0;
	rte_ring *in = nullptr; /**< rte_mbuf* from the sidecar */
	tx_stats stats;
	rte_mbuf *held[burst];
	unsigned nb_held = 0;
	uint64_t stalled = 0; /**< TSC of the first poll without progress; 0: none */
	/** Frees what is held (shutdown, after the stage stopped). */
	~tx_ctx();
};

/** The stage's poll function (lcore::poll_fn). */
uint16_t tx_poll(void *arg) noexcept;

inline lcore::stage_def tx_stage(tx_ctx &ctx)
{
	return {"port_tx", &tx_poll, &ctx};
}

} // namespace dpumesh::port
