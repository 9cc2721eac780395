// SPDX-License-Identifier: BSD-3-Clause
// Trace ids of the L7 policy: x-request-id and traceparent text, added to a header in place.
#include "dpumesh/policy/trace.h"

#include <bit>
#include <cstring>
#include <string_view>

#include "dpumesh/common/csum.h"

#if defined(__SSSE3__)
#include <tmmintrin.h>
#endif

namespace dpumesh::policy {

namespace {

#if defined(__SSSE3__)
/* 16 lowercase hex digits of x, most significant first, in a vector: each byte's nibbles
 * spread to two bytes and looked up in a 16-byte table (one pshufb). */
inline __m128i hex16(uint64_t x) noexcept
{
	const __m128i bytes = _mm_cvtsi64_si128(static_cast<long long>(__builtin_bswap64(x)));
	const __m128i low4 = _mm_set1_epi8(0x0f);
	const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
	const __m128i lo = _mm_and_si128(bytes, low4);
	const __m128i digits = _mm_setr_epi8('0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
					     'a', 'b', 'c', 'd', 'e', 'f');
	return _mm_shuffle_epi8(digits, _mm_unpacklo_epi8(hi, lo));
}

/* The 16-bit words of a vector of text (bytes below 0x80: each word a positive int16) in
 * memory order, summed in pairs: four 32-bit sums (pmaddwd by ones). */
inline __m128i word_pairs(__m128i text) noexcept
{
	return _mm_madd_epi16(text, _mm_set1_epi16(1));
}

/* The four 32-bit sums of a vector added up. */
inline uint32_t sum4(__m128i s) noexcept
{
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(1, 0, 3, 2)));
	s = _mm_add_epi32(s, _mm_shuffle_epi32(s, _MM_SHUFFLE(2, 3, 0, 1)));
	return static_cast<uint32_t>(_mm_cvtsi128_si32(s));
}
#endif

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

/* The sum of a text's fixed characters (csum_bytes() with its digits as zeros). */
template <size_t N> constexpr uint32_t fixed_sum(const char (&text)[N]) noexcept
{
	char t[N] = {};
	for (size_t i = 0; i + 1 < N; i++)
		t[i] = text[i] == 'x' ? '\0' : text[i];
	return csum_bytes(t, N - 1);
}
constexpr uint32_t request_id_dashes = fixed_sum("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
constexpr uint32_t traceparent_fixed =
	fixed_sum("00-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-xxxxxxxxxxxxxxxx-01");

} // namespace

namespace {

/* 8-4-4 from hi with the version nibble, 4-12 from lo with the variant bits */
inline uint64_t uuid_hi(const trace_ids &ids) noexcept
{
	return (ids.hi & 0xffffffffffff0000ull) | 0x4000 | (ids.hi & 0xfff);
}
inline uint64_t uuid_lo(const trace_ids &ids) noexcept
{
	return (ids.lo & 0x3fffffffffffffffull) | 0x8000000000000000ull;
}

} // namespace

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
	const uint64_t hi = uuid_hi(ids), lo = uuid_lo(ids);
	/* the 32 digits moved into their places and the dashes put in, three stores (the
	 * scalar form's 64-bit arithmetic per eight digits was 1.6% of the forwarding path) */
	const __m128i a = hex16(hi), b = hex16(lo);
	const __m128i out0 = _mm_or_si128(
		_mm_shuffle_epi8(a, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -1, 8, 9, 10, 11, -1, 12, 13)),
		_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, '-', 0, 0, 0, 0, '-', 0, 0));
	const __m128i out1 = _mm_or_si128(
		_mm_or_si128(_mm_shuffle_epi8(a, _mm_setr_epi8(14, 15, -1, -1, -1, -1, -1, -1, -1,
								-1, -1, -1, -1, -1, -1, -1)),
			     _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, 0, 1, 2, 3, -1, 4, 5, 6, 7,
								8, 9, 10, 11))),
		_mm_setr_epi8(0, 0, '-', 0, 0, 0, 0, '-', 0, 0, 0, 0, 0, 0, 0, 0));
	const uint32_t tail = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_srli_si128(b, 12)));
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out), out0);
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 16), out1);
	std::memcpy(out + 32, &tail, 4);
	return sum4(_mm_add_epi32(word_pairs(out0), word_pairs(out1))) + (tail & 0xffff) +
	       (tail >> 16);
#else
	return format_request_id_portable(ids, out);
#endif
}

uint32_t format_traceparent(const trace_ids &ids, char out[55]) noexcept
{
#if defined(__SSSE3__)
	/* traceparent_with(), its sum taken once from the three vectors */
	const __m128i hi = hex16(ids.hi), lo = hex16(ids.lo), span = hex16(ids.span);
	std::memcpy(out, "00-", 3);
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 3), hi);
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 19), lo);
	out[35] = '-';
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 36), span);
	std::memcpy(out + 52, "-01", 3);
	const __m128i odd = _mm_add_epi32(word_pairs(hi), word_pairs(lo)); /* at 3 and 19 */
	return sum4(_mm_add_epi32(_mm_slli_epi32(odd, 8), word_pairs(span))) + traceparent_fixed;
#else
	return format_traceparent_portable(ids, out);
#endif
}

} // namespace dpumesh::policy
