// SPDX-License-Identifier: BSD-3-Clause
// The DPA emulator holds kernels to DOCA's rules: a kernel that breaks one is caught (copy
// outside an mmap, copy over the size limit, activation over its time budget, cookie taken
// out of order, ...), and one that keeps them runs clean: split copies byte-exact, report
// coalescing, completion-driven activation, cooperative stop. Real EAL (DPU mmap = DPDK
// memory), a real memfd region behind a real mkey, the cpu DMA engine.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include <rte_cycles.h>
#include <rte_malloc.h>

#include "dpumesh/dpa/runtime.h"
#include "dpumesh/region/mkey_table.h"
#include "dpumesh/region/region.h"
#include "eal_env.h"

using namespace dpumesh;
using dpa::rule;

namespace {

constexpr uint32_t dpu = mkey_table::reserved_mkey; /* dpa_dpu_mmap() */
constexpr size_t pod_size = 256 * 1024;

config::dma_config cpu_dma()
{
	config::dma_config c;
	c.backend = config::dma_backend::cpu;
	return c;
}

/* What a test kernel does, and what it saw. */
struct script {
	uint32_t pod_mkey = 0;
	uint64_t pod_base = 0; /* the pod's own address of its region */
	uint64_t dpu_buf = 0;  /* DPDK memory */
	std::function<void(::dpa_dev *, script &)> body;
	std::vector<uint64_t> cookies; /* cookies taken, in order */
	std::vector<int32_t> statuses; /* status of each completion */
	std::vector<int> lasts;
	bool reschedule = true;
};

void run_script(::dpa_dev *d, void *arg)
{
	auto &s = *static_cast<script *>(arg);
	s.body(d, s);
	if (s.reschedule)
		dpa_thread_reschedule(d);
}

/* Takes every completion available and the cookies each covers. */
void take_all(::dpa_dev *d, script &s)
{
	dpa_completion c;
	while (dpa_get_completion(d, &c)) {
		s.statuses.push_back(c.status);
		uint64_t cookie;
		int last = 0;
		while (!last && dpa_cookie_take(d, &cookie, &last) == DPA_OK) {
			s.cookies.push_back(cookie);
			s.lasts.push_back(last);
		}
		dpa_completion_ack(d, 1);
	}
}

class dpa_rules : public ::testing::Test {
protected:
	void SetUp() override
	{
		auto r = region::create("dpa-rules-pod", pod_size, false);
		ASSERT_TRUE(r) << r.error().message();
		pod = static_cast<uint8_t *>(r->data());
		for (size_t i = 0; i < pod_size; i++)
			pod[i] = static_cast<uint8_t>(i * 7 + 3);
		s.pod_base = r->remote_base();
		auto mk = mkeys.register_region(std::move(*r));
		ASSERT_TRUE(mk) << mk.error().message();
		s.pod_mkey = *mk;
		buf = static_cast<uint8_t *>(rte_zmalloc("dpa-rules", pod_size, 64));
		ASSERT_NE(buf, nullptr);
		s.dpu_buf = reinterpret_cast<uint64_t>(buf);
	}
	void TearDown() override { rte_free(buf); }

	std::unique_ptr<dpa::solo_thread> thread(dpa::rules r = {})
	{
		auto t = dpa::solo_thread::create(&mkeys, cpu_dma(), r);
		EXPECT_TRUE(t) << t.error().message();
		return t ? std::move(*t) : nullptr;
	}

	/* Runs the hardware and activations until the thread is idle (nothing due). */
	void settle(dpa::solo_thread &t)
	{
		for (int i = 0; i < 1000; i++) {
			t.hw_step();
			t.step(&run_script, &s);
		}
	}

	mkey_table mkeys;
	uint8_t *pod = nullptr;
	uint8_t *buf = nullptr;
	script s;
};

/* ---- a kernel that keeps the rules ---- */

TEST_F(dpa_rules, split_copies_are_byte_exact_and_coalesced)
{
	auto t = thread();
	ASSERT_TRUE(t);
	const uint32_t len = 20000; /* 3 posts: 8192 + 8192 + 3616 */
	s.body = [&](::dpa_dev *d, script &sc) {
		take_all(d, sc);
		if (sc.cookies.empty() && sc.statuses.empty() && dpa_async_room(d) == DPA_ASYNC_QUEUE) {
			for (uint32_t off = 0; off < len; off += DPA_MAX_COPY) {
				uint32_t n = std::min<uint32_t>(DPA_MAX_COPY, len - off);
				bool last = off + n == len;
				dpa_post_memcpy(d, dpu, sc.dpu_buf + off, sc.pod_mkey, sc.pod_base + 100 + off,
						n, last ? DPA_SUBMIT_FLUSH : DPA_SUBMIT_OPTIMIZE_REPORTS,
						off / DPA_MAX_COPY);
			}
			dpa_completion_request_notification(d);
		}
	};
	t->notify();
	settle(*t);
	EXPECT_EQ(t->violations_total(), 0u);
	ASSERT_EQ(s.statuses.size(), 1u) << "one completion covers the three posts";
	EXPECT_EQ(s.statuses[0], 0);
	EXPECT_EQ(s.cookies, (std::vector<uint64_t>{0, 1, 2}));
	EXPECT_EQ(s.lasts, (std::vector<int>{0, 0, 1}));
	EXPECT_EQ(std::memcmp(buf, pod + 100, len), 0);
	EXPECT_EQ(buf[len], 0) << "nothing past the copy";
}

TEST_F(dpa_rules, completion_activates_only_an_armed_thread)
{
	auto t = thread();
	ASSERT_TRUE(t);
	int activations = 0;
	bool arm = false;
	s.body = [&](::dpa_dev *d, script &sc) {
		activations++;
		take_all(d, sc);
		if (activations == 1)
			dpa_post_memcpy(d, dpu, sc.dpu_buf, sc.pod_mkey, sc.pod_base, 64,
					DPA_SUBMIT_FLUSH, 7);
		if (arm)
			dpa_completion_request_notification(d);
	};
	t->notify();
	EXPECT_TRUE(t->step(&run_script, &s));
	settle(*t);
	EXPECT_EQ(activations, 1) << "not armed: the completion does not wake it";
	arm = true;
	t->notify(); /* a doorbell: it takes the completion and arms */
	settle(*t);
	EXPECT_EQ(activations, 2);
	EXPECT_EQ(s.cookies, (std::vector<uint64_t>{7}));
	dpa_post_memcpy(t->dev(), dpu, s.dpu_buf, s.pod_mkey, s.pod_base, 64, DPA_SUBMIT_FLUSH, 8);
	settle(*t);
	EXPECT_EQ(activations, 3) << "armed: the completion wakes it";
	EXPECT_EQ(s.cookies, (std::vector<uint64_t>{7, 8}));
	EXPECT_EQ(t->violations_total(), 0u);
}

TEST_F(dpa_rules, cooperative_stop_finishes_after_its_copies)
{
	auto t = thread();
	ASSERT_TRUE(t);
	int inflight = 0;
	s.reschedule = false;
	s.body = [&](::dpa_dev *d, script &sc) {
		size_t before = sc.cookies.size();
		take_all(d, sc);
		inflight -= static_cast<int>(sc.cookies.size() - before);
		if (dpa_thread_stop_requested(d) && inflight == 0) {
			dpa_thread_finish(d);
			return;
		}
		if (!dpa_thread_stop_requested(d)) {
			dpa_post_memcpy(d, dpu, sc.dpu_buf, sc.pod_mkey, sc.pod_base, 4096,
					DPA_SUBMIT_FLUSH, 1);
			inflight++;
		}
		dpa_completion_request_notification(d);
		dpa_thread_reschedule(d);
	};
	t->notify();
	EXPECT_TRUE(t->step(&run_script, &s)); /* posts; the engine has not run yet */
	t->request_stop();
	EXPECT_TRUE(t->step(&run_script, &s)); /* the hardware runs first: copy done */
	settle(*t);
	EXPECT_TRUE(t->finished());
	EXPECT_EQ(inflight, 0);
	EXPECT_EQ(s.cookies.size(), 1u) << "its copy completed and was taken before it finished";
	EXPECT_FALSE(t->step(&run_script, &s)) << "a finished thread never runs again";
	t->notify();
	EXPECT_FALSE(t->step(&run_script, &s));
	EXPECT_EQ(t->violations_total(), 0u);
}

/* ---- kernels that break a rule ---- */

TEST_F(dpa_rules, copy_outside_the_mmap_is_caught_and_fails)
{
	auto t = thread();
	ASSERT_TRUE(t);
	s.body = [&](::dpa_dev *d, script &sc) {
		take_all(d, sc);
		if (sc.statuses.empty()) {
			/* the last 100 bytes of the pod's region and 100 past it */
			dpa_post_memcpy(d, dpu, sc.dpu_buf, sc.pod_mkey, sc.pod_base + pod_size - 100,
					200, DPA_SUBMIT_FLUSH, 1);
			dpa_completion_request_notification(d);
		}
	};
	t->notify();
	settle(*t);
	EXPECT_EQ(t->violations(rule::mmap_range), 1u);
	ASSERT_EQ(s.statuses.size(), 1u);
	EXPECT_NE(s.statuses[0], 0) << "the copy completes with an error, as on hardware";
	EXPECT_EQ(buf[0], 0) << "nothing was copied";
	/* a stale mkey, and DPU memory that is not DPDK's, are outside too */
	::dpa_dev *d = t->dev();
	dpa_post_memcpy(d, dpu, s.dpu_buf, s.pod_mkey + (1u << mkey_table::index_bits), s.pod_base,
			8, DPA_SUBMIT_FLUSH, 2);
	uint64_t stack_word = 0;
	dpa_post_memcpy(d, dpu, reinterpret_cast<uint64_t>(&stack_word), s.pod_mkey, s.pod_base, 8,
			DPA_SUBMIT_FLUSH, 3);
	EXPECT_EQ(dpa_mmap_ptr(d, s.pod_mkey, s.pod_base + pod_size, 1), nullptr);
	EXPECT_EQ(t->violations(rule::mmap_range), 4u);
	EXPECT_EQ(stack_word, 0u);
	settle(*t);
}

TEST_F(dpa_rules, copy_larger_than_allowed_is_caught)
{
	auto t = thread();
	ASSERT_TRUE(t);
	s.body = [&](::dpa_dev *d, script &sc) {
		take_all(d, sc);
		if (sc.statuses.empty()) {
			dpa_post_memcpy(d, dpu, sc.dpu_buf, sc.pod_mkey, sc.pod_base,
					DPA_MAX_COPY + 1, DPA_SUBMIT_FLUSH, 1);
			dpa_completion_request_notification(d);
		}
	};
	t->notify();
	settle(*t);
	EXPECT_EQ(t->violations(rule::copy_size), 1u);
	ASSERT_EQ(s.statuses.size(), 1u);
	EXPECT_NE(s.statuses[0], 0);
	EXPECT_EQ(buf[0], 0);
	EXPECT_EQ(t->violations_total(), 1u);
}

TEST_F(dpa_rules, activation_over_its_time_budget_is_caught)
{
	dpa::rules r;
	r.time_alive_us = 2000;
	auto t = thread(r);
	ASSERT_TRUE(t);
	s.body = [&](::dpa_dev *, script &) {
		const uint64_t until = rte_rdtsc() + rte_get_tsc_hz() / 100; /* spins 10 ms */
		while (rte_rdtsc() < until)
			;
	};
	t->notify();
	EXPECT_TRUE(t->step(&run_script, &s));
	EXPECT_EQ(t->violations(rule::time_alive), 1u);
	s.body = [&](::dpa_dev *, script &) {};
	t->notify();
	EXPECT_TRUE(t->step(&run_script, &s));
	EXPECT_EQ(t->violations(rule::time_alive), 1u) << "a short activation is fine";
}

TEST_F(dpa_rules, cookie_taken_out_of_order_is_caught)
{
	auto t = thread();
	ASSERT_TRUE(t);
	::dpa_dev *d = t->dev();
	/* taken before any completion covers it */
	dpa_post_memcpy(d, dpu, s.dpu_buf, s.pod_mkey, s.pod_base, 64, DPA_SUBMIT_FLUSH, 1);
	uint64_t cookie = 0;
	int last = 0;
	EXPECT_EQ(dpa_cookie_take(d, &cookie, &last), DPA_EMPTY);
	EXPECT_EQ(t->violations(rule::cookie_order), 1u);
	/* a second completion taken while the first one's cookie is left behind */
	dpa_post_memcpy(d, dpu, s.dpu_buf, s.pod_mkey, s.pod_base, 64, DPA_SUBMIT_FLUSH, 2);
	t->hw_step();
	dpa_completion c;
	ASSERT_EQ(dpa_get_completion(d, &c), 1);
	ASSERT_EQ(dpa_get_completion(d, &c), 1);
	EXPECT_EQ(t->violations(rule::cookie_order), 2u);
	/* acknowledging more than was taken */
	dpa_completion_ack(d, 3);
	EXPECT_EQ(t->violations(rule::ack_overrun), 1u);
}

TEST_F(dpa_rules, unflushed_post_overflow_and_missing_reschedule_are_caught)
{
	dpa::rules r;
	r.queue_size = 4;
	auto t = thread(r);
	ASSERT_TRUE(t);
	s.body = [&](::dpa_dev *d, script &sc) {
		dpa_post_memcpy(d, dpu, sc.dpu_buf, sc.pod_mkey, sc.pod_base, 64, 0, 1);
	};
	t->notify();
	t->step(&run_script, &s);
	EXPECT_EQ(t->violations(rule::unflushed), 1u);
	s.body = [&](::dpa_dev *d, script &sc) {
		for (int i = 0; i < 4; i++)
			dpa_post_memcpy(d, dpu, sc.dpu_buf, sc.pod_mkey, sc.pod_base, 64,
					DPA_SUBMIT_FLUSH, 2);
	};
	t->notify();
	t->step(&run_script, &s);
	EXPECT_EQ(t->violations(rule::queue_overflow), 1u) << "the 5th outstanding post";
	s.reschedule = false;
	s.body = [&](::dpa_dev *d, script &sc) { take_all(d, sc); };
	t->notify();
	t->step(&run_script, &s);
	EXPECT_EQ(t->violations(rule::no_reschedule), 1u);
	EXPECT_EQ(dpa_async_room(t->dev()), 4u) << "every cookie was taken back";
}

} // namespace

int main(int argc, char **argv)
{
	::testing::InitGoogleTest(&argc, argv);
	::testing::AddGlobalTestEnvironment(new dpumesh::test::eal_env("dpa_rules", {}));
	return RUN_ALL_TESTS();
}
