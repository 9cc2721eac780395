// SPDX-License-Identifier: BSD-3-Clause
// A prefetch at an offset from a pointer that may be null: the data path prefetches slots
// ahead of where it reads (the next mbuf of a stash, the next message's header), and
// past the end or for a message without one that slot holds null. A prefetch does not
// fault, but adding an offset to a null pointer is undefined behaviour (clang's UBSan
// reports it, and a compiler may take the pointer for non-null after it), so the
// address is made as an integer.
//
//   prefetch0_at(next, RTE_CACHE_LINE_SIZE);   // the second line of whatever is there
#pragma once

#include <cstdint>

#include <rte_prefetch.h>

namespace dpumesh {

[[gnu::always_inline]] inline void prefetch0_at(const void *p, uintptr_t offset) noexcept
{
	rte_prefetch0(reinterpret_cast<const void *>(reinterpret_cast<uintptr_t>(p) + offset));
}

} // namespace dpumesh
