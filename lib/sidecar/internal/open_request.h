// SPDX-License-Identifier: BSD-3-Clause
// stage::open_request() and request_table::open_written(), inline in the flows that open
// requests (flow_net.cc, flow_pod.cc), and the deadline they hold a request to
// (held_to_ms(); stamp_leaving() for one that leaves for another node).
#pragma once

#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/wire/frame.h"
#include "dpumesh/wire/l7.h"
#include "internal/quota.h"
#include "internal/request_table.h"

namespace dpumesh::sidecar {

/* request_table::open_written(), here where quota is whole: inline in open_request() (out of
 * line, with the pending table's insert, its call and the `opening` made on the stack were
 * ~40 of a relay's ~310 instructions of opening a request). The context is written field by
 * field in its slot: one made on the caller's stack was cleared with a `rep stos` and
 * copied twice (the relay's most sampled line, and open_request()'s). `held` is left as it
 * is: read only while `holding`, which the caller that holds sets it for. */
inline uint32_t request_table::open_written(const opening &o) noexcept
{
	pending::entry *written = _t.next_entry();
	const uint32_t token = _t.insert_written();
	if (token == 0)
		return 0;
	const pending::entry &e = *written;
	request_ctx &x = _ctx[token & 0xffff];
	if (const uint32_t next = _t.next_slot(); next < _t.capacity())
		__builtin_prefetch(&_ctx[next], 1); /* the next open()'s (see pending::table::insert) */
	if (o.reply_to)
		x.reply_to = *o.reply_to;
	else
		x.reply_to = remote{};
	x.holding = x.in_flight = o.hold;
	x.ended = false;
	x.policy = o.policy;
	x.answer_failed = false;
	x.source = o.source;
	x.load_pod = request_ctx::no_load;
	if (e.dest.type == pending::party::kind::pod) {
		const uint32_t id = DPUMESH_HANDLE_POD_ID(e.dest.pod_handle) % DPUMESH_MAX_PODS;
		_load[id]++;
		x.load_pod = static_cast<uint16_t>(id);
	}
	if (!o.charge || !_quota)
		return token | _shard_base;
	/* a network origin whose bucket the caller had (all of them: open_request()): charged
	 * inline, as charge() would */
	if (e.origin.type == pending::party::kind::peer && o.reply_to &&
	    o.source < quota::nb_sources)
		_quota->charge_source(o.source, o.reply_to->addr.dst, e.start_tsc);
	else
		_quota->charge(e, x, o.reply_to ? &o.reply_to->addr.dst : nullptr);
	return token | _shard_base;
}

/* How long a request is given here, in ms: the smaller of the caller's budget (the header's
 * deadline_ms, 0: none) and its route's timeout. */
inline uint32_t held_to_ms(const wire::l7_view &v, const route_rule &r) noexcept
{
	return v.deadline_ms && v.deadline_ms < r.timeout_ms ? v.deadline_ms : r.timeout_ms;
}

/* A request that leaves for another node (Case 1: a pod's, or a client's relayed) carries in
 * its header's deadline_ms what this node gives it (held_to_ms()): it leaves in the pass it
 * was admitted in, so none of it is spent yet, and the peer counts it from its own arrival
 * (no node knows the time on the wire). A request under its route's timeout keeps its header
 * as it came; one over it, or without a budget, has the field written, and `sum` (the
 * header's one's-complement sum, wire::l7_sum(), or nullptr) follows it
 * (wire::l7_sum_changed()). */
inline void stamp_leaving(uint8_t *hdr, const wire::l7_view &v, const route_rule &r,
			  uint16_t *sum) noexcept
{
	const uint32_t want = held_to_ms(v, r);
	if (want == v.deadline_ms)
		return;
	wire::l7_set_deadline(hdr, want);
	if (sum)
		*sum = wire::l7_sum_changed(*sum, v.deadline_ms, want);
}

/* Opens a request for an admitted verdict, due by the route's timeout (or the request's
 * own shorter deadline), answered on the network at `reply_to` (nullptr: a pod's); its
 * token, or 0 when the table is full or a network address is over its quota (the caller
 * answers 503 overloaded; pods are checked before admission, pod_request). `source` is
 * that address's quota bucket, kept from the message's intake (net_message::source; a
 * network origin's address is hashed once a request), or request_ctx::no_source (then
 * hashed here, when the origin is on the network). The entry is
 * written in its slot a field at a time, who asked and who must answer passed in
 * registers: an entry made by the caller and copied in was read back in wide loads behind
 * its narrow stores (a store-forwarding stall: 60% of this function's samples in the
 * forward profile). Inline in its callers (flow_net.cc, flow_pod.cc): the parties made
 * there then go straight into the slot (passed by value, the compiler still made them on
 * the stack and read them back in wider loads, the same stall in relay()). */
inline uint32_t stage::open_request(pending::party origin, pending::party dest,
				    const verdict &a, const wire::l7_view &v, bool hold,
				    const remote *reply_to, uint16_t source, uint64_t now,
				    uint64_t origin_correlation, uint32_t origin_req_id,
				    uint32_t step_id) noexcept
{
	const uint64_t timeout_ms = held_to_ms(v, *a.route);
	if (origin.type == pending::party::kind::peer) {
		static const wire::endpoint nowhere{};
		const wire::endpoint &from = reply_to ? reply_to->addr.dst : nowhere;
		if (source >= quota::nb_sources)
			source = static_cast<uint16_t>(quota::bucket_of(from));
		if (!_quota->source_may_ask(source, from)) {
			_stats.quota_refused.inc();
			return 0;
		}
	} else {
		source = request_ctx::no_source;
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
	if (origin.type != pending::party::kind::peer || !reply_to)
		return _requests->open_written(
			request_table::opening{reply_to, source, hold, a.policy});
	/* a network origin: charged here, as open_written() would (the table's quota is this
	 * stage's), its bucket and address at hand; in open_written(), the quota's pointer
	 * tested, and the origin's kind and bucket read back behind the slot's stores, were
	 * ~7 instructions a relay */
	const uint32_t token = _requests->open_written(
		request_table::opening{reply_to, source, hold, a.policy, false});
	if (token != 0)
		_quota->charge_source(source, reply_to->addr.dst, now);
	return token;
}

} // namespace dpumesh::sidecar
