// SPDX-License-Identifier: BSD-3-Clause
// The cpu DMA backend and the in-order op tracker, without EAL: splitting, ring limits,
// ordering, cookies, errors, counters.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "dpumesh/dma/dma.h"
#include "internal/op_tracker.h"

using namespace dpumesh;

namespace {

std::unique_ptr<dma::engine> cpu_engine(dma::engine_options opt = {})
{
	config::dma_config cfg;
	cfg.backend = config::dma_backend::cpu;
	auto eng = dma::create(cfg, 0, opt);
	EXPECT_TRUE(eng) << eng.error().message();
	return eng ? std::move(eng).value() : nullptr;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed)
{
	std::mt19937 rng(seed);
	std::vector<uint8_t> v(n);
	for (auto &b : v)
		b = static_cast<uint8_t>(rng());
	return v;
}

} // namespace

TEST(DmaCpu, ReportsCapabilities)
{
	auto eng = cpu_engine({.max_copy_size = 8192, .ring_size = 256});
	ASSERT_TRUE(eng);
	EXPECT_EQ(eng->max_copy_size(), 8192u);
	EXPECT_EQ(eng->alignment(), 1u);
	EXPECT_EQ(eng->max_inflight(), 256u);
	EXPECT_EQ(eng->max_op_size(), 256u * 8192u);
	EXPECT_EQ(eng->name(), "cpu");
	EXPECT_EQ(eng->inflight(), 0u);
}

TEST(DmaCpu, SplitsOneMegabyteIntoOneHundredTwentyEightSegments)
{
	auto eng = cpu_engine();
	ASSERT_TRUE(eng);
	const size_t len = 1 << 20;
	auto src = random_bytes(len, 1);
	std::vector<uint8_t> dst(len, 0);
	dma::copy_op op{dst.data(), src.data(), static_cast<uint32_t>(len), 0xfeedULL};
	ASSERT_EQ(eng->submit(&op, 1), 1u);
	EXPECT_EQ(eng->stats().segments_submitted.get(), 128u);
	EXPECT_EQ(eng->stats().ops_submitted.get(), 1u);
	EXPECT_EQ(eng->stats().bytes_submitted.get(), len);
	dma::completion c[4];
	ASSERT_EQ(eng->poll(c, 4), 1u);
	EXPECT_EQ(c[0].cookie, 0xfeedULL);
	EXPECT_EQ(c[0].status, 0);
	EXPECT_EQ(c[0].len, len);
	EXPECT_EQ(eng->poll(c, 4), 0u);
	EXPECT_EQ(std::memcmp(dst.data(), src.data(), len), 0);
	EXPECT_EQ(eng->stats().ops_completed.get(), 1u);
	EXPECT_EQ(eng->stats().errors.get(), 0u);
}

TEST(DmaCpu, RandomSizesAndOffsetsAreByteExact)
{
	auto eng = cpu_engine({.max_copy_size = 8192, .ring_size = 1024});
	ASSERT_TRUE(eng);
	std::mt19937 rng(42);
	const size_t area = 2u << 20;
	auto src = random_bytes(area, 7);
	std::vector<uint8_t> dst(area);
	uint64_t bytes = 0, segs = 0;
	for (int round = 0; round < 40; round++) {
		/* sizes 0 .. 1 MiB, with the edges and unaligned offsets */
		uint32_t len;
		switch (round) {
		case 0: len = 0; break;
		case 1: len = 1; break;
		case 2: len = 8191; break;
		case 3: len = 8192; break;
		case 4: len = 8193; break;
		case 5: len = 1 << 20; break;
		default: len = rng() % ((1u << 20) + 1);
		}
		size_t so = rng() % (area - len + 1), d_off = rng() % (area - len + 1);
		std::memset(dst.data(), 0xa5, area);
		dma::copy_op op{dst.data() + d_off, src.data() + so, len, static_cast<uint64_t>(round)};
		ASSERT_EQ(eng->submit(&op, 1), 1u);
		dma::completion c;
		ASSERT_EQ(eng->poll(&c, 1), 1u);
		EXPECT_EQ(c.cookie, static_cast<uint64_t>(round));
		EXPECT_EQ(c.status, 0);
		ASSERT_EQ(std::memcmp(dst.data() + d_off, src.data() + so, len), 0) << "len " << len;
		/* nothing outside the destination was touched */
		for (size_t k : {d_off - 1, d_off + len}) {
			if (k < area) {
				ASSERT_EQ(dst[k], 0xa5) << "len " << len << " byte " << k;
			}
		}
		bytes += len;
		segs += (len + 8191) / 8192;
		EXPECT_EQ(eng->stats().segments_submitted.get(), segs);
	}
	EXPECT_EQ(eng->stats().bytes_submitted.get(), bytes);
	EXPECT_EQ(eng->stats().ops_completed.get(), 40u);
}

TEST(DmaCpu, ZeroLengthCompletesOkWithoutSegments)
{
	auto eng = cpu_engine();
	ASSERT_TRUE(eng);
	dma::copy_op op{nullptr, nullptr, 0, 9};
	ASSERT_EQ(eng->submit(&op, 1), 1u);
	EXPECT_EQ(eng->stats().segments_submitted.get(), 0u);
	EXPECT_EQ(eng->inflight(), 1u);
	dma::completion c;
	ASSERT_EQ(eng->poll(&c, 1), 1u);
	EXPECT_EQ(c.cookie, 9u);
	EXPECT_EQ(c.status, 0);
	EXPECT_EQ(eng->stats().errors.get(), 0u);
}

TEST(DmaCpu, PartialAcceptWhenRingIsFullNeverDrops)
{
	/* 16 slots; ops of 3000 B with 1 KiB segments take 3 segments: 5 fit (15 segments). */
	auto eng = cpu_engine({.max_copy_size = 1024, .ring_size = 16});
	ASSERT_TRUE(eng);
	std::vector<uint8_t> src(3000 * 8, 1), dst(3000 * 8);
	dma::copy_op ops[8];
	for (int i = 0; i < 8; i++)
		ops[i] = {dst.data() + 3000 * i, src.data() + 3000 * i, 3000, 100u + i};
	EXPECT_EQ(eng->submit(ops, 8), 5u);
	EXPECT_EQ(eng->stats().ring_full.get(), 3u);
	EXPECT_EQ(eng->submit(ops + 5, 3), 0u); /* still full until polled */
	EXPECT_EQ(eng->stats().ring_full.get(), 6u);
	dma::completion c[16];
	ASSERT_EQ(eng->poll(c, 2), 2u); /* frees 6 segments: two more ops fit */
	EXPECT_EQ(c[0].cookie, 100u);
	EXPECT_EQ(c[1].cookie, 101u);
	EXPECT_EQ(eng->submit(ops + 5, 3), 2u);
	ASSERT_EQ(eng->poll(c, 16), 5u);
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(c[i].cookie, 102u + i);
	EXPECT_EQ(eng->submit(ops + 7, 1), 1u);
	ASSERT_EQ(eng->poll(c, 16), 1u);
	EXPECT_EQ(c[0].cookie, 107u);
	EXPECT_EQ(eng->stats().ops_submitted.get(), 8u);
	EXPECT_EQ(eng->stats().ops_completed.get(), 8u);
	EXPECT_EQ(std::memcmp(src.data(), dst.data(), src.size()), 0);

	/* op count is a limit too: 16 zero-length ops fill the ring, the 17th waits */
	std::vector<dma::copy_op> zeros(17, dma::copy_op{nullptr, nullptr, 0, 0});
	EXPECT_EQ(eng->submit(zeros.data(), 17), 16u);
	EXPECT_EQ(eng->inflight(), 16u);
	EXPECT_EQ(eng->poll(c, 16), 16u);
}

TEST(DmaCpu, InvalidOpsCompleteWithErrorInOrder)
{
	auto eng = cpu_engine({.max_copy_size = 1024, .ring_size = 8});
	ASSERT_TRUE(eng);
	uint8_t a[64] = {1}, b[64] = {};
	dma::copy_op ops[] = {
		{b, a, 64, 1},
		{b, nullptr, 64, 2},             /* null source */
		{nullptr, a, 64, 3},             /* null destination */
		{b, a, 9 * 1024, 4},             /* 9 segments > 8 in the ring: never fits */
		{b, a, 32, 5},
	};
	ASSERT_EQ(eng->submit(ops, 5), 5u);
	dma::completion c[8];
	ASSERT_EQ(eng->poll(c, 8), 5u);
	const int32_t want[] = {0, -EINVAL, -EINVAL, -E2BIG, 0};
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(c[i].cookie, static_cast<uint64_t>(i + 1));
		EXPECT_EQ(c[i].status, want[i]) << i;
	}
	EXPECT_EQ(eng->stats().errors.get(), 3u);
	EXPECT_EQ(eng->stats().segments_submitted.get(), 2u);
	EXPECT_EQ(eng->stats().bytes_submitted.get(), 96u);
}

TEST(DmaCpu, RejectsBadOptions)
{
	config::dma_config cfg;
	auto e1 = dma::create(cfg, 0, {.max_copy_size = 0, .ring_size = 16});
	ASSERT_FALSE(e1);
	EXPECT_NE(e1.error().message().find("max_copy_size"), std::string::npos);
	auto e2 = dma::create(cfg, 0, {.max_copy_size = 64, .ring_size = 1});
	ASSERT_FALSE(e2);
	EXPECT_NE(e2.error().message().find("ring_size 1"), std::string::npos);
}

TEST(DmaCpu, DmadevWithoutEalIsAClearError)
{
	config::dma_config cfg;
	cfg.backend = config::dma_backend::dmadev;
	cfg.device = "dma_skeleton";
	auto eng = dma::create(cfg, 3, {});
	ASSERT_FALSE(eng);
	EXPECT_EQ(eng.error().message(),
		  "dma engine 3: the dmadev backend needs EAL: call rte_eal_init first");
}

TEST(DmaOpTracker, OpCompletesOnceAfterAllSegmentsWithFirstError)
{
	dma::internal::op_tracker t(16);
	dma::engine_stats st;
	t.push(1, 3000, 3, 3, 0); /* three segments on the device */
	t.push(2, 0, 0, 0, 0);    /* zero length: done, but behind op 1 */
	t.push(3, 2000, 2, 2, 0);
	EXPECT_EQ(t.pending_segments(), 5u);
	EXPECT_EQ(t.segments(), 5u);
	dma::completion c[4];
	EXPECT_EQ(t.drain(c, 4, st), 0u);
	t.segment_done(0);
	t.segment_done(-EIO);
	EXPECT_EQ(t.drain(c, 4, st), 0u); /* op 1 still owes a segment */
	t.segment_done(-EFAULT);
	t.segment_done(0);
	ASSERT_EQ(t.drain(c, 1, st), 1u); /* max respected */
	EXPECT_EQ(c[0].cookie, 1u);
	EXPECT_EQ(c[0].status, -EIO); /* the first error wins, reported once */
	EXPECT_EQ(t.segments(), 2u);
	ASSERT_EQ(t.drain(c, 4, st), 1u);
	EXPECT_EQ(c[0].cookie, 2u);
	EXPECT_EQ(c[0].status, 0);
	t.segment_done(0);
	ASSERT_EQ(t.drain(c, 4, st), 1u);
	EXPECT_EQ(c[0].cookie, 3u);
	EXPECT_EQ(c[0].status, 0);
	EXPECT_EQ(t.pending_segments(), 0u);
	EXPECT_EQ(t.segments(), 0u);
	EXPECT_EQ(t.ops(), 0u);
	EXPECT_EQ(st.ops_completed.get(), 3u);
	EXPECT_EQ(st.errors.get(), 1u);
}

TEST(DmaOpTracker, WrapsAroundTheRing)
{
	dma::internal::op_tracker t(3); /* 4 slots, 3 usable */
	dma::engine_stats st;
	dma::completion c[3];
	for (uint64_t i = 0; i < 100; i++) {
		ASSERT_TRUE(t.fits(1));
		t.push(i, 1, 1, 1, 0);
		if (i % 3 == 2) {
			EXPECT_FALSE(t.fits(0));
			for (int k = 0; k < 3; k++)
				t.segment_done(0);
			ASSERT_EQ(t.drain(c, 3, st), 3u);
			EXPECT_EQ(c[0].cookie, i - 2);
			EXPECT_EQ(c[2].cookie, i);
		}
	}
}
