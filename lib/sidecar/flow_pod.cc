// SPDX-License-Identifier: BSD-3-Clause
// The sidecar's flow for pods' messages: decode, admission, the request table, delivery to
// a local pod (Case 3) or frames to a peer (Case 1), and the answers the mesh makes.
#include "dpumesh/sidecar/sidecar.h"

#include <bit>

#include <cstring>

#include <rte_cycles.h>
#include <rte_mempool.h>

#include "dpumesh/policy/trace.h"
#include "internal/add_trace.h"
#include "internal/admission.h"
#include "internal/admit.h"
#include "internal/command.h"
#include "internal/egress.h"
#include "internal/open_request.h"
#include "internal/outbox.h"
#include "internal/owed.h"
#include "internal/quota.h"
#include "internal/request_table.h"

namespace dpumesh::sidecar {

void stage::from_pod(const sw_descriptor &d, uint64_t now) noexcept
{
	const pod_message m = pod_message::decode(d);
	if (!m.request && !m.dma_error && _shard.count > 1) {
		/* a response goes to the shard whose pending entry it answers (its token) */
		const unsigned sh = token_shard(m.req_id);
		if (sh != _shard.index) {
			handoff_item h;
			h.what = handoff_item::kind::pod_message;
			h.desc = d;
			if (!hand_off(sh, h))
				complete(m.header, DPUMESH_STATUS_NO_MATCH);
			return;
		}
	}
	if (m.dma_error) {
		_stats.header_dma_error.inc();
		return complete(m.header, DPUMESH_STATUS_DMA_ERROR);
	}
	reset_park_state(m.header); /* a fresh delivery (hbufs are reused) */
	const auto *hdr = reinterpret_cast<const uint8_t *>(m.header);
	/* a request to a service whose gate flag is up (no pod of it had room at its last
	 * look: docs/overload.md) and none of whose pods has room now is refused on its
	 * :service alone, as port RX refuses one from the network: no decode, no route, no
	 * policy (half the refusal's cost in the overload suite) */
	std::string_view name;
	uint32_t svc;
	if (m.request && _admission->gate().any_saturated() &&
	    wire::l7_peek_service(hdr, m.header_len, &name) == wire::l7_error::ok &&
	    _admission->gate().saturated(svc = _admission->service_of(name)) &&
	    _admission->still_saturated(svc)) {
		_stats.requests.inc();
		if (pod_over_quota(m, now))
			return;
		_admission->count_saturated(svc);
		return complete(m.header, DPUMESH_STATUS_DEST_FULL);
	}
	wire::l7_view v;
	wire::l7_error err = wire::l7_decode(hdr, m.header_len, &v);
	if (err == wire::l7_error::ok && m.request != (v.kind == wire::l7_kind::request))
		err = wire::l7_error::bad_kind; /* descriptor and header disagree */
	if (err != wire::l7_error::ok) {
		_stats.bad_header.inc();
		_stats.l7_errors[static_cast<size_t>(err)].inc();
		return complete(m.header, DPUMESH_STATUS_BAD_DESCRIPTOR);
	}
	if (m.request)
		pod_request(m, v, now);
	else
		pod_response(m, v, now);
}

/* A pod over its quota (pending requests plus answers waiting for its RX room, or an RX
 * that took nothing for rx_stall_ms) is refused before anything else is spent on it, by its
 * TX completion status alone: no hbuf and no RX slot, which a flooding pod may have none of
 * (docs/quota.md). Whether it was (and its TX completed). */
bool stage::pod_over_quota(const pod_message &m, uint64_t now) noexcept
{
	const dest_queues &q = _outbox->queues();
	const uint32_t pod_id = DPUMESH_HANDLE_POD_ID(m.src);
	if (_quota->pod_may_ask(m.src, q.answers(pod_id) + _owed->refused.count(pod_id),
				q.stalled_for(m.src, now))) [[likely]]
		return false;
	_stats.quota_refused.inc();
	complete(m.header, DPUMESH_STATUS_POLICY);
	return true;
}

void stage::pod_request(const pod_message &m, const wire::l7_view &v, uint64_t now) noexcept
{
	_stats.requests.inc();
	if (pod_over_quota(m, now))
		return;
	verdict a = _admission->admit(*_cur, v, m.src, source::pod, now);
	if (a.why == refusal::saturated) {
		/* the cheapest refusal: the sender's TX completion carries it (503 dest_full to
		 * the pod, docs/overload.md), no error message is made */
		_admission->count_refusal(*_cur, a);
		return complete(m.header, DPUMESH_STATUS_DEST_FULL);
	}
	if (a.refused()) {
		_admission->count_refusal(*_cur, a);
		reply_error(m.src, m.req_id, m.step_id, a.status, a.reason());
		return complete(m.header, DPUMESH_STATUS_OK);
	}
	const service_rules &sr = _cur->services()[a.svc];
	pod_message out = m;
	out.header_len = add_trace(m.header, m.header_len, v);
	const bool hold = policy::hold_for_retry(a.route->retries, a.dst != 0,
						 a.route->retry_non_idempotent, v.method, v.flags);
	const pending::party dest = sr.local ? pod_party(a.dst)
					     : pending::party{pending::party::kind::peer, 0, sr.peer};
	const uint32_t token =
		open_request(pod_party(m.src), dest, a, v, hold, nullptr,
			     request_ctx::no_source, now, 0, m.req_id, m.step_id);
	if (token == 0) {
		_admission->overloaded(a);
		_admission->count_refusal(*_cur, a);
		reply_error(m.src, m.req_id, m.step_id, a.status, a.reason());
		return complete(m.header, DPUMESH_STATUS_OK);
	}
	if (!sr.local) { /* Case 1: to the node that serves it, with the deadline held to here */
		stamp_leaving(reinterpret_cast<uint8_t *>(out.header), v, *a.route, nullptr);
		egress::outcome o = _egress->send_pod_message(_egress->peer(sr.peer).to,
							      wire::frame_kind::request, token, out);
		if (o.complete)
			complete(m.header, o.status);
		if (!o.sent) {
			_requests->close(token);
			reply_error(m.src, m.req_id, m.step_id, 503, "egress_failed");
			return;
		}
		_stats.to_peer.inc();
		return;
	}
	dpa_command cmd = out.deliver(dpa_command::op::deliver_request, a.dst, token, m.step_id);
	cmd.hold = hold;
	if (hold) {
		request_table::ref r = _requests->find(token);
		r.ctx().held = cmd;
		_stats.held.inc();
	}
	_budgets[a.svc].note_request(now, _tsc_hz);
	deliver_new(cmd, _requests->find(token).entry());
	_stats.forwarded.inc();
}

void stage::pod_response(const pod_message &m, const wire::l7_view &v, uint64_t now) noexcept
{
	_stats.responses.inc();
	request_table::ref r = _requests->match(m.req_id, pod_party(m.src), m.step_id);
	if (!r || r.ctx().ended) {
		_stats.no_match.inc();
		return complete(m.header, DPUMESH_STATUS_NO_MATCH);
	}
	pending::entry &e = r.entry();
	const bool mesh = v.flags & wire::l7_flag_mesh_generated;
	if (policy::retryable_status(v.status) && retry(e, r.ctx(), now)) {
		/* this answer is not passed on: another pod gets the request */
		if (r.ctx().policy)
			_cur->engine().on_response(_cur->services()[e.service].policy, v.status,
						   _admission->clock().ns(now));
		return complete(m.header, DPUMESH_STATUS_OK);
	}
	release_held(r.ctx());
	if (e.origin.type != pending::party::kind::pod) { /* Case 1: back to the network */
		const remote to = r.ctx().reply_to;
		const uint64_t corr = e.origin_correlation;
		egress::outcome o = _egress->send_pod_message(to, wire::frame_kind::response, corr, m);
		if (o.complete)
			complete(m.header, o.status);
		if (!o.sent) [[unlikely]] {
			/* no mbuf or a full port TX ring: the requester hears 502 egress_failed
			 * from the deadline sweep in a moment (when the port has room again)
			 * rather than nothing; the responder's buffers went back above */
			_stats.answers_deferred.inc();
			r.ctx().answer_failed = true;
			_requests->rearm(m.req_id, now + _tsc_hz / 1000);
			return;
		}
		answered(e, r.ctx(), v.status, mesh, now, true);
		_requests->close(m.req_id);
		_stats.to_network.inc();
		return;
	}
	answered(e, r.ctx(), v.status, mesh, now, true);
	const dpa_command cmd = m.deliver(dpa_command::op::deliver_response, e.origin.pod_handle,
					  e.origin_req_id, m.step_id);
	_requests->close(m.req_id);
	deliver(cmd);
	_stats.answered.inc();
}

/* An answer is on its way to the origin of a pending request: metrics, and the outcome
 * for the service's circuit breaker (`report`: answers from a pod or a peer, timeouts). */
void stage::answered(const pending::entry &e, const request_ctx &c, uint16_t status, bool mesh,
		     uint64_t now, bool report) noexcept
{
	/* a multiply, not a 64-bit division by the TSC rate (most of this function's samples
	 * in the forward profile waited on that `div`) */
	const uint64_t us = _admission->clock().ns(now - e.start_tsc) / 1000;
	l7_metrics &sm = _admission->metrics(e.service);
	sm.answer(status, mesh);
	sm.latency.record(us);
	if (e.version == _cur->version()) {
		l7_metrics &rm = _cur->route_metrics(e.route);
		rm.answer(status, mesh);
		rm.latency.record(us);
		if (report && c.policy)
			_cur->engine().on_response(_cur->services()[e.service].policy, status,
						   _admission->clock().ns(now));
	}
}

/* An error response made here, delivered to a pod: now, or when an hbuf returns (owed,
 * behind the answers owed before it; internal/owed.h). */
void stage::reply_error(uint32_t origin, uint32_t req_id, uint32_t step_id, uint16_t status,
			const char *reason) noexcept
{
	if (_owed->pods.empty() && make_error(origin, req_id, step_id, status, reason))
		return;
	owed_answer a;
	a.pod = origin;
	a.req_id = req_id;
	a.step_id = step_id;
	a.status = status;
	a.reason = reason;
	(_owed->pods.push(a) ? _stats.answers_owed : _stats.answers_unsent).inc();
}

/* The error response in an hbuf, delivered; false when no hbuf is free. */
bool stage::make_error(uint32_t origin, uint32_t req_id, uint32_t step_id, uint16_t status,
		       const char *reason) noexcept
{
	void *obj = _dpa.take_hbuf();
	if (obj == nullptr)
		return false;
	auto *meta = static_cast<dpa_hbuf_meta *>(obj);
	std::memset(meta, 0, sizeof(*meta));
	uint8_t *hdr = static_cast<uint8_t *>(obj) + DPA_HBUF_META_SIZE;
	wire::l7_writer w(hdr, _dpa.hbuf_size - DPA_HBUF_META_SIZE);
	w.response(status, wire::l7_flag_mesh_generated, reason, _hop);
	dpa_command c;
	c.what = dpa_command::op::deliver_response;
	c.flow = DPUMESH_CASE_LOCAL;
	c.header = reinterpret_cast<uint64_t>(hdr);
	c.header_len = static_cast<uint32_t>(w.finish());
	c.req_id = req_id;
	c.step_id = step_id;
	c.dst = origin;
	deliver(c);
	return true;
}

/* An error response made here, to a requester on the network: now, or owed until the port
 * has an mbuf and TX ring room for it (a port that may not send: nothing to wait for). */
void stage::reply_net(const remote &to, uint64_t correlation, uint16_t status,
		      const char *reason, uint64_t now) noexcept
{
	if (!_egress->can_send(to.port)) {
		_stats.no_egress.inc(); /* nothing to wait for: it can never be sent */
		return;
	}
	if (_owed->net.empty() && _egress->reply(to, correlation, status, reason, _hop))
		return;
	owe_net(to, correlation, status, reason, now);
}

/* reply_net()'s answer that found no mbuf or ring room (or others owed before it): sent
 * later, in order, by pay_owed(). */
void stage::owe_net(const remote &to, uint64_t correlation, uint16_t status, const char *reason,
		    uint64_t now) noexcept
{
	owed_answer a;
	a.to = to;
	a.correlation = correlation;
	a.status = status;
	a.reason = reason;
	if (_owed->net.empty())
		_owed->next_net_try = now + _tsc_hz / 10000;
	(_owed->net.push(a) ? _stats.answers_owed : _stats.answers_unsent).inc();
}

/* What is owed, oldest first, as far as buffers allow: answers to pods while hbufs come, to
 * the network while the port takes frames (tried again 100 us after a failure, so an empty
 * pool is not hammered and its counters count messages, not polls). */
uint32_t stage::pay_owed(uint64_t now) noexcept
{
	uint32_t n = 0;
	while (!_owed->pods.empty() && _outbox->room()) {
		const owed_answer &a = _owed->pods.front();
		if (!make_error(a.pod, a.req_id, a.step_id, a.status, a.reason))
			break;
		_owed->pods.pop();
		n++;
	}
	if (!_owed->net.empty() && now >= _owed->next_net_try) {
		while (!_owed->net.empty()) {
			const owed_answer &a = _owed->net.front();
			if (!_egress->reply(a.to, a.correlation, a.status, a.reason, _hop)) {
				_owed->next_net_try = now + _tsc_hz / 10000;
				break;
			}
			_owed->net.pop();
			n++;
		}
	}
	/* refused answers (504 answer_refused) to pods that did not drain: once nothing waits
	 * for the pod any more, a burst at a time while hbufs last. A pod whose queue was given
	 * up gets the first as a probe (dest_queues::probe) and the rest wait for its outcome;
	 * refused again, they are owed again and tried after a back-off (internal/owed.h) */
	if (!_owed->refused.empty()) {
		const dest_queues &q = _outbox->queues();
		bool hbufs = true;
		_owed->refused.visit([&](owed_refusals::pod_list &p) {
			if (!_reg->handle_live(p.handle)) {
				_stats.answers_orphaned.add(_owed->refused.forget(p));
				return;
			}
			for (uint32_t k = 0; k < outbox::burst && hbufs && p.count && now >= p.next_try &&
					     _outbox->room() && !q.waits(p.handle);
			     k++) {
				const owed_refusals::entry &e = _owed->refused.front(p);
				hbufs = make_error(p.handle, e.req_id, e.step_id, 504, "answer_refused");
				if (!hbufs)
					break;
				_owed->refused.pop(p);
				n++;
			}
		});
	}
	return n;
}

/* An error response to whoever asked for a pending request. */
void stage::reply_to_origin(const pending::entry &e, const request_ctx &c, uint16_t status,
			    const char *reason, uint64_t now) noexcept
{
	if (e.origin.type == pending::party::kind::pod)
		reply_error(e.origin.pod_handle, e.origin_req_id, e.step_id, status, reason);
	else /* the caller's clock: a TSC read per 504 was 2% of the forward profile */
		reply_net(c.reply_to, e.origin_correlation, status, reason, now);
}

} // namespace dpumesh::sidecar
