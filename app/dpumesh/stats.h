// SPDX-License-Identifier: BSD-3-Clause
// Periodic and final statistics of the dpumesh application, rendered from control snapshots.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "dpumesh/control/snapshot.h"

namespace dpumesh::app {

class stats_printer {
public:
	explicit stats_printer(const control::node &n);
	/** One block of rates since the previous call. */
	std::string periodic();
	/** key=value lines with totals, read by tests and scripts. */
	void print_final(FILE *out) const;

private:
	const control::node &_n;
	control::snapshot _prev;
	uint64_t _start_tsc;
};

} // namespace dpumesh::app
