// SPDX-License-Identifier: BSD-3-Clause
// The port RX stage: receive bursts, validate mesh frames, reassemble whole messages.
//
// Per burst: rte_eth_rx_burst from one of its (port, queue) pairs, wire::parse_frame on
// every frame (L2/L3/L4 and the fragment header), then the lcore's own reassembler. A
// complete message is wrapped in an rx_msg (from a fixed mempool) and enqueued to the next
// stage's ring (the sidecar). Every frame that is not a valid mesh fragment is freed and
// counted under its wire::wire_drop reason; messages that cannot be handed on are counted
// as no_consumer / ring_full / msg_pool_empty. Reassembly timeouts run every few polls.
//
// A request that finds the message pool empty is not dropped: it takes an rx_msg from a
// small reserve only refusals may take (`reserve_pool`), its mbufs are freed, and the
// sidecar answers it 503 `overloaded` from the addresses kept (`refused_overloaded`); so is
// a request that finds `backlog_limit` messages waiting for the sidecar already. Refusals
// go on their own ring (`refusals`), which the sidecar takes every poll. Only a
// request that finds the reserve empty too is dropped (`reserve_empty`); an answer from the
// network that finds no rx_msg is dropped (`msg_pool_empty`) and its requester hears 504 at
// its deadline. The node sizes the ring to the sidecar to hold every rx_msg of both pools,
// so a message is never refused by the ring (docs/overload.md, "A reserve at port RX").
//
// With a service gate (service_gate.h, its sidecar shard's), a request's first frame is
// looked at before reassembly: its service is read from the L7 header
// (wire::l7_peek_service) and, when the shard has marked that service saturated, the frame
// is freed and a refusal (an rx_msg without a chain, `refusal` set) goes to the sidecar,
// which answers it 503 `saturated` without decoding anything (docs/overload.md). A request
// of several frames leaves a tombstone in the reassembler (wire::reassembler::refuse) that
// drops its later frames (`refused_frag`) and makes a repeat of its first frame no second
// refusal. A refused request of one frame is answered by port RX itself where it can
// (`answers`, rx_answer.h): its mbuf becomes the 503 and leaves on the port in the same
// poll, without the sidecar; what the port does not take goes the sidecar's way as above.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpumesh/common/counter.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/lcore/runner.h"
#include "dpumesh/port/rx_answer.h"
#include "dpumesh/port/service_gate.h"
#include "dpumesh/wire/frame.h"

namespace dpumesh::port {

/** Why port RX drops a frame: the wire parser's and reassembler's reasons. */
using rx_drop = wire::wire_drop;
inline const char *rx_drop_name(rx_drop d) { return wire::wire_drop_name(d); }
inline const char *rx_drop_help(rx_drop d) { return wire::wire_drop_help(d); }

/**
 * A reassembled message on its way to the sidecar. When the sidecar hands its body to the
 * DPA for delivery (Case 2), `body` takes over the chain (msg.chain becomes nullptr) and
 * the DPA releases the whole object with dpa::release_local_body().
 */
/** A request port RX refused at its first frame, for the sidecar to answer. */
enum class rx_refusal : uint8_t {
	none,      /**< a whole message */
	saturated, /**< its service is saturated (service_gate): msg has no chain */
	overloaded, /**< no rx_msg was left outside the reserve: msg has no chain */
	incomplete, /**< its reassembly timed out with its first frame held: msg has no chain */
};

struct rx_msg {
	dpa::local_body body; /**< first: the DPA's body handle is this object's address */
	wire::message msg;
	uint64_t rx_tsc;  /**< when its last fragment arrived */
	uint16_t port_id; /**< where it arrived */
	rx_refusal refusal; /**< none, or why port RX refused it (then msg.chain is nullptr) */
	uint32_t svc;       /**< refusal saturated: the gate's service index */
	rx_msg *sched_next; /**< the sidecar's link while it waits in its source's FIFO */
	/** The sidecar's: its sender's quota bucket, as its FIFO was chosen by (set by the
	 *  intake, stage::from_network_sources(), which every request from the network goes
	 *  through: net_sched::push(), or its run of one source): its request's quota check
	 *  and charge read it, not a second hash of the address. */
	uint16_t source_bucket;
};

struct alignas(64) rx_stats {
	counter frames;   /**< received */
	counter bytes;    /**< received, L2 */
	counter accepted; /**< frames that were valid mesh fragments */
	counter messages; /**< complete messages (and refusals) handed on */
	std::array<counter, static_cast<size_t>(rx_drop::count)> drops; /**< frames, by reason */
	counter no_consumer;    /**< messages with no next stage attached */
	counter ring_full;      /**< messages refused by the next stage's ring */
	counter msg_pool_empty; /**< answers (or, without a reserve, requests) dropped for want
				   of an rx_msg */
	counter refused_saturated; /**< requests refused at their first frame (service gate),
				      of one frame or of several */
	counter answered_saturated; /**< of refused_saturated: answered 503 by port RX itself,
				       out of the port (the rest: handed on to the sidecar) */
	counter answers_handed_on; /**< of refused_saturated: requests of one frame port RX
				      could answer (its port's queue is on this lcore) but handed
				      on to the sidecar: port TX held frames for the queue, the
				      queue did not take the answer, or it could not be made */
	counter refused_overloaded; /**< requests refused: the pool was empty (the reserve's
				       rx_msg), or backlog_limit messages waited */
	counter overloaded_backlog; /**< of refused_overloaded: backlog_limit messages waited
				       (the rest: the pool was empty) */
	counter refused_incomplete; /**< requests whose reassembly timed out with their first
				       frame held, handed on to be answered 408 */
	counter reserve_empty;      /**< requests dropped: not even the reserve had an rx_msg */
};

/** One instance per lcore that runs port RX; owns its reassembler. */
struct rx_ctx {
	static constexpr unsigned burst = 32;
	static constexpr unsigned expire_every = 64; /**< polls between timeout sweeps */
	struct queue {
		uint16_t port;
		uint16_t queue;
	};
	std::vector<queue> queues; /**< polled round-robin, one burst each per call */
	uint16_t mesh_port_be = 0;
	/** The node's addresses: a frame of a family the node has an address of must be sent
	 *  to it (a promiscuous port on a shared segment also sees other nodes' traffic). */
	std::optional<wire::endpoint> ip4, ip6;
	uint32_t max_message = 16u << 20;
	std::unique_ptr<wire::reassembler> reasm;
	rte_mempool *msg_pool = nullptr; /**< of rx_msg */
	/** rx_msgs only refusals take, when msg_pool is empty (nullptr: none, drop instead) */
	rte_mempool *reserve_pool = nullptr;
	rte_ring *next = nullptr;        /**< rx_msg* go here; nullptr: count and free */
	/** Refusals (rx_msg* with `refusal` set) go here; nullptr: on `next` with the rest. The
	 *  sidecar takes them every poll, also while whole messages wait on `next`. */
	rte_ring *refusals = nullptr;
	/** Messages on `next` at which a request is refused (overloaded) rather than queued
	 *  behind them; UINT32_MAX: no limit. */
	unsigned backlog_limit = UINT32_MAX;
	/** The sidecar shard's saturation flags (nullptr: no refusal at RX). Set before the
	 *  lcores start. */
	const service_gate *gate = nullptr;
	/** Its own answers to refused requests of one frame (nullptr: every refusal goes to
	 *  the sidecar). Set before the lcores start, where port TX of a port it polls runs on
	 *  this lcore. */
	std::unique_ptr<rx_answers> answers;
	rx_stats stats;
	unsigned next_queue = 0;
	unsigned polls = 0;
	/** A gap between two polls longer than stall_tsc is the lcore's own stall (descheduled,
	 *  or a back-off sleep): the reassembler's clock does not count it (reasm_clock()).
	 *  The node sets it from the lcores' longest sleep (stall_tsc_for); 0: 20 ms, set at
	 *  the first poll. */
	uint64_t stall_tsc = 0;
	static constexpr uint32_t min_stall_ms = 20;
	/** max(20 ms, twice the longest back-off sleep) in TSC cycles: a poll gap a sleeping
	 *  lcore makes by itself is never taken for a stall. */
	static uint64_t stall_tsc_for(uint32_t max_sleep_us) noexcept
	{
		const uint64_t us = std::max<uint64_t>(min_stall_ms * 1000ull, 2ull * max_sleep_us);
		return rte_get_tsc_hz() * us / 1000000;
	}
	uint64_t last_poll_tsc = 0;
	uint64_t stalled_tsc = 0; /**< the lcore's own stalls, summed */
};

/**
 * The reassembler's clock: the TSC less the lcore's own stalls. A message's frames the NIC
 * holds while the lcore was descheduled are not late, so a reassembly does not age then;
 * it times out only after timeout_ms of polls that could have seen its frames
 * (docs/overload.md, "A reassembly the node itself stalled"). Call once per poll.
 */
inline uint64_t reasm_clock(rx_ctx &c, uint64_t now) noexcept
{
	if (c.last_poll_tsc && now - c.last_poll_tsc > c.stall_tsc)
		c.stalled_tsc += now - c.last_poll_tsc;
	c.last_poll_tsc = now;
	return now - c.stalled_tsc;
}

/** The stage's poll function (lcore::poll_fn). */
uint16_t rx_poll(void *arg) noexcept;

/** Frees an rx_msg and its mbuf chain. */
void rx_msg_free(rx_msg *m) noexcept;
/** Frees n rx_msgs and their chains: the mbufs in one rte_pktmbuf_free_bulk(), the rx_msgs
 *  in one put per run of the same pool. */
void rx_msg_free_bulk(rx_msg *const *msgs, unsigned n) noexcept;

inline lcore::stage_def rx_stage(rx_ctx &ctx)
{
	return {"port_rx", &rx_poll, &ctx};
}

} // namespace dpumesh::port
