// SPDX-License-Identifier: BSD-3-Clause
// Pieces of a UDP checksum summed apart and put together: the one's-complement sum of bytes
// as DPDK's __rte_raw_cksum() takes them (16-bit words loaded from memory from an even
// offset, the last byte of an odd length alone as if followed by a zero).
//
// A sum made of values in registers (text the mesh just formatted) needs no load of the
// bytes it wrote: loads behind fresh narrow stores wait for them (a store-forwarding stall:
// a fifth of the relay's frame in the forward profile).
//
//   uint32_t s = csum_bytes(text, n);               // a part, as if at an even offset
//   uint16_t whole = csum_fold(head + csum_at(csum_fold(s), head_len));
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dpumesh {

/**
 * A sum folded to 16 bits (one's complement: carries added back in): 0 only for 0, else
 * the value in 1..0xffff congruent to s modulo 0xffff. Two steps, no loop: the 32-bit
 * halves added with the carry wrapped around (`add`, `adc 0`), then the 16-bit halves of
 * that by one add of the value and its rotation by 16 (the high half of x + rotl(x, 16) is
 * hi + lo + the carry out of the low half: their one's-complement sum). ~8 instructions;
 * four shift, mask and add steps were ~17 (two places in the forward path's every message
 * had their own copy of this form before it was the one fold).
 */
inline constexpr uint16_t csum_fold(uint64_t s) noexcept
{
	const auto lo = static_cast<uint32_t>(s);
	uint32_t x = lo + static_cast<uint32_t>(s >> 32);
	x += x < lo;
	return static_cast<uint16_t>((x + std::rotl(x, 16)) >> 16);
}

/** x added to a sum at 64 bits with the carry wrapped around (one's-complement addition:
 *  `add` then `adc 0`); 2^64 is 1 at 64 bits as 2^16 is at 16, so the fold is the same. */
inline uint64_t csum_add64(uint64_t s, uint64_t x) noexcept
{
	s += x;
	return s + (s < x);
}

namespace csum_detail {
/**
 * Words (2, 4 or 8) 8-byte words at p added onto s with the carries wrapped around. On x86-64
 * one add-with-carry chain: `add` and an `adc` a word, `adc $0` at its end (6 instructions
 * for 4 words): GCC 12 makes `s += w; s += s < w` an `add` and an `adc $0` a word and does
 * not chain the carries through the flags itself (with `_addcarry_u64` it stores the sum
 * after each step). The last `adc $0` cannot carry out: a chain that starts with `add`
 * leaves at most 2^64 - 2 in s whenever the carry is set. Elsewhere a word at a time.
 */
template <unsigned Words>
[[gnu::always_inline]] inline uint64_t csum_add_words(uint64_t s, const unsigned char *p) noexcept
{
	static_assert(Words == 2 || Words == 4 || Words == 8);
#if defined(__x86_64__) && defined(__GNUC__)
	if constexpr (Words == 8)
		asm("addq (%[p]), %[s]\n\t"
		    "adcq 8(%[p]), %[s]\n\t"
		    "adcq 16(%[p]), %[s]\n\t"
		    "adcq 24(%[p]), %[s]\n\t"
		    "adcq 32(%[p]), %[s]\n\t"
		    "adcq 40(%[p]), %[s]\n\t"
		    "adcq 48(%[p]), %[s]\n\t"
		    "adcq 56(%[p]), %[s]\n\t"
		    "adcq $0, %[s]"
		    : [s] "+r"(s)
		    : [p] "r"(p), "m"(*reinterpret_cast<const unsigned char(*)[64]>(p))
		    : "cc");
	else if constexpr (Words == 4)
		asm("addq (%[p]), %[s]\n\t"
		    "adcq 8(%[p]), %[s]\n\t"
		    "adcq 16(%[p]), %[s]\n\t"
		    "adcq 24(%[p]), %[s]\n\t"
		    "adcq $0, %[s]"
		    : [s] "+r"(s)
		    : [p] "r"(p), "m"(*reinterpret_cast<const unsigned char(*)[32]>(p))
		    : "cc");
	else
		asm("addq (%[p]), %[s]\n\t"
		    "adcq 8(%[p]), %[s]\n\t"
		    "adcq $0, %[s]"
		    : [s] "+r"(s)
		    : [p] "r"(p), "m"(*reinterpret_cast<const unsigned char(*)[16]>(p))
		    : "cc");
#else
	for (unsigned k = 0; k < Words; k++) {
		uint64_t w;
		std::memcpy(&w, p + 8 * k, 8);
		s += w;
		s += s < w;
	}
#endif
	return s;
}
} // namespace csum_detail

/**
 * n bytes summed onto s as __rte_raw_cksum() sums them, as a 64-bit one's-complement sum
 * (carries out of bit 63 wrapped around, 2^64 being 1 at 16 bits as at 64): congruent to
 * their sum modulo 0xffff, 0 only when s and the bytes are all zeros, so csum_fold() of it
 * is their folded sum. From 8 bytes on, whole 64-bit words are added with their carries
 * wrapped around, eight a step, then four, two and one without a loop (the eight, four and
 * two one add-with-carry chain each on x86-64, csum_detail::csum_add_words(): against an
 * add and an `adc $0` onto a carry count a word, the count added back at the end, port
 * RX's check of a 131-byte frame 80 -> 70 instructions, port RX 525.3 -> 481.4 for
 * 314-byte frames; the 8-word step alone -15.8 there, -0.6 at 131 bytes), and the last
 * n % 8 bytes are one load of the word that ends them, shifted to where they sit in a word
 * of their own (at a multiple of 8 from p, so paired as they are in place). Below 8 bytes,
 * one 4-, 2- and 1-byte load each. DPDK 22.11's loop, 16 bits a step with a vectorized
 * prologue and epilogue, cost ~12 cycles for a 57-byte header in the forward profile;
 * 32-bit halves added apart cost ~9 instructions per 8 bytes (~105 for a received frame's
 * 97-byte datagram). The 0 to 3 words after the 4-word steps as a loop of single words
 * cost ~10 instructions a received frame more than two straight-line steps.
 */
inline uint64_t csum_raw64(const void *p, size_t n, uint64_t s = 0) noexcept
{
	const auto *b = static_cast<const unsigned char *>(p);
	const auto word = [b](size_t at) noexcept {
		uint64_t w;
		std::memcpy(&w, b + at, 8);
		return w;
	};
	const auto add = [&s](uint64_t w) noexcept {
		s += w;
		s += s < w; /* `add`, `adc $0`: one add's carry wrapped cannot carry out */
	};
	if (n >= 8) {
		/* after the 8-word loop, the steps chosen by the bits of n (32, 16 and 8 bytes,
		 * then the last n % 8 as the word that ends them) along a pointer that moves on,
		 * not by compares of what is left at an index: fewer values live (in port RX's
		 * loop, whose registers were all taken, the index bookkeeping was spilled and
		 * reloaded a step) */
		const unsigned char *q = b;
		for (const unsigned char *const e = b + (n & ~size_t(63)); q != e; q += 64)
			s = csum_detail::csum_add_words<8>(s, q);
		if (n & 32) {
			s = csum_detail::csum_add_words<4>(s, q);
			q += 32;
		}
		if (n & 16) {
			s = csum_detail::csum_add_words<2>(s, q);
			q += 16;
		}
		if (n & 8)
			add(word(size_t(q - b)));
		if (n & 7) { /* the last n % 8 bytes: the word ending them, less what precedes them */
			/* 8 * (8 - n % 8), as a shift by 0-63 takes it */
			const unsigned drop = (0u - 8 * unsigned(n)) & 63;
			const uint64_t w = word(n - 8);
			add(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? w >> drop : w << drop);
		}
		return s;
	}
	uint64_t t = 0;
	size_t i = 0;
	if (i + 4 <= n) {
		uint32_t w;
		std::memcpy(&w, b + i, 4);
		t += w;
		i += 4;
	}
	if (i + 2 <= n) {
		uint16_t w;
		std::memcpy(&w, b + i, 2);
		t += w;
		i += 2;
	}
	if (i < n) /* alone: the first byte of a word whose second is zero */
		t += __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? b[i] : uint32_t(b[i]) << 8;
	return csum_add64(s, t);
}

/**
 * n bytes summed as __rte_raw_cksum() sums them, unfolded (below 2^33): csum_fold() of it is
 * its __rte_raw_cksum_reduce(); csum_raw64() reduced to 33 bits (two such sums add up
 * without overflow). Tracks prx12 and rel12 each wrote one such sum; this one serves both.
 */
inline uint64_t csum_raw(const void *p, size_t n) noexcept
{
	const uint64_t s = csum_raw64(p, n);
	return (s & 0xffffffff) + (s >> 32);
}

/** csum_fold(csum_raw(p, n)): a header's or a body's folded sum (wire::l7_sum(), the
 *  frames' own sums). An input not all zeros folds to 1..0xffff. */
inline uint16_t csum_folded(const void *p, size_t n) noexcept
{
	return csum_fold(csum_raw(p, n));
}

/** A part's folded sum where the part starts `offset` bytes into the whole: an odd offset
 *  pairs its bytes the other way round, so its sum is byte-swapped. */
inline constexpr uint16_t csum_at(uint16_t s, size_t offset) noexcept
{
	return offset & 1 ? static_cast<uint16_t>(s << 8 | s >> 8) : s;
}

/** x taken out of a sum (one's complement: its complement added). */
inline constexpr uint16_t csum_neg(uint16_t x) noexcept
{
	return static_cast<uint16_t>(~x);
}

/** The 16-bit words of the 8 bytes a word holds in memory, summed: what those bytes add at
 *  an even offset (either byte order: a sum does not care where each word sits). */
inline constexpr uint32_t csum_lanes(uint64_t w) noexcept
{
	return static_cast<uint32_t>((w & 0xffff) + (w >> 16 & 0xffff) + (w >> 32 & 0xffff) +
				     (w >> 48));
}

/** n bytes summed as if at an even offset, unfolded (constant expressions: the fixed parts
 *  of a field the mesh writes). */
inline constexpr uint32_t csum_bytes(const char *p, size_t n) noexcept
{
	uint32_t s = 0;
	constexpr bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
	for (size_t i = 0; i < n; i += 2) {
		const uint32_t a = static_cast<uint8_t>(p[i]);
		const uint32_t b = i + 1 < n ? static_cast<uint8_t>(p[i + 1]) : 0;
		s += little ? a | b << 8 : a << 8 | b;
	}
	return s;
}

} // namespace dpumesh
