// SPDX-License-Identifier: BSD-3-Clause
// Single-writer counters: written by one lcore, summed by control.
//
// A relaxed load + store (not a fetch_add): no locked or exclusive instruction, and
// cross-thread reads well defined. GCC 12 emits it as a load, an add and a store (it does
// not merge atomics into one add to memory: 3 instructions an increment, the µops of a
// plain `add` to memory). Accumulate in locals and add once per burst.
#pragma once

#include <atomic>
#include <cstdint>

namespace dpumesh {

class counter {
public:
	void add(uint64_t n) noexcept
	{
		_v.store(_v.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
	}
	void inc() noexcept { add(1); }
	uint64_t get() const noexcept { return _v.load(std::memory_order_relaxed); }
	/** Control only; the writer may race with it, so a clear is best effort (like NIC stats). */
	void reset() noexcept { _v.store(0, std::memory_order_relaxed); }

private:
	std::atomic<uint64_t> _v{0};
};

} // namespace dpumesh
