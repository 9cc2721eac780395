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

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dpumesh {

/** A sum folded to 16 bits (one's complement: carries added back in), in four steps, no
 *  loop: 2^33 at most after the first, 0x2fffe after the second, 0x10001 after the third. */
inline constexpr uint16_t csum_fold(uint64_t s) noexcept
{
	s = (s & 0xffffffff) + (s >> 32);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return static_cast<uint16_t>(s);
}

/**
 * n bytes summed as __rte_raw_cksum() sums them, unfolded (below 2^33): csum_fold() of it is
 * its __rte_raw_cksum_reduce(). From 8 bytes on, 64-bit words are added and their carries
 * counted apart (an add and an add-with-carry a word; 2^64 is 1 in one's-complement
 * arithmetic, as 2^16 is), four a step, and the last n % 8 bytes are one load of the word
 * that ends them, shifted to where they sit in a word of their own (at a multiple of 8 from
 * p, so paired as they are in place). Below 8 bytes, one 4-, 2- and 1-byte load each.
 * DPDK 22.11's loop, 16 bits a step with a vectorized prologue and epilogue, cost ~12
 * cycles for a 57-byte header in the forward profile; 32-bit halves added apart cost ~9
 * instructions per 8 bytes (~105 for a received frame's 97-byte datagram).
 */
inline uint64_t csum_raw(const void *p, size_t n) noexcept
{
	const auto *b = static_cast<const unsigned char *>(p);
	if (n >= 8) {
		uint64_t s = 0, carries = 0;
		const auto add = [b, &s, &carries](size_t at, unsigned drop = 0) noexcept {
			uint64_t w;
			std::memcpy(&w, b + at, 8);
			w = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? w >> drop : w << drop;
			s += w;
			carries += s < w;
		};
		size_t i = 0;
		for (; i + 32 <= n; i += 32) {
			add(i);
			add(i + 8);
			add(i + 16);
			add(i + 24);
		}
		for (; i + 8 <= n; i += 8)
			add(i);
		if (i < n) /* the last n - i bytes: the word ending them, less what precedes them */
			add(n - 8, 8 * unsigned(8 - (n - i)));
		uint64_t t = s + carries;
		t += t < carries; /* the carry out, added back in */
		return (t & 0xffffffff) + (t >> 32);
	}
	uint64_t s = 0;
	size_t i = 0;
	if (i + 4 <= n) {
		uint32_t w;
		std::memcpy(&w, b + i, 4);
		s += w;
		i += 4;
	}
	if (i + 2 <= n) {
		uint16_t w;
		std::memcpy(&w, b + i, 2);
		s += w;
		i += 2;
	}
	if (i < n) /* alone: the first byte of a word whose second is zero */
		s += __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? b[i] : uint32_t(b[i]) << 8;
	return s;
}

/** x added to a sum at 64 bits with the carry wrapped around (one's-complement addition:
 *  `add` then `adc 0`); 2^64 is 1 at 64 bits as 2^16 is at 16, so the fold is the same. */
inline uint64_t csum_add64(uint64_t s, uint64_t x) noexcept
{
	s += x;
	return s + (s < x);
}

/**
 * csum_fold(csum_raw(p, n)), the same value, in about half the instructions for a header's
 * few dozen bytes: whole 64-bit words added with their carries (csum_add64(), two
 * instructions a word where csum_raw() splits each into halves, six), four a step; the
 * last 0-7 bytes gathered into one word in memory order (4-, 2- and 1-byte loads), added
 * once. Either way an input not all zeros folds to 1..0xffff, so even a sum of all ones
 * comes out as csum_raw()'s: the values are equal, not only congruent.
 */
inline uint16_t csum_folded(const void *p, size_t n) noexcept
{
	if constexpr (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__)
		return csum_fold(csum_raw(p, n));
	const auto *b = static_cast<const unsigned char *>(p);
	uint64_t s = 0;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		uint64_t w0, w1, w2, w3; /* apart: an array of four went through the stack */
		std::memcpy(&w0, b + i, 8);
		std::memcpy(&w1, b + i + 8, 8);
		std::memcpy(&w2, b + i + 16, 8);
		std::memcpy(&w3, b + i + 24, 8);
		s = csum_add64(csum_add64(csum_add64(csum_add64(s, w0), w1), w2), w3);
	}
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		std::memcpy(&w, b + i, 8);
		s = csum_add64(s, w);
	}
	/* the tail's bytes where a little-endian word load would put them: its 16-bit lanes
	 * are csum_raw()'s 4-, 2- and 1-byte pieces (the odd byte low in its lane) */
	uint64_t t = 0;
	if (n & 4) {
		uint32_t w;
		std::memcpy(&w, b + i, 4);
		t = w;
		i += 4;
	}
	if (n & 2) {
		uint16_t w;
		std::memcpy(&w, b + i, 2);
		t |= uint64_t(w) << (n & 4 ? 32 : 0);
		i += 2;
	}
	if (n & 1)
		t |= uint64_t(b[i]) << ((n & 6) * 8);
	return csum_fold(csum_add64(s, t));
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
