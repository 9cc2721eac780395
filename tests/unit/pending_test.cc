// SPDX-License-Identifier: BSD-3-Clause
// Pending-request table: tokens match only the right responder and step, stale tokens
// never match, deadlines fire in order, retries re-arm, and the table returns to empty.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <vector>

#include "dpumesh/pending/table.h"

using namespace dpumesh::pending;

namespace {

constexpr uint64_t hz = 1'000'000'000; /* 1 tick = 1 ms = 1e6 "cycles" */
constexpr uint64_t ms = hz / 1000;

party pod(uint32_t h) { return {party::kind::pod, h, 0}; }
party peer(uint16_t p) { return {party::kind::peer, 0, p}; }

entry make_entry(party from, party to, uint32_t req, uint32_t step, uint64_t deadline)
{
	entry e{};
	e.origin = from;
	e.dest = to;
	e.origin_req_id = req;
	e.step_id = step;
	e.deadline_tsc = deadline;
	return e;
}

} // namespace

TEST(Pending, MatchesOnlyTheRightResponderAndStep)
{
	table t(16, hz);
	uint32_t tok = t.insert(make_entry(pod(1), pod(2), 77, 3, 100 * ms));
	ASSERT_NE(tok, 0u);
	EXPECT_EQ(t.match(tok, pod(3), 3), nullptr);  /* another pod answering */
	EXPECT_EQ(t.match(tok, peer(2), 3), nullptr); /* a peer with the same number */
	EXPECT_EQ(t.match(tok, pod(2), 4), nullptr);  /* wrong step */
	EXPECT_EQ(t.match(tok ^ 1, pod(2), 3), nullptr);
	entry *e = t.match(tok, pod(2), 3);
	ASSERT_NE(e, nullptr);
	EXPECT_EQ(e->origin_req_id, 77u);
	t.remove(tok);
	EXPECT_EQ(t.match(tok, pod(2), 3), nullptr); /* answered once only */
	EXPECT_EQ(t.size(), 0u);
}

TEST(Pending, StaleTokenNeverMatchesAReusedSlot)
{
	table t(1, hz);
	uint32_t a = t.insert(make_entry(pod(1), pod(2), 1, 0, 10 * ms));
	ASSERT_NE(a, 0u);
	EXPECT_EQ(t.insert(make_entry(pod(1), pod(2), 2, 0, 10 * ms)), 0u); /* full */
	t.remove(a);
	uint32_t b = t.insert(make_entry(pod(1), pod(2), 1, 0, 10 * ms));
	ASSERT_NE(b, 0u);
	EXPECT_NE(a, b);
	EXPECT_EQ(t.find(a), nullptr);
	EXPECT_NE(t.find(b), nullptr);
	/* generations wrap without ever producing token 0 */
	for (int i = 0; i < 70000; i++) {
		t.remove(b);
		b = t.insert(make_entry(pod(1), pod(2), 1, 0, 10 * ms));
		ASSERT_NE(b, 0u);
	}
}

TEST(Pending, DeadlinesFireOnceInTimeAndRetriesRearm)
{
	table t(1024, hz, 64); /* a small wheel, so deadlines wrap around it */
	std::mt19937 rng(5);
	std::map<uint32_t, uint64_t> deadline;
	for (int i = 0; i < 1000; i++) {
		uint64_t d = (1 + rng() % 500) * ms + rng() % ms;
		uint32_t tok = t.insert(make_entry(pod(1), pod(2), i, 0, d));
		ASSERT_NE(tok, 0u);
		deadline[tok] = d;
	}
	std::set<uint32_t> fired;
	uint32_t retried = 0;
	for (uint64_t now = 0; now <= 600 * ms; now += 7 * ms / 3) {
		t.expire(now, [&](uint32_t tok, entry &e) {
			EXPECT_LE(e.deadline_tsc, now);
			EXPECT_GT(e.deadline_tsc + 3 * ms, now) << "fired late";
			if (e.attempt == 0 && tok % 5 == 0) { /* retry a fifth once */
				e.attempt = 1;
				deadline[tok] = now + 20 * ms;
				t.rearm(tok, now + 20 * ms);
				retried++;
				return;
			}
			EXPECT_TRUE(fired.insert(tok).second) << "fired twice";
		});
	}
	EXPECT_EQ(fired.size(), 1000u);
	EXPECT_GT(retried, 100u);
	EXPECT_EQ(t.size(), 0u);
}

TEST(Pending, AnsweredEntriesDoNotExpire)
{
	table t(64, hz);
	std::vector<uint32_t> toks;
	for (int i = 0; i < 50; i++)
		toks.push_back(t.insert(make_entry(pod(1), peer(0), i, i, 5 * ms)));
	for (int i = 0; i < 50; i += 2)
		t.remove(toks[i]);
	int expired = 0;
	t.expire(10 * ms, [&](uint32_t, entry &e) {
		EXPECT_EQ(e.origin_req_id % 2, 1u);
		expired++;
	});
	EXPECT_EQ(expired, 25);
	EXPECT_EQ(t.size(), 0u);
	int seen = 0;
	t.for_each([&](uint32_t, const entry &) { seen++; });
	EXPECT_EQ(seen, 0);
}
