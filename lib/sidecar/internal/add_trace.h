// SPDX-License-Identifier: BSD-3-Clause
// stage::add_trace(), inline in the flows that add trace ids (flow_net.cc, flow_pod.cc): out
// of line, its call, its frame (six registers saved and restored) and the header's sum passed
// through memory were ~18 of a relay's instructions (131B routes).
#pragma once

#include <bit>

#include "dpumesh/policy/trace.h"
#include "dpumesh/sidecar/sidecar.h"

namespace dpumesh::sidecar {

/* wire::l7_sum_grown() of a header of `len` bytes grown by both trace fields (summed to
 * `added_sum`, policy::trace_result): the length and count words' change a constant, the
 * same number (the count read and the changes worked out were ~8 instructions a relay) */
[[gnu::always_inline]] inline uint16_t both_grown_sum(uint16_t sum, uint32_t len,
						      uint64_t added_sum) noexcept
{
	return csum_fold(uint64_t(sum) +
			 (uint64_t(policy::trace_both_size + 0xffff + 2 + 0xffff) << 8) +
			 (len & 1 ? added_sum << 8 : added_sum));
}

/* Both trace fields after a header of `len` bytes and `nb` fields whose room the caller
 * checked (nb < wire::l7_max_fields - 1, len + trace_both_size within its buffer and
 * wire::l7_max_size: stage::_trace_both_max); its new length, len + trace_both_size, and
 * `*sum` kept true. The fields are not counted (the caller's). */
[[gnu::always_inline]] inline uint32_t add_both_fields(policy::trace_rng &rng, uint8_t *hdr,
						       uint32_t len, uint16_t nb,
						       uint16_t *sum) noexcept
{
	const policy::trace_ids ids = rng.next();
#if defined(__SSSE3__)
	const policy::trace_result b = policy::detail::add_both_unchecked(hdr, len, nb, ids);
	*sum = both_grown_sum(*sum, len, b.added_sum);
#else
	constexpr unsigned both = policy::trace_request_id | policy::trace_traceparent;
	const policy::trace_result b =
		policy::add_trace(hdr, len, len + policy::trace_both_size, both, ids);
	*sum = wire::l7_sum_grown(*sum, static_cast<uint16_t>(len), nb,
				  static_cast<uint16_t>(b.len), static_cast<uint16_t>(nb + 2),
				  b.added_sum);
#endif
	return b.len;
}

/* Trace ids (lib/policy) for a request header that lacks the `need` fields
 * (policy::trace_missing()); its new length. `sum`, when given, holds the header's sum
 * (wire::l7_sum()) and is kept true as the header grows. A free function of what it uses of
 * the stage, so that a caller that has `need` already (the relay) passes it: read again
 * behind the header's stores, it was ~3 instructions a relay. `count_both` false: both
 * fields added (the length grew by trace_both_size) are the caller's to count. */
template <bool count_both = true>
[[gnu::always_inline]] inline uint32_t add_trace_fields(policy::trace_rng &rng, counters &stats,
							 uint32_t cap, unsigned need,
							 uint8_t *hdr, uint32_t len,
							 uint16_t *sum) noexcept
{
	if (!need)
		return len;
	const policy::trace_ids ids = rng.next();
#if defined(__SSSE3__)
	/* both fields (a request with neither: nearly all), policy::add_trace()'s one-pass
	 * form called here, what it added known: no test of it after (~7 instructions) */
	constexpr unsigned both = policy::trace_request_id | policy::trace_traceparent;
	if (need == both && len >= wire::l7_fixed_size && len <= cap) [[likely]] {
		const policy::trace_result b = policy::detail::add_both(hdr, len, cap, ids);
		if (b.no_room) {
			stats.trace_no_room.inc();
			return len;
		}
		if (sum)
			*sum = both_grown_sum(*sum, len, b.added_sum);
		if constexpr (count_both) {
			stats.request_ids.inc();
			stats.traceparents.inc();
		}
		return b.len;
	}
#endif
	const uint16_t nb = static_cast<uint16_t>(hdr[6] << 8 | hdr[7]); /* fields before */
	policy::trace_result r = policy::add_trace(hdr, len, cap, need, ids);
	if (r.no_room) {
		stats.trace_no_room.inc();
		return len;
	}
	if (sum)
		*sum = wire::l7_sum_grown(*sum, static_cast<uint16_t>(len), nb,
					  static_cast<uint16_t>(r.len),
					  static_cast<uint16_t>(nb + std::popcount(r.added)),
					  r.added_sum);
	if (!count_both && r.added == (policy::trace_request_id | policy::trace_traceparent))
		return r.len;
	if (r.added & policy::trace_request_id)
		stats.request_ids.inc();
	if (r.added & policy::trace_traceparent)
		stats.traceparents.inc();
	return r.len;
}

/* Trace ids (lib/policy) for a request header that has none; its new length. `sum`, when
 * given, holds the header's sum (wire::l7_sum()) and is kept true as the header grows. */
inline uint32_t stage::add_trace(uint64_t header, uint32_t len, const wire::l7_view &v,
				uint16_t *sum) noexcept
{
	return add_trace_fields(_trace_rng, _stats, _dpa.hbuf_size - DPA_HBUF_META_SIZE,
				policy::trace_missing(v), reinterpret_cast<uint8_t *>(header), len,
				sum);
}

} // namespace dpumesh::sidecar
