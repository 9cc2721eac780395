// SPDX-License-Identifier: BSD-3-Clause
// A circuit breaker for one destination service.
//
//   closed     requests pass; outcomes are counted. It opens after `consecutive_failures`
//              failures in a row, or when, over the last `window_ms` (10 sub-windows),
//              at least `min_requests` outcomes were seen and `error_rate_percent` of them
//              failed.
//   open       every request is refused at once (503 circuit_open) for `open_ms`.
//   half_open  then up to `half_open_probes` requests are let through; when that many
//              succeed the breaker closes (counts cleared); one failure opens it again.
//              Probes that never answer are covered by the sidecar's timeout (reported as
//              a 504 failure); a half-open breaker also re-arms its probes after open_ms.
//
// A failure is a 5xx outcome (a timeout is reported as 504). Outcomes that arrive while
// the breaker is open belong to requests sent before it opened and are ignored.
// Single writer (the sidecar lcore); state() may be read by control at any time.
//
//   circuit_breaker b(cfg.policy.circuit_breakers[0]);
//   if (!b.admit(now_ns)) return reply(503, "circuit_open");
//   ... on the answer: b.record(status >= 500, now_ns);
#pragma once

#include <atomic>
#include <cstdint>

#include "dpumesh/policy/schema.h"

namespace dpumesh::policy {

enum class breaker_state : uint8_t { closed, open, half_open };

const char *breaker_state_name(breaker_state s) noexcept;

class circuit_breaker {
public:
	static constexpr unsigned nb_windows = 10;

	explicit circuit_breaker(const schema::breaker_config &cfg) noexcept;
	circuit_breaker(const circuit_breaker &o) noexcept;

	/** True while open and not yet due for half-open: a cheap test before other work. */
	bool shedding(uint64_t now_ns) const noexcept
	{
		return _state.load(std::memory_order_relaxed) == breaker_state::open &&
		       now_ns < _open_until;
	}

	/** Admits a request or refuses it; half-open: takes a probe slot. */
	bool admit(uint64_t now_ns) noexcept;

	/** Records an outcome of an admitted request. */
	void record(bool failure, uint64_t now_ns) noexcept;

	breaker_state state() const noexcept { return _state.load(std::memory_order_relaxed); }
	/** Times the breaker opened (closed or half-open -> open). */
	uint64_t opened() const noexcept { return _opened.load(std::memory_order_relaxed); }

private:
	struct window {
		uint64_t epoch = 0; /* now / sub-window length, +1 (0: never used) */
		uint32_t total = 0;
		uint32_t failures = 0;
	};
	void open(uint64_t now_ns) noexcept;
	void close() noexcept;

	/* config */
	uint32_t _max_consecutive;
	uint32_t _rate_percent;
	uint32_t _min_requests;
	uint64_t _sub_ns;
	uint64_t _open_ns;
	uint32_t _probes;
	/* state */
	std::atomic<breaker_state> _state{breaker_state::closed};
	std::atomic<uint64_t> _opened{0};
	uint64_t _open_until = 0;
	uint32_t _consecutive = 0;
	uint32_t _probes_sent = 0;
	uint32_t _probes_ok = 0;
	window _w[nb_windows];
};

} // namespace dpumesh::policy
