// SPDX-License-Identifier: BSD-3-Clause
// Trace ids of the L7 policy: x-request-id and traceparent text, added to a header in place.
#include "dpumesh/policy/trace.h"

#include <bit>
#include <cstring>
#include <string_view>

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

/* 16 hex digits of x into out */
inline void put_hex16(char *out, uint64_t x) noexcept
{
	const uint64_t a = hex8(static_cast<uint32_t>(x >> 32));
	const uint64_t b = hex8(static_cast<uint32_t>(x));
	std::memcpy(out, &a, 8);
	std::memcpy(out + 8, &b, 8);
}

} // namespace

unsigned trace_missing(const wire::l7_view &v) noexcept
{
	std::string_view have;
	unsigned need = 0;
	if (!v.find("x-request-id", &have))
		need |= trace_request_id;
	if (!v.find("traceparent", &have))
		need |= trace_traceparent;
	return need;
}

void format_request_id(const trace_ids &ids, char out[36]) noexcept
{
	/* 8-4-4 from hi with the version nibble, 4-12 from lo with the variant bits; each
	 * piece stored from the registers it was made in (a copy through 16-byte temporaries
	 * stalled on store forwarding: more than half of this function's samples) */
	const uint64_t hi = (ids.hi & 0xffffffffffff0000ull) | 0x4000 | (ids.hi & 0xfff);
	const uint64_t lo = (ids.lo & 0x3fffffffffffffffull) | 0x8000000000000000ull;
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
}

void format_traceparent(const trace_ids &ids, char out[55]) noexcept
{
	std::memcpy(out, "00-", 3);
	put_hex16(out + 3, ids.hi);
	put_hex16(out + 19, ids.lo);
	out[35] = '-';
	put_hex16(out + 36, ids.span);
	std::memcpy(out + 52, "-01", 3);
}

} // namespace dpumesh::policy
