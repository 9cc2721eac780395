// SPDX-License-Identifier: BSD-3-Clause
// Short copies of a length known only at run time, inline, in whole 32-byte chunks; and
// short compares, inline, a word at a time.
//
// For a few hundred bytes at most (a frame's headers, an L7 header) where both sides have
// room past the end: libc's memcpy for such a length is a call through its dispatch, which
// the forward path's profile had at 3.7% of the worker for two copies of ~60-130 bytes.
//
//   if (copy_chunks_len(n) <= room_of_both) copy_chunks(dst, src, n); else memcpy(dst, src, n);
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dpumesh {

inline constexpr size_t copy_chunk = 32;

/** n rounded up to whole chunks: what copy_chunks() reads and writes. */
inline constexpr size_t copy_chunks_len(size_t n) noexcept
{
	return (n + copy_chunk - 1) & ~(copy_chunk - 1);
}

/** Copies n bytes as copy_chunks_len(n): the bytes past n up to it are read from `src` and
 *  written to `dst` too, so both must have that room. */
inline void copy_chunks(void *dst, const void *src, size_t n) noexcept
{
	auto *d = static_cast<unsigned char *>(dst);
	const auto *s = static_cast<const unsigned char *>(src);
	for (size_t i = 0; i < n; i += copy_chunk)
		std::memcpy(d + i, s + i, copy_chunk);
}

/** Copies exactly n >= 16 bytes, inline, where nothing past either end may be touched: whole
 *  32-byte chunks, then the last 32 (or, under 32, two 16-byte halves) again overlapping
 *  what is already copied. dst and src must not overlap. */
inline void copy_exact(void *dst, const void *src, size_t n) noexcept
{
	auto *d = static_cast<unsigned char *>(dst);
	const auto *s = static_cast<const unsigned char *>(src);
	if (n < copy_chunk) {
		std::memcpy(d, s, 16);
		std::memcpy(d + n - 16, s + n - 16, 16);
		return;
	}
	for (size_t i = 0; i + copy_chunk <= n; i += copy_chunk)
		std::memcpy(d + i, s + i, copy_chunk);
	std::memcpy(d + n - copy_chunk, s + n - copy_chunk, copy_chunk);
}

/** Whether the n bytes at `a` and at `b` are the same: eight at a time, then four, two and
 *  one, inline (libc's memcmp is a call even for a few bytes: a service's name, an
 *  address). With a constant n it unrolls into one load per word and per tail piece, never
 *  a word assembled on the stack from narrower stores. */
inline bool same_bytes(const void *a, const void *b, size_t n) noexcept
{
	const auto *p = static_cast<const unsigned char *>(a);
	const auto *q = static_cast<const unsigned char *>(b);
	uint64_t diff = 0;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		std::memcpy(&x, p + i, 8);
		std::memcpy(&y, q + i, 8);
		diff |= x ^ y;
	}
	if (i + 4 <= n) {
		uint32_t x, y;
		std::memcpy(&x, p + i, 4);
		std::memcpy(&y, q + i, 4);
		diff |= x ^ y;
		i += 4;
	}
	if (i + 2 <= n) {
		uint16_t x, y;
		std::memcpy(&x, p + i, 2);
		std::memcpy(&y, q + i, 2);
		diff |= uint16_t(x ^ y);
		i += 2;
	}
	if (i < n)
		diff |= p[i] ^ q[i];
	return diff == 0;
}

/** The 4 or 8 bytes at p as memcpy loads them (any alignment). */
inline uint32_t load32(const void *p) noexcept
{
	uint32_t w;
	std::memcpy(&w, p, 4);
	return w;
}
inline uint64_t load64(const void *p) noexcept
{
	uint64_t w;
	std::memcpy(&w, p, 8);
	return w;
}

/** 1-8 bytes at p in one word, each byte of the word one of them (the rest repeat them) and
 *  every one of them in it, so that two runs of the same length are equal exactly when their
 *  words are: read inside the n bytes only (two overlapping 4-byte loads; 1-3 bytes one at a
 *  time). The L7 decoder's value and name tests, the service gate's keys. */
inline uint64_t short_word(const void *at, size_t n) noexcept
{
	const auto *p = static_cast<const unsigned char *>(at);
	if (n >= 4)
		return load32(p) | uint64_t(load32(p + n - 4)) << 32;
	const uint64_t b = p[0] | uint32_t(p[n >> 1]) << 8 | uint32_t(p[n - 1]) << 16;
	return b | b << 24 | b << 48;
}

} // namespace dpumesh
