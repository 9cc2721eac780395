// SPDX-License-Identifier: BSD-3-Clause
// The request table: one typed context per pending request, on lib/pending's table.
//
// A slot's context is the pending entry (origin, destination, ids, deadline, retry counts:
// what `show pending` reads) and the sidecar's part (the held command of a request that may
// be retried, where to answer a requester on the network, the hold and policy state). Both
// are reached through one ref and end together with close().
//
//   uint32_t token = t.open(entry, ctx);          // 0: table full (503 overloaded)
//   request_table::ref r = t.match(token, responder, step_id);
//   if (r) { ... answer r.entry().origin ...; t.close(token); }
//   n = t.expire(now, out, max);                  // what timed out, already taken care of
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "command.h"
#include "egress.h"
#include "dpumesh/abi/abi.h"
#include "dpumesh/common/huge_array.h"
#include "dpumesh/pending/table.h"

namespace dpumesh::sidecar {

class quota;

/** A local pod as a party of a request. */
inline pending::party pod_party(uint32_t handle) noexcept
{
	return {pending::party::kind::pod, handle, 0};
}

/**
 * The sidecar's part of a pending request: one cache line of what every request's end
 * reads (the deadline sweep: its flags, counts and where to answer), then the held command
 * that only held requests use, in the next line.
 */
struct alignas(64) request_ctx {
	remote reply_to;    /**< origin on the network: where its answer goes */
	bool holding = false;  /**< the sender's buffers are kept for a retry (HOLD) */
	bool in_flight = false; /**< a held delivery the DPA has not reported done yet */
	bool ended = false;    /**< answered while in flight: ends when the DPA reports */
	bool policy = false;   /**< admitted by the policy engine or a peer's breaker: report its outcome */
	bool answer_failed = false; /**< its answer could not be sent: 502 at the deadline */
	uint16_t load_pod = no_load; /**< the pod_id counted in in_flight() (no_load: none) */
	static constexpr uint16_t no_load = UINT16_MAX;
	/** A network origin's quota bucket (quota::bucket_of(reply_to.addr.dst)), as
	 *  quota::source_may_ask() found it when the request opened: charge, release and the
	 *  retry budget read it instead of hashing the address again (no_source: they hash). */
	uint16_t source = no_source;
	static constexpr uint16_t no_source = UINT16_MAX;
	dpa_command held;   /**< the request as delivered (valid while `holding` only) */

	/** Not holding, in flight, ended, nor its answer failed: what the deadline sweep finds
	 *  of nearly every request, one 8-byte load and test (the flags one at a time were
	 *  ~4 more instructions an expiry, in the walk and in its 504) */
	bool plain() const noexcept
	{
		static_assert(offsetof(request_ctx, in_flight) == offsetof(request_ctx, holding) + 1 &&
			      offsetof(request_ctx, ended) == offsetof(request_ctx, holding) + 2 &&
			      offsetof(request_ctx, answer_failed) == offsetof(request_ctx, holding) + 4,
			      "the flags plain() tests: bytes 0, 1, 2 and 4 of a word");
		static_assert(sizeof(bool) == 1);
		uint64_t w;
		std::memcpy(&w, &holding, sizeof(w));
		/* the bytes as they lie in memory: 0, 1, 2 and 4 from the word's first */
		constexpr uint64_t mask = std::endian::native == std::endian::little
						  ? 0x000000ff00ffffffull
						  : 0xffffff00ff000000ull;
		return (w & mask) == 0;
	}
};
static_assert(offsetof(request_ctx, held) == 64 && sizeof(request_ctx) == 128,
	      "what a request's end reads fits the first line");
static_assert(offsetof(request_ctx, holding) + 8 <= offsetof(request_ctx, held),
	      "plain()'s word lies in the first line");

/**
 * A request whose deadline passed, as expire() hands it over: its entry and context are
 * read where they are (copying ~200 B of them per timeout was ~40% of expire()), valid
 * until the table's next open(): the sweep answers its expiries before anything opens.
 * Its token is not handed over (nothing that answers an expiry reads it: made and stored,
 * ~3 instructions an expiry); the entry's address names the request.
 */
struct expiry {
	enum class kind : uint8_t {
		timeout, /**< answer 504: its ctx is plain() (nothing held, its answer not failed) */
		/** answer 504, or 502 when ctx->answer_failed; its held command (if
		 *  ctx->holding) is the caller's now */
		timeout_held,
		timeout_in_flight, /**< answer 504; it stays until the DPA reports the delivery */
		lost,    /**< ended long ago and the DPA never reported the delivery */
	};
	kind what = kind::timeout;
	const pending::entry *entry = nullptr;
	const request_ctx *ctx = nullptr;
};

class request_table {
public:
	/** How long an answered-but-in-flight request waits for the DPA's report. */
	static constexpr uint64_t in_flight_grace_s = 10;

	/**
	 * @param shard, nb_shards this table is shard `shard` of `nb_shards` (the node's
	 *        sidecar shards): its tokens carry the shard in the top bits of their slot
	 *        field (shard_of()), and it holds at most 65536 / 2^shard_bits(nb_shards)
	 *        requests. One shard: the whole 16-bit slot field, as before.
	 */
	request_table(uint32_t capacity, uint64_t tsc_hz, unsigned shard = 0, unsigned nb_shards = 1);

	/** Bits of a token's slot field that name its shard: ceil(log2(nb_shards)). */
	static unsigned shard_bits(unsigned nb_shards) noexcept
	{
		unsigned b = 0;
		while ((1u << b) < nb_shards)
			b++;
		return b;
	}
	/** The shard whose table handed out `token` (any token: the data path routes by it). */
	static unsigned shard_of(uint32_t token, unsigned bits) noexcept
	{
		return bits ? (token & 0xffff) >> (16 - bits) : 0;
	}

	class ref {
	public:
		ref() = default;
		ref(pending::entry *e, request_ctx *c) : _e(e), _c(c) {}
		explicit operator bool() const noexcept { return _e != nullptr; }
		pending::entry &entry() const noexcept { return *_e; }
		request_ctx &ctx() const noexcept { return *_c; }
		pending::entry *operator->() const noexcept { return _e; }

	private:
		pending::entry *_e = nullptr;
		request_ctx *_c = nullptr;
	};

	/** A new request's context, as open() writes it. */
	struct opening {
		const remote *reply_to = nullptr; /**< a network origin's address (else none) */
		uint16_t source = request_ctx::no_source; /**< its quota bucket, if known */
		bool hold = false;   /**< holding and in flight (the caller sets `held`) */
		bool policy = false; /**< admitted by the policy engine (or a peer's breaker) */
		/** false: the caller charges the quota itself (stage::open_request(), for a
		 *  network origin: the bucket and address it has in registers) */
		bool charge = true;
	};
	/** Takes a slot; its token (never 0), or 0 when the table is full. The slot's context
	 *  is written in place (`held` is not: the caller's, when it holds). */
	uint32_t open(const pending::entry &e, const opening &o) noexcept;
	/** The entry the next open takes, to be written in place (nullptr: the table is
	 *  full; pending::table::next_entry()), then opened with open_written(). */
	pending::entry *next_entry() noexcept { return _t.next_entry(); }
	/** open() of the entry written at next_entry() (internal/open_request.h: inline in
	 *  the flows that open requests). */
	[[gnu::always_inline]] inline uint32_t open_written(const opening &o) noexcept;
	/** The request a response with this token from `responder` with `step_id` answers. */
	ref match(uint32_t token, const pending::party &responder, uint32_t step_id) noexcept;
	/** The request behind a token, whoever asks. */
	ref find(uint32_t token) noexcept;
	/** Ends a request; its token stops matching (and is never handed out again soon). */
	void close(uint32_t token) noexcept;
	/** Moves a live request to a new deadline. */
	void rearm(uint32_t token, uint64_t deadline_tsc) noexcept
	{
		if (ours(token))
			_t.rearm(inner(token), deadline_tsc);
	}

	/**
	 * Hands over up to `max` requests whose deadline passed (see expiry::kind); the table
	 * has already closed them, or kept a timeout_in_flight one for the DPA's report. The
	 * expiries point into the table: read them before the next open().
	 */
	uint32_t expire(uint64_t now, expiry *out, uint32_t max) noexcept;

	/** Every request still open: fn(token, entry, ctx) (teardown). */
	template <typename Fn>
	void for_each(Fn &&fn) const
	{
		for_each_in(0, _t.capacity(), fn);
	}
	/** for_each() over the table's slots [first, first + count) (a walk in steps). */
	template <typename Fn>
	void for_each_in(uint32_t first, uint32_t count, Fn &&fn) const
	{
		_t.for_each_in(first, count, [&](uint32_t token, const pending::entry &e) {
			fn(token | _shard_base, e, _ctx[token & 0xffff]);
		});
	}

	/** Every entry opened from now on is charged to its origin there, and released when
	 *  it ends (closed or expired): the quota's in-flight counts are this table's. */
	void set_quota(quota *q) noexcept { _quota = q; }

	const pending::table &table() const noexcept { return _t; }
	uint32_t size() const noexcept { return _t.size(); }
	/**
	 * Requests of this table whose destination (when opened) is local pod `pod_id`, from
	 * open() until close() or expiry; a 504 in flight counts until the DPA reports it. A
	 * re-routed request stays counted against the pod it was opened for. Admission reads
	 * it at the first look (docs/overload.md).
	 */
	uint32_t in_flight(uint32_t pod_id) const noexcept { return _load[pod_id % DPUMESH_MAX_PODS]; }
	/** The whole array, by pod_id (admission holds it). */
	const uint32_t *loads() const noexcept { return _load; }

private:
	/* expire() with a quota (q) or without one */
	template <bool with_quota>
	uint32_t expire_walk(uint64_t now, expiry *out, uint32_t max, quota *q) noexcept;
	bool ours(uint32_t token) const noexcept { return (token & _shard_mask) == _shard_base; }
	uint32_t inner(uint32_t token) const noexcept { return token & ~_shard_mask; }

	uint32_t _shard_base = 0; /* this shard in the slot field */
	uint32_t _shard_mask = 0; /* the slot field's shard bits */
	pending::table _t;
	huge_array<request_ctx> _ctx; /* by slot (token & 0xffff); on huge pages, as the slots */
	uint64_t _tsc_hz;
	quota *_quota = nullptr;
	uint32_t _load[DPUMESH_MAX_PODS] = {}; /* in_flight() by pod_id */

	void unload(request_ctx &c) noexcept
	{
		if (c.load_pod != request_ctx::no_load) {
			_load[c.load_pod]--;
			c.load_pod = request_ctx::no_load;
		}
	}
};

} // namespace dpumesh::sidecar
