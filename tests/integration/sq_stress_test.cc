// SPDX-License-Identifier: BSD-3-Clause
// Two processes on one SPSC ring in shared memory: 10 million descriptors, checked for
// loss, duplication, reordering and torn contents, with the consumer slower, faster and
// as fast as the producer.
#include <gtest/gtest.h>

#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "dpumesh/ring/sq.h"

namespace {

/*
 * 10M everywhere, ASan included: measured on the shared 2-core dev box at 0.6-1.5 s in the
 * normal build and 1.5-4 s under ASan+UBSan, depending on load (docs/memory-model.md).
 */
constexpr uint64_t nb_total = 10'000'000;
constexpr uint32_t nb_slots = 256; /* small, so the ring is often full and often empty */
constexpr uint32_t max_burst = 32;

enum phase : uint32_t { consumer_slower = 0, consumer_faster = 1, same_speed = 2 };

uint32_t phase_of(uint64_t seq) { return static_cast<uint32_t>(seq * 3 / nb_total); }

/* Every field is a function of the sequence number; the consumer rebuilds and compares. */
sw_descriptor make_desc(uint64_t seq)
{
	uint64_t h = seq * 0x9e3779b97f4a7c15ull;
	sw_descriptor d{};
	d.header_buf_addr = h;
	d.header_len = static_cast<uint32_t>(h >> 32);
	d.body_buf_addr = ~h;
	d.body_len = static_cast<uint32_t>(h >> 7);
	d.req_id = static_cast<uint32_t>(seq);
	d.step_id = phase_of(seq);
	for (unsigned i = 0; i < sizeof(d.dst.external.ip); i++)
		d.dst.external.ip[i] = static_cast<uint8_t>(h >> (i * 4));
	d.dst.external.port = static_cast<uint16_t>(h >> 48);
	/* flags: a checksum of the other fields, so a torn slot cannot pass */
	d.flags = static_cast<uint32_t>(d.header_buf_addr ^ (d.header_buf_addr >> 32) ^ d.header_len ^
					d.body_buf_addr ^ (d.body_buf_addr >> 32) ^ d.body_len ^
					d.req_id ^ d.step_id ^ d.dst.external.port);
	return d;
}

bool same(const sw_descriptor &a, const sw_descriptor &b)
{
	return a.header_buf_addr == b.header_buf_addr && a.header_len == b.header_len &&
	       a.body_buf_addr == b.body_buf_addr && a.body_len == b.body_len &&
	       a.req_id == b.req_id && a.step_id == b.step_id &&
	       std::memcmp(a.dst.external.ip, b.dst.external.ip, sizeof(a.dst.external.ip)) == 0 &&
	       a.dst.external.port == b.dst.external.port && a.flags == b.flags &&
	       a.valid == DPUMESH_DESC_VALID;
}

/* xorshift: burst sizes and pause points, different on each side. */
struct rng {
	uint64_t s;
	uint32_t next()
	{
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		return static_cast<uint32_t>(s);
	}
};

/* Busy pause of a few microseconds (the slow side "does work"). */
void pause_spin(uint32_t iterations)
{
	for (uint32_t i = 0; i < iterations; i++)
		asm volatile("" ::: "memory");
}

/* Waiting on a full/empty ring: spin briefly, then give the CPU to the peer (2-core box). */
void backoff(uint32_t &idle)
{
	if (++idle > 64) {
		sched_yield();
		idle = 0;
	}
}

[[noreturn]] void producer(void *mem)
{
	dpumesh_sq sq;
	if (dpumesh_sq_init(&sq, mem, nb_slots) != DPUMESH_SQ_OK)
		_exit(2);
	rng r{0x1234567ull};
	sw_descriptor burst[max_burst];
	uint64_t seq = 0, next_pause = 1000;
	uint32_t idle = 0;
	while (seq < nb_total) {
		uint32_t n = 1 + r.next() % max_burst;
		if (n > nb_total - seq)
			n = static_cast<uint32_t>(nb_total - seq);
		for (uint32_t i = 0; i < n; i++) {
			burst[i] = make_desc(seq + i);
			burst[i].valid = static_cast<uint32_t>(seq); /* must be ignored */
		}
		uint32_t done = 0;
		while (done < n) {
			uint32_t k = dpumesh_sq_enqueue_burst(&sq, burst + done, n - done);
			done += k;
			if (k == 0)
				backoff(idle);
		}
		seq += n;
		if (seq >= next_pause) {
			if (phase_of(seq) == consumer_faster)
				pause_spin(2000 + r.next() % 20000);
			next_pause = seq + 200 + r.next() % 2000;
		}
	}
	_exit(0);
}

struct child_guard {
	pid_t pid = -1;
	~child_guard()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
	}
};

} // namespace

TEST(SqStress, TwoProcessesTenMillionDescriptorsThreePhases)
{
	size_t bytes = nb_slots * sizeof(sw_descriptor);
	void *mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(mem, MAP_FAILED) << std::strerror(errno);

	auto start = std::chrono::steady_clock::now();
	child_guard child;
	child.pid = fork();
	ASSERT_GE(child.pid, 0) << std::strerror(errno);
	if (child.pid == 0)
		producer(mem);

	dpumesh_sq sq;
	ASSERT_EQ(dpumesh_sq_init(&sq, mem, nb_slots), DPUMESH_SQ_OK);
	rng r{0xabcdef01ull};
	sw_descriptor burst[max_burst];
	uint64_t seq = 0, next_pause = 1000, polls_empty = 0, polls = 0;
	uint64_t per_phase[3] = {0, 0, 0};
	uint32_t idle = 0;
	auto deadline = start + std::chrono::seconds(150);
	while (seq < nb_total) {
		uint32_t n = dpumesh_sq_dequeue_burst(&sq, burst, 1 + r.next() % max_burst);
		polls++;
		if (n == 0) {
			polls_empty++;
			backoff(idle);
			if ((polls_empty & 0xfff) == 0) {
				int st;
				ASSERT_EQ(waitpid(child.pid, &st, WNOHANG), 0)
					<< "producer exited early at seq " << seq;
				ASSERT_LT(std::chrono::steady_clock::now(), deadline)
					<< "stuck at seq " << seq;
			}
			continue;
		}
		for (uint32_t i = 0; i < n; i++, seq++) {
			sw_descriptor want = make_desc(seq);
			if (!same(burst[i], want)) [[unlikely]] {
				FAIL() << "at seq " << seq << ": got req_id " << burst[i].req_id
				       << " step " << burst[i].step_id << " flags " << burst[i].flags
				       << " valid " << burst[i].valid << " (loss, duplicate, reorder "
				       << "or torn descriptor)";
			}
			per_phase[phase_of(seq)]++;
		}
		if (seq >= next_pause) {
			if (phase_of(seq) == consumer_slower)
				pause_spin(2000 + r.next() % 20000);
			next_pause = seq + 200 + r.next() % 2000;
		}
	}

	int st = 0;
	ASSERT_EQ(waitpid(child.pid, &st, 0), child.pid);
	child.pid = -1;
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "producer status " << st;
	/* Nothing more was posted than the producer was asked for. */
	EXPECT_EQ(dpumesh_sq_dequeue_burst(&sq, burst, max_burst), 0u);
	for (uint32_t i = 0; i < nb_slots; i++)
		EXPECT_EQ(static_cast<sw_descriptor *>(mem)[i].valid, 0u) << i;
	EXPECT_EQ(per_phase[0] + per_phase[1] + per_phase[2], nb_total);
	for (uint64_t p : per_phase)
		EXPECT_GT(p, nb_total / 4);

	double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
	std::printf("sq_stress: %llu descriptors in %.2f s (%.1f M/s), %llu of %llu polls empty\n",
		    static_cast<unsigned long long>(nb_total), secs, nb_total / secs / 1e6,
		    static_cast<unsigned long long>(polls_empty),
		    static_cast<unsigned long long>(polls));
	munmap(mem, bytes);
}
