// SPDX-License-Identifier: BSD-3-Clause
// Quotas per pod and per network address on the node's shared resources (internal/quota.h).
#include "internal/quota.h"

#include <cstring>

#include "internal/request_table.h"

namespace dpumesh::sidecar {

quota::quota(const quota_limits &l, uint64_t tsc_hz) noexcept
	: _limits(l), _answer_wait(uint64_t(l.answer_wait_ms) * tsc_hz / 1000),
	  _rx_stall(uint64_t(l.rx_stall_ms) * tsc_hz / 1000), _window(tsc_hz)
{
}

/* A pod's entry; a new generation of the pod id starts its refusal counters again (what
 * the old one still has pending stays counted until it ends). */
quota::pod_tenant &quota::pod_of(uint32_t handle) noexcept
{
	pod_tenant &t = _pods[DPUMESH_HANDLE_POD_ID(handle)];
	if (t.handle.load(std::memory_order_relaxed) != handle) {
		t.refused.reset();
		t.answers_refused.reset();
		t.dest_refused.reset();
		t.peak.store(t.held(), std::memory_order_relaxed);
		t.handle.store(handle, std::memory_order_relaxed);
	}
	return t;
}

bool quota::pod_may_ask(uint32_t handle, uint32_t waiting, uint64_t stalled_tsc) noexcept
{
	pod_tenant &t = pod_of(handle);
	if (t.held() + waiting < _limits.requests_per_pod && !stalled(stalled_tsc)) [[likely]]
		return true;
	t.refused.inc();
	return false;
}

quota::source_tenant &quota::source_of(const request_ctx &c) noexcept
{
	return _sources[c.source < nb_sources ? c.source : bucket_of(c.reply_to.addr.dst)];
}

bool quota::source_may_ask(const wire::endpoint &ep, uint16_t *bucket) noexcept
{
	const uint32_t b = bucket_of(ep);
	if (bucket)
		*bucket = static_cast<uint16_t>(b);
	return source_may_ask(b, ep);
}

void quota::charge(const pending::entry &e, const request_ctx &c,
		   const wire::endpoint *requester) noexcept
{
	if (e.origin.type == pending::party::kind::pod) {
		pod_of(e.origin.pod_handle).charge(e.start_tsc, _window);
	} else if (e.origin.type == pending::party::kind::peer) {
		source_tenant &t = source_of(c);
		t.note(requester ? *requester : c.reply_to.addr.dst);
		t.charge(e.start_tsc, _window);
	}
}

policy::retry_budget *quota::origin_budget(const pending::entry &e, const request_ctx &c) noexcept
{
	if (e.origin.type == pending::party::kind::pod)
		return &_pods[DPUMESH_HANDLE_POD_ID(e.origin.pod_handle)].retries;
	if (e.origin.type == pending::party::kind::peer)
		return &source_of(c).retries;
	return nullptr;
}

void quota::answer_refused(uint32_t handle) noexcept
{
	/* the requester asked first, so its generation is the one counted here; a former
	 * generation's late answer is not counted against the pod id's new one */
	pod_tenant &t = _pods[DPUMESH_HANDLE_POD_ID(handle)];
	if (t.handle.load(std::memory_order_relaxed) == handle)
		t.answers_refused.inc();
}

void quota::dest_refused(uint32_t handle) noexcept
{
	pod_of(handle).dest_refused.inc();
}

quota_usage quota::pod(uint32_t handle) const noexcept
{
	const pod_tenant &t = _pods[DPUMESH_HANDLE_POD_ID(handle)];
	quota_usage u = t.read();
	u.dest_refused = t.dest_refused.get();
	if (t.handle.load(std::memory_order_relaxed) != handle)
		u.refused = u.answers_refused = u.peak = u.dest_refused = 0; /* a former generation's */
	return u;
}

quota_usage quota::source(uint32_t b, wire::endpoint *ep) const noexcept
{
	const source_tenant &t = _sources[b % nb_sources];
	if (ep) {
		const uint64_t lo = t.last_lo.load(std::memory_order_relaxed);
		const uint64_t hi = t.last_hi.load(std::memory_order_relaxed);
		*ep = wire::endpoint{};
		std::memcpy(ep->ip, &lo, 8);
		std::memcpy(ep->ip + 8, &hi, 8);
	}
	return t.read();
}

} // namespace dpumesh::sidecar
