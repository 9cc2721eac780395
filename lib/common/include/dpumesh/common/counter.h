// SPDX-License-Identifier: BSD-3-Clause
// Single-writer counters and gauges: written by one lcore, read by control.
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

/**
 * A single-writer level (entries in use, a queue's depth or index) that control also reads:
 * the owner uses it as a number, every access a relaxed atomic load or store (a plain mov
 * on x86-64 and arm64), so control's reads are well defined where a plain field would be a
 * data race. Only its one writer may change it: ++ and += are a load and a store, not an
 * atomic read-modify-write.
 */
template <typename T> class gauge {
public:
	gauge() = default;
	gauge(const gauge &o) noexcept : _v(o.get()) {}
	gauge &operator=(const gauge &o) noexcept { return *this = o.get(); }
	gauge &operator=(T v) noexcept
	{
		_v.store(v, std::memory_order_relaxed);
		return *this;
	}
	T get() const noexcept { return _v.load(std::memory_order_relaxed); }
	operator T() const noexcept { return get(); }
	gauge &operator+=(T n) noexcept { return *this = static_cast<T>(get() + n); }
	gauge &operator-=(T n) noexcept { return *this = static_cast<T>(get() - n); }
	gauge &operator++() noexcept { return *this += 1; }
	gauge &operator--() noexcept { return *this -= 1; }
	T operator++(int) noexcept
	{
		const T v = get();
		*this = static_cast<T>(v + 1);
		return v;
	}
	T operator--(int) noexcept
	{
		const T v = get();
		*this = static_cast<T>(v - 1);
		return v;
	}

private:
	std::atomic<T> _v{0};
};

} // namespace dpumesh
