// SPDX-License-Identifier: BSD-3-Clause
// Pending-request table: tokens match only the right responder and step, stale tokens
// never match, deadlines fire in order (from the timeout classes' FIFOs and the wheel),
// retries re-arm, and the table returns to empty.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
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

/* A walk in steps (for_each_in, `show pending`'s listing on the lcore) sees each live entry
 * once, with its token, as one for_each does; steps past the end are empty. */
TEST(Pending, AWalkInStepsListsWhatOneWalkDoes)
{
	table t(1000, hz); /* 1024 slots */
	std::map<uint32_t, uint32_t> live; /* token -> req id */
	for (uint32_t i = 0; i < 700; i++)
		live[t.insert(make_entry(pod(1), pod(2), i, 0, 10 * ms))] = i;
	for (uint32_t i = 0; i < 700; i += 3) {
		auto it = std::find_if(live.begin(), live.end(),
				       [&](const auto &kv) { return kv.second == i; });
		t.remove(it->first);
		live.erase(it);
	}
	std::map<uint32_t, uint32_t> whole, stepped;
	t.for_each([&](uint32_t token, const entry &e) { whole[token] = e.origin_req_id; });
	unsigned visits = 0;
	for (uint32_t at = 0; at < t.capacity() + 300; at += 100)
		t.for_each_in(at, 100, [&](uint32_t token, const entry &e) {
			visits++;
			stepped[token] = e.origin_req_id;
		});
	EXPECT_EQ(whole, live);
	EXPECT_EQ(stepped, live);
	EXPECT_EQ(visits, live.size());
}

/* `show pending`'s oldest: a walk in steps over a table whose slots hold the entries in no
 * order of their starts (the free list is LIFO) keeps the 32 earliest starts, whatever slot
 * each sits in, and hands them over oldest first; fewer than 32 live, it keeps them all,
 * and clear() starts over. */
TEST(Pending, TheOldestKeptAreTheEarliestStartsInAnySlotOrder)
{
	table t(1000, hz); /* 1024 slots */
	std::mt19937 rng(15);
	std::vector<uint64_t> starts(800);
	for (uint32_t i = 0; i < starts.size(); i++)
		starts[i] = 1000 + 7 * i; /* distinct */
	std::shuffle(starts.begin(), starts.end(), rng);
	std::map<uint32_t, uint64_t> live; /* token -> start */
	for (uint64_t st : starts) {
		entry e = make_entry(pod(1), pod(2), static_cast<uint32_t>(st), 0, st + 10 * ms);
		e.start_tsc = st;
		live[t.insert(e)] = st;
	}
	/* free every third, then take those slots again with later starts: LIFO reuse */
	std::vector<uint32_t> gone;
	uint32_t k = 0;
	for (const auto &kv : live)
		if (k++ % 3 == 0)
			gone.push_back(kv.first);
	for (uint32_t tok : gone) {
		t.remove(tok);
		live.erase(tok);
	}
	for (uint32_t i = 0; i < 100; i++) {
		entry e = make_entry(pod(1), pod(2), i, 0, 20 * ms);
		e.start_tsc = 5 + i * 3; /* older than all the first ones */
		live[t.insert(e)] = e.start_tsc;
	}
	std::vector<std::pair<uint64_t, uint32_t>> want; /* (start, token), oldest first */
	for (const auto &[tok, st] : live)
		want.push_back({st, tok});
	std::sort(want.begin(), want.end());
	want.resize(32);
	/* the 32 oldest are not the first 32 slots */
	std::vector<uint32_t> first_slots;
	t.for_each([&](uint32_t tok, const entry &) {
		if (first_slots.size() < 32)
			first_slots.push_back(tok);
	});
	std::vector<uint32_t> want_tokens;
	for (const auto &w : want)
		want_tokens.push_back(w.second);
	std::vector<uint32_t> sorted_first = first_slots, sorted_want = want_tokens;
	std::sort(sorted_first.begin(), sorted_first.end());
	std::sort(sorted_want.begin(), sorted_want.end());
	ASSERT_NE(sorted_first, sorted_want);

	oldest<32> kept;
	for (uint32_t at = 0; at < t.capacity(); at += 100)
		t.for_each_in(at, 100, [&](uint32_t tok, const entry &e) { kept.offer(tok, e); });
	EXPECT_EQ(kept.size(), 32u);
	std::vector<std::pair<uint64_t, uint32_t>> got;
	kept.sorted([&](uint32_t tok, const entry &e) {
		got.push_back({e.start_tsc, tok});
		/* the whole entry, as offered */
		const entry *now = t.find(tok);
		ASSERT_NE(now, nullptr);
		EXPECT_EQ(now->origin_req_id, e.origin_req_id);
		EXPECT_EQ(now->deadline_tsc, e.deadline_tsc);
		EXPECT_EQ(now->dest, e.dest);
	});
	EXPECT_EQ(got, want);

	/* each kept entry is the copy made when offered: removed from the table since, it is
	 * still there, whole */
	kept.clear();
	for (uint32_t at = 0; at < t.capacity(); at += 100)
		t.for_each_in(at, 100, [&](uint32_t tok, const entry &e) { kept.offer(tok, e); });
	std::map<uint32_t, uint32_t> req_of;
	kept.sorted([&](uint32_t tok, const entry &e) { req_of[tok] = e.origin_req_id; });
	for (const auto &[tok, req] : req_of)
		t.remove(tok);
	for (uint32_t i = 0; i < 32; i++) /* their slots taken again */
		t.insert(make_entry(pod(7), pod(8), 99999, 0, 50 * ms));
	got.clear();
	kept.sorted([&](uint32_t tok, const entry &e) {
		got.push_back({e.start_tsc, tok});
		EXPECT_EQ(e.origin_req_id, req_of[tok]);
		EXPECT_EQ(e.origin, pod(1));
	});
	EXPECT_EQ(got, want);

	/* fewer than it keeps, equal starts by token; clear() starts over */
	kept.clear();
	EXPECT_EQ(kept.size(), 0u);
	for (uint32_t tok : {40u, 10u, 30u, 20u, 25u}) {
		entry e{};
		e.start_tsc = tok == 25 ? 20 : tok;
		e.origin_req_id = tok;
		kept.offer(tok, e);
	}
	std::vector<uint32_t> few;
	kept.sorted([&](uint32_t tok, const entry &e) {
		EXPECT_EQ(e.origin_req_id, tok);
		few.push_back(tok);
	});
	EXPECT_EQ(few, (std::vector<uint32_t>{10, 20, 25, 30, 40}));
}

/* An entry written where the next insert goes (next_entry) and taken as written
 * (insert_written) is the same as one inserted whole: found and matched by its token,
 * expired at its deadline. Written and not taken, it is no entry; a full table has no
 * next entry and takes nothing. */
TEST(Pending, AnEntryWrittenInItsSlotIsTakenAsWritten)
{
	table t(2, hz);
	entry *e = t.next_entry();
	ASSERT_NE(e, nullptr);
	*e = make_entry(pod(1), peer(0), 5, 0, 30 * ms); /* written, not taken */
	EXPECT_EQ(t.size(), 0u);
	unsigned live = 0;
	t.for_each([&](uint32_t, const entry &) { live++; });
	EXPECT_EQ(live, 0u);
	e = t.next_entry();
	ASSERT_NE(e, nullptr);
	e->origin = pod(3);
	e->dest = pod(4);
	e->origin_req_id = 9;
	e->step_id = 2;
	e->deadline_tsc = 10 * ms;
	const uint32_t a = t.insert_written();
	ASSERT_NE(a, 0u);
	ASSERT_NE(t.match(a, pod(4), 2), nullptr);
	EXPECT_EQ(t.match(a, pod(4), 2)->origin_req_id, 9u);
	EXPECT_EQ(t.match(a, pod(4), 1), nullptr);
	const uint32_t b = t.insert(make_entry(pod(1), pod(2), 1, 0, 20 * ms));
	ASSERT_NE(b, 0u);
	EXPECT_EQ(t.next_entry(), nullptr); /* full */
	EXPECT_EQ(t.insert_written(), 0u);
	EXPECT_EQ(t.size(), 2u);
	std::vector<uint32_t> due;
	t.expire(15 * ms, [&](uint32_t tok, entry &) { due.push_back(tok); });
	EXPECT_EQ(due, std::vector<uint32_t>{a});
	t.remove(b);
	EXPECT_EQ(t.size(), 0u);
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

namespace {
entry timed_entry(uint32_t req, uint64_t start, uint64_t timeout)
{
	entry e = make_entry(pod(1), pod(2), req, 0, start + timeout);
	e.start_tsc = start;
	return e;
}
} // namespace

/* One timeout class: the FIFO takes every entry and hands back due ones in arrival order,
 * skipping answered ones; a retry re-armed from it fires once more, from the wheel. */
TEST(Pending, OneTimeoutClassExpiresInArrivalOrderFromItsFifo)
{
	table t(256, hz);
	std::vector<uint32_t> toks;
	for (uint32_t i = 0; i < 200; i++) {
		toks.push_back(t.insert(timed_entry(i, i * ms / 10, 10 * ms)));
		ASSERT_NE(toks.back(), 0u);
	}
	EXPECT_EQ(t.nb_in_fifos(), 200u);
	for (uint32_t i = 0; i < 200; i += 3)
		t.remove(toks[i]); /* answered: their items stay behind, skipped */
	EXPECT_EQ(t.nb_in_fifos(), 200u - 67u);
	std::vector<uint32_t> order;
	uint32_t retried = 0;
	for (uint64_t now = 0; now <= 60 * ms; now += ms / 4) {
		t.expire(now, [&](uint32_t tok, entry &e) {
			EXPECT_LE(e.deadline_tsc, now);
			EXPECT_GT(e.deadline_tsc + ms, now) << "fired late";
			if (e.attempt == 0 && e.origin_req_id % 10 == 1) {
				e.attempt = 1;
				t.rearm(tok, now + 5 * ms); /* to the wheel */
				retried++;
				return;
			}
			order.push_back(e.origin_req_id);
		}, 7);
	}
	EXPECT_EQ(retried, 14u); /* 1, 11, ... 191 but 21, 51, ... 171 (removed): 20 - 6 */
	EXPECT_EQ(order.size(), 133u);
	/* first tries in arrival order; retries fire later, each once */
	std::vector<uint32_t> first;
	for (uint32_t r : order)
		if (r % 10 != 1)
			first.push_back(r);
	EXPECT_TRUE(std::is_sorted(first.begin(), first.end()));
	EXPECT_EQ(std::set<uint32_t>(order.begin(), order.end()).size(), order.size());
	EXPECT_EQ(t.size(), 0u);
	EXPECT_EQ(t.nb_in_fifos(), 0u);
}

/* A callback that says whether its entry goes (returns bool: false when it re-armed it) is
 * the same sweep as one the table checks after: the same entries handed over in the same
 * order, the same counts after every sweep (size, in the FIFOs), tokens of expired entries
 * stop matching, a re-armed one fires again later, and the slots come back in the same
 * order with the same generations (the tokens of later inserts are equal), from the FIFOs
 * and the wheel alike (two timeout classes, re-armed entries, several sweeps a `max`). */
TEST(Pending, ACallbackThatSaysRemovedIsTheSameSweep)
{
	struct run {
		std::vector<uint32_t> handed, sizes, tokens;
	};
	const auto sweep = [](bool says) {
		run r;
		table t(256, hz);
		std::vector<uint32_t> toks;
		for (uint32_t i = 0; i < 220; i++) {
			toks.push_back(t.insert(timed_entry(i, i * ms / 10, i % 4 ? 10 * ms : 7 * ms)));
			EXPECT_NE(toks.back(), 0u);
		}
		for (uint32_t i = 0; i < 220; i += 5)
			t.remove(toks[i]);
		std::vector<uint32_t> gone;
		for (uint64_t now = 0; now <= 80 * ms; now += ms / 4) {
			const auto fn = [&](uint32_t tok, entry &e) {
				r.handed.push_back(tok);
				if (e.attempt == 0 && e.origin_req_id % 7 == 3) {
					e.attempt = 1;
					t.rearm(tok, now + 3 * ms); /* to the wheel */
					return false;
				}
				gone.push_back(tok);
				return true;
			};
			if (says)
				t.expire(now, fn, 9);
			else
				t.expire(now, [&](uint32_t tok, entry &e) { fn(tok, e); }, 9);
			r.sizes.push_back(t.size());
			r.sizes.push_back(t.nb_in_fifos());
			/* a freed slot is not used any more: for_each() sees the live ones only */
			uint32_t listed = 0;
			t.for_each([&](uint32_t, const entry &) { listed++; });
			EXPECT_EQ(listed, t.size());
			for (uint32_t tok : gone)
				EXPECT_EQ(t.find(tok), nullptr) << "an expired token still matches";
			gone.clear();
			/* now and then a new entry: its slot and generation */
			if (now % (5 * ms) == 0 && now <= 60 * ms)
				r.tokens.push_back(t.insert(timed_entry(1000, now, 10 * ms)));
		}
		EXPECT_EQ(t.size(), 0u);
		EXPECT_EQ(t.nb_in_fifos(), 0u);
		return r;
	};
	const run checked = sweep(false), said = sweep(true);
	EXPECT_EQ(said.handed.size(), 176u + 25u + 13u); /* 176 live, 25 re-armed, 13 inserted */
	EXPECT_EQ(said.handed, checked.handed);
	EXPECT_EQ(said.sizes, checked.sizes);
	EXPECT_EQ(said.tokens, checked.tokens);
}

/* More timeout classes than FIFOs, out-of-order deadlines and a FIFO full of live entries:
 * the rest goes to the wheel; every entry fires once, in time, whatever `max` is. */
TEST(Pending, ClassesBeyondTheFifosAndFullFifosFallBackToTheWheel)
{
	table t(64, hz);
	std::mt19937 rng(11);
	const uint64_t timeouts[] = {3 * ms, 5 * ms, 7 * ms, 11 * ms, 13 * ms, 17 * ms};
	std::map<uint32_t, uint64_t> live; /* token -> deadline */
	std::set<uint32_t> fired;
	uint64_t now = 10 * ms; /* starts up to 4 ms back stay positive */
	uint32_t req = 0, answered = 0, full = 0, most_in_fifos = 0, most_on_wheel = 0;
	for (int round = 0; round < 4000; round++) {
		now += rng() % (ms / 3);
		const uint32_t k = rng() % 6;
		for (uint32_t j = 0; j < k; j++) {
			uint64_t start = now - (rng() % 4 == 0 ? rng() % (4 * ms) : 0); /* out of order */
			uint32_t tok = t.insert(timed_entry(req++, start, timeouts[rng() % 6]));
			if (tok == 0) {
				full++;
				continue;
			}
			live[tok] = t.find(tok)->deadline_tsc;
		}
		most_in_fifos = std::max(most_in_fifos, t.nb_in_fifos());
		most_on_wheel = std::max(most_on_wheel, t.size() - t.nb_in_fifos());
		if (!live.empty() && rng() % 2) { /* answer one */
			auto it = live.begin();
			std::advance(it, rng() % live.size());
			t.remove(it->first);
			live.erase(it);
			answered++;
		}
		t.expire(now, [&](uint32_t tok, entry &e) {
			EXPECT_LE(e.deadline_tsc, now);
			EXPECT_GT(e.deadline_tsc + 2 * ms, now) << "fired late";
			EXPECT_TRUE(fired.insert(tok).second) << "fired twice";
			EXPECT_EQ(live.erase(tok), 1u) << "not live";
		}, 1 + rng() % 4);
	}
	for (now += 20 * ms; t.size(); now += ms)
		t.expire(now, [&](uint32_t tok, entry &) { EXPECT_EQ(live.erase(tok), 1u); });
	EXPECT_TRUE(live.empty());
	EXPECT_GT(answered, 1000u);
	EXPECT_GT(full, 0u); /* the table was full at times: every FIFO had to make room */
	EXPECT_GT(most_in_fifos, 32u);
	EXPECT_GT(most_on_wheel, 8u);
	EXPECT_EQ(t.nb_in_fifos(), 0u);
}

/* Deadlines are TSC values, and the TSC counts from the host's boot: the first sweep after a
 * table is made sees a clock far past tick 0. It looks at each of the wheel's buckets once,
 * not at every tick since the clock's zero (2^60 cycles here: ~1.2e12 ticks, hours of
 * walking), and finds exactly the due entries; with nothing on the wheel it looks at none. */
TEST(Pending, TheFirstSweepLooksAtEachBucketOnceHoweverLateTheClock)
{
	const uint64_t now = uint64_t{1} << 60;
	table t(16, hz);
	const auto t0 = std::chrono::steady_clock::now();
	/* FIFO entries only: the wheel is empty */
	uint32_t f = t.insert(make_entry(pod(1), pod(2), 1, 0, 10 * ms));
	ASSERT_NE(f, 0u);
	std::vector<uint32_t> due;
	EXPECT_EQ(t.expire(now, [&](uint32_t tok, entry &) { due.push_back(tok); }), 1u);
	EXPECT_EQ(due, std::vector<uint32_t>{f});
	/* re-armed entries are on the wheel: one due, one 5 ms ahead */
	uint32_t a = t.insert(make_entry(pod(1), pod(2), 2, 0, 10 * ms));
	uint32_t b = t.insert(make_entry(pod(1), pod(2), 3, 0, 10 * ms));
	ASSERT_NE(a, 0u);
	ASSERT_NE(b, 0u);
	t.rearm(a, now + 2 * ms - 5 * ms);
	t.rearm(b, now + 2 * ms + 5 * ms);
	EXPECT_EQ(t.nb_in_fifos(), 0u);
	due.clear();
	EXPECT_EQ(t.expire(now + 2 * ms, [&](uint32_t tok, entry &) { due.push_back(tok); }), 1u);
	EXPECT_EQ(due, std::vector<uint32_t>{a});
	due.clear();
	EXPECT_EQ(t.expire(now + 10 * ms, [&](uint32_t tok, entry &) { due.push_back(tok); }), 1u);
	EXPECT_EQ(due, std::vector<uint32_t>{b});
	EXPECT_EQ(t.size(), 0u);
	/* a walk tick by tick would take hours; one revolution of 4096 buckets takes microseconds */
	EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}
