// SPDX-License-Identifier: BSD-3-Clause
// A log-linear latency histogram in the manner of HdrHistogram: fixed memory, O(1) record.
//
// Values (nanoseconds) below 128 have a bucket each; above, every power of two is split into
// 64 linear sub-buckets, so a reported percentile is within 1/64 (1.6%) of the true value.
// The maximum and minimum are exact. Recording never allocates (the generator's RX loop).
//
//   replay::histogram h;
//   h.record(rx_ns - tx_ns);
//   printf("p99 %lu ns\n", h.percentile(99.0));
#pragma once

#include <array>
#include <cstdint>

namespace dpumesh::replay {

class histogram {
public:
	static constexpr unsigned linear_bits = 7;             /**< exact below 2^7 */
	static constexpr unsigned sub_bits = linear_bits - 1;  /**< 64 sub-buckets per octave */
	static constexpr unsigned max_bits = 48;               /**< values saturate at 2^48 ns */
	static constexpr unsigned nb_buckets =
		(1u << linear_bits) + (max_bits - linear_bits) * (1u << sub_bits);

	void record(uint64_t value_ns) noexcept;
	void merge(const histogram &o) noexcept;
	void reset() noexcept { *this = histogram{}; }

	uint64_t count() const noexcept { return _count; }
	uint64_t min() const noexcept { return _count ? _min : 0; }
	uint64_t max() const noexcept { return _max; }
	double mean() const noexcept { return _count ? double(_sum) / double(_count) : 0.0; }
	/**
	 * The value at percentile p (0 < p <= 100): the highest value of the bucket holding the
	 * ceil(p% * count)-th smallest sample, capped by the exact maximum; 0 when empty.
	 */
	uint64_t percentile(double p) const noexcept;

	/** Bucket index of a value, and the range [low, high] of values a bucket holds. */
	static unsigned bucket_of(uint64_t v) noexcept;
	static uint64_t bucket_low(unsigned i) noexcept;
	static uint64_t bucket_high(unsigned i) noexcept;

private:
	std::array<uint64_t, nb_buckets> _buckets{};
	uint64_t _count = 0;
	uint64_t _sum = 0;
	uint64_t _min = UINT64_MAX;
	uint64_t _max = 0;
};

} // namespace dpumesh::replay
