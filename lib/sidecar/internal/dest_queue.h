// SPDX-License-Identifier: BSD-3-Clause
// Head-of-line queues per destination pod: deliveries that wait for room at their pod, in
// the order they were sent, in one fixed pool (docs/ordering.md).
//
// The RX kernel holds a pod back once a delivery to it finds no room: it gives that one
// and every later one back (DEST_FULL) until the Arm sends the first again marked RESUME.
// These queues keep the Arm's side of that: what came back (in the order it came back,
// ahead of what was never sent) and what was sent since (behind), and when the pod may be
// tried again.
//
//   dest_queues q(4096, 1024, response_reserve, tsc_hz);
//   switch (q.admit(cmd, give_up)) { send: to the SQ; queued: waits; refused: answer it }
//   q.bounced(cmd, give_up, now);            // a DEST_FULL note (false: refused)
//   q.outcome(dst);                          // a RESUME/NOTIFY note, not "full"
//   n = q.next(now, out, max, stall);        // what to send (resume/notify) or give up
//
// Once a resumed delivery is in, the queue goes in windows (2, 4, ... 256 deliveries) whose
// last is marked NOTIFY; the next window goes when it is in. A pod that fills again gives
// back at most one window, not the whole queue.
#pragma once

#include <cstdint>
#include <memory>

#include "command.h"
#include "dpumesh/abi/abi.h"
#include "dpumesh/common/counter.h"

namespace dpumesh::sidecar {

class dest_queues {
public:
	/** refused_network: a network request over limit_network_requests' bound (the others
	 *  fired first: the destination's share, the pool's reserve). */
	enum class verdict { send, queued, refused, refused_network };

	/** A command that leaves a queue: sent now (resume set on the first one after a hold),
	 *  or past its give-up time (never delivered: answer it). */
	struct out {
		dpa_command cmd;
		bool expired = false;
	};

	/**
	 * @param entries the pool all queues share
	 * @param per_destination how many new requests one destination's queue may hold
	 * @param response_reserve entries of the pool only responses and bounced deliveries take
	 * @param tsc_hz for the back-off before a held-back destination is tried again
	 */
	dest_queues(uint32_t entries, uint32_t per_destination, uint32_t response_reserve,
		    uint64_t tsc_hz);

	/** A new delivery: `send` when nothing waits for its destination, else queued behind
	 *  (`refused` when the destination's share or the pool is used up). */
	verdict admit(const dpa_command &c, uint64_t give_up_at) noexcept;
	/** A delivery the RX kernel gave back for want of room: queued ahead of what was never
	 *  sent (behind what came back before it), the destination held back and tried again
	 *  after a back-off. false: the pool is full, or `keep` is false (the caller refuses
	 *  it): the destination is held back all the same, and answer it. */
	bool bounced(const dpa_command &c, uint64_t give_up_at, uint64_t now,
		     bool keep = true) noexcept;
	/** The RESUME delivery's, or a window's NOTIFY delivery's, outcome was not "full":
	 *  more of the queue may go (a window twice as large). */
	void outcome(uint32_t dst) noexcept;
	/** Up to max commands that leave their queues now, destinations taken round robin.
	 *  A pod that has taken nothing for `answer_stall` (stalled_for) has the answers at
	 *  the head of its queue given up (expired) at once: it does not drain its RX. */
	uint32_t next(uint64_t now, out *o, uint32_t max, uint64_t answer_stall = UINT64_MAX) noexcept;

	/**
	 * A delivery admit() said `send` for: true when it must go marked NOTIFY, as a probe. A
	 * pod whose whole queue was given up (it took nothing) is suspect: its next delivery
	 * reports back, and what follows waits for that outcome; until a delivery gets in, its
	 * stall clock (stalled_for) keeps running across the probes.
	 */
	bool probe(uint32_t dst) noexcept;
	/**
	 * At most `n` network requests (bodies in port RX's received mbufs, each holding an
	 * rx_msg) wait in all queues together; beyond, a network request that would wait is
	 * refused (admit) or not kept (bounced), and answered 503 dest_full: port RX's
	 * messages are not all parked here (docs/overload.md, "A reserve at port RX").
	 */
	void limit_network_requests(uint32_t n) noexcept { _net_limit = n; }
	/** Network requests waiting in the queues now. */
	uint32_t network_requests() const noexcept { return _net_requests; }
	/** Whether c is a network request and the queues hold their bound of those (bounced()
	 *  then keeps it not). */
	bool network_full(const dpa_command &c) const noexcept
	{
		return network_request(c) && _net_requests >= _net_limit;
	}
	/** Whether a new delivery to dst would wait (its give-up time is needed then). */
	bool waits(uint32_t dst) const noexcept
	{
		const dest &d = _dest[DPUMESH_HANDLE_POD_ID(dst)];
		return d.count != 0 || d.st == state::resuming || d.st == state::probing;
	}
	uint32_t used() const noexcept { return _used; }
	/** Destinations with a queue or held back. */
	uint32_t active() const noexcept { return _nb_active; }
	uint32_t queued(uint32_t pod_id) const noexcept
	{
		return _dest[pod_id % DPUMESH_MAX_PODS].count;
	}
	/** How long the pod has taken nothing: since a delivery to it first found no room, while
	 *  every resume since found none either (0 when it takes deliveries). quota.h. */
	uint64_t stalled_for(uint32_t dst, uint64_t now) const noexcept
	{
		const dest &d = _dest[DPUMESH_HANDLE_POD_ID(dst)];
		return (d.st == state::held || d.st == state::resuming) && now > d.stalled_since
			       ? now - d.stalled_since
			       : 0;
	}
	/** Of those, answers (responses) waiting for the pod's RX room (quota.h). */
	uint32_t answers(uint32_t pod_id) const noexcept
	{
		return _dest[pod_id % DPUMESH_MAX_PODS].answers;
	}

	/**
	 * Takes up to max commands whose destination `gone(dst)` says has left out of the
	 * queues, in their order (each destination's in turn): they are not to be sent (the
	 * caller hands them on as the RX kernel's DEST_GONE would). The others keep their
	 * places. A destination this leaves with nothing queued is open again: a RESUME or
	 * NOTIFY delivery still out for it meets a queue that waits for nothing (its outcome()
	 * then changes nothing); one it took nothing from keeps its state. Returns n; fewer
	 * than max: nothing more is queued for a pod gone.
	 */
	template <typename Gone>
	uint32_t purge(Gone &&gone, out *o, uint32_t max) noexcept
	{
		uint32_t n = 0;
		for (uint32_t a = 0; a < _nb_active && n < max; a++) {
			dest &d = _dest[_active[a]];
			uint32_t prev = none;
			bool took = false;
			for (uint32_t i = d.head; i != none && n < max;) {
				const uint32_t after = _pool[i].next;
				if (gone(_pool[i].cmd.dst)) {
					o[n].cmd = _pool[i].cmd;
					o[n].expired = false;
					n++;
					unlink(d, prev, i);
					took = true;
				} else {
					prev = i;
				}
				i = after;
			}
			if (took && d.count == 0 && d.st != state::open) {
				d.st = state::open;
				d.suspect = false;
				d.bounces = 0;
				d.window = 2;
			}
		}
		return n;
	}

	/** Every command still queued (teardown). */
	template <typename Fn>
	void for_each(Fn &&fn) const
	{
		for (const dest &d : _dest)
			for (uint32_t i = d.head; i != none; i = _pool[i].next)
				fn(_pool[i].cmd);
	}

private:
	static constexpr uint32_t none = UINT32_MAX;
	enum class state : uint8_t {
		open,     /**< the kernel delivers to it; a queue left drains in order */
		held,     /**< the kernel gives deliveries back: wait, then resume */
		resuming, /**< the first was sent marked RESUME: wait for its outcome */
		probing,  /**< a window was sent, its last marked NOTIFY: wait for its outcome */
	};
	struct entry {
		dpa_command cmd;
		uint64_t give_up_at;
		uint32_t next;
	};
	struct dest {
		uint32_t head = none, tail = none;
		uint32_t bounced_tail = none; /**< last entry that came back (none: none did) */
		uint32_t count = 0;
		uint32_t answers = 0; /**< responses among count */
		uint32_t bounces = 0; /**< resumes that found it full again, for the back-off */
		uint32_t window = 2;  /**< deliveries the next window may send */
		uint64_t retry_at = 0;
		uint64_t stalled_since = 0; /**< when it was last held back after taking one */
		bool suspect = false; /**< its queue was given up: no delivery got in since */
		state st = state::open;
		bool listed = false;
	};

	uint32_t take(const dpa_command &c, uint64_t give_up_at) noexcept;
	uint32_t pop(dest &d) noexcept;
	void unlink(dest &d, uint32_t prev, uint32_t i) noexcept;
	void list(uint32_t pod_id) noexcept;

	std::unique_ptr<entry[]> _pool;
	uint32_t _free = none;
	gauge<uint32_t> _used; /* used() is read by control */
	const uint32_t _entries, _share, _reserve;
	const uint64_t _tsc_us;
	dest _dest[DPUMESH_MAX_PODS];
	uint8_t _active[DPUMESH_MAX_PODS];
	uint32_t _nb_active = 0, _cursor = 0;
	uint32_t _net_requests = 0, _net_limit = UINT32_MAX;
	static bool network_request(const dpa_command &c) noexcept
	{
		return c.network_body() && c.what == dpa_command::op::deliver_request;
	}
};

} // namespace dpumesh::sidecar
