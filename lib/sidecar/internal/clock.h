// SPDX-License-Identifier: BSD-3-Clause
// The sidecar's clocks: TSC to nanoseconds (the policy engine's clock) and to unix seconds
// (JWT exp/nbf), set once at create.
#pragma once

#include <cstdint>

namespace dpumesh::sidecar {

struct tsc_clock {
	uint64_t hz = 1;
	uint64_t ns_mult = 0;  /**< ns = tsc * ns_mult >> 32 */
	int64_t unix_base = 0; /**< unix seconds at TSC 0 */

	/** From the TSC frequency and the unix time (seconds) at TSC `now`. */
	static tsc_clock make(uint64_t tsc_hz, uint64_t now_tsc, int64_t unix_now) noexcept
	{
		tsc_clock c;
		c.hz = tsc_hz;
		c.ns_mult = static_cast<uint64_t>((static_cast<unsigned __int128>(1000000000) << 32) /
						  tsc_hz);
		c.unix_base = unix_now - static_cast<int64_t>(now_tsc / tsc_hz);
		return c;
	}
	uint64_t ns(uint64_t tsc) const noexcept
	{
		return static_cast<uint64_t>((static_cast<unsigned __int128>(tsc) * ns_mult) >> 32);
	}
	int64_t unix_s(uint64_t tsc) const noexcept
	{
		return unix_base + static_cast<int64_t>(tsc / hz);
	}
	uint64_t ms(uint64_t n) const noexcept { return n * hz / 1000; }
	uint64_t us(uint64_t n) const noexcept { return hz / 1000000 * n; }
};

} // namespace dpumesh::sidecar
