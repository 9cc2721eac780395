// SPDX-License-Identifier: BSD-3-Clause
// stage::open_request(), inline in the flows that open requests (flow_net.cc, flow_pod.cc).
#pragma once

#include "dpumesh/sidecar/sidecar.h"
#include "internal/quota.h"
#include "internal/request_table.h"

namespace dpumesh::sidecar {

/* Opens a request for an admitted verdict, due by the route's timeout (or the request's
 * own shorter deadline), answered on the network at `reply_to` (nullptr: a pod's); its
 * token, or 0 when the table is full or a network address is over its quota (the caller
 * answers 503 overloaded; pods are checked before admission, pod_request). The entry is
 * written in its slot a field at a time, who asked and who must answer passed in
 * registers: an entry made by the caller and copied in was read back in wide loads behind
 * its narrow stores (a store-forwarding stall: 60% of this function's samples in the
 * forward profile). Inline in its callers (flow_net.cc, flow_pod.cc): the parties made
 * there then go straight into the slot (passed by value, the compiler still made them on
 * the stack and read them back in wider loads, the same stall in relay()). */
inline uint32_t stage::open_request(pending::party origin, pending::party dest,
				    const verdict &a, const wire::l7_view &v, bool hold,
				    const remote *reply_to, uint64_t now,
				    uint64_t origin_correlation, uint32_t origin_req_id,
				    uint32_t step_id) noexcept
{
	uint64_t timeout_ms = a.route->timeout_ms;
	if (v.deadline_ms && v.deadline_ms < timeout_ms)
		timeout_ms = v.deadline_ms;
	uint16_t source = request_ctx::no_source;
	if (origin.type == pending::party::kind::peer &&
	    !_quota->source_may_ask(reply_to ? reply_to->addr.dst : wire::endpoint{}, &source)) {
		_stats.quota_refused.inc();
		return 0;
	}
	static_assert(sizeof(pending::entry) == 80, "a new field of pending::entry: write it here");
	pending::entry *e = _requests->next_entry();
	if (!e)
		return 0;
	e->origin = origin;
	e->dest = dest;
	e->origin_req_id = origin_req_id;
	e->step_id = step_id;
	e->origin_correlation = origin_correlation;
	e->deadline_tsc = now + timeout_ms * _tsc_hz / 1000;
	e->start_tsc = now;
	e->service = a.svc;
	e->attempt = 0;
	e->route = a.route->metrics;
	e->version = static_cast<uint32_t>(_cur->version());
	e->backoff_ms = a.route->backoff_ms;
	e->retries_left = hold ? static_cast<uint16_t>(a.route->retries) : 0;
	return _requests->open_written(request_table::opening{reply_to, source, hold, a.policy});
}

} // namespace dpumesh::sidecar
