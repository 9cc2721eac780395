// SPDX-License-Identifier: BSD-3-Clause
// Retries of the L7 policy: which answers and requests may be retried, the back-off, and
// the per-service retry budget. Pure functions and plain state: no EAL, clocks as arguments.
//
// The sidecar keeps one retry_budget per service and asks before every retry:
//
//   budget.note_request(now_tsc, tsc_hz);                   // each request admitted
//   ...
//   if (policy::retryable_status(status) &&
//       budget.allows(now_tsc, tsc_hz, route.retry_budget_percent)) {   // a 1 s window
//           ... pick another pod; if there is one: budget.spend();
//           delay_ms = policy::retry_backoff_ms(route.backoff_ms, attempt);
//   }
#pragma once

#include <cstdint>
#include <string_view>

namespace dpumesh::policy {

/** An answer another replica may give better (RFC 9110 gateway errors: 502, 503, 504). */
bool retryable_status(uint16_t status) noexcept;

/** Methods retried without `retry_non_idempotent` (RFC 9110 §9.2.2), or the l7 flag. */
bool idempotent(std::string_view method, uint16_t l7_flags) noexcept;

/**
 * Whether a request goes out held for a retry (its sender's buffers kept until the answer):
 * the route allows retries, a local pod takes it, and it is idempotent or the route says
 * non-idempotent requests may be retried too.
 */
bool hold_for_retry(uint32_t route_retries, bool to_local_pod, bool retry_non_idempotent,
		    std::string_view method, uint16_t l7_flags) noexcept;

/** Delay before retry `attempt` (1, 2, ...): base_ms << (attempt - 1), the shift capped at 10. */
uint64_t retry_backoff_ms(uint32_t base_ms, uint16_t attempt) noexcept;

/**
 * A service's retry budget: in a window, retries may not exceed
 * `min_retries + requests * percent / 100` (a few retries always, then a share of the load),
 * so a failing service is not hit by a storm of retries. `requests` is the larger of the
 * current window's and the one before it (when that one ended less than a window ago). A
 * window starts at the first request or retry after the last one ended, so the windows
 * follow the requests whether or not anything asks to retry: the first failure after a
 * quiet spell of retries finds the requests of the second before it (a pod that leaves
 * with 30 requests pending has their share retried, not the floor of 3 alone, which is all
 * a window started by that first retry would have counted).
 */
class retry_budget {
public:
	static constexpr uint32_t min_retries = 3;

	/** A request was admitted at `now` (allows()' clock): counts in the current window,
	 *  then in the next one's allowance; starts a new window once `window` ticks have
	 *  passed since the current one began. A compare of `now` with the window's end a
	 *  request (its start and a subtraction were 2 more instructions a budget). */
	void note_request(uint64_t now, uint64_t window) noexcept
	{
		if (now >= _end) [[unlikely]]
			roll(now, window);
		_requests++;
	}
	/**
	 * Whether a retry fits: starts a new window when `window` ticks have passed since the
	 * current one began, then compares. Does not spend: call spend() once it is taken.
	 */
	bool allows(uint64_t now, uint64_t window, uint32_t percent) noexcept;
	/** A retry was taken. */
	void spend() noexcept { _retries++; }

	uint32_t requests() const noexcept { return _requests; }
	uint32_t retries() const noexcept { return _retries; }
	/** The window before the current one's requests (0: it ended a window or more ago). */
	uint32_t last_requests() const noexcept { return _last; }

private:
	void roll(uint64_t now, uint64_t window) noexcept;

	uint64_t _end = 0; /* the tick after the current window's last (0: no window yet) */
	uint32_t _requests = 0, _retries = 0, _last = 0;
};

} // namespace dpumesh::policy
