// SPDX-License-Identifier: BSD-3-Clause
// The sidecar's flow for messages from the network: Case 2 requests to local pods (the body
// stays in the received mbufs) and answers from peers to Case 1 requests.
#include "dpumesh/sidecar/sidecar.h"

#include "internal/admission.h"
#include "internal/command.h"
#include "internal/egress.h"
#include "internal/network_in.h"
#include "internal/request_table.h"

namespace dpumesh::sidecar {

void stage::from_network(rx_msg *msg, uint64_t now) noexcept
{
	net_message m = _net_in->take(msg);
	switch (m.what) {
	case net_message::kind::request:
		return net_request(m, now);
	case net_message::kind::response:
		return net_response(m, now);
	case net_message::kind::too_large:
		if (m.request)
			_egress->reply(m.reply_to, m.correlation, 431, "header_too_large", _hop);
		return;
	case net_message::kind::bad_header:
		if (m.request)
			_egress->reply(m.reply_to, m.correlation, 400, "bad_header", _hop);
		return;
	case net_message::kind::no_hbuf:
		return;
	}
}

void stage::net_request(net_message &m, uint64_t now) noexcept
{
	const int peer = _egress->peer_of(m.from);
	verdict a = _admission->admit(*_cur, m.view, network_source(m.reply_to.addr.dst),
				      peer < 0 ? source::client : source::peer, now);
	if (!a.refused() && a.dst == 0)
		return relay(m, a, now);
	const bool hold = !a.refused() &&
			  policy::hold_for_retry(a.route->retries, a.dst != 0,
						 a.route->retry_non_idempotent, m.view.method,
						 m.view.flags);
	uint32_t token = 0;
	/* a pod takes the header in an hbuf: no hbuf, no delivery (503, as a full table) */
	if (!a.refused() && !_net_in->to_hbuf(m))
		_admission->overloaded(a);
	if (!a.refused()) {
		pending::entry base{};
		base.origin = {pending::party::kind::peer, 0,
			       static_cast<uint16_t>(peer < 0 ? UINT16_MAX : peer)};
		base.dest = pod_party(a.dst);
		base.origin_correlation = m.correlation;
		request_ctx ctx;
		ctx.reply_to = m.reply_to;
		token = open_request(base, a, m.view, hold, ctx, now);
		if (token == 0)
			_admission->overloaded(a);
	}
	if (a.refused()) {
		_admission->count_refusal(*_cur, a);
		_egress->reply(m.reply_to, m.correlation, a.status, a.reason(), _hop);
		return _net_in->release(m);
	}
	dpa_command cmd = m.cmd;
	cmd.header_len = add_trace(cmd.header, cmd.header_len, m.view);
	cmd.what = dpa_command::op::deliver_request;
	cmd.req_id = token;
	cmd.step_id = 0;
	cmd.dst = a.dst;
	cmd.hold = hold;
	if (hold) {
		_requests->find(token).ctx().held = cmd;
		_stats.held.inc();
	}
	_budgets[a.svc].note_request();
	deliver_new(cmd, _requests->find(token).entry());
	_stats.forwarded.inc();
}

/* A network client's request for a service a peer serves: on to the peer (Case 2 in, Case 1
 * out), header from network-in's header buffer (no hbuf; trace fields are added there),
 * body from the received mbufs; the answer comes back by token. */
void stage::relay(net_message &m, const verdict &a, uint64_t now) noexcept
{
	const service_rules &sr = _cur->services()[a.svc];
	pending::entry base{};
	base.origin = {pending::party::kind::peer, 0, UINT16_MAX}; /* a client, not a peer */
	base.dest = {pending::party::kind::peer, 0, sr.peer};
	base.origin_correlation = m.correlation;
	request_ctx ctx;
	ctx.reply_to = m.reply_to;
	const uint32_t token = open_request(base, a, m.view, false, ctx, now);
	if (token == 0) {
		verdict v = a;
		_admission->overloaded(v);
		_admission->count_refusal(*_cur, v);
		_egress->reply(m.reply_to, m.correlation, v.status, v.reason(), _hop);
		return _net_in->release(m);
	}
	/* the header buffer has an hbuf's room: the trace fields go there */
	const uint32_t hdr_len = add_trace(reinterpret_cast<uint64_t>(m.l7), m.cmd.header_len, m.view);
	const dpa::local_body body = m.relay_body();
	const bool sent = _egress->forward(_egress->peer(sr.peer).to, wire::frame_kind::request,
					   token, m.l7, static_cast<uint16_t>(hdr_len), &body,
					   m.cmd.body_len);
	_net_in->release(m); /* the frames hold what they need of the received mbufs */
	if (!sent) {
		_requests->close(token);
		_egress->reply(m.reply_to, m.correlation, 503, "egress_failed", _hop);
		return;
	}
	_budgets[a.svc].note_request();
	_stats.relayed.inc();
}

void stage::net_response(net_message &m, uint64_t now) noexcept
{
	/* the correlation is our token; the answer must come from the peer we asked */
	const uint32_t token = m.correlation <= UINT32_MAX ? static_cast<uint32_t>(m.correlation) : 0;
	request_table::ref r = token ? _requests->find(token) : request_table::ref();
	if (!r || r->dest.type != pending::party::kind::peer ||
	    _egress->peer_of(m.from) != r->dest.peer) {
		_stats.no_match.inc();
		return drop(m.cmd);
	}
	const pending::entry &e = r.entry();
	answered(e, r.ctx(), m.view.status, m.view.flags & wire::l7_flag_mesh_generated, now, true);
	if (e.origin.type != pending::party::kind::pod) { /* relayed: back to the client */
		const remote to = r.ctx().reply_to;
		const uint64_t corr = e.origin_correlation;
		_requests->close(token);
		const bool sent = _egress->forward(to, wire::frame_kind::response, corr,
						   reinterpret_cast<const uint8_t *>(m.cmd.header),
						   static_cast<uint16_t>(m.cmd.header_len),
						   reinterpret_cast<const dpa::local_body *>(m.cmd.body),
						   m.cmd.body_len);
		drop(m.cmd);
		if (sent) {
			_stats.relayed_answers.inc();
			return;
		}
		/* no mbuf or no room on the port's TX ring: the client hears 502 egress_failed,
		 * now or as soon as the port takes a frame (owed), never nothing; the answer's
		 * body was in the received mbufs, which the port needs back */
		if (_egress->can_send(to.port)) {
			_stats.answers_deferred.inc();
			reply_net(to, corr, 502, "egress_failed", now);
		} else {
			_stats.responses_lost.inc(); /* the client's port may not send: nothing can */
		}
		return;
	}
	dpa_command cmd = m.cmd;
	cmd.what = dpa_command::op::deliver_response;
	cmd.req_id = e.origin_req_id;
	cmd.step_id = e.step_id;
	cmd.dst = e.origin.pod_handle;
	_requests->close(token);
	deliver(cmd);
	_stats.answered.inc();
}

} // namespace dpumesh::sidecar
