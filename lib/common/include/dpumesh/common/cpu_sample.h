// SPDX-License-Identifier: BSD-3-Clause
// Parts of an lcore's sampled poll measured apart on the thread's own CPU clock.
//
// The lcore runner brackets one busy poll in a while with the thread CPU clock (docs/
// benchmarks.md "Cost accounting"). Code inside that poll whose cost is not the stage's
// work (the emulated DPA's eventfd writes: on a BlueField-3 the DPA rings a pod, no Arm
// core) brackets itself with part_begin() / part_end(); the runner reads what they carved
// and counts it apart (`cpu_bell_ns` in /dpumesh/stages). Outside a sampled poll both are a
// thread-local load: no clock is read.
//
//   cpu_sample::part_begin();   // before the first write of a run (once per run)
//   ... ::write(efd, ...) ...
//   cpu_sample::part_end();     // after the run
#pragma once

#include <cstdint>
#include <ctime>

namespace dpumesh::cpu_sample {

inline uint64_t clock_ns(clockid_t id) noexcept
{
	timespec t;
	clock_gettime(id, &t);
	return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

/** The calling thread's CPU time, ns (CLOCK_THREAD_CPUTIME_ID: a syscall here). */
inline uint64_t thread_cpu_now() noexcept { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }

struct state {
	bool on = false;      /**< inside the runner's sampled poll */
	uint64_t read_ns = 0; /**< what a thread-clock read adds to a bracket (the runner's) */
	uint64_t start = 0;   /**< thread CPU at the open part's start, 0: none open */
	uint64_t wall0 = 0;   /**< CLOCK_MONOTONIC (vDSO) just after that read */
	uint64_t carved = 0;  /**< CPU of the parts closed in this sample, each at most its
			       *  wall time: a cold clock read costs more than read_ns, and
			       *  what is over is left to the poll, not to the part */
	uint32_t parts = 0;   /**< parts in this sample (each cost two thread-clock reads) */
};
inline thread_local state t;

/** Opens a part (no-op outside a sample, or when one is open). */
inline void part_begin() noexcept
{
	if (t.on && t.start == 0) {
		t.start = thread_cpu_now();
		t.wall0 = clock_ns(CLOCK_MONOTONIC);
	}
}

/** Closes the open part, if any. */
inline void part_end() noexcept
{
	if (t.start != 0) {
		const uint64_t wall = clock_ns(CLOCK_MONOTONIC) - t.wall0;
		const uint64_t cpu = thread_cpu_now() - t.start;
		const uint64_t c = cpu > t.read_ns ? cpu - t.read_ns : 0;
		t.carved += c < wall ? c : wall;
		t.start = 0;
		t.parts++;
	}
}

} // namespace dpumesh::cpu_sample
