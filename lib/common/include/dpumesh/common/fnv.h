// SPDX-License-Identifier: BSD-3-Clause
// FNV-1a (32 bit): the body checksum that sample pods and services put in "x-sum" /
// "x-digest" and dpumesh-pcapdump prints, so a body can be compared across processes and
// captures. Header-only, no dependencies (target dpumesh::fnv).
//
//   char sum[9]; snprintf(sum, sizeof(sum), "%08x", dpumesh::fnv1a(body, len));
#pragma once

#include <cstddef>
#include <cstdint>

namespace dpumesh {

inline constexpr uint32_t fnv1a_basis = 2166136261u;

/** FNV-1a of n bytes, continuing from `h` (the basis for a new sum). */
inline uint32_t fnv1a(const void *data, size_t n, uint32_t h = fnv1a_basis) noexcept
{
	const auto *p = static_cast<const uint8_t *>(data);
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

} // namespace dpumesh
