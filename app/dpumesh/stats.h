// SPDX-License-Identifier: BSD-3-Clause
// Periodic and final statistics of the dpumesh application, rendered from control snapshots.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "dpumesh/control/snapshot.h"
#include "dpumesh/node/node.h"

namespace dpumesh::app {

class stats_printer {
public:
	/** full: every counter in the periodic block (scripts); else the compact display. */
	stats_printer(const control::node &n, bool full);
	/**
	 * Whether a periodic block is due, every period_s seconds (0: never); a new period
	 * (console `set stats-period`) restarts the clock.
	 */
	bool due(unsigned period_s);
	/** One block of rates since the previous call. */
	std::string periodic();
	/** key=value lines with totals, read by tests and scripts. */
	void print_final(FILE *out);

private:
	/** Takes a snapshot; port counters that went down (a memif peer reconnected and the
	 * PMD reset them) continue from where they were. */
	control::snapshot take();
	void full_block(FILE *out, const control::snapshot &s, double dt);
	void compact_block(FILE *out, const control::snapshot &s, double dt);

	const control::node &_n;
	bool _full;
	std::vector<rte_eth_stats> _port_base, _port_last;
	control::snapshot _prev;
	uint64_t _start_tsc;
	unsigned _period = UINT32_MAX;
	uint64_t _next_tsc = 0;
};

/** "final mempool ..." in-use counts of the node's pools (after node::instance::drain()). */
void print_pools(FILE *out, const node::instance &n);

} // namespace dpumesh::app
