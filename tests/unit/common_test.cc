// SPDX-License-Identifier: BSD-3-Clause
// Common helpers of the data path: copy_exact() writes exactly its bytes, huge_array gives
// aligned, value-initialised arrays (on huge pages where the kernel offers them), a gauge
// reads as the number its one writer made it, from another thread too; a number typed by a
// person is taken whole and in range, or not at all.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>


#include "dpumesh/common/copy.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/common/huge_array.h"
#include "dpumesh/common/numbers.h"

using namespace dpumesh;

namespace {

/* Every length 16-300 at every offset 0-7 of both sides: the copied bytes equal the
 * source's, and the guard bytes on both sides of the destination are untouched. */
/* A whole number is digits alone, in range: what strtoull would take part of, skip to, or
 * wrap is none. */
TEST(Numbers, WholeTakesDigitsInRangeAndNothingElse)
{
	EXPECT_EQ(parse_whole("0", 0, 10), 0u);
	EXPECT_EQ(parse_whole("10", 0, 10), 10u);
	EXPECT_EQ(parse_whole("007", 0, 10), 7u); /* base 10: a leading zero is a digit */
	EXPECT_EQ(parse_whole("18446744073709551615", 0, UINT64_MAX), UINT64_MAX);
	EXPECT_EQ(parse_whole("0x1f", 0, 100, 0), 31u);
	EXPECT_EQ(parse_whole("010", 0, 100, 0), 8u);
	for (const char *bad : {"", "abc", "8k", " 8", "8 ", "+8", "-1", "-0", "1.5", "1e3",
				"0x1f", "18446744073709551616", "99999999999999999999999"})
		EXPECT_FALSE(parse_whole(bad, 0, UINT64_MAX).has_value()) << '"' << bad << '"';
	EXPECT_FALSE(parse_whole(nullptr, 0, 10).has_value());
	EXPECT_FALSE(parse_whole("11", 0, 10).has_value());
	EXPECT_FALSE(parse_whole("0", 1, 10).has_value());
	EXPECT_FALSE(parse_whole("0x", 0, 10, 0).has_value());
}

/* A real number is finite and in range: nan and inf, which pass no range test and break
 * every conversion to an integer, are none, and so are over- and underflows. */
TEST(Numbers, RealTakesFiniteNumbersInRange)
{
	EXPECT_EQ(parse_real("0.5", 0, 1), 0.5);
	EXPECT_EQ(parse_real("1", 0, 1), 1.0);
	EXPECT_EQ(parse_real("-2.5e1", -100, 0), -25.0);
	EXPECT_EQ(parse_real(".25", 0, 1), 0.25);
	for (const char *bad : {"", "x", "0.5s", " 0.5", "0.5 ", "nan", "NAN", "inf", "-inf",
				"infinity", "1e999", "1e-400"})
		EXPECT_FALSE(parse_real(bad, -1e300, 1e300).has_value()) << '"' << bad << '"';
	EXPECT_FALSE(parse_real(nullptr, 0, 1).has_value());
	EXPECT_FALSE(parse_real("1.0001", 0, 1).has_value());
	EXPECT_FALSE(parse_real("-0.1", 0, 1).has_value());
}

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

/* Small arrays come from the heap, large ones from a mapping aligned to a huge page; both are
 * aligned for their type and value-initialised (as new T[n]()), writable to the end. */
TEST(HugeArray, AlignedAndInitialisedSmallAndLarge)
{
	const size_t hp = huge_page_size();
	for (size_t n : {size_t(1), size_t(100), (hp / sizeof(line)) * 3 + 5}) {
		huge_array<line> a = make_huge_array<line>(n);
		ASSERT_NE(a.get(), nullptr);
		EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % 64, 0u);
		EXPECT_EQ(a.mapped(), n * sizeof(line) >= hp) << n;
		if (a.mapped()) { /* a huge page backs an aligned stretch only */
			EXPECT_EQ(reinterpret_cast<uintptr_t>(a.get()) % hp, 0u);
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
	huge_array<uint64_t> raw = make_huge_array<uint64_t>(hp, false);
	ASSERT_TRUE(raw.mapped());
	raw[hp - 1] = 1;
	EXPECT_EQ(raw[hp - 1], 1u);
}

/* The kernel's huge page size as it says it (2 MiB on x86-64, 512 MiB on an arm64 kernel of
 * 64 KiB pages); anything that is not a power of two of at least 64 KiB is no size */
TEST(HugeArray, HugePageSizeParsed)
{
	EXPECT_EQ(parse_huge_page_size("2097152\n"), size_t(2) << 20);
	EXPECT_EQ(parse_huge_page_size("536870912"), size_t(512) << 20);
	EXPECT_EQ(parse_huge_page_size("65536\n"), size_t(64) << 10);
	for (const char *bad : {"", "\n", "0", "4096", "3000000", "2097152 x", "-2097152", "abc",
				"2097152kB", "18446744073709551616"})
		EXPECT_EQ(parse_huge_page_size(bad), 0u) << bad;
	const size_t hp = huge_page_size();
	EXPECT_GE(hp, size_t(64) << 10);
	EXPECT_EQ(hp & (hp - 1), 0u);
	if (FILE *f = std::fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r")) {
		char buf[32] = {};
		ASSERT_NE(std::fgets(buf, sizeof(buf), f), nullptr);
		std::fclose(f);
		EXPECT_EQ(hp, parse_huge_page_size(buf));
	}
}

/* The owner's arithmetic: prefix and postfix forms, compound assignments, wrap-around of an
 * unsigned index, a copy; then a level one thread moved, read by another. */
TEST(Gauge, ActsAsItsNumberForItsWriterAndReadsFromAnotherThread)
{
	gauge<uint32_t> g;
	EXPECT_EQ(g.get(), 0u);
	EXPECT_EQ(g++, 0u);
	EXPECT_EQ(++g, 2u);
	g += 5;
	EXPECT_EQ(static_cast<uint32_t>(g), 7u);
	EXPECT_EQ(g--, 7u);
	EXPECT_EQ(--g, 5u);
	g -= 6;
	EXPECT_EQ(g.get(), UINT32_MAX); /* an index that wraps, as unsigned does */
	g = 3;
	gauge<uint32_t> h = g;
	h = g;
	EXPECT_EQ(h.get(), 3u);
	EXPECT_EQ(h - g, 0u); /* reads as a number in expressions */

	gauge<uint64_t> level;
	std::thread writer([&] {
		for (int i = 0; i < 1000; i++)
			level++;
		for (int i = 0; i < 400; i++)
			--level;
	});
	writer.join();
	EXPECT_EQ(level.get(), 600u);
}

} // namespace
