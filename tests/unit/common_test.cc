// SPDX-License-Identifier: BSD-3-Clause
// Common helpers of the data path: copy_exact() writes exactly its bytes, huge_array gives
// aligned, value-initialised arrays (on huge pages where the kernel offers them).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>


#include "dpumesh/common/copy.h"
#include "dpumesh/common/huge_array.h"

using namespace dpumesh;

namespace {

/* Every length 16-300 at every offset 0-7 of both sides: the copied bytes equal the
 * source's, and the guard bytes on both sides of the destination are untouched. */
TEST(CopyExact, CopiesExactlyItsBytes)
{
	std::vector<uint8_t> src(400), dst(400);
	for (size_t i = 0; i < src.size(); i++)
		src[i] = static_cast<uint8_t>(i * 7 + 3);
	for (size_t n = 16; n <= 300; n++)
		for (size_t so = 0; so < 8; so++)
			for (size_t d0 = 32; d0 < 40; d0++) {
				std::fill(dst.begin(), dst.end(), 0xee);
				copy_exact(dst.data() + d0, src.data() + so, n);
				ASSERT_EQ(std::memcmp(dst.data() + d0, src.data() + so, n), 0) << n;
				for (size_t i = 0; i < d0; i++)
					ASSERT_EQ(dst[i], 0xee) << n << " before at " << i;
				for (size_t i = d0 + n; i < dst.size(); i++)
					ASSERT_EQ(dst[i], 0xee) << n << " after at " << i;
			}
}

struct alignas(64) line {
	uint64_t a = 7;
	uint32_t b = 0;
	uint8_t pad[52];
};

/* Small arrays come from the heap, large ones from a 2 MiB-aligned mapping; both are
 * aligned for their type and value-initialised (as new T[n]()), writable to the end. */
TEST(HugeArray, AlignedAndInitialisedSmallAndLarge)
{
	for (size_t n : {size_t(1), size_t(100), (huge_page_size / sizeof(line)) * 3 + 5}) {
		huge_array<line> a = make_huge_array<line>(n);
		ASSERT_NE(a.get(), nullptr);
		EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 64, 0u);
		EXPECT_EQ(a.mapped(), n * sizeof(line) >= huge_page_size) << n;
		if (a.mapped()) { /* a huge page backs an aligned 2 MiB only */
			EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % huge_page_size, 0u);
		}
		for (size_t i = 0; i < n; i++) {
			ASSERT_EQ(a[i].a, 7u);
			ASSERT_EQ(a[i].b, 0u);
			ASSERT_EQ(a[i].pad[51], 0u);
			a[i].b = static_cast<uint32_t>(i);
		}
		EXPECT_EQ(a[n - 1].b, n - 1);
	}
	/* left untouched: a trivial type is not initialised (its pages are not faulted in) */
	huge_array<uint64_t> raw = make_huge_array<uint64_t>(huge_page_size, false);
	ASSERT_TRUE(raw.mapped());
	raw[huge_page_size - 1] = 1;
	EXPECT_EQ(raw[huge_page_size - 1], 1u);
}

} // namespace
