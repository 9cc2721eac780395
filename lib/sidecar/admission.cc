// SPDX-License-Identifier: BSD-3-Clause
// Admission: service, route, L7 policy verdict and a live pod for one request.
#include "internal/admission.h"

#include <algorithm>
#include <cstring>

#include "dpumesh/sidecar/sidecar.h"

namespace dpumesh::sidecar {

const char *verdict::reason() const noexcept
{
	switch (why) {
	case refusal::none: return "";
	case refusal::no_route: return "no_route";
	case refusal::misrouted: return "misrouted";
	case refusal::circuit_open: return "circuit_open";
	case refusal::policy: return policy_reason ? policy_reason : "policy";
	case refusal::no_live_pod: return "no_live_pod";
	case refusal::overloaded: return "overloaded";
	case refusal::saturated: return "saturated";
	}
	return "refused";
}

uint64_t network_source(const wire::endpoint &ep) noexcept
{
	uint64_t a, b;
	std::memcpy(&a, ep.ip, 8);
	std::memcpy(&b, ep.ip + 8, 8);
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + ep.port) * 0xc2b2ae3d27d4eb4full;
	return (x ^ (x >> 29)) | (uint64_t(1) << 63); /* top bit set: never a pod handle */
}

bool admission::has_room(uint32_t handle) const noexcept
{
	return _loads[DPUMESH_HANDLE_POD_ID(handle) % DPUMESH_MAX_PODS] <
	       _reg.rx_capacity(handle) + _queue;
}

admission::admission(pod_registry &reg, std::vector<std::string> svc_names,
		     const tsc_clock &clock, counters &stats)
	: _reg(reg), _gate(std::move(svc_names)),
	  _gate_state(_gate.nb_services(), gate_down), _watch_until(_gate.nb_services(), 0),
	  _metrics(std::make_unique<l7_metrics[]>(_gate.nb_services())), _clock(clock), _stats(stats)
{
	_raised.reserve(_gate.nb_services());
}

/* Round robin over the service's pods, at most max_tries picks, for one below its bound;
 * 0 when none is. pick_pod advances the service's cursor, so a saturated pod is passed
 * over, not asked again next time. */
uint32_t admission::pick_with_room(uint32_t svc) noexcept
{
	constexpr uint32_t max_tries = 8;
	const uint32_t n = std::min(_reg.nb_live(svc), max_tries);
	for (uint32_t i = 0; i < n; i++) {
		const uint32_t h = _reg.pick_pod(svc);
		if (h != 0 && has_room(h))
			return h;
	}
	return 0;
}

void admission::raise(uint32_t svc) noexcept
{
	if (_gate_state[svc] == gate_up)
		return;
	if (_gate_state[svc] == gate_down)
		_raised.push_back(svc);
	_gate_state[svc] = gate_up;
	_gate.set_saturated(svc, true);
}

/* A raised service whose pods have room is lowered and watched: the request that room lets
 * in fills it again, and the flag goes up again at the next look instead of at the next
 * request's refusal here (one full decode and answer per lowering, ~6-13% of a paced flood's
 * refusals before). A watched service still with room after watch_tsc is let go. */
void admission::refresh_gate(uint64_t now, uint64_t watch_tsc) noexcept
{
	for (size_t i = 0; i < _raised.size();) {
		const uint32_t svc = _raised[i];
		const bool full = _reg.nb_live(svc) != 0 && pick_with_room(svc) == 0;
		if (_gate_state[svc] == gate_up && !full) {
			_gate.set_saturated(svc, false);
			_gate_state[svc] = gate_watched;
			_watch_until[svc] = now + watch_tsc;
		} else if (_gate_state[svc] == gate_watched && full) {
			raise(svc);
		} else if (_gate_state[svc] == gate_watched && now >= _watch_until[svc]) {
			_gate_state[svc] = gate_down;
			_raised[i] = _raised.back();
			_raised.pop_back();
			continue;
		}
		i++;
	}
}

void admission::count_refused_at_rx(uint32_t svc) noexcept
{
	if (svc >= nb_services())
		return;
	l7_metrics &m = _metrics[svc];
	m.refused_here(503);
	m.refused_by[static_cast<size_t>(refusal_reason::saturated)].inc();
}

bool admission::still_saturated(uint32_t svc) noexcept
{
	/* admit()'s first look without the header: a service with no live pod is not
	 * saturated (the caller's decode and admit() answer no_live_pod) */
	return _loads != nullptr && _reg.nb_live(svc) != 0 && pick_with_room(svc) == 0;
}

void admission::count_saturated(uint32_t svc) noexcept
{
	_stats.saturated.inc();
	_stats.saturated_gate.inc();
	l7_metrics &m = _metrics[svc];
	m.refused_here(503);
	m.refused_by[static_cast<size_t>(refusal_reason::saturated)].inc();
}

void admission::overloaded(verdict &v) noexcept
{
	_stats.overloaded.inc();
	v.status = 503;
	v.why = refusal::overloaded;
}

namespace {
/* The per-service reason of an admission refusal (no_route has no service). */
refusal_reason reason_of(refusal r) noexcept
{
	switch (r) {
	case refusal::misrouted: return refusal_reason::misrouted;
	case refusal::circuit_open: return refusal_reason::circuit_open;
	case refusal::no_live_pod: return refusal_reason::no_live_pod;
	case refusal::overloaded: return refusal_reason::overloaded;
	case refusal::saturated: return refusal_reason::saturated;
	default: return refusal_reason::policy;
	}
}
} // namespace

void admission::count_refusal(ruleset &rules, const verdict &v) noexcept
{
	if (v.svc == UINT32_MAX)
		return;
	const size_t why = static_cast<size_t>(reason_of(v.why));
	for (l7_metrics *m : {&_metrics[v.svc], &rules.route_metrics(v.route->metrics)}) {
		m->refused.inc();
		m->refused_by[why].inc();
		m->answer(v.status, true);
	}
}

} // namespace dpumesh::sidecar
