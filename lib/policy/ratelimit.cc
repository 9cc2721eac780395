// SPDX-License-Identifier: BSD-3-Clause
// Keyed token-bucket tables: bounded probing, full buckets reused, one overflow bucket.
#include "dpumesh/policy/ratelimit.h"

#include <cstring>

namespace dpumesh::policy {

namespace {

inline uint64_t mix(uint64_t x) noexcept
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

} // namespace

rate_limiter::rate_limiter(const token_bucket &b, uint32_t slots, uint64_t seed)
    : _bucket(b), _seed(seed)
{
	uint32_t n = probe_window;
	while (n < slots && n < (1u << 30))
		n <<= 1;
	_slots = std::make_unique<slot[]>(n); /* zeroed: key 0, TAT 0 (a full bucket) */
	_mask = n - 1;
}

uint64_t *rate_limiter::find(uint64_t key, uint64_t now_u) noexcept
{
	const uint32_t home = static_cast<uint32_t>(mix(key ^ _seed)) & _mask;
	slot *reusable = nullptr;
	for (unsigned i = 0; i < probe_window; i++) {
		slot &s = _slots[(home + i) & _mask];
		if (s.key == key)
			return &s.tat;
		if (!reusable && s.tat <= now_u)
			reusable = &s;
	}
	if (reusable) {
		/* a full bucket holds no state: taking it over is the same as a fresh bucket */
		reusable->key = key;
		return &reusable->tat;
	}
	_overflow++;
	return &_single;
}

uint64_t limiter_key(const void *data, size_t len) noexcept
{
	/* FNV-1a, then a finaliser; claim values are short (sub, tenant) */
	const auto *p = static_cast<const uint8_t *>(data);
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return mix(h);
}

} // namespace dpumesh::policy
