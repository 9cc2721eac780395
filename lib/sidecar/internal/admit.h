// SPDX-License-Identifier: BSD-3-Clause
// admission::admit(), inline in the flows that admit requests (flow_net.cc, flow_pod.cc): out
// of line, its call, its frame and the verdict returned through memory were ~33 of the
// relay's ~650 instructions of admitting, opening and framing a request (131B routes).
#pragma once

#include "dpumesh/sidecar/sidecar.h"
#include "internal/admission.h"

namespace dpumesh::sidecar {

inline verdict admission::admit(ruleset &rules, const wire::l7_view &v, uint64_t source_id,
				source from, uint64_t now, const wire::endpoint *client,
				uint32_t *no_policy) noexcept
{
	verdict a;
	a.svc = service_of(v.service);
	if (a.svc >= nb_services()) {
		a.svc = UINT32_MAX;
		_stats.no_route.inc();
		a.status = 404;
		a.why = refusal::no_route;
		return a;
	}
	const service_rules &sr = rules.services()[a.svc];
	a.route = &rules.route_for(a.svc, v.path);
	_metrics[a.svc].requests.inc();
	rules.route_metrics(a.route->metrics).requests.inc();
	if (!sr.local && from == source::peer) { /* a peer sent us what it should serve itself */
		_stats.misrouted.inc();
		a.status = 503;
		a.why = refusal::misrouted;
		return a;
	}
	if (!sr.local && from == source::pod) {
		/* the serving node applies the policy; here only the peer's breaker, which then
		 * hears the request's outcome (the peer's answer, or 504): before 2026-12-08 it
		 * never did, so it never opened on a failing peer, and a half-open probe it let
		 * through was never reported, which kept it half-open */
		if (!rules.engine().breaker_allows(sr.policy, _clock.ns(now))) {
			_stats.policy_refused.inc();
			a.status = 503;
			a.why = refusal::circuit_open;
		} else {
			a.policy = true;
		}
		return a;
	}
	/* the first look: a local service none of whose pods has room is refused before the
	 * policy engine is asked (no token or breaker state spent on what cannot be carried) */
	uint32_t dst = 0;
	if (sr.local && _loads != nullptr && (dst = _reg.pick_pod(a.svc)) != 0 && !has_room(dst) &&
	    (dst = pick_with_room(a.svc)) == 0) {
		_stats.saturated.inc();
		raise(a.svc); /* port RX refuses its network requests from now */
		a.status = 503;
		a.why = refusal::saturated;
		return a;
	}
	/* served here, or a client's request relayed to the peer: the policy applies here (a
	 * network requester's key hashed only for a policy that may read it; the wall clock,
	 * a division, read only for a JWT's times) */
	policy::engine &eng = rules.engine();
	policy::verdict vd; /* allowed */
	if (sr.policy >= eng.nb_services() && no_policy) {
		/* no policy: allowed, the engine's three counters the caller's to add at once
		 * (engine::count_no_policy(): ~12 instructions a relayed request) */
		++*no_policy;
	} else {
		if (client && sr.policy < eng.nb_services())
			source_id = network_source(*client);
		vd = eng.check_request(v, sr.policy, source_id, _clock.ns(now),
				       eng.jwt() ? _clock.unix_s(now) : 0);
	}
	if (!vd.allowed()) {
		_stats.policy_refused.inc();
		a.status = vd.status;
		a.why = refusal::policy;
		a.policy_reason = vd.reason_name();
		return a;
	}
	a.policy = true;
	if (!sr.local)
		return a; /* relayed: dst 0 */
	if ((a.dst = dst ? dst : _reg.pick_pod(a.svc)) == 0) {
		_stats.no_live_pod.inc();
		a.status = 503;
		a.why = refusal::no_live_pod;
	}
	return a;
}

} // namespace dpumesh::sidecar
