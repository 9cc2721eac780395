// SPDX-License-Identifier: BSD-3-Clause
// Token-bucket rate limits: one bucket per route, or a fixed table of buckets keyed per
// source or per JWT claim value.
//
// A bucket is kept as one 64-bit word, its "theoretical arrival time" (TAT, the GCRA form
// of a token bucket, ITU-T I.371): a request at time t conforms when
// max(TAT, t) + T - t <= burst * T, with T = 1 s / rate, and then TAT = max(TAT, t) + T.
// That admits exactly `burst` back to back and `rate` per second after, like a bucket of
// depth `burst` refilled at `rate`, but needs no division or refill step per request.
// A bucket whose TAT is not after now is full and carries no state, so a keyed table
// reuses such slots for new keys: the table never needs deleting or ageing.
//
// Time is in 1/16 ns units (ns << 4) so that T = 16e9 / rate keeps the rate within 0.7%
// even at 1e8/s; now_ns must be a monotonic clock below 2^60 ns (36 years), e.g. the TSC
// converted to ns, never wall-clock ns since 1970.
//
// A limiter belongs to the lcore that checks requests; the node's sidecar shards (one per
// worker lcore) each have an engine, and their limiters of one policy version share their
// buckets (share()): a bucket word is then advanced with a compare-and-swap, so the node as
// a whole admits the configured rate, not shards x rate (docs/policy.md). Unshared (one
// worker) the commit stays a plain store. Checking is two-phase, so a request refused by
// one limit takes no token from the others:
//
//   rate_limiter::ticket t;
//   if (lim.reserve(key, now_ns, &t)) { ...all other checks pass... lim.commit(t); }
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "dpumesh/common/counter.h"

namespace dpumesh::policy {

/** GCRA parameters of one bucket shape (rate per second, burst). */
class token_bucket {
public:
	static constexpr unsigned unit_shift = 4; /**< time unit = 1/16 ns */

	token_bucket() = default;
	/** @param rate tokens per second (>= 1) @param burst depth (>= 1) */
	token_bucket(uint32_t rate, uint32_t burst) noexcept
	    : _interval((uint64_t(1000000000) << unit_shift) / (rate ? rate : 1)),
	      _limit(_interval * (burst ? burst : 1))
	{
	}

	static uint64_t units(uint64_t now_ns) noexcept { return now_ns << unit_shift; }

	/** Whether a request at now_u conforms given the bucket's TAT; *next is its new TAT. */
	bool conforms(uint64_t tat, uint64_t now_u, uint64_t *next) const noexcept
	{
		uint64_t base = tat > now_u ? tat : now_u;
		if (base + _interval - now_u > _limit)
			return false;
		*next = base + _interval;
		return true;
	}

	/** One-phase take on a bucket word. */
	bool take(uint64_t *tat, uint64_t now_ns) const noexcept
	{
		uint64_t next;
		if (!conforms(*tat, units(now_ns), &next))
			return false;
		*tat = next;
		return true;
	}

	uint64_t interval_units() const noexcept { return _interval; }

private:
	uint64_t _interval = 0; /* T, in units */
	uint64_t _limit = 0;    /* burst * T */
};

/** The keyed tables' finaliser (splitmix64's): a key's home slot is limiter_mix(key ^ seed). */
inline uint64_t limiter_mix(uint64_t x) noexcept
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

/**
 * One configured limit: a single bucket (key ignored) or a table of `slots` buckets
 * (rounded up to a power of two) found by key with bounded linear probing. A key that
 * finds neither its slot nor a full (reusable) one in its probe window shares one overflow
 * bucket with the other such keys: the table can fill up, but never lets a key past the
 * rate, and never allocates.
 */
class rate_limiter {
	struct state;

public:
	static constexpr unsigned probe_window = 8;

	/** What reserve() found; every field is written by reserve(), `next` only when it
	 *  returns true (commit() only then). No default values: the engine's array of 16 is
	 *  not cleared for each request. */
	struct ticket {
		std::atomic<uint64_t> *tat;
		uint64_t next;
		uint64_t now_u;
		/** the buckets' state: shared (users > 1), commit with a CAS of its interval
		 *  (one pointer stored, not the interval and a flag: ~6 instructions a request
		 *  of two limits) */
		const state *st;
	};
	struct stats {
		uint64_t overflow = 0; /**< reservations that fell back to the overflow bucket */
	};

	/** A single bucket (per route). */
	rate_limiter(const token_bucket &b);
	/** A keyed table (per source, per claim value). */
	rate_limiter(const token_bucket &b, uint32_t slots, uint64_t seed);
	/**
	 * A limiter with the same buckets as this one (another sidecar shard's engine of the
	 * same policy version): both then commit with compare-and-swap. Control path.
	 */
	rate_limiter share() const;

	rate_limiter(rate_limiter &&) noexcept = default;
	rate_limiter &operator=(rate_limiter &&) noexcept = default;

	/**
	 * Finds the key's bucket; true (and a ticket to commit) if a request conforms now.
	 * @param overflows when not null, counted once more if the key fell back to the
	 *        overflow bucket (the engine's limiter_overflow: counted where find() falls
	 *        back, not tested after every reservation)
	 */
	bool reserve(uint64_t key, uint64_t now_ns, ticket *t, counter *overflows = nullptr) noexcept
	{
		const uint64_t now_u = token_bucket::units(now_ns);
		std::atomic<uint64_t> *tat = &_st->single;
		if (_mask != 0) {
			/* the key in its home slot (a key seen before, no collision): no call */
			slot &home = _slots[static_cast<uint32_t>(limiter_mix(key ^ _seed)) & _mask];
			tat = home.key.load(std::memory_order_relaxed) == key ? &home.tat
									      : find(key, now_u, overflows);
		}
		t->tat = tat;
		t->now_u = now_u;
		t->st = _st.get();
		return _bucket.conforms(tat->load(std::memory_order_relaxed), now_u, &t->next);
	}
	/**
	 * Takes the token reserved. Shared: the bucket moves on by one interval from where it
	 * is now (another shard may have taken one since the reservation: the long-run rate
	 * holds; a burst may pass by at most shards - 1 requests).
	 */
	static void commit(const ticket &t) noexcept
	{
		if (t.st->users.load(std::memory_order_relaxed) <= 1) {
			t.tat->store(t.next, std::memory_order_relaxed);
			return;
		}
		const uint64_t interval = t.st->interval;
		uint64_t cur = t.tat->load(std::memory_order_relaxed);
		for (;;) {
			const uint64_t next = (cur > t.now_u ? cur : t.now_u) + interval;
			if (t.tat->compare_exchange_weak(cur, next, std::memory_order_relaxed))
				return;
		}
	}

	/** One-phase: reserve and commit. */
	bool admit(uint64_t key, uint64_t now_ns) noexcept
	{
		ticket t;
		if (!reserve(key, now_ns, &t))
			return false;
		commit(t);
		return true;
	}

	bool keyed() const noexcept { return _mask != 0; }
	uint32_t slots() const noexcept { return _mask ? _mask + 1 : 0; }
	uint64_t overflows() const noexcept { return _st->overflow.load(std::memory_order_relaxed); }
	/** Limiters using these buckets (1: this one only). */
	uint32_t users() const noexcept { return _st->users.load(std::memory_order_relaxed); }

private:
	struct slot {
		std::atomic<uint64_t> key{0};
		std::atomic<uint64_t> tat{0};
	};
	struct state {
		explicit state(uint64_t i) : interval(i) {}
		const uint64_t interval; /* the bucket's T (every sharer's: share() copies it) */
		std::atomic<uint64_t> single{0};
		std::unique_ptr<slot[]> slots;
		std::atomic<uint64_t> overflow{0};
		std::atomic<uint32_t> users{1};
	};
	rate_limiter() = default;
	/* the key's slot past its home one, a reusable one, or the overflow bucket */
	std::atomic<uint64_t> *find(uint64_t key, uint64_t now_u, counter *overflows) noexcept;

	token_bucket _bucket;
	std::shared_ptr<state> _st;
	slot *_slots = nullptr; /* _st->slots.get() */
	uint32_t _mask = 0;
	uint64_t _seed = 0;
};

/** 64-bit hash of a claim value (or any bytes) for a keyed limiter. */
uint64_t limiter_key(const void *data, size_t len) noexcept;

} // namespace dpumesh::policy
