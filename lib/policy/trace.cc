// SPDX-License-Identifier: BSD-3-Clause
// Trace ids of the L7 policy: x-request-id and traceparent text, added to a header in place.
#include "dpumesh/policy/trace.h"

#include <bit>
#include <cstring>
#include <string_view>

#include "dpumesh/common/csum.h"

namespace dpumesh::policy {

namespace {

/* Eight lowercase hex digits of x, most significant first, as the bytes of a word in
 * memory order: the nibbles spread one per byte, each turned to ASCII at once (no table,
 * no branch, no printf machinery on the data path). */
inline uint64_t hex8(uint32_t x) noexcept
{
	uint64_t t = x;
	t = ((t & 0xffff0000ull) << 16) | (t & 0x0000ffffull);
	t = ((t & 0x0000ff000000ff00ull) << 8) | (t & 0x000000ff000000ffull);
	t = ((t & 0x00f000f000f000f0ull) << 4) | (t & 0x000f000f000f000full);
	/* t: nibble k (from the least significant) in byte k; a-f where nibble + 6 > 15 */
	const uint64_t letters = ((t + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
	t += 0x3030303030303030ull + letters * ('a' - '0' - 10);
	/* byte 0 of memory must be the most significant digit */
	if constexpr (std::endian::native == std::endian::little)
		t = __builtin_bswap64(t);
	return t;
}

/* 16 hex digits of x into out; their sum (csum_bytes()) from the words */
inline uint32_t put_hex16_portable(char *out, uint64_t x) noexcept
{
	const uint64_t a = hex8(static_cast<uint32_t>(x >> 32));
	const uint64_t b = hex8(static_cast<uint32_t>(x));
	std::memcpy(out, &a, 8);
	std::memcpy(out + 8, &b, 8);
	return csum_lanes(a) + csum_lanes(b);
}

using detail::request_id_dashes;
using detail::traceparent_fixed;

} // namespace

using detail::uuid_hi;
using detail::uuid_lo;

uint32_t format_request_id_portable(const trace_ids &ids, char out[36]) noexcept
{
	const uint64_t hi = uuid_hi(ids), lo = uuid_lo(ids);
	/* each piece stored from the registers it was made in (a copy through 16-byte
	 * temporaries stalled on store forwarding: more than half of this function's samples) */
	const uint64_t a = hex8(static_cast<uint32_t>(hi >> 32));
	const uint64_t b = hex8(static_cast<uint32_t>(hi));
	const uint64_t c = hex8(static_cast<uint32_t>(lo >> 32));
	const uint64_t d = hex8(static_cast<uint32_t>(lo));
	/* the digits of a word in memory order: its first four, then its last four */
	const auto first4 = [](uint64_t w) noexcept {
		return static_cast<uint32_t>(std::endian::native == std::endian::little ? w : w >> 32);
	};
	const auto last4 = [](uint64_t w) noexcept {
		return static_cast<uint32_t>(std::endian::native == std::endian::little ? w >> 32 : w);
	};
	const uint32_t b0 = first4(b), b1 = last4(b), c0 = first4(c), c1 = last4(c);
	std::memcpy(out, &a, 8);
	out[8] = '-';
	std::memcpy(out + 9, &b0, 4);
	out[13] = '-';
	std::memcpy(out + 14, &b1, 4);
	out[18] = '-';
	std::memcpy(out + 19, &c0, 4);
	out[23] = '-';
	std::memcpy(out + 24, &c1, 4);
	std::memcpy(out + 28, &d, 8);
	/* b0 and c0 sit at odd offsets: weighed by 256 (their bytes pair the other way) */
	const auto two = [](uint32_t w) noexcept { return (w & 0xffff) + (w >> 16); };
	return csum_lanes(a) + csum_lanes(d) + two(b1) + two(c1) + ((two(b0) + two(c0)) << 8) +
	       request_id_dashes;
}

namespace {

/* 00-<trace id>-<span id>-01, the digits written by put_hex (16 at a time, which says
 * what they sum to); the sum of the text */
template <uint32_t (*put_hex)(char *, uint64_t) noexcept>
inline uint32_t traceparent_with(const trace_ids &ids, char out[55]) noexcept
{
	std::memcpy(out, "00-", 3);
	const uint32_t hi = put_hex(out + 3, ids.hi); /* odd offsets: weighed by 256 */
	const uint32_t lo = put_hex(out + 19, ids.lo);
	out[35] = '-';
	const uint32_t span = put_hex(out + 36, ids.span);
	std::memcpy(out + 52, "-01", 3);
	return ((hi + lo) << 8) + span + traceparent_fixed;
}

} // namespace

uint32_t format_traceparent_portable(const trace_ids &ids, char out[55]) noexcept
{
	return traceparent_with<put_hex16_portable>(ids, out);
}

uint32_t format_request_id(const trace_ids &ids, char out[36]) noexcept
{
#if defined(__SSSE3__)
	uint32_t tail;
	return detail::sum4(detail::request_id_into(detail::digits_of(ids), out, &tail)) + tail;
#else
	return format_request_id_portable(ids, out);
#endif
}

uint32_t format_traceparent(const trace_ids &ids, char out[55]) noexcept
{
#if defined(__SSSE3__)
	/* traceparent_with(), its sum taken once from the three vectors */
	std::memcpy(out, "00-", 3);
	__m128i even;
	detail::traceparent_digits_into(detail::digits_of(ids), out, nullptr, &even);
	out[35] = '-';
	std::memcpy(out + 52, "-01", 3);
	return detail::sum4(even) + traceparent_fixed;
#else
	return format_traceparent_portable(ids, out);
#endif
}

} // namespace dpumesh::policy
