// SPDX-License-Identifier: BSD-3-Clause
// DMA engines on a real EAL: the same cases against the cpu and dmadev (dma_skeleton)
// backends, byte-exact with checksums, many in flight; device selection and its errors.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include <rte_eal.h>
#include <rte_malloc.h>

#include "dpumesh/dma/dma.h"
#include "eal_env.h"

using namespace dpumesh;

namespace {

/* The EAL device every dmadev case uses; its worker thread is pinned to lcore 1's CPU,
 * which no test thread uses, so the main thread can poll without starving it. */
const char *const skeleton = "dma_skeleton";

config::dma_config dma_cfg(config::dma_backend b, std::string device = skeleton)
{
	config::dma_config c;
	c.backend = b;
	c.device = b == config::dma_backend::dmadev ? std::move(device) : "";
	return c;
}

uint64_t fnv1a(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/** Polls until `n` completions arrived (or 10 s passed), appending them to `out`. */
void collect(dma::engine &eng, size_t n, std::vector<dma::completion> &out)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	dma::completion c[64];
	size_t got = 0;
	while (got < n && std::chrono::steady_clock::now() < deadline) {
		uint16_t k = eng.poll(c, 64);
		if (k == 0)
			std::this_thread::yield();
		out.insert(out.end(), c, c + k);
		got += k;
	}
}

/** Memory for copies: rte_malloc (DPDK-known) or plain malloc. */
struct buffer {
	buffer(size_t n, bool dpdk) : _dpdk(dpdk)
	{
		p = static_cast<uint8_t *>(dpdk ? rte_malloc("dma_test", n, 64) : std::malloc(n));
	}
	~buffer() { _dpdk ? rte_free(p) : std::free(p); }
	buffer(const buffer &) = delete;
	buffer &operator=(const buffer &) = delete;
	uint8_t *p;

private:
	bool _dpdk;
};

class DmaBackend : public ::testing::TestWithParam<config::dma_backend> {
protected:
	std::unique_ptr<dma::engine> make(dma::engine_options opt = {})
	{
		auto eng = dma::create(dma_cfg(GetParam()), 0, opt);
		EXPECT_TRUE(eng) << eng.error().message();
		return eng ? std::move(eng).value() : nullptr;
	}
};

} // namespace

TEST_P(DmaBackend, SplitsOneMegabyteIntoOneHundredTwentyEightSegments)
{
	auto eng = make();
	ASSERT_TRUE(eng);
	const uint32_t len = 1 << 20;
	buffer src(len, true), dst(len, true);
	for (uint32_t i = 0; i < len; i++)
		src.p[i] = static_cast<uint8_t>(i * 7 + 3);
	std::memset(dst.p, 0, len);
	dma::copy_op op{dst.p, src.p, len, 77};
	ASSERT_EQ(eng->submit(&op, 1), 1u);
	EXPECT_EQ(eng->stats().segments_submitted.get(), 128u);
	std::vector<dma::completion> done;
	collect(*eng, 1, done);
	ASSERT_EQ(done.size(), 1u);
	EXPECT_EQ(done[0].cookie, 77u);
	EXPECT_EQ(done[0].status, 0);
	EXPECT_EQ(fnv1a(dst.p, len), fnv1a(src.p, len));
	dma::completion extra;
	EXPECT_EQ(eng->poll(&extra, 1), 0u); /* reported once */
}

TEST_P(DmaBackend, ManyInFlightRandomSizesMatchChecksums)
{
	auto eng = make({.max_copy_size = 8192, .ring_size = 512});
	ASSERT_TRUE(eng);
	ASSERT_EQ(eng->max_inflight(), 512u);
	const size_t area = 8u << 20, dst_area = 32u << 20;
	buffer src(area, true), dst(dst_area, true);
	std::mt19937 rng(GetParam() == config::dma_backend::cpu ? 1 : 2);
	for (size_t i = 0; i < area; i += 4) {
		uint32_t r = rng();
		std::memcpy(src.p + i, &r, 4);
	}
	std::memset(dst.p, 0, dst_area);

	/* 300 ops of 0 .. 96 KiB from random offsets to disjoint destinations, submitted in
	 * bursts of 32 without waiting: the ring (512 segments) fills and drains. */
	struct planned {
		size_t so, d_off;
		uint32_t len;
	};
	std::vector<planned> plan;
	size_t d_cursor = 0;
	while (plan.size() < 300) {
		uint32_t len = plan.size() % 50 == 0 ? 0 : rng() % (96u << 10);
		plan.push_back({rng() % (area - len), d_cursor, len});
		d_cursor += len;
	}
	ASSERT_LE(d_cursor, dst_area);
	size_t next = 0, checked = 0;
	uint64_t bytes = 0;
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while (checked < plan.size() && std::chrono::steady_clock::now() < deadline) {
		dma::copy_op burst[32];
		uint16_t n = 0;
		for (size_t i = next; i < plan.size() && n < 32; i++, n++)
			burst[n] = {dst.p + plan[i].d_off, src.p + plan[i].so, plan[i].len, i};
		next += eng->submit(burst, n);
		EXPECT_LE(eng->inflight(), eng->max_inflight());
		dma::completion c[32];
		uint16_t k = eng->poll(c, 32);
		for (uint16_t j = 0; j < k; j++) {
			ASSERT_EQ(c[j].cookie, checked) << "completions out of order";
			ASSERT_EQ(c[j].status, 0);
			const planned &p = plan[checked];
			ASSERT_EQ(c[j].len, p.len);
			ASSERT_EQ(fnv1a(dst.p + p.d_off, p.len), fnv1a(src.p + p.so, p.len))
				<< "op " << checked << " len " << p.len;
			bytes += p.len;
			checked++;
		}
		if (k == 0)
			std::this_thread::yield();
	}
	ASSERT_EQ(checked, plan.size());
	EXPECT_EQ(eng->stats().ops_submitted.get(), plan.size());
	EXPECT_EQ(eng->stats().ops_completed.get(), plan.size());
	EXPECT_EQ(eng->stats().bytes_submitted.get(), bytes);
	EXPECT_EQ(eng->stats().errors.get(), 0u);
	EXPECT_EQ(eng->inflight(), 0u);
}

TEST_P(DmaBackend, PartialAcceptWhenFullThenResubmit)
{
	auto eng = make({.max_copy_size = 1024, .ring_size = 32});
	ASSERT_TRUE(eng);
	ASSERT_EQ(eng->max_inflight(), 32u);
	/* 2-segment ops: 16 fit, 4 are refused and counted, none is lost */
	const uint32_t len = 2000;
	buffer src(len * 20, true), dst(len * 20, true);
	for (uint32_t i = 0; i < len * 20; i++)
		src.p[i] = static_cast<uint8_t>(i ^ (i >> 8));
	std::memset(dst.p, 0, len * 20);
	std::vector<dma::copy_op> ops;
	for (uint32_t i = 0; i < 20; i++)
		ops.push_back({dst.p + len * i, src.p + len * i, len, 1000 + i});
	ASSERT_EQ(eng->submit(ops.data(), 20), 16u);
	EXPECT_EQ(eng->stats().ring_full.get(), 4u);
	EXPECT_EQ(eng->inflight(), 16u);
	std::vector<dma::completion> done;
	collect(*eng, 16, done);
	ASSERT_EQ(done.size(), 16u);
	ASSERT_EQ(eng->submit(ops.data() + 16, 4), 4u);
	collect(*eng, 4, done);
	ASSERT_EQ(done.size(), 20u);
	for (uint32_t i = 0; i < 20; i++) {
		EXPECT_EQ(done[i].cookie, 1000u + i);
		EXPECT_EQ(done[i].status, 0);
	}
	EXPECT_EQ(std::memcmp(dst.p, src.p, len * 20), 0);
	EXPECT_EQ(eng->stats().segments_submitted.get(), 40u);
}

TEST_P(DmaBackend, ZeroLengthAndErrorsCompleteInSubmissionOrder)
{
	auto eng = make({.max_copy_size = 4096, .ring_size = 64});
	ASSERT_TRUE(eng);
	const uint32_t big = 128 << 10;
	buffer src(big, true), dst(big * 2, true);
	std::memset(src.p, 0x5c, big);
	std::memset(dst.p, 0, big * 2);
	dma::copy_op ops[] = {
		{dst.p, src.p, 64 << 10, 1},             /* 16 segments, still running ... */
		{nullptr, nullptr, 0, 2},                /* ... so this zero-length op waits */
		{dst.p + big, nullptr, 100, 3},          /* invalid: -EINVAL, also in order */
		{dst.p + big, src.p, 100 << 10, 4},      /* 25 segments */
		{dst.p, src.p, 65 * 4096, 5},            /* 65 segments > ring of 64: -E2BIG */
		{nullptr, nullptr, 0, 6},
	};
	ASSERT_EQ(eng->submit(ops, 6), 6u);
	std::vector<dma::completion> done;
	collect(*eng, 6, done);
	ASSERT_EQ(done.size(), 6u);
	const int32_t want[] = {0, 0, -EINVAL, 0, -E2BIG, 0};
	for (int i = 0; i < 6; i++) {
		EXPECT_EQ(done[i].cookie, static_cast<uint64_t>(i + 1));
		EXPECT_EQ(done[i].status, want[i]) << "cookie " << i + 1;
	}
	EXPECT_EQ(eng->stats().errors.get(), 2u);
	EXPECT_EQ(eng->stats().segments_submitted.get(), 41u);
	EXPECT_EQ(std::memcmp(dst.p + big, src.p, 100 << 10), 0);
}

/* Plain malloc memory: valid here because EAL runs IOVA-as-VA (--no-huge) and both
 * backends address with the VA (dma_skeleton reports SVA: it memcpy's the IOVA as a
 * pointer). A device without SVA would get -EFAULT for such memory (docs/dma.md). */
TEST_P(DmaBackend, PlainMallocMemoryWorksInIovaAsVaMode)
{
	ASSERT_EQ(rte_eal_iova_mode(), RTE_IOVA_VA);
	auto eng = make();
	ASSERT_TRUE(eng);
	const uint32_t len = 300000;
	buffer src(len, false), dst(len, false);
	for (uint32_t i = 0; i < len; i++)
		src.p[i] = static_cast<uint8_t>(i * 13);
	std::memset(dst.p, 0, len);
	dma::copy_op op{dst.p, src.p, len, 5};
	ASSERT_EQ(eng->submit(&op, 1), 1u);
	std::vector<dma::completion> done;
	collect(*eng, 1, done);
	ASSERT_EQ(done.size(), 1u);
	EXPECT_EQ(done[0].status, 0);
	EXPECT_EQ(fnv1a(dst.p, len), fnv1a(src.p, len));
}

INSTANTIATE_TEST_SUITE_P(Backends, DmaBackend,
			 ::testing::Values(config::dma_backend::cpu, config::dma_backend::dmadev),
			 [](const auto &p) { return std::string(config::to_string(p.param)); });

TEST(DmaDevice, ReportsTheDeviceAndClampsTheRingToIt)
{
	auto eng = dma::create(dma_cfg(config::dma_backend::dmadev), 0,
			       {.max_copy_size = 8192, .ring_size = 32768});
	ASSERT_TRUE(eng) << eng.error().message();
	EXPECT_EQ((*eng)->name(), "dmadev dma_skeleton vchan 0");
	/* dma_skeleton has at most 8192 descriptors and keeps one free */
	EXPECT_EQ((*eng)->max_inflight(), 8191u);
	EXPECT_EQ((*eng)->max_copy_size(), 8192u);
}

TEST(DmaDevice, BadDeviceNameIsAClearError)
{
	auto eng = dma::create(dma_cfg(config::dma_backend::dmadev, "no_such_dma"), 2);
	ASSERT_FALSE(eng);
	const std::string &m = eng.error().message();
	EXPECT_EQ(m.rfind("dma engine 2: dmadev \"no_such_dma\" not found, and probing", 0), 0u) << m;
	EXPECT_NE(m.find("--vdev=dma_skeleton,lcore=1"), std::string::npos) << m;

	auto empty = dma::create(dma_cfg(config::dma_backend::dmadev, ""), 0);
	ASSERT_FALSE(empty);
	EXPECT_NE(empty.error().message().find("dma.device is empty"), std::string::npos);

	auto args = dma::create(dma_cfg(config::dma_backend::dmadev, "dma_skeleton,lcore=0"), 0);
	ASSERT_FALSE(args);
	EXPECT_NE(args.error().message().find("dmadev dma_skeleton already exists"), std::string::npos)
		<< args.error().message();
}

TEST(DmaDevice, SecondEngineOnOneDeviceFailsUntilTheFirstIsGone)
{
	auto first = dma::create(dma_cfg(config::dma_backend::dmadev), 0);
	ASSERT_TRUE(first) << first.error().message();
	auto second = dma::create(dma_cfg(config::dma_backend::dmadev), 1);
	ASSERT_FALSE(second);
	EXPECT_NE(second.error().message().find(
			  "dma engine 1: dmadev dma_skeleton is already used by dma engine 0"),
		  std::string::npos)
		<< second.error().message();
	/* the first engine still works after the refused second one */
	uint8_t a[100], b[100] = {};
	std::memset(a, 0x11, sizeof(a));
	dma::copy_op op{b, a, sizeof(a), 1};
	ASSERT_EQ((*first)->submit(&op, 1), 1u);
	std::vector<dma::completion> done;
	collect(**first, 1, done);
	ASSERT_EQ(done.size(), 1u);
	EXPECT_EQ(std::memcmp(a, b, sizeof(a)), 0);
	first.value().reset();
	auto again = dma::create(dma_cfg(config::dma_backend::dmadev), 1);
	EXPECT_TRUE(again) << again.error().message();
}

TEST(DmaDevice, ProbesDevargsPerThreadAndRemovesThemAgain)
{
	/* one device per DPA thread, probed from devargs, removed when the engine goes */
	const std::string list = "dma_skeleton7,lcore=1;dma_skeleton8,lcore=1";
	for (int round = 0; round < 2; round++) {
		auto e0 = dma::create(dma_cfg(config::dma_backend::dmadev, list), 0);
		ASSERT_TRUE(e0) << e0.error().message();
		auto e1 = dma::create(dma_cfg(config::dma_backend::dmadev, list), 1);
		ASSERT_TRUE(e1) << e1.error().message();
		EXPECT_EQ((*e0)->name(), "dmadev dma_skeleton7 vchan 0");
		EXPECT_EQ((*e1)->name(), "dmadev dma_skeleton8 vchan 0");
		uint8_t a[5000], b0[5000] = {}, b1[5000] = {};
		for (size_t i = 0; i < sizeof(a); i++)
			a[i] = static_cast<uint8_t>(i);
		dma::copy_op o0{b0, a, sizeof(a), 10}, o1{b1, a, sizeof(a), 11};
		ASSERT_EQ((*e0)->submit(&o0, 1), 1u);
		ASSERT_EQ((*e1)->submit(&o1, 1), 1u);
		std::vector<dma::completion> d0, d1;
		collect(**e0, 1, d0);
		collect(**e1, 1, d1);
		ASSERT_EQ(d0.size(), 1u);
		ASSERT_EQ(d1.size(), 1u);
		EXPECT_EQ(d0[0].cookie, 10u);
		EXPECT_EQ(d1[0].cookie, 11u);
		EXPECT_EQ(std::memcmp(a, b0, sizeof(a)), 0);
		EXPECT_EQ(std::memcmp(a, b1, sizeof(a)), 0);
	}
	auto none = dma::create(dma_cfg(config::dma_backend::dmadev, list), 2);
	ASSERT_FALSE(none);
	EXPECT_NE(none.error().message().find("dma.device lists 2 devices, none for DPA thread 2"),
		  std::string::npos)
		<< none.error().message();
}

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(
		new dpumesh::test::eal_env("dma", {"dma_skeleton,lcore=1"}));
	return RUN_ALL_TESTS();
}
