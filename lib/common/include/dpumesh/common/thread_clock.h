// SPDX-License-Identifier: BSD-3-Clause
// The calling thread's CPU clock: what a stretch of code cost the thread, without the time it
// was descheduled (docs/benchmarks.md "Cost accounting: thread CPU, not TSC").
//
//   (void)thread_cpu_ns();                  // warm the clock's kernel path
//   const uint64_t c0 = thread_cpu_ns();
//   ... the code ...
//   uint64_t c = thread_cpu_ns() - c0;      // less clock_read_cost(): the reads' own
#pragma once

#include <cstdint>
#include <ctime>

namespace dpumesh {

/** The calling thread's CPU time, ns (CLOCK_THREAD_CPUTIME_ID: a syscall on Linux). */
inline uint64_t thread_cpu_ns() noexcept
{
	timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

/** What one thread-CPU clock read adds to a bracket: the least CPU time between two
 * back-to-back reads (the end of one call and the start of the next). */
inline uint64_t clock_read_cost() noexcept
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 32; i++) {
		const uint64_t a = thread_cpu_ns();
		const uint64_t b = thread_cpu_ns();
		if (b - a < best)
			best = b - a;
	}
	return best;
}

} // namespace dpumesh
