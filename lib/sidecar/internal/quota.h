// SPDX-License-Identifier: BSD-3-Clause
// Quotas: how much of the node's shared resources one tenant (a pod, a network address) holds.
//
// A request holds a pending-table entry and a DPU header buffer from the moment it is opened
// until its answer is on its way; an answer that waits for its requester's RX room holds an
// hbuf and the responder's TX buffers. Each pod may hold at most `requests_per_pod` of
// these (pending requests it asked plus answers waiting at its queue), each network address
// `requests_per_source` pending requests (per sidecar shard); what is over is refused at
// once, and counted against the offender. At most `answers_per_pod` answers wait for one
// pod's RX room, each at most `answer_wait_ms`; once a pod has taken nothing for
// `rx_stall_ms`, its answers (waiting and new) and its new requests are refused at once (the
// responders' buffers go back): a pod that never drains its RX cannot hold the mesh.
// docs/quota.md.
//
//   quota q(limits, tsc_hz);
//   table.set_quota(&q);                      // the table charges and releases every entry
//   if (!q.pod_may_ask(handle, waiting, stalled)) refuse it (TX completion status POLICY);
//   if (!q.source_may_ask(endpoint)) 503 overloaded to the address;
//   q.answer_refused(handle);                 // an answer given up for want of RX room
//
// One writer: the sidecar shard's lcore. Control reads the counters (relaxed) at any time.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>

#include "dpumesh/abi/abi.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/pending/table.h"
#include "dpumesh/policy/retry.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/wire/frame_hdr.h"
#include "request_table.h" /* request_ctx, for release() */

namespace dpumesh::sidecar {


/** The limits (config: /pools/quota, docs/config.md). */
using quota_limits = config::pools_config::quota_config;

class quota {
public:
	/** Network addresses are counted in this many buckets (by a hash of the address). */
	static constexpr uint32_t nb_sources = 1024;
	static_assert(nb_sources <= UINT16_MAX, "a bucket fits request_ctx::source");

	quota(const quota_limits &l, uint64_t tsc_hz) noexcept;

	/* ---- the data path (the shard's lcore) ---- */

	/** Whether the pod `handle` may open one more request, with `waiting` answers for it
	 *  in its destination queue, its RX stalled for `stalled_tsc` (dest_queues::
	 *  stalled_for); false: refused, counted against it. */
	bool pod_may_ask(uint32_t handle, uint32_t waiting, uint64_t stalled_tsc) noexcept;
	/** Whether a pod whose RX took nothing for `stalled_tsc` is past rx_stall_ms. */
	bool stalled(uint64_t stalled_tsc) const noexcept { return stalled_tsc >= _rx_stall; }
	/** rx_stall_ms in TSC cycles (dest_queues::next gives such a pod's answers up). */
	uint64_t rx_stall_tsc() const noexcept { return _rx_stall; }
	/** Whether the network address `ep` may open one more request; false: refused.
	 *  `bucket` (if given) gets its bucket, for the request's request_ctx::source. */
	bool source_may_ask(const wire::endpoint &ep, uint16_t *bucket = nullptr) noexcept;
	/** The same for an address whose bucket the caller has (bucket_of(ep), kept from the
	 *  message's intake: port::rx_msg::source_bucket). Inline: the request path's check. */
	bool source_may_ask(uint32_t bucket, const wire::endpoint &ep) noexcept
	{
		source_tenant &t = _sources[bucket];
		if (t.held() < _limits.requests_per_source) [[likely]]
			return true;
		t.note(ep);
		t.refused.inc();
		return false;
	}
	/** A request opened / ended (the request table calls these for every entry).
	 *  `requester`: a network origin's address where the caller has it (nullptr: the
	 *  context's copy, which open() has just written: read back at once, it stalled on
	 *  store forwarding). */
	void charge(const pending::entry &e, const request_ctx &c,
		    const wire::endpoint *requester = nullptr) noexcept;
	/** charge() of a request from the network address `requester` whose bucket (its
	 *  request_ctx::source) the caller has: inline, where requests are opened. */
	void charge_source(uint32_t bucket, const wire::endpoint &requester, uint64_t now) noexcept
	{
		source_tenant &t = _sources[bucket];
		t.note(requester);
		t.charge(now, _window);
	}
	/** What an entry held goes back (it was closed or expired). Inline (below): in the
	 *  deadline sweep (request_table::expire()), out of line its two calls were ~20
	 *  instructions a 504. */
	inline void release(const pending::entry &e, const request_ctx &c) noexcept;
	/**
	 * The retry budget of the request's origin (its pod, or its network address's bucket):
	 * every request it opens counts there, so one origin's retries come out of its own
	 * requests, not out of what other origins asked of the same service. nullptr: an
	 * origin without a budget of its own (the node itself). docs/quota.md.
	 */
	policy::retry_budget *origin_budget(const pending::entry &e, const request_ctx &c) noexcept;
	/** An answer to pod `handle` was given up: no RX room in time. */
	void answer_refused(uint32_t handle) noexcept;
	/** A request to pod `handle` was refused for want of room there (dest_full: its queue
	 *  at its share, or it waited past its give-up time): counted against the destination. */
	void dest_refused(uint32_t handle) noexcept;
	/** The TSC by which an answer must have found room at its requester. */
	uint64_t answer_give_up(uint64_t now) const noexcept { return now + _answer_wait; }

	/* ---- control (any thread, relaxed reads) ---- */

	/** Pod pod_id's use, if its counters are the current generation `handle`'s. */
	quota_usage pod(uint32_t handle) const noexcept;
	/** Network bucket b's use, and the last address counted there (*ep). */
	quota_usage source(uint32_t b, wire::endpoint *ep) const noexcept;
	const quota_limits &limits() const noexcept { return _limits; }

	/** The bucket of a network address (inline: net_sched::push() hashes every request's). */
	static uint32_t bucket_of(const wire::endpoint &ep) noexcept
	{
		/* the address only: one host's many ports are one tenant */
		uint64_t a, b;
		std::memcpy(&a, ep.ip, 8);
		std::memcpy(&b, ep.ip + 8, 8);
		/* splitmix64's finalizer over both halves: every address bit reaches the bucket
		 * (an IPv4 address sits in the top bytes of b, which a plain product leaves out
		 * of the low bits) */
		uint64_t x = a ^ (b * 0x9e3779b97f4a7c15ull);
		x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
		x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
		x ^= x >> 31;
		return static_cast<uint32_t>(x % nb_sources);
	}

private:
	struct tenant {
		/* single writer (relaxed load + store), as dpumesh::counter */
		std::atomic<uint32_t> in_flight{0}, peak{0};
		counter refused, answers_refused;
		policy::retry_budget retries; /* the data path's only */
		void charge(uint64_t now, uint64_t window) noexcept
		{
			retries.note_request(now, window);
			const uint32_t n = in_flight.load(std::memory_order_relaxed) + 1;
			in_flight.store(n, std::memory_order_relaxed);
			if (n > peak.load(std::memory_order_relaxed))
				peak.store(n, std::memory_order_relaxed);
		}
		void release() noexcept
		{
			const uint32_t n = in_flight.load(std::memory_order_relaxed);
			in_flight.store(n ? n - 1 : 0, std::memory_order_relaxed);
		}
		uint32_t held() const noexcept { return in_flight.load(std::memory_order_relaxed); }
		quota_usage read() const noexcept
		{
			return {in_flight.load(std::memory_order_relaxed), refused.get(),
				answers_refused.get(), peak.load(std::memory_order_relaxed)};
		}
	};
	struct pod_tenant : tenant {
		std::atomic<uint32_t> handle{0}; /**< generation the refusal counters are for */
		counter dest_refused;            /**< requests to it refused: no room (dest_full) */
	};
	struct source_tenant : tenant {
		/* the last address counted here (its 16 bytes; control may see the halves of
		 * two addresses that share the bucket) */
		std::atomic<uint64_t> last_lo{0}, last_hi{0};
		void note(const wire::endpoint &ep) noexcept
		{
			uint64_t lo, hi;
			std::memcpy(&lo, ep.ip, 8);
			std::memcpy(&hi, ep.ip + 8, 8);
			last_lo.store(lo, std::memory_order_relaxed);
			last_hi.store(hi, std::memory_order_relaxed);
		}
	};

	pod_tenant &pod_of(uint32_t handle) noexcept;
	/* the bucket of a request's network origin: the one it opened with, else hashed */
	source_tenant &source_of(const request_ctx &c) noexcept;

	quota_limits _limits;
	uint64_t _answer_wait;
	uint64_t _rx_stall;
	uint64_t _window; /* the origins' retry budgets' window: a second, in TSC ticks */
	std::array<pod_tenant, DPUMESH_MAX_PODS> _pods;
	std::array<source_tenant, nb_sources> _sources;
};

inline void quota::release(const pending::entry &e, const request_ctx &c) noexcept
{
	if (e.origin.type == pending::party::kind::pod)
		_pods[DPUMESH_HANDLE_POD_ID(e.origin.pod_handle)].release();
	else if (e.origin.type == pending::party::kind::peer)
		(c.source < nb_sources ? _sources[c.source] : source_of(c)).release();
}

} // namespace dpumesh::sidecar
