// SPDX-License-Identifier: BSD-3-Clause
// The Arm's pending-request table: matches responses to requests and times requests out.
//
// When the sidecar forwards a request it takes a slot and rewrites the request's req_id
// (towards a local pod) or the frame's correlation (towards a peer) to the slot's token.
// The answer must come back with that token, from the party the request went to, with the
// same step_id; anything else matches nothing and is dropped and counted. The origin's own
// (req_id, step_id) are restored on the response. A request with no answer by its
// deadline is handed to the expiry callback (which answers 504).
//
// One table per sidecar lcore, not thread-safe, no allocation after create: fixed slot
// array, free list, and a hashed timing wheel of 1 ms ticks for deadlines. The sidecar's
// request table (lib/sidecar/internal/request_table.h) keeps its own typed context per slot
// next to each entry (token & 0xffff).
//
//   table t(65536, tsc_hz);
//   uint32_t token = t.insert(entry, now + timeout);          // 0: table full
//   ...
//   entry *e = t.match(token, responder, step_id);    // nullptr: no match
//   ... restore e->origin_req_id, answer the origin ...
//   t.remove(token);
//   t.expire(now, [](uint32_t token, entry &e) { send 504 to e.origin; });
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace dpumesh::pending {

/** Who a request came from or went to. */
struct party {
	enum class kind : uint8_t { none, pod, peer };
	kind type = kind::none;
	uint32_t pod_handle = 0; /**< kind::pod: pod id + generation (abi.h pod handle) */
	uint16_t peer = 0;       /**< kind::peer: index into the node's peers */
	bool operator==(const party &o) const noexcept
	{
		return type == o.type && pod_handle == o.pod_handle && peer == o.peer;
	}
};

struct entry {
	party origin;              /**< who asked */
	party dest;                /**< who must answer */
	uint32_t origin_req_id;    /**< restored on the response */
	uint32_t step_id;          /**< must come back unchanged */
	uint64_t origin_correlation; /**< origin peer's correlation (Case 2 requests) */
	uint64_t deadline_tsc;
	uint64_t start_tsc;        /**< for latency histograms */
	uint32_t service;          /**< service index */
	uint16_t attempt;          /**< 0 first try, then retries */
	uint32_t route;            /**< sidecar: route metrics index in policy `version` */
	uint32_t version;          /**< sidecar: policy version the request was admitted under */
	uint32_t backoff_ms;       /**< sidecar: base delay before a retry */
	uint16_t retries_left;     /**< sidecar: retries this request may still take */
};

class table {
public:
	/**
	 * @param capacity slots (rounded up to a power of two, at most 65536)
	 * @param tsc_hz TSC frequency, for the 1 ms wheel ticks
	 */
	table(uint32_t capacity, uint64_t tsc_hz, uint32_t wheel_ticks = 4096);
	~table();
	table(const table &) = delete;
	table &operator=(const table &) = delete;

	/** Takes a slot; returns its token (never 0), or 0 when the table is full. */
	uint32_t insert(const entry &e) noexcept;

	/** The entry a response with this token from `responder` with `step_id` answers. */
	entry *match(uint32_t token, const party &responder, uint32_t step_id) noexcept;

	/** The entry behind a token, whoever asks (for retries and diagnostics). */
	entry *find(uint32_t token) noexcept;

	/** Frees a slot; the token stops matching. */
	void remove(uint32_t token) noexcept;

	/** Moves a live entry to a new deadline (retry). */
	void rearm(uint32_t token, uint64_t deadline_tsc) noexcept;

	/**
	 * Calls fn(token, entry) for every entry whose deadline has passed. The entry is
	 * removed after fn returns, unless fn moved it to a later deadline with rearm()
	 * (a retry). fn must not insert or remove other entries. At most `max` entries are
	 * handed over per call (callers whose output queues are bounded); the rest stay due.
	 * @return number of entries handed to fn
	 */
	template <typename Fn>
	uint32_t expire(uint64_t now_tsc, Fn &&fn, uint32_t max = UINT32_MAX)
	{
		return expire(now_tsc, fn, max, [](uint32_t) {});
	}

	/**
	 * The same; ahead(slot) is called for the next slot of the walk while fn runs on this
	 * one (slot = token & 0xffff), for a caller's per-slot data to be prefetched: a
	 * bucket is a linked list over slots all over the table, each one a cache miss.
	 */
	template <typename Fn, typename Ahead>
	uint32_t expire(uint64_t now_tsc, Fn &&fn, uint32_t max, Ahead &&ahead)
	{
		uint32_t n = 0;
		const uint64_t tick = now_tsc / _tick_tsc;
		for (;;) {
			uint32_t b = static_cast<uint32_t>(_cur_tick & _wheel_mask);
			uint32_t idx = _buckets[b];
			while (idx != nil) {
				slot &s = _slots[idx];
				uint32_t next = s.next;
				if (next != nil) {
					__builtin_prefetch(&_slots[next]);
					__builtin_prefetch(reinterpret_cast<const char *>(&_slots[next]) + 64);
					ahead(next);
				}
				if (n == max)
					return n; /* the rest of this tick on the next call */
				if (s.e.deadline_tsc <= now_tsc) {
					uint32_t tok = token_of(idx);
					uint64_t before = s.e.deadline_tsc;
					n++;
					fn(tok, s.e);
					if (s.used && token_of(idx) == tok && s.e.deadline_tsc == before)
						remove(tok);
				}
				idx = next;
			}
			if (_cur_tick >= tick)
				break;
			_cur_tick++;
		}
		return n;
	}

	/** Entries in use; read by control while the owner lcore writes it (relaxed). */
	uint32_t size() const noexcept { return _nb_used.load(std::memory_order_relaxed); }
	uint32_t capacity() const noexcept { return _capacity; }

	/** Calls fn(token, entry) for every live entry (control path: `show pending`). */
	template <typename Fn>
	void for_each(Fn &&fn) const
	{
		for (uint32_t i = 0; i < _capacity; i++)
			if (_slots[i].used)
				fn(token_of(i), _slots[i].e);
	}

private:
	static constexpr uint32_t nil = UINT32_MAX;
	struct slot {
		entry e;
		uint32_t prev, next; /* wheel bucket list, or free list through next */
		uint32_t bucket;
		uint16_t gen;
		bool used;
	};
	uint32_t token_of(uint32_t idx) const noexcept
	{
		return (uint32_t(_slots[idx].gen) << 16) | idx;
	}
	uint32_t index_of(uint32_t token) const noexcept;
	void link(uint32_t idx) noexcept;
	void unlink(uint32_t idx) noexcept;

	uint32_t _capacity;
	uint64_t _tick_tsc;
	uint32_t _wheel_mask;
	uint64_t _cur_tick = 0;
	std::unique_ptr<slot[]> _slots;
	std::unique_ptr<uint32_t[]> _buckets;
	uint32_t _free_head = 0;
	std::atomic<uint32_t> _nb_used{0}; /* single writer: the owner lcore */
};

} // namespace dpumesh::pending
