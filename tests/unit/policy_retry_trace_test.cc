// SPDX-License-Identifier: BSD-3-Clause
// lib/policy's retries (retryable answers, idempotence, back-off, the retry budget) and
// trace ids (x-request-id, traceparent), without EAL.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "dpumesh/policy/retry.h"
#include "dpumesh/policy/trace.h"
#include "dpumesh/wire/l7.h"

using namespace dpumesh;

TEST(retry, retryable_statuses_are_the_gateway_errors)
{
	for (uint16_t s : {502, 503, 504})
		EXPECT_TRUE(policy::retryable_status(s)) << s;
	for (uint16_t s : {0, 200, 404, 429, 500, 501, 505})
		EXPECT_FALSE(policy::retryable_status(s)) << s;
}

TEST(retry, hold_only_for_idempotent_requests_to_a_local_pod_on_a_route_with_retries)
{
	EXPECT_TRUE(policy::hold_for_retry(2, true, false, "GET", 0));
	EXPECT_FALSE(policy::hold_for_retry(0, true, false, "GET", 0));   /* no retries */
	EXPECT_FALSE(policy::hold_for_retry(2, false, false, "GET", 0));  /* a peer's */
	EXPECT_FALSE(policy::hold_for_retry(2, true, false, "POST", 0));  /* not idempotent */
	EXPECT_TRUE(policy::hold_for_retry(2, true, true, "POST", 0));    /* route allows it */
	EXPECT_TRUE(policy::hold_for_retry(2, true, false, "POST", wire::l7_flag_idempotent));
	for (const char *m : {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
		EXPECT_TRUE(policy::idempotent(m, 0)) << m;
	EXPECT_FALSE(policy::idempotent("PATCH", 0));
	EXPECT_FALSE(policy::idempotent("get", 0)); /* methods are case-sensitive */
}

TEST(retry, backoff_doubles_per_attempt_and_stops_doubling_after_ten)
{
	EXPECT_EQ(policy::retry_backoff_ms(10, 1), 10u);
	EXPECT_EQ(policy::retry_backoff_ms(10, 2), 20u);
	EXPECT_EQ(policy::retry_backoff_ms(10, 4), 80u);
	EXPECT_EQ(policy::retry_backoff_ms(10, 11), 10u << 10);
	EXPECT_EQ(policy::retry_backoff_ms(10, 60), 10u << 10);
	EXPECT_EQ(policy::retry_backoff_ms(0, 3), 0u);
}

TEST(retry, budget_allows_a_floor_then_a_share_of_the_requests)
{
	policy::retry_budget b;
	const uint64_t win = 1000;
	/* the first call opens a window; with no requests, only the floor of 3 */
	for (int i = 0; i < 3; i++) {
		ASSERT_TRUE(b.allows(5000, win, 20)) << i;
		b.spend();
	}
	EXPECT_FALSE(b.allows(5001, win, 20));
	/* 10 requests at 20 %: two more */
	for (int i = 0; i < 10; i++)
		b.note_request(5001, win);
	EXPECT_TRUE(b.allows(5002, win, 20));
	b.spend();
	EXPECT_TRUE(b.allows(5003, win, 20));
	b.spend();
	EXPECT_FALSE(b.allows(5004, win, 20));
	EXPECT_EQ(b.retries(), 5u);
	/* allows() alone spends nothing */
	EXPECT_FALSE(b.allows(5005, win, 20));
	EXPECT_EQ(b.retries(), 5u);
	/* a new window starts over, with the last one's load: the floor and its share */
	EXPECT_TRUE(b.allows(5000 + win + 1, win, 20));
	EXPECT_EQ(b.requests(), 0u);
	EXPECT_EQ(b.retries(), 0u);
	EXPECT_EQ(b.last_requests(), 10u);
	for (int i = 0; i < 5; i++) {
		ASSERT_TRUE(b.allows(5000 + win + 2, win, 20)) << i;
		b.spend();
	}
	EXPECT_FALSE(b.allows(5000 + win + 3, win, 20));
	/* its own requests count once they are more than the last window's */
	for (int i = 0; i < 20; i++)
		b.note_request(5000 + win + 3, win);
	EXPECT_TRUE(b.allows(5000 + win + 4, win, 20));
	/* a window that starts long after the last request: the floor alone */
	EXPECT_TRUE(b.allows(5000 + 10 * win, win, 20));
	EXPECT_EQ(b.last_requests(), 0u);
	for (int i = 0; i < 3; i++)
		b.spend();
	EXPECT_FALSE(b.allows(5000 + 10 * win + 1, win, 20));
}

/* The windows follow the requests, not only the retries: after a long spell of steady
 * requests and no retry, a burst of retries (a pod that left with requests pending) finds
 * the last second's requests, not a window of its own with nothing counted yet. Before
 * 2026-12-06 a window started only when a retry was asked for, so such a burst got the
 * floor of 3 alone (this test failed: 3 allowed of the 23 it expects). */
TEST(retry, a_burst_after_steady_requests_gets_the_last_window_s_share)
{
	policy::retry_budget b;
	const uint64_t win = 1000;
	/* one retry at the start, then 100 requests a window for 20 windows, nothing retried */
	ASSERT_TRUE(b.allows(10000, win, 20));
	b.spend();
	for (uint64_t t = 10000; t < 10000 + 20 * win; t += win / 100)
		b.note_request(t, win);
	const uint64_t now = 10000 + 20 * win; /* the burst, just after the last request */
	unsigned allowed = 0;
	while (b.allows(now, win, 20) && allowed < 1000) {
		b.spend();
		allowed++;
	}
	/* the floor and 20 % of the last window's 100 requests (the burst starts a window of
	 * its own: the last one, begun 1000 ticks before it, has just ended) */
	EXPECT_EQ(b.last_requests(), 100u);
	EXPECT_EQ(b.requests(), 0u);
	EXPECT_EQ(allowed, 3u + 20u);
	/* more than two windows after the last request, nothing before counts */
	EXPECT_TRUE(b.allows(now + 2 * win + 1, win, 20));
	EXPECT_EQ(b.last_requests(), 0u);
	EXPECT_EQ(b.requests(), 0u);
}

/* A request long after the last window starts a window of its own: the busy second long
 * before it counts nothing in the allowance (only the window that ended less than a window
 * ago does). */
TEST(retry, requests_long_ago_do_not_count)
{
	policy::retry_budget b;
	const uint64_t win = 1000;
	for (int i = 0; i < 500; i++)
		b.note_request(1000, win); /* a busy second, long ago */
	b.note_request(1000 + 5 * win, win); /* one request, five windows on: a new window */
	EXPECT_EQ(b.last_requests(), 0u);
	EXPECT_EQ(b.requests(), 1u);
	unsigned allowed = 0;
	while (b.allows(1000 + 5 * win + 1, win, 100) && allowed < 1000) {
		b.spend();
		allowed++;
	}
	EXPECT_EQ(allowed, 3u + 1u);
}

namespace {

/* A request header at the start of a buffer of `cap` bytes; *len its length. */
std::vector<uint8_t> header(size_t cap, bool with_id, bool with_tp, uint32_t *len)
{
	std::vector<uint8_t> b(cap);
	wire::l7_writer w(b.data(), b.size());
	w.request("echo", "GET", "/", 0, 0);
	if (with_id)
		w.field("x-request-id", "mine");
	if (with_tp)
		w.field("traceparent", "00-0123-4567-01");
	*len = static_cast<uint32_t>(w.finish());
	return b;
}

} // namespace

TEST(trace, formats_are_uuid_v4_and_w3c_traceparent)
{
	policy::trace_ids ids{0x0123456789abcdefull, 0xfedcba9876543210ull, 0x1122334455667788ull};
	char id[36], tp[55];
	policy::format_request_id(ids, id);
	policy::format_traceparent(ids, tp);
	EXPECT_EQ(std::string(id, 36), "01234567-89ab-4def-bedc-ba9876543210");
	EXPECT_EQ(std::string(tp, 55),
		  "00-0123456789abcdeffedcba9876543210-1122334455667788-01");
}

TEST(trace, every_digit_of_the_formats)
{
	policy::trace_ids ids{0xffffffffffffffffull, 0, 0xa0b1c2d3e4f50617ull};
	char id[36], tp[55];
	policy::format_request_id(ids, id);
	policy::format_traceparent(ids, tp);
	EXPECT_EQ(std::string(id, 36), "ffffffff-ffff-4fff-8000-000000000000");
	EXPECT_EQ(std::string(tp, 55),
		  "00-ffffffffffffffff0000000000000000-a0b1c2d3e4f50617-01");
}

/* Every digit in its place for ids of every shape: the formats against snprintf's. */
TEST(trace, formats_match_printf_for_many_ids)
{
	policy::trace_rng rng(7);
	for (int i = 0; i < 20000; i++) {
		policy::trace_ids ids = rng.next();
		if (i % 3 == 1) /* runs of one digit, and each nibble value alone */
			ids.hi = 0x1111111111111111ull * (i % 16);
		if (i % 5 == 2)
			ids.lo = uint64_t(i % 16) << (4 * (i % 16));
		if (i % 7 == 3) /* every bit set: the UUID's version and variant nibbles cleared */
			ids.hi = ids.lo = ~0ull;
		char id[36], tp[55], want[64];
		uint32_t sums[4];
		sums[0] = policy::format_request_id(ids, id);
		sums[1] = policy::format_traceparent(ids, tp);
		const uint64_t hi = (ids.hi & 0xffffffffffff0fffull) | 0x4000;
		const uint64_t lo = (ids.lo & 0x3fffffffffffffffull) | 0x8000000000000000ull;
		std::snprintf(want, sizeof(want), "%08llx-%04llx-%04llx-%04llx-%012llx",
			      (unsigned long long)(hi >> 32), (unsigned long long)(hi >> 16 & 0xffff),
			      (unsigned long long)(hi & 0xffff), (unsigned long long)(lo >> 48),
			      (unsigned long long)(lo & 0xffffffffffffull));
		ASSERT_EQ(std::string(id, 36), want) << i;
		std::snprintf(want, sizeof(want), "00-%016llx%016llx-%016llx-01",
			      (unsigned long long)ids.hi, (unsigned long long)ids.lo,
			      (unsigned long long)ids.span);
		ASSERT_EQ(std::string(tp, 55), want) << i;
		/* the form CPUs without SSSE3 run (a BlueField's Arm cores) writes the same */
		char pid[36], ptp[55];
		sums[2] = policy::format_request_id_portable(ids, pid);
		sums[3] = policy::format_traceparent_portable(ids, ptp);
		ASSERT_EQ(std::string(pid, 36), std::string(id, 36)) << i;
		ASSERT_EQ(std::string(ptp, 55), std::string(tp, 55)) << i;
		/* each says what its text sums to (the UDP checksum's words) */
		ASSERT_EQ(csum_fold(sums[0]), csum_fold(csum_bytes(id, 36))) << i;
		ASSERT_EQ(csum_fold(sums[1]), csum_fold(csum_bytes(tp, 55))) << i;
		ASSERT_EQ(csum_fold(sums[2]), csum_fold(csum_bytes(pid, 36))) << i;
		ASSERT_EQ(csum_fold(sums[3]), csum_fold(csum_bytes(ptp, 55))) << i;
	}
}

TEST(trace, rng_draws_distinct_ids_and_seeds_differ)
{
	policy::trace_rng a(42), b(42), c(43);
	std::set<uint64_t> seen;
	for (int i = 0; i < 10000; i++) {
		const policy::trace_ids x = a.next(), y = b.next(), z = c.next();
		EXPECT_EQ(x.hi, y.hi); /* the same seed, the same sequence */
		EXPECT_NE(x.hi, z.hi);
		EXPECT_EQ(x.span & 1, 1u); /* a span id is never zero */
		EXPECT_TRUE(seen.insert(x.hi).second);
		EXPECT_TRUE(seen.insert(x.lo).second);
		EXPECT_TRUE(seen.insert(x.span).second);
	}
}

TEST(trace, adds_only_the_missing_fields)
{
	uint32_t len = 0;
	std::vector<uint8_t> b = header(1024, true, false, &len);
	ASSERT_GT(len, 0u);
	wire::l7_view v;
	ASSERT_EQ(wire::l7_decode(b.data(), len, &v), wire::l7_error::ok);
	unsigned need = policy::trace_missing(v);
	EXPECT_EQ(need, unsigned(policy::trace_traceparent));
	policy::trace_result r = policy::add_trace(b.data(), len, 1024, need, {1, 2, 3});
	ASSERT_FALSE(r.no_room);
	EXPECT_EQ(r.added, need);
	ASSERT_EQ(wire::l7_decode(b.data(), r.len, &v), wire::l7_error::ok);
	std::string_view got;
	ASSERT_TRUE(v.find("x-request-id", &got));
	EXPECT_EQ(got, "mine"); /* the request's own id is kept */
	ASSERT_TRUE(v.find("traceparent", &got));
	EXPECT_EQ(got, "00-00000000000000010000000000000002-0000000000000003-01");
	EXPECT_EQ(policy::trace_missing(v), 0u);
	/* nothing missing: nothing written */
	policy::trace_result again = policy::add_trace(b.data(), r.len, 1024, 0, {4, 5, 6});
	EXPECT_EQ(again.len, r.len);
	EXPECT_EQ(again.added, 0u);
}

/* What add_trace() says its fields sum to is their bytes' sum, for each set of fields and
 * at either parity of the header they go after. */
TEST(trace, the_added_fields_sum_to_what_it_says)
{
	policy::trace_rng rng(11);
	for (bool has_id : {false, true})
		for (bool has_tp : {false, true})
			for (int pad = 0; pad < 4; pad++) {
				std::vector<uint8_t> b(1024);
				wire::l7_writer w(b.data(), b.size());
				w.request("svc", "GET", "/p" + std::string(size_t(pad), 'x'));
				if (has_id)
					w.field("x-request-id", "mine");
				if (has_tp)
					w.field("traceparent", "theirs");
				const uint32_t len = static_cast<uint32_t>(w.finish());
				ASSERT_GT(len, 0u);
				wire::l7_view v;
				ASSERT_EQ(wire::l7_decode(b.data(), len, &v), wire::l7_error::ok);
				const unsigned need = policy::trace_missing(v);
				const policy::trace_result r =
					policy::add_trace(b.data(), len, 1024, need, rng.next());
				ASSERT_FALSE(r.no_room);
				const uint32_t want =
					csum_bytes(reinterpret_cast<const char *>(b.data()) + len, r.len - len);
				EXPECT_EQ(csum_fold(r.added_sum) % 0xffff, csum_fold(want) % 0xffff)
					<< "header " << len << " need " << need;
			}
}

TEST(trace, no_room_leaves_the_header_as_it_was)
{
	uint32_t len = 0;
	std::vector<uint8_t> b = header(1024, false, false, &len);
	ASSERT_GT(len, 0u);
	std::vector<uint8_t> before(b.begin(), b.begin() + len);
	/* room for the id but not the traceparent: all or nothing */
	policy::trace_result r = policy::add_trace(b.data(), len, len + 60,
						   policy::trace_request_id | policy::trace_traceparent,
						   {7, 8, 9});
	EXPECT_TRUE(r.no_room);
	EXPECT_EQ(r.len, len);
	EXPECT_EQ(r.added, 0u);
	wire::l7_view v;
	ASSERT_EQ(wire::l7_decode(b.data(), len, &v), wire::l7_error::ok);
	EXPECT_EQ(policy::trace_missing(v), unsigned(policy::trace_request_id | policy::trace_traceparent));
	EXPECT_TRUE(std::equal(before.begin(), before.end(), b.begin()));
}

/* Both fields added at once (what a request without trace ids gets: add_trace()'s one-pass
 * form where the CPU has it) are the bytes l7_writer makes adding them field by field: at
 * either parity of the header, with room for them, one byte short and more; at the field
 * count's limit and one below it; and their sum is what it says. */
TEST(trace, both_fields_at_once_are_the_writers_bytes)
{
	policy::trace_rng rng(5);
	const unsigned both = policy::trace_request_id | policy::trace_traceparent;
	for (int pad = 0; pad < 4; pad++)
		for (unsigned extra : {0u, 122u, 123u, 124u, 125u})
			for (int room : {120, 121, 122, 123, 300}) {
				std::vector<uint8_t> b(4096, 0xee);
				wire::l7_writer w(b.data(), b.size());
				w.request("svc", "GET", "/p" + std::string(size_t(pad), 'x'));
				for (unsigned k = 0; k < extra; k++)
					w.field("f" + std::to_string(k), "v");
				const uint32_t len = static_cast<uint32_t>(w.finish());
				if (len == 0)
					continue; /* more fields than a header holds */
				wire::l7_view v;
				ASSERT_EQ(wire::l7_decode(b.data(), len, &v), wire::l7_error::ok);
				ASSERT_EQ(policy::trace_missing(v), both);
				const uint32_t cap = len + static_cast<uint32_t>(room);
				std::vector<uint8_t> want = b;
				const policy::trace_ids ids = rng.next();
				char id[36], tp[55];
				policy::format_request_id(ids, id);
				policy::format_traceparent(ids, tp);
				wire::l7_writer ref = wire::l7_writer::extend(want.data(), len, cap);
				ref.field("x-request-id", std::string_view(id, sizeof(id)));
				ref.field("traceparent", std::string_view(tp, sizeof(tp)));
				const size_t n = ref.finish();
				const std::vector<uint8_t> before(b.begin(), b.begin() + len);
				const policy::trace_result r = policy::add_trace(b.data(), len, cap, both, ids);
				const std::string what = "header " + std::to_string(len) + " fields +" +
							 std::to_string(extra) + " room " +
							 std::to_string(room);
				ASSERT_EQ(r.no_room, n == 0) << what;
				if (r.no_room) {
					EXPECT_EQ(r.len, len) << what;
					EXPECT_EQ(r.added, 0u) << what;
					EXPECT_TRUE(std::equal(before.begin(), before.end(), b.begin())) << what;
					continue;
				}
				ASSERT_EQ(r.len, n) << what;
				EXPECT_EQ(r.added, both) << what;
				EXPECT_TRUE(std::equal(want.begin(), want.begin() + n, b.begin())) << what;
				/* nothing written past the fields */
				EXPECT_TRUE(std::all_of(b.begin() + n, b.end(), [](uint8_t x) { return x == 0xee; }))
					<< what;
				const uint32_t sum =
					csum_bytes(reinterpret_cast<const char *>(b.data()) + len, r.len - len);
				EXPECT_EQ(csum_fold(r.added_sum) % 0xffff, csum_fold(sum) % 0xffff) << what;
			}
}
