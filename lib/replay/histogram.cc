// SPDX-License-Identifier: BSD-3-Clause
// The log-linear latency histogram (dpumesh/replay/histogram.h).
#include "dpumesh/replay/histogram.h"

#include <algorithm>
#include <cmath>

namespace dpumesh::replay {

unsigned histogram::bucket_of(uint64_t v) noexcept
{
	constexpr uint64_t linear = 1ull << linear_bits;
	if (v < linear)
		return unsigned(v);
	if (v >= (1ull << max_bits))
		return nb_buckets - 1;
	unsigned msb = 63u - unsigned(__builtin_clzll(v)); /* >= linear_bits */
	unsigned shift = msb - sub_bits;
	unsigned sub = unsigned(v >> shift) - (1u << sub_bits); /* 0..63 */
	return unsigned(linear) + (msb - linear_bits) * (1u << sub_bits) + sub;
}

uint64_t histogram::bucket_low(unsigned i) noexcept
{
	constexpr unsigned linear = 1u << linear_bits;
	if (i < linear)
		return i;
	unsigned octave = (i - linear) >> sub_bits; /* 0 for [128, 256) */
	unsigned sub = (i - linear) & ((1u << sub_bits) - 1);
	unsigned shift = octave + linear_bits - sub_bits;
	return (uint64_t((1u << sub_bits) + sub)) << shift;
}

uint64_t histogram::bucket_high(unsigned i) noexcept
{
	if (i + 1 >= nb_buckets)
		return UINT64_MAX;
	return bucket_low(i + 1) - 1;
}

void histogram::record(uint64_t v) noexcept
{
	_buckets[bucket_of(v)]++;
	_count++;
	_sum += v;
	_min = std::min(_min, v);
	_max = std::max(_max, v);
}

void histogram::merge(const histogram &o) noexcept
{
	for (unsigned i = 0; i < nb_buckets; i++)
		_buckets[i] += o._buckets[i];
	_count += o._count;
	_sum += o._sum;
	_min = std::min(_min, o._min);
	_max = std::max(_max, o._max);
}

uint64_t histogram::percentile(double p) const noexcept
{
	if (_count == 0)
		return 0;
	p = std::clamp(p, 0.0, 100.0);
	uint64_t rank = uint64_t(std::ceil(p / 100.0 * double(_count)));
	rank = std::clamp<uint64_t>(rank, 1, _count);
	uint64_t seen = 0;
	for (unsigned i = 0; i < nb_buckets; i++) {
		seen += _buckets[i];
		if (seen >= rank)
			return std::min(bucket_high(i), _max);
	}
	return _max;
}

} // namespace dpumesh::replay
