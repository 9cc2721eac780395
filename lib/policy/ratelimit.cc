// SPDX-License-Identifier: BSD-3-Clause
// Keyed token-bucket tables: bounded probing, full buckets reused, one overflow bucket.
#include "dpumesh/policy/ratelimit.h"

#include <cstring>

namespace dpumesh::policy {

rate_limiter::rate_limiter(const token_bucket &b)
    : _bucket(b), _st(std::make_shared<state>(b.interval_units()))
{
}

rate_limiter::rate_limiter(const token_bucket &b, uint32_t slots, uint64_t seed)
    : _bucket(b), _st(std::make_shared<state>(b.interval_units())), _seed(seed)
{
	uint32_t n = probe_window;
	while (n < slots && n < (1u << 30))
		n <<= 1;
	_st->slots = std::make_unique<slot[]>(n); /* key 0, TAT 0 (a full bucket) */
	_slots = _st->slots.get();
	_mask = n - 1;
}

rate_limiter rate_limiter::share() const
{
	rate_limiter r;
	r._bucket = _bucket;
	r._st = _st;
	r._slots = _slots;
	r._mask = _mask;
	r._seed = _seed;
	_st->users.fetch_add(1, std::memory_order_relaxed);
	return r;
}

std::atomic<uint64_t> *rate_limiter::find(uint64_t key, uint64_t now_u, counter *overflows) noexcept
{
	const uint32_t home = static_cast<uint32_t>(limiter_mix(key ^ _seed)) & _mask;
	/* the key's slot, else the full bucket that has been full longest: a slot never used
	 * (TAT 0) before one a live key refills, which would otherwise come back to take it
	 * over in turn, each time after a whole window's probe */
	slot *reusable = nullptr;
	uint64_t oldest = UINT64_MAX;
	for (unsigned i = 0; i < probe_window; i++) {
		slot &s = _slots[(home + i) & _mask];
		if (s.key.load(std::memory_order_relaxed) == key)
			return &s.tat;
		const uint64_t tat = s.tat.load(std::memory_order_relaxed);
		if (tat <= now_u && tat < oldest) {
			reusable = &s;
			oldest = tat;
		}
	}
	if (reusable) {
		/* a full bucket holds no state: taking it over is the same as a fresh bucket (two
		 * shards taking one at once: for a moment two keys share a bucket, never more
		 * than the rate passes) */
		reusable->key.store(key, std::memory_order_relaxed);
		return &reusable->tat;
	}
	_st->overflow.fetch_add(1, std::memory_order_relaxed);
	if (overflows)
		overflows->inc();
	return &_st->single;
}

uint64_t limiter_key(const void *data, size_t len) noexcept
{
	/* FNV-1a, then a finaliser; claim values are short (sub, tenant) */
	const auto *p = static_cast<const uint8_t *>(data);
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return limiter_mix(h);
}

} // namespace dpumesh::policy
