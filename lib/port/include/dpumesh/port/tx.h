// SPDX-License-Identifier: BSD-3-Clause
// The port TX stage: frames the sidecar built (Case 1 out, replies to the network) leave
// through a port queue.
//
// The sidecar is the only producer of each stage's input ring, the stage its only consumer,
// so the sidecar and port TX can run on different lcores (or the same one). A burst the
// NIC cannot take at once stays in the stage and is retried on the next polls. After
// `owe_after_ms` without progress (a peer descheduled for a while: a memif client on a
// loaded machine) the stage owes what it holds: the burst moves to a bounded backlog, the
// frames the sidecar queues after it follow it there, and the backlog is sent in order,
// oldest first, as soon as the NIC takes frames again. Nothing is dropped for slowness: only
// a backlog full for `give_up_ms` without progress (a dead link must not hold mbufs - and
// with them zero-copy pod buffers - for ever) or the node's stop drops frames, counted
// (docs/overload.md, "Port TX owes, it does not drop").
//
//   tx_ctx c;
//   c.port = port_id; c.in = ring;
//   if (auto st = c.set_backlog(1024); !st.is_ok()) ...
//   runner.add(lcore, tx_stage(c));
#pragma once

#include <cstdint>
#include <memory>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpumesh/common/counter.h"
#include "dpumesh/common/status.h"
#include "dpumesh/lcore/runner.h"

namespace dpumesh::port {

struct alignas(64) tx_stats {
	counter frames;       /**< handed to the NIC */
	counter bytes;        /**< handed to the NIC, L2 */
	counter stalls;       /**< polls where the NIC took nothing of a waiting burst */
	counter dropped;      /**< frames given up: the backlog full for give_up_ms without progress (or no backlog) */
	counter owed;         /**< frames kept in the backlog after owe_after_ms without progress */
	counter backlog_full; /**< times the backlog filled: newer frames wait on the sidecar's ring */
};

struct tx_ctx {
	static constexpr unsigned burst = 32;
	static constexpr unsigned max_bursts = 8; /**< per poll, while the NIC takes whole bursts */
	/** No progress for this long: the held burst and what follows it go to the backlog. */
	uint32_t owe_after_ms = 1000;
	/** The backlog full and no progress for this long: it is dropped (a dead link). Longer
	 *  than a request's default deadline (2 s). */
	uint32_t give_up_ms = 3000;
	uint16_t port = 0;
	uint16_t queue = 0;
	rte_ring *in = nullptr; /**< rte_mbuf* from the sidecar */
	tx_stats stats;
	rte_mbuf *held[burst];
	unsigned nb_held = 0;
	uint64_t stalled = 0; /**< TSC of the first poll without progress; 0: none */

	/** The backlog's capacity in frames: 0 (none: a stalled burst is dropped after
	 *  give_up_ms, as before) or a power of two. Setup only (allocates). */
	status set_backlog(uint32_t frames);
	uint32_t backlog_capacity() const noexcept { return _bl ? _bl_mask + 1 : 0; }
	/** Frames owed now (control path; exact on the stage's lcore). */
	uint32_t backlog_size() const noexcept { return _bl_tail - _bl_head; }
	/** Frees what is held (shutdown, after the stage stopped). */
	~tx_ctx();

private:
	friend uint16_t tx_poll(void *arg) noexcept;
	friend struct tx_backlog_ops;
	std::unique_ptr<rte_mbuf *[]> _bl;
	uint32_t _bl_mask = 0;
	gauge<uint32_t> _bl_head, _bl_tail; /* backlog_size() is read by control */
	bool _bl_full = false; /* counted once per filling */
};

/** The stage's poll function (lcore::poll_fn). */
uint16_t tx_poll(void *arg) noexcept;

inline lcore::stage_def tx_stage(tx_ctx &ctx)
{
	return {"port_tx", &tx_poll, &ctx};
}

} // namespace dpumesh::port
