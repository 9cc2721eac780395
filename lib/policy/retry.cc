// SPDX-License-Identifier: BSD-3-Clause
// Retries of the L7 policy: retryable answers, idempotent methods, back-off, retry budget.
#include "dpumesh/policy/retry.h"

#include <algorithm>

#include "dpumesh/wire/l7.h"

namespace dpumesh::policy {

bool retryable_status(uint16_t status) noexcept
{
	return status == 502 || status == 503 || status == 504;
}

bool idempotent(std::string_view method, uint16_t l7_flags) noexcept
{
	if (l7_flags & wire::l7_flag_idempotent)
		return true;
	for (std::string_view m : {"GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"})
		if (method == m)
			return true;
	return false;
}

bool hold_for_retry(uint32_t route_retries, bool to_local_pod, bool retry_non_idempotent,
		    std::string_view method, uint16_t l7_flags) noexcept
{
	return route_retries > 0 && to_local_pod &&
	       (retry_non_idempotent || idempotent(method, l7_flags));
}

uint64_t retry_backoff_ms(uint32_t base_ms, uint16_t attempt) noexcept
{
	const uint16_t shift = std::min<uint16_t>(attempt == 0 ? 0 : attempt - 1, 10);
	return uint64_t(base_ms) << shift;
}

/* A new window from now, `window` ticks long: the one that ended counts in its allowance if
 * it ended less than a window ago; one older, or none yet, counts nothing */
void retry_budget::roll(uint64_t now, uint64_t window) noexcept
{
	_last = _end != 0 && now - _end < window ? _requests : 0;
	_end = now + window;
	_requests = _retries = 0;
}

bool retry_budget::allows(uint64_t now, uint64_t window, uint32_t percent) noexcept
{
	if (now >= _end)
		roll(now, window);
	const uint64_t load = _requests > _last ? _requests : _last;
	return _retries < min_retries + load * percent / 100;
}

} // namespace dpumesh::policy
