// SPDX-License-Identifier: BSD-3-Clause
// Trace ids of the L7 policy: x-request-id (a UUID v4) and a W3C traceparent for requests
// that carry neither, from one set of random bits the caller draws (no EAL here): a
// trace_rng per data-path thread, seeded once from a real random source, or its own bits.
//
//   policy::trace_rng rng(rte_rand());      // at start
//   unsigned need = policy::trace_missing(view);
//   if (need) {
//           policy::trace_ids ids = rng.next();
//           policy::trace_result r = policy::add_trace(hdr, len, cap, need, ids);
//           if (r.no_room) count; else len = r.len;
//   }
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#if defined(__SSSE3__)
#include <tmmintrin.h>
#endif

#include "dpumesh/common/csum.h"
#include "dpumesh/wire/l7.h"

namespace dpumesh::policy {

/** Bits of trace_missing(). */
enum trace_field : unsigned {
	trace_request_id = wire::l7_trace_request_id,   /**< x-request-id */
	trace_traceparent = wire::l7_trace_traceparent, /**< traceparent */
};

/** What both fields add to a header (x-request-id's 4 + 12 + 36 bytes, traceparent's
 *  4 + 11 + 55): an even number, so a body after them keeps each byte's parity. */
inline constexpr uint32_t trace_both_size = (4 + 12 + 36) + (4 + 11 + 55);
static_assert(trace_both_size % 2 == 0);

/** 128 random bits (the trace id, shared by both fields) and a 64-bit span id (non-zero). */
struct trace_ids {
	uint64_t hi = 0, lo = 0, span = 1;
};

/**
 * Trace ids for one request: splitmix64 over a counter started at a random seed. Ids must
 * be unique and unguessable enough to not collide across nodes, not secret: a counter
 * through a 64-bit bijective mixer never repeats a value before 2^64 draws and costs a few
 * multiplies (rte_rand() three times a request was ~4% of the forwarding path).
 */
class trace_rng {
public:
	explicit trace_rng(uint64_t seed = 0) noexcept : _state(seed) {}
	/** Inline (called out of line, each mix was 1.3% of the forwarding path). One mix a
	 *  request: the three ids are functions of the one 64-bit state whatever is drawn, so
	 *  the low half and the span come from the high half by a shift-xor and an odd multiply
	 *  each, both bijective (distinct draws keep distinct ids), instead of two more mixes. */
	trace_ids next() noexcept
	{
		_state += step;
		trace_ids ids;
		ids.hi = mix(_state);
		ids.lo = (ids.hi ^ (ids.hi >> 32)) * 0xd6e8feb86659fd93ull;
		ids.span = ((ids.lo ^ (ids.lo >> 29)) * 0xbf58476d1ce4e5b9ull) | 1;
		return ids;
	}

private:
	static constexpr uint64_t step = 0x9e3779b97f4a7c15ull;
	static uint64_t mix(uint64_t z) noexcept
	{
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		return z ^ (z >> 31);
	}
	uint64_t _state;
};

/** The trace fields a request header lacks (trace_field bits), as l7_decode() noted them. */
inline unsigned trace_missing(const wire::l7_view &v) noexcept
{
	return ~unsigned(v.trace) & (trace_request_id | trace_traceparent);
}

/** x-request-id text: UUID 8-4-4-4-12, version 4, variant 1 (36 characters).
 *  @return what the text sums to as a UDP checksum adds it (csum_bytes(out, 36), made from
 *          the registers the digits were made in: no load of what was just stored) */
uint32_t format_request_id(const trace_ids &ids, char out[36]) noexcept;
/** traceparent text: 00-<32 hex trace id>-<16 hex span id>-01 (55 characters).
 *  @return csum_bytes(out, 55), as format_request_id() */
uint32_t format_traceparent(const trace_ids &ids, char out[55]) noexcept;
/** The same texts without vector instructions: what CPUs without SSSE3 (a BlueField's Arm
 *  cores) run, compiled everywhere so that tests hold it to the other form. */
uint32_t format_request_id_portable(const trace_ids &ids, char out[36]) noexcept;
uint32_t format_traceparent_portable(const trace_ids &ids, char out[55]) noexcept;

struct trace_result {
	uint32_t len = 0;       /**< the header's length now (unchanged when no_room) */
	unsigned added = 0;     /**< trace_field bits written */
	bool no_room = false;   /**< the fields did not fit: the header was left as it was */
	/** The fields added, summed as a UDP checksum adds them from the first one's offset
	 *  (csum_bytes() of the added bytes, unfolded, or a number that folds as it does:
	 *  the same modulo 0xffff; 0 when none): with l7_sum_grown() the header's new sum
	 *  without reading it again. */
	uint64_t added_sum = 0;
};

/** The sum of a field the mesh adds, but its value's: its length word and its name. */
template <size_t N> constexpr uint32_t mesh_field_sum(const char (&name)[N], uint16_t len) noexcept
{
	const char head[4] = {static_cast<char>(N - 1), 0, static_cast<char>(len >> 8),
			      static_cast<char>(len & 0xff)};
	return csum_bytes(head, 4) + csum_bytes(name, N - 1);
}

namespace detail {

/* The sum of a text's fixed characters (csum_bytes() with its digits, the x's, as zeros). */
template <size_t N> constexpr uint32_t fixed_sum(const char (&text)[N]) noexcept
{
	char t[N] = {};
	for (size_t i = 0; i + 1 < N; i++)
		t[i] = text[i] == 'x' ? '\0' : text[i];
	return csum_bytes(t, N - 1);
}
inline constexpr uint32_t request_id_dashes = fixed_sum("xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx");
inline constexpr uint32_t traceparent_fixed =
	fixed_sum("00-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-xxxxxxxxxxxxxxxx-01");

/* The UUID's halves: 8-4-4 from hi with the version nibble, 4-12 from lo with the variant
 * bits. */
inline uint64_t uuid_hi(const trace_ids &ids) noexcept
{
	return (ids.hi & 0xffffffffffff0000ull) | 0x4000 | (ids.hi & 0xfff);
}
inline uint64_t uuid_lo(const trace_ids &ids) noexcept
{
	return (ids.lo & 0x3fffffffffffffffull) | 0x8000000000000000ull;
}

#if defined(__SSSE3__)
/* The 16 nibbles of x, most significant first, a byte each (hex16()'s lookup indices). */
inline __m128i nibbles16(uint64_t x) noexcept
{
	const __m128i bytes = _mm_cvtsi64_si128(static_cast<long long>(__builtin_bswap64(x)));
	const __m128i low4 = _mm_set1_epi8(0x0f);
	const __m128i hi = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
	const __m128i lo = _mm_and_si128(bytes, low4);
	return _mm_unpacklo_epi8(hi, lo);
}

/* Nibbles (values 0-15, a byte each) as lowercase hex digits: one 16-byte table lookup. */
inline __m128i hex_of(__m128i nibbles) noexcept
{
	const __m128i digits = _mm_setr_epi8('0', '1', '2', '3', '4', '5', '6', '7', '8', '9',
					     'a', 'b', 'c', 'd', 'e', 'f');
	return _mm_shuffle_epi8(digits, nibbles);
}

/* 16 lowercase hex digits of x, most significant first, in a vector: each byte's nibbles
 * spread to two bytes and looked up in a 16-byte table (one pshufb). */
inline __m128i hex16(uint64_t x) noexcept
{
	return hex_of(nibbles16(x));
}

/* The hex digits of a request's ids, each made once: the trace id's halves (traceparent)
 * and the UUID's (x-request-id), which differ from them in a nibble each (uuid_hi()'s
 * version, uuid_lo()'s variant) and are made from their nibbles, not converted again
 * (two conversions and the halves' masking were ~15 instructions a request). */
struct id_digits {
	__m128i hi, lo, span, uuid_hi, uuid_lo;
};
inline id_digits digits_of(const trace_ids &ids) noexcept
{
	id_digits d;
	const __m128i nhi = nibbles16(ids.hi), nlo = nibbles16(ids.lo);
	d.hi = hex_of(nhi);
	d.lo = hex_of(nlo);
	d.span = hex16(ids.span);
	/* uuid_hi(): bits 12-15 (the 13th digit) are 4 */
	d.uuid_hi = _mm_or_si128(
		_mm_and_si128(d.hi, _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
						  0, -1, -1, -1)),
		_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, '4', 0, 0, 0));
	/* uuid_lo(): bits 62-63 (the first digit's top two) are 10 */
	d.uuid_lo = hex_of(_mm_or_si128(
		_mm_and_si128(nlo, _mm_setr_epi8(3, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15, 15,
						 15, 15, 15)),
		_mm_setr_epi8(8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)));
	return d;
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

/* format_request_id()'s text into out (36 bytes), its sum as four 32-bit lanes plus a
 * scalar (the caller adds them up, once for both fields); with no `tail_sum`, 48 bytes
 * written (the 12 past the text zeros) and the sum in the lanes alone */
inline __m128i request_id_into(const id_digits &d, char *out, uint32_t *tail_sum) noexcept
{
	/* the 32 digits moved into their places and the dashes put in, three stores (the
	 * scalar form's 64-bit arithmetic per eight digits was 1.6% of the forwarding path) */
	const __m128i a = d.uuid_hi, b = d.uuid_lo;
	const __m128i out0 = _mm_or_si128(
		_mm_shuffle_epi8(a, _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, -1, 8, 9, 10, 11, -1, 12, 13)),
		_mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, '-', 0, 0, 0, 0, '-', 0, 0));
	const __m128i out1 = _mm_or_si128(
		_mm_or_si128(_mm_shuffle_epi8(a, _mm_setr_epi8(14, 15, -1, -1, -1, -1, -1, -1, -1,
								-1, -1, -1, -1, -1, -1, -1)),
			     _mm_shuffle_epi8(b, _mm_setr_epi8(-1, -1, -1, 0, 1, 2, 3, -1, 4, 5, 6, 7,
								8, 9, 10, 11))),
		_mm_setr_epi8(0, 0, '-', 0, 0, 0, 0, '-', 0, 0, 0, 0, 0, 0, 0, 0));
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out), out0);
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 16), out1);
	if (!tail_sum) {
		/* the last four digits as a 16-byte store, its 12 zero bytes for the caller
		 * to write over (add_both(): the next field), their sum in the lanes: moved
		 * out and summed as a scalar: relay 1291.0 -> 1287.0 */
		const __m128i tail = _mm_srli_si128(b, 12);
		_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 32), tail);
		return _mm_add_epi32(_mm_add_epi32(word_pairs(out0), word_pairs(out1)),
				     word_pairs(tail));
	}
	const uint32_t tail = static_cast<uint32_t>(_mm_cvtsi128_si32(_mm_srli_si128(b, 12)));
	std::memcpy(out + 32, &tail, 4);
	*tail_sum = (tail & 0xffff) + (tail >> 16);
	return _mm_add_epi32(word_pairs(out0), word_pairs(out1));
}

/* format_traceparent()'s digits into out (55 bytes: "00-", the dashes and "-01" are the
 * caller's); `odd`: the lanes of their sum when out itself sits at an odd offset (the
 * digits at 3 and 19 then at even ones, weighed by 2^16: by 1, as a fold takes it; those at
 * 36 by 256); `even`: when it sits at an even one (format_traceparent()) */
inline void traceparent_digits_into(const id_digits &d, char *out, __m128i *odd,
				    __m128i *even) noexcept
{
	const __m128i hi = d.hi, lo = d.lo, span = d.span;
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 3), hi);
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 19), lo);
	_mm_storeu_si128(reinterpret_cast<__m128i *>(out + 36), span);
	const __m128i at3 = _mm_add_epi32(word_pairs(hi), word_pairs(lo)); /* at 3 and 19 */
	const __m128i at36 = word_pairs(span);
	if (odd)
		*odd = _mm_add_epi32(at3, _mm_slli_epi32(at36, 8));
	if (even)
		*even = _mm_add_epi32(_mm_slli_epi32(at3, 8), at36);
}

/* Both fields at once after a header l7_writer::extend() takes (len >= l7_fixed_size,
 * len <= cap), with the checks its two mesh_field() calls and finish() make: the same
 * bytes, each constant piece one store (a field's length word and name: 16 bytes), the
 * digits' sums added up once, the length and count one store. What a request from a
 * client without trace ids gets (two out-of-line formatters and the writer's field by
 * field checks and stores were 330 instructions of the forward relay's 2575). */
inline trace_result add_both_unchecked(uint8_t *hdr, uint32_t len, uint16_t nb,
				       const trace_ids &ids) noexcept;
inline trace_result add_both(uint8_t *hdr, uint32_t len, uint32_t cap, const trace_ids &ids) noexcept
{
	const uint16_t nb = static_cast<uint16_t>(hdr[6] << 8 | hdr[7]);
	if (nb == wire::l7_max_fields || nb + 1 == wire::l7_max_fields ||
	    cap - len < trace_both_size || len + trace_both_size > wire::l7_max_size) {
		trace_result r;
		r.len = len;
		r.no_room = true;
		return r;
	}
	return add_both_unchecked(hdr, len, nb, ids);
}

/* add_both() of a header whose checks the caller made: `nb` (its field count) below
 * l7_max_fields - 1, len + trace_both_size within its buffer and l7_max_size (a relay tests
 * its header's length against one bound kept for the stage: add_both()'s four tests, and
 * the caller's of the need, the fixed size and the room, were ~15 instructions) */
inline trace_result add_both_unchecked(uint8_t *hdr, uint32_t len, uint16_t nb,
				       const trace_ids &ids) noexcept
{
	constexpr uint32_t id_field = 4 + 12 + 36, tp_field = 4 + 11 + 55;
	static_assert(id_field + tp_field == trace_both_size);
	trace_result r;
	uint8_t *p = hdr + len;
	const id_digits d = digits_of(ids);
	/* x-request-id: the length word and name, then the value at 16 (even) */
	static constexpr char id_head[16] = {12, 0, 0, 36, 'x', '-', 'r', 'e', 'q', 'u',
					     'e', 's', 't', '-', 'i', 'd'};
	std::memcpy(p, id_head, 16);
	/* its value's 16 bytes past it written over by traceparent's head, next */
	const __m128i id_sum = request_id_into(d, reinterpret_cast<char *>(p + 16), nullptr);
	/* traceparent: the length word, the name and the value's first '0' (16 bytes), then
	 * "0-", the digits (at 15: odd, weighed by 256), the dashes and "-01" */
	uint8_t *tp = p + id_field;
	static constexpr char tp_head[16] = {11, 0, 0, 55, 't', 'r', 'a', 'c',
					     'e', 'p', 'a', 'r', 'e', 'n', 't', '0'};
	std::memcpy(tp, tp_head, 16);
	char *v = reinterpret_cast<char *>(tp + 15);
	std::memcpy(v + 1, "0-", 2);
	__m128i tp_sum;
	traceparent_digits_into(d, v, &tp_sum, nullptr);
	v[35] = '-';
	std::memcpy(v + 52, "-01", 3);
	const uint32_t new_len = len + id_field + tp_field;
	const uint32_t lc = static_cast<uint32_t>(new_len << 16 | uint16_t(nb + 2));
	const uint32_t lc_be = std::endian::native == std::endian::little ? __builtin_bswap32(lc) : lc;
	std::memcpy(hdr + 4, &lc_be, 4);
	r.len = new_len;
	r.added = trace_request_id | trace_traceparent;
	/* the fields' sums from the first one's offset (x-request-id's value at 16, with its
	 * dashes; traceparent's at 67: odd, its fixed characters weighed by 256), the
	 * vectors' lanes added up once */
	r.added_sum = mesh_field_sum("x-request-id", 36) +
		      mesh_field_sum("traceparent", 55) + (traceparent_fixed << 8) +
		      sum4(_mm_add_epi32(id_sum, tp_sum));
	return r;
}
#endif

} // namespace detail

/**
 * Appends the `need` fields to a header that l7_decode() accepted (`len` bytes of a buffer
 * of `cap`), in place. Inline: its result came back through the stack, the flag's byte
 * store read back as a word (a store-forwarding stall, 1.2% of the forwarding path).
 */
[[gnu::always_inline]] inline trace_result add_trace(uint8_t *hdr, uint32_t len, uint32_t cap,
						     unsigned need, const trace_ids &ids) noexcept
{
	trace_result r;
	r.len = len;
	if (!need)
		return r;
#if defined(__SSSE3__)
	if (need == (trace_request_id | trace_traceparent) && len >= wire::l7_fixed_size &&
	    len <= cap) [[likely]]
		return detail::add_both(hdr, len, cap, ids);
#endif
	/* formatted in place, as fields the mesh made: names are tokens and the ids hex
	 * digits and dashes, nothing to validate or copy */
	wire::l7_writer w = wire::l7_writer::extend(hdr, len, cap);
	/* each field's sum from its parts: the name's (a constant) and the value's, which the
	 * formatter made from its registers; both fields have even lengths (52, 70) */
	uint64_t sum = 0;
	if (need & trace_request_id)
		if (char *id = w.mesh_field("x-request-id", 36)) /* the value at 16: even */
			sum += mesh_field_sum("x-request-id", 36) + format_request_id(ids, id);
	if (need & trace_traceparent)
		if (char *tp = w.mesh_field("traceparent", 55)) /* at 15: odd, weighed by 256 */
			sum += mesh_field_sum("traceparent", 55) +
			       (uint64_t(format_traceparent(ids, tp)) << 8);
	const size_t n = w.finish();
	if (n == 0) { /* no room: the header is left as it was */
		r.no_room = true;
		return r;
	}
	r.len = static_cast<uint32_t>(n);
	r.added = need;
	r.added_sum = sum;
	return r;
}

} // namespace dpumesh::policy
