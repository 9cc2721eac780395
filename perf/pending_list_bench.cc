// SPDX-License-Identifier: BSD-3-Clause
// dpumesh-pending-list-bench: what a step of `show pending`'s listing costs the sidecar lcore
// (sidecar::stage::list_pending: pending_list_step slots of the pending table a step, the
// oldest entries kept by pending::oldest), next to the same walk keeping nothing, in one run.
//
//   build-perf/bin/dpumesh-pending-list-bench [ENTRIES [EVICT_MIB]]
// A 65536-slot table holds ENTRIES requests (default 65536: full) whose starts run, in slot
// order, youngest first (every offer is older than all kept: the oldest-keeping's worst
// case), oldest first (none is), and scattered. Each row walks the whole table in steps of
// 256 slots, eight times; before each step EVICT_MIB MiB (default 64; 0: none) are written,
// as the rest of a node's work leaves the table cold between two steps 10 us apart.
// Printed: the median cycles of a step (rte_rdtsc around the step alone; a median, so that
// a step the thread was preempted in does not count) keeping the oldest 32 and keeping
// nothing, and their ratio. docs/console.md, `show pending`.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <rte_cycles.h>

#include "dpumesh/common/numbers.h"
#include "dpumesh/pending/table.h"

using namespace dpumesh;

namespace {

constexpr uint32_t step = 256; /* sidecar::stage::pending_list_step */

uint64_t median(std::vector<uint64_t> v)
{
	std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
	return v[v.size() / 2];
}

/* Median cycles a step of a whole walk, `rounds` times over; `keep`: offer to oldest<32>. */
uint64_t walk(const pending::table &t, bool keep, std::vector<uint8_t> &evict, unsigned rounds,
	      uint64_t *kept_sum)
{
	std::vector<uint64_t> steps;
	pending::oldest<32> kept;
	for (unsigned r = 0; r < rounds; r++) {
		kept.clear();
		uint64_t touched = 0;
		for (uint32_t at = 0; at < t.capacity(); at += step) {
			for (size_t i = 0; i < evict.size(); i += 64)
				evict[i] = static_cast<uint8_t>(evict[i] + 1);
			const uint64_t t0 = rte_rdtsc();
			if (keep)
				t.for_each_in(at, step, [&](uint32_t token, const pending::entry &e) {
					kept.offer(token, e);
				});
			else
				t.for_each_in(at, step, [&](uint32_t, const pending::entry &e) {
					touched += e.start_tsc;
				});
			steps.push_back(rte_rdtsc() - t0);
		}
		*kept_sum += touched;
		kept.sorted([&](uint32_t token, const pending::entry &e) {
			*kept_sum += token + e.start_tsc;
		});
	}
	return median(steps);
}

} // namespace

int main(int argc, char **argv)
{
	const uint32_t entries =
		argc > 1 ? static_cast<uint32_t>(whole_arg(argv[0], "ENTRIES", argv[1], 1, 65536))
			 : 65536;
	const size_t evict_mib = argc > 2 ? whole_arg(argv[0], "EVICT_MIB", argv[2], 0, 4096) : 64;
	std::vector<uint8_t> evict(evict_mib << 20);
	const char *orders[] = {"youngest first", "oldest first", "scattered"};
	std::printf("%u entries in 65536 slots, steps of %u slots, %zu MiB written between steps\n",
		    entries, step, evict_mib);
	std::printf("%-16s %14s %14s %7s\n", "slot order", "keep 32 (cyc)", "keep none", "ratio");
	uint64_t sum = 0;
	for (unsigned o = 0; o < 3; o++) {
		pending::table t(65536, 2'000'000'000);
		for (uint32_t i = 0; i < entries; i++) {
			pending::entry e{};
			e.origin.type = pending::party::kind::pod;
			e.start_tsc = o == 0   ? 1'000'000 - i
				      : o == 1 ? 1'000 + i
					       : (i * 2654435761u) % 1'000'003u;
			e.deadline_tsc = e.start_tsc + 1'000'000'000;
			if (t.insert(e) == 0) {
				std::fprintf(stderr, "the table took only %u entries\n", i);
				return 1;
			}
		}
		const uint64_t none = walk(t, false, evict, 8, &sum);
		const uint64_t keep = walk(t, true, evict, 8, &sum);
		std::printf("%-16s %14llu %14llu %7.2f\n", orders[o],
			    static_cast<unsigned long long>(keep), static_cast<unsigned long long>(none),
			    static_cast<double>(keep) / static_cast<double>(none ? none : 1));
	}
	std::printf("(checksum %llu)\n", static_cast<unsigned long long>(sum));
	return 0;
}
