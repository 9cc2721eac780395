// SPDX-License-Identifier: BSD-3-Clause
// Short copies of a length known only at run time, inline, in whole 32-byte chunks.
//
// For a few hundred bytes at most (a frame's headers, an L7 header) where both sides have
// room past the end: libc's memcpy for such a length is a call through its dispatch, which
// the forward path's profile had at 3.7% of the worker for two copies of ~60-130 bytes.
//
//   if (copy_chunks_len(n) <= room_of_both) copy_chunks(dst, src, n); else memcpy(dst, src, n);
#pragma once

#include <cstddef>
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

} // namespace dpumesh
