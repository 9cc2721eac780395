// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-replay's logic without EAL: the latency histogram and the NDR/PDR search.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "dpumesh/replay/histogram.h"
#include "dpumesh/replay/search.h"

namespace {

using namespace dpumesh::replay;

TEST(replay_histogram, buckets_tile_the_range_without_gaps)
{
	for (unsigned i = 0; i + 1 < histogram::nb_buckets; i++) {
		ASSERT_EQ(histogram::bucket_high(i) + 1, histogram::bucket_low(i + 1)) << i;
		ASSERT_EQ(histogram::bucket_of(histogram::bucket_low(i)), i);
		ASSERT_EQ(histogram::bucket_of(histogram::bucket_high(i)), i);
	}
	EXPECT_EQ(histogram::bucket_of(0), 0u);
	EXPECT_EQ(histogram::bucket_of(127), 127u);
	EXPECT_EQ(histogram::bucket_of(UINT64_MAX), histogram::nb_buckets - 1);
}

TEST(replay_histogram, percentiles_are_within_one_sixty_fourth)
{
	std::mt19937_64 rng(7);
	std::lognormal_distribution<double> d(11.0, 1.0); /* ~60 us median */
	std::vector<uint64_t> v;
	histogram h;
	for (int i = 0; i < 100000; i++) {
		uint64_t x = uint64_t(d(rng));
		v.push_back(x);
		h.record(x);
	}
	std::sort(v.begin(), v.end());
	for (double p : {50.0, 90.0, 99.0, 99.9}) {
		uint64_t exact = v[size_t(std::ceil(p / 100 * double(v.size()))) - 1];
		uint64_t got = h.percentile(p);
		EXPECT_GE(got, exact) << p;
		EXPECT_LE(double(got), double(exact) * (1 + 1.0 / 64)) << p;
	}
	EXPECT_EQ(h.max(), v.back());
	EXPECT_EQ(h.min(), v.front());
	EXPECT_EQ(h.percentile(100), v.back());
	EXPECT_EQ(h.count(), v.size());
}

TEST(replay_histogram, small_values_are_exact_and_merge_adds)
{
	histogram a, b;
	for (uint64_t i = 1; i <= 100; i++)
		(i % 2 ? a : b).record(i);
	a.merge(b);
	EXPECT_EQ(a.count(), 100u);
	EXPECT_EQ(a.percentile(50), 50u);
	EXPECT_EQ(a.percentile(99), 99u);
	EXPECT_DOUBLE_EQ(a.mean(), 50.5);
	histogram e;
	EXPECT_EQ(e.percentile(50), 0u);
	EXPECT_EQ(e.max(), 0u);
}

/** A device model: forwards up to `cap` pps, loses the excess (and `floor_loss` always). */
struct model {
	double cap;
	double floor_loss = 0;
	unsigned trials = 0;
	trial_outcome operator()(double rate, double, bool)
	{
		trials++;
		double loss = rate > cap ? (rate - cap) / rate : 0.0;
		loss = std::max(loss, floor_loss);
		return {loss, std::min(rate, cap), true};
	}
};

TEST(replay_search, ndr_is_found_within_precision_and_verified)
{
	model m{123456};
	search_config c;
	c.max_rate = 1e6;
	c.precision = 0.01;
	search_result r = search(c, 0.0, std::ref(m));
	EXPECT_TRUE(r.verified);
	EXPECT_LE(r.rate, 123456);
	EXPECT_GE(r.rate, 123456 * 0.99);
	EXPECT_TRUE(r.steps.back().final);
	EXPECT_TRUE(r.steps.back().pass);
	EXPECT_LE(r.steps.size(), c.max_trials + c.max_retries);
}

TEST(replay_search, pdr_allows_the_threshold_and_is_above_the_ndr)
{
	model m{100000};
	search_config c;
	c.max_rate = 1e6;
	c.precision = 0.005;
	search_result ndr = search(c, 0.0, std::ref(m));
	search_result pdr = search(c, 0.005, std::ref(m), ndr.rate);
	ASSERT_TRUE(ndr.verified && pdr.verified);
	/* loss (r - cap)/r <= 0.5% up to cap / 0.995 */
	EXPECT_GT(pdr.rate, ndr.rate);
	EXPECT_LE(pdr.rate, 100000 / 0.995 + 1);
	EXPECT_GE(pdr.rate, 100000 / 0.995 * 0.995);
}

TEST(replay_search, a_device_faster_than_max_rate_passes_at_once)
{
	model m{5e6};
	search_config c;
	c.max_rate = 1e6;
	search_result r = search(c, 0.0, std::ref(m));
	EXPECT_TRUE(r.verified);
	EXPECT_EQ(r.rate, 1e6);
	EXPECT_EQ(r.steps.size(), 2u) << "max rate, then its verification";
}

TEST(replay_search, a_device_that_always_loses_has_no_ndr)
{
	model m{1e6, 0.01};
	search_config c;
	c.max_rate = 1e5;
	search_result r = search(c, 0.0, std::ref(m));
	EXPECT_FALSE(r.verified);
	EXPECT_EQ(r.rate, 0);
	EXPECT_LE(r.steps.size(), c.max_trials + c.max_retries + 1);
}

TEST(replay_search, a_failed_verification_searches_lower)
{
	/* short trials pass up to 200k, long ones only up to 150k (the device degrades) */
	search_config c;
	c.max_rate = 1e6;
	c.precision = 0.02;
	auto f = [&](double rate, double secs, bool) {
		double cap = secs >= c.final_seconds ? 150000 : 200000;
		return trial_outcome{rate > cap ? (rate - cap) / rate : 0, std::min(rate, cap), true};
	};
	search_result r = search(c, 0.0, f);
	EXPECT_TRUE(r.verified);
	EXPECT_LE(r.rate, 150000);
	EXPECT_GE(r.rate, 150000 * 0.97);
}

TEST(replay_search, a_rate_the_generator_cannot_offer_is_not_a_pass)
{
	search_config c;
	c.max_rate = 1e6;
	c.precision = 0.02;
	/* no loss ever, but the generator tops out at 300k */
	auto f = [&](double rate, double, bool) { return trial_outcome{0, rate, rate <= 300000}; };
	search_result r = search(c, 0.0, f);
	EXPECT_TRUE(r.verified);
	EXPECT_LE(r.rate, 300000);
	EXPECT_GE(r.rate, 300000 * 0.97);
}

TEST(replay_search, an_aborting_trial_ends_the_search_unverified)
{
	search_config c;
	unsigned n = 0;
	auto f = [&](double rate, double, bool) {
		n++;
		return trial_outcome{rate > 5000 ? 0.5 : 0.0, rate, true, n >= 3};
	};
	search_result r = search(c, 0.0, f);
	EXPECT_TRUE(r.aborted);
	EXPECT_FALSE(r.verified);
	EXPECT_EQ(r.rate, 0);
	EXPECT_EQ(n, 3u);
}

} // namespace
