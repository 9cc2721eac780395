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
	verdict a = _admission->admit(*_cur, m.view, network_source(m.reply_to.addr.dst), true, now);
	const bool hold = !a.refused() &&
			  policy::hold_for_retry(a.route->retries, a.dst != 0,
						 a.route->retry_non_idempotent, m.view.method,
						 m.view.flags);
	uint32_t token = 0;
	if (!a.refused()) {
		const int peer = _egress->peer_of(m.reply_to.addr.dst);
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
		return drop(m.cmd);
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
	deliver(cmd);
	_stats.forwarded.inc();
}

void stage::net_response(net_message &m, uint64_t now) noexcept
{
	/* the correlation is our token; the answer must come from the peer we asked */
	const uint32_t token = m.correlation <= UINT32_MAX ? static_cast<uint32_t>(m.correlation) : 0;
	request_table::ref r = token ? _requests->find(token) : request_table::ref();
	if (!r || r->dest.type != pending::party::kind::peer ||
	    r->origin.type != pending::party::kind::pod || _egress->peer_of(m.from) != r->dest.peer) {
		_stats.no_match.inc();
		return drop(m.cmd);
	}
	const pending::entry &e = r.entry();
	answered(e, r.ctx(), m.view.status, m.view.flags & wire::l7_flag_mesh_generated, now, true);
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
