// SPDX-License-Identifier: BSD-3-Clause
// The outbox: commands on their way to the DPA threads' RX kernels.
//
// Owns one backlog per DPA thread (commands the thread's sidecar RX SQ had no room for,
// sent first on the next flush, so per-SQ order holds), the queues per destination pod of
// its own threads (dest_queue.h: deliveries that wait for room at their pod, in order) and
// the parking: retries that wait out their back-off. It never decides what a failed
// delivery means: unpark() hands back what is due, marked when it has expired.
//
//   ob.send(thread, cmd);                       // SQ, or behind the thread's backlog
//   ob.park(cmd, now, give_up_at);              // false: parking full (answer it now)
//   ob.begin_unpark();
//   while (ob.room() && (n = ob.unpark(now, due, burst)))
//           for each: due[i].expired ? give up : ob.send(owner, due[i].cmd);
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "command.h"
#include "dest_queue.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/dpa/arm_side.h"
#include "dpumesh/ring/sq.h"

#include <rte_mempool.h>
#include <rte_ring.h>

namespace dpumesh::sidecar {

struct counters;

/** Frees what a command holds without carrying it out: its hbuf and a network body. */
void drop_command(const dpa_command &c, const dpa::arm_side &dpa) noexcept;

/**
 * One element of a sidecar shard's hand-off ring (MP/SC rte_ring of these): work that
 * another shard took but that belongs to this one. `command`: for one of this shard's DPA
 * threads (their sidecar RX SQs have one producer: the owning shard); `pod_message`,
 * `note`: a pod's response or an RX kernel's note about a request whose pending entry is
 * here (the token names the shard); `network`: a network answer whose correlation (a
 * token) is here.
 */
struct handoff_item {
	enum class kind : uint32_t { command, pod_message, note, network };
	kind what = kind::command;
	uint32_t thread = 0;    /**< command: the DPA thread */
	dpa_command cmd;        /**< command */
	sw_descriptor desc{};   /**< pod_message, note: as dequeued from the DPA thread */
	void *msg = nullptr;    /**< network: the port::rx_msg */
};

class outbox {
public:
	static constexpr uint32_t backlog_size = 4096;
	static constexpr uint32_t parking_size = 4096;
	static constexpr uint32_t response_reserve = 512; /**< parking slots only responses take */
	static constexpr uint32_t burst = 32;
	/** Default pool of the per-destination queues, and one destination's share of it. */
	static constexpr uint32_t queue_entries = 8192;
	static constexpr uint32_t queue_share = 1024;

	/** A parked delivery whose time has come. */
	struct due {
		dpa_command cmd;
		bool expired = false; /**< past its give-up time: never delivered */
	};

	/**
	 * @param to_dpa each DPA thread's sidecar RX SQ (producer side), by thread
	 * @param dpa the backend seam: where the hbufs of dropped commands go back
	 */
	/**
	 * @param remote by thread: nullptr where to_dpa[thread] is this outbox's to produce
	 *        to; else the hand-off ring of the shard that owns the thread (commands for
	 *        it go there as handoff_item::kind::command, in order, behind the backlog)
	 */
	/**
	 * @param q_entries, q_share the per-destination queues' pool, and how many new
	 *        requests one destination's queue may hold
	 */
	outbox(std::vector<dpumesh_sq *> to_dpa, const dpa::arm_side *dpa, uint64_t tsc_hz,
	       counters &stats, std::vector<rte_ring *> remote = {},
	       uint32_t q_entries = outbox::queue_entries, uint32_t q_share = outbox::queue_share);
	~outbox();
	outbox(const outbox &) = delete;
	outbox &operator=(const outbox &) = delete;

	/** Sends a command to a thread: at once, or behind what waits (dropped, counted, when
	 *  the backlog is full, which room() keeps from happening). */
	void send(unsigned thread, const dpa_command &c) noexcept;
	/** Moves backlogged commands to their SQs, in order. */
	void flush() noexcept;
	/** The time of the stage's pass (TSC): what a request's deadline is counted from as
	 *  it goes to the DPA. */
	void set_now(uint64_t now) noexcept { _now = now; }
	/** Free entries in the fullest backlog. */
	uint32_t free() const noexcept;
	/** The threads commands were put on since the last call, a bit each (then cleared):
	 *  the backend wakes those RX kernels once per poll (arm_side_ops::service). */
	uint32_t take_posted() noexcept
	{
		const uint32_t p = _posted;
		_posted = 0;
		return p;
	}
	/** Room for a burst of input that makes new work (each input makes at most 3 commands,
	 *  and notifications keep a reserve). */
	bool room() const noexcept { return _backlogged == 0 || free() >= 6 * burst; }
	/** Room for a burst of notifications. */
	bool note_room() const noexcept { return _backlogged == 0 || free() >= 3 * burst; }

	/**
	 * Parks a delivery until `retry_at` (0: a back-off that doubles per bounce, 20 us ..
	 * 1.28 ms); it expires at `give_up_at` or at the first give-up time it was ever
	 * parked with, whichever is sooner. Requests may not take the last response_reserve
	 * slots. false: no room (nothing parked).
	 */
	bool park(const dpa_command &c, uint64_t now, uint64_t give_up_at, uint64_t retry_at = 0) noexcept;
	uint32_t parked() const noexcept { return _park_count; }
	/** The queues per destination pod of this outbox's own threads. */
	dest_queues &queues() noexcept { return _queues; }
	const dest_queues &queues() const noexcept { return _queues; }
	/** Starts one pass over the parking: unpark() visits each parked delivery once. */
	void begin_unpark() noexcept { _to_visit = _park_count; }
	/** Up to max parked deliveries whose retry time has come, in parking order; those not
	 *  due yet go to the back. 0: the pass is over. */
	uint32_t unpark(uint64_t now, due *out, uint32_t max) noexcept;

	/** Every command still held here (teardown): fn(cmd). */
	template <typename Fn>
	void for_each_waiting(Fn &&fn) const
	{
		for (uint32_t i = 0; i < _park_count; i++)
			fn(_parking[(_park_head + i) % parking_size].cmd);
		_queues.for_each(fn);
		for (const auto &b : _backlogs)
			for (uint32_t i = 0; i < b->count; i++)
				fn(b->q[(b->head + i) % backlog_size]);
	}

private:
	struct backlog {
		dpa_command q[backlog_size];
		uint32_t head = 0, count = 0;
	};
	struct parked_cmd {
		dpa_command cmd;
		uint64_t retry_at;
		uint64_t give_up_at;
	};

	/** One command to its thread's SQ, or to the owning shard's hand-off ring. */
	bool put(unsigned thread, const dpa_command &c) noexcept;
	/** A request's header gets the time its request has left (deliver_by less now). */
	void stamp_deadline(const dpa_command &c) const noexcept;

	std::vector<dpumesh_sq *> _to_dpa;
	std::vector<rte_ring *> _remote;
	const dpa::arm_side *_dpa; /* where the hbufs of dropped commands go back */
	uint32_t _posted = 0;      /* threads put() posted to since take_posted(), a bit each */
	uint64_t _tsc_hz;
	uint64_t _ms_per_tsc; /* 2^32 ms a TSC tick (a multiply, not a division, a request) */
	uint64_t _now = 0;    /* set_now() */
	counters &_stats;
	std::vector<std::unique_ptr<backlog>> _backlogs;
	std::unique_ptr<parked_cmd[]> _parking;
	dest_queues _queues;
	uint32_t _park_head = 0, _to_visit = 0;
	gauge<uint32_t> _park_count; /* parked() is read by control */
	/* commands in every backlog together: 0 nearly always, and then room(), note_room()
	 * and flush() need not look at the backlogs (each one's count lies after its queue of
	 * 4096 commands: a page of its own per thread, which free() touched several times a
	 * poll) */
	uint32_t _backlogged = 0;
};

} // namespace dpumesh::sidecar
