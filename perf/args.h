// SPDX-License-Identifier: BSD-3-Clause
// The benchmark drivers' numbers: one whole number, or one finite real, in range
// (dpumesh/common/numbers.h), or the driver exits with its usage status naming the argument
// and what it wanted. atoi() read "abc" as 0 and "8k" as 8, and a run measured another
// workload than the one its script asked for.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "dpumesh/common/numbers.h"

namespace dpumesh::perf {

/** argument `v` of `what` as a whole number in [lo, hi] (decimal), or exit(code). */
inline uint64_t whole_arg(const char *prog, const char *what, const char *v, uint64_t lo,
			  uint64_t hi, int code = 2)
{
	if (const auto n = parse_whole(v, lo, hi))
		return *n;
	std::fprintf(stderr, "%s: %s \"%s\": want a whole number in [%llu, %llu]\n", prog, what,
		     v ? v : "", static_cast<unsigned long long>(lo),
		     static_cast<unsigned long long>(hi));
	std::exit(code);
}

/** argument `v` of `what` as a finite number in [lo, hi], or exit(code). */
inline double real_arg(const char *prog, const char *what, const char *v, double lo, double hi,
		       int code = 2)
{
	if (const auto x = parse_real(v, lo, hi))
		return *x;
	std::fprintf(stderr, "%s: %s \"%s\": want a number in [%g, %g]\n", prog, what, v ? v : "",
		     lo, hi);
	std::exit(code);
}

} // namespace dpumesh::perf
