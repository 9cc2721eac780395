// SPDX-License-Identifier: BSD-3-Clause
// The sidecar's flow for messages from the network: Case 2 requests to local pods (the body
// stays in the received mbufs) and answers from peers to Case 1 requests.
#include "dpumesh/sidecar/sidecar.h"

#include <rte_prefetch.h>

#include "dpumesh/common/copy.h"
#include "dpumesh/common/prefetch.h"
#include "internal/add_trace.h"
#include "internal/admission.h"
#include "internal/admit.h"
#include "internal/command.h"
#include "internal/egress.h"
#include "internal/network_in.h"
#include "internal/open_request.h"
#include "internal/outbox.h"
#include "internal/request_table.h"

namespace dpumesh::sidecar {

static_assert(network_in::nb_buffers >= outbox::burst, "a header buffer per message");

/*
 * A burst from port RX, one phase at a time over the whole burst (docs/architecture.md,
 * "Case 2"): (1) answers whose pending entry is another shard's go there; (2) the rest
 * are decoded, each request's header into its own header buffer, the frames a few
 * messages ahead prefetched; (3) refused-at-RX requests, requests and answers are then
 * admitted, routed, opened and framed in the order they came (the frames go onto the
 * port's ring together, egress::end_burst()). Phases 1 and 2 have no effect but counters
 * and hbufs, so per-source order and one answer per request are those of one message at
 * a time. Returns n.
 */
unsigned stage::from_network_burst(rx_msg **msgs, unsigned n, uint64_t now) noexcept
{
	if (n == 0)
		return 0;
	rx_msg *mine[outbox::burst];
	unsigned nm = 0;
	for (unsigned i = 0; i < n; i++) {
		rx_msg *m = msgs[i];
		const wire::message &wm = m->msg;
		if (m->refusal == port::rx_refusal::none && wm.kind == wire::frame_kind::response &&
		    wm.correlation <= UINT32_MAX) {
			const unsigned sh = token_shard(static_cast<uint32_t>(wm.correlation));
			if (sh != _shard.index) {
				handoff_item h;
				h.what = handoff_item::kind::network;
				h.msg = m;
				if (!hand_off(sh, h))
					port::rx_msg_free(m);
				continue;
			}
		}
		/* the first few messages' frames; the others' mbufs, whose data address phase 2
		 * reads to prefetch their frames ahead (a message that waited in its source's
		 * FIFO has a cold mbuf: that read was a fifth of this function's samples) */
		if (m->refusal == port::rx_refusal::none) {
			if (nm < network_in::decode_ahead)
				network_in::prefetch_header(wm);
			else
				rte_prefetch0(wm.chain);
		}
		mine[nm++] = m;
	}
	/* made by take_burst() in place: a default-made array would be written twice */
	alignas(net_message) unsigned char room[sizeof(net_message) * outbox::burst];
	net_message *in = reinterpret_cast<net_message *>(room);
	_net_in->take_burst(mine, nm, in);
	/* the peer a request came from (egress::peer_of(), by its address), looked up again
	 * only when its sender is not the last request's: a burst's requests come from a few
	 * senders, mostly one after the other (the FIFOs' turns) */
	const wire::endpoint *last_from = nullptr;
	int last_peer = -1;
	for (unsigned i = 0; i < nm; i++) {
		if (i + 1 < nm && mine[i + 1]->refusal == port::rx_refusal::none)
			prefetch_dispatch(in[i + 1]);
		if (mine[i]->refusal != port::rx_refusal::none) {
			refused_at_rx(mine[i]);
		} else if (in[i].what == net_message::kind::request) { /* most: no dispatch() call */
			if (!last_from ||
			    !same_bytes(last_from->ip, in[i].from.ip, sizeof(last_from->ip))) {
				last_peer = _egress->peer_of(in[i].from);
				last_from = &in[i].from;
			}
			net_request(in[i], last_peer, now);
		} else {
			dispatch(in[i], now);
		}
	}
	_net_in->end_burst();
	relays_flush();
	return n;
}

/* The counters of the burst's relays in place with both trace fields (relay()), and of its
 * requests to services without a policy (admission::admit()'s `no_policy`: the poll's
 * version's engine, as they were admitted under) */
void stage::relays_flush() noexcept
{
	if (const uint32_t n = _no_policy) {
		_no_policy = 0;
		_cur->engine().count_no_policy(n);
	}
	if (const uint32_t n = _relays_both) {
		_relays_both = 0;
		_stats.request_ids.add(n);
		_stats.traceparents.add(n);
		_stats.relayed_in_place.add(n);
		_stats.relayed.add(n);
	}
}

/* What the next message's dispatch touches first, while this one's runs: its header in
 * network-in's buffer (decoded a burst ago: out of L1 by now), and the front of its
 * received mbuf, where a relay in place writes the frame's headers and the grown header
 * (the 128-byte headroom and the received headers: untouched since the mbuf was filled). */
[[gnu::always_inline]] inline void stage::prefetch_dispatch(const net_message &m) noexcept
{
	rte_prefetch0(m.l7);
	prefetch0_at(m.l7, RTE_CACHE_LINE_SIZE); /* l7 is null for a message without one */
	if (m.held && m.held->msg.chain) {
		const auto *data = rte_pktmbuf_mtod(m.held->msg.chain, const uint8_t *);
		rte_prefetch0_write(data - 3 * RTE_CACHE_LINE_SIZE);
		rte_prefetch0_write(data - 2 * RTE_CACHE_LINE_SIZE);
		rte_prefetch0_write(data - RTE_CACHE_LINE_SIZE);
	}
}

/* One message (another shard's hand-off): the same phases, alone. */
void stage::from_network(rx_msg *msg, uint64_t now) noexcept
{
	net_message m = _net_in->take(msg, 0);
	dispatch(m, now);
	_net_in->end_burst();
	relays_flush();
}

/* A decoded message to where it goes; a failed decode answered (a requester) or dropped.
 * Every answer to the network goes through reply_net: owed, not lost, when the port has no
 * mbuf or no room for it now (docs/overload.md "One answer for every request"). */
void stage::dispatch(net_message &m, uint64_t now) noexcept
{
	switch (m.what) {
	case net_message::kind::request:
		return net_request(m, _egress->peer_of(m.from), now);
	case net_message::kind::response:
		return net_response(m, now);
	case net_message::kind::too_large:
		if (m.request)
			reply_net(m.reply_to, m.correlation, 431, "header_too_large", now);
		return;
	case net_message::kind::bad_header:
		if (m.request)
			reply_net(m.reply_to, m.correlation, 400, "bad_header", now);
		return;
	case net_message::kind::no_hbuf:
		return;
	}
}

/* A request from the network; `peer`: egress::peer_of() its sender (-1: a client). */
void stage::net_request(net_message &m, int peer, uint64_t now) noexcept
{
	const verdict a = _admission->admit(*_cur, m.view, 0,
					    peer < 0 ? source::client : source::peer, now,
					    &m.reply_to.addr.dst, &_no_policy);
	if (!a.refused() && a.dst == 0) [[likely]]
		return relay(m, a, now);
	return net_request_here(m, a, peer, now);
}

/* net_request() of a request refused here or for a local pod: the verdict passed by value
 * (a copy), so that net_request()'s own never has its address taken and stays in
 * registers for the relay (the refusal's and overload's calls by reference kept it on the
 * stack: its fields stored as admit() made them, and loaded back: relay 1128.2 -> 1113.2
 * instructions a message, routes 131B) */
void stage::net_request_here(net_message &m, verdict a, int peer, uint64_t now) noexcept
{
	const bool hold = !a.refused() &&
			  policy::hold_for_retry(a.route->retries, a.dst != 0,
						 a.route->retry_non_idempotent, m.view.method,
						 m.view.flags);
	uint32_t token = 0;
	/* a pod takes the header in an hbuf: no hbuf, no delivery (503, as a full table) */
	if (!a.refused() && !_net_in->to_hbuf(m))
		_admission->overloaded(a);
	if (!a.refused()) {
		const pending::party origin{pending::party::kind::peer, 0,
					    static_cast<uint16_t>(peer < 0 ? UINT16_MAX : peer)};
		token = open_request(origin, pod_party(a.dst), a, m.view, hold, &m.reply_to,
				     m.source, now, m.correlation);
		if (token == 0)
			_admission->overloaded(a);
	}
	if (a.refused()) {
		_admission->count_refusal(*_cur, a);
		reply_net(m.reply_to, m.correlation, a.status, a.reason(), now);
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
	_budgets[a.svc].note_request(now, _tsc_hz);
	deliver_new(cmd, _requests->find(token).entry());
	_stats.forwarded.inc();
}

/* A network client's request for a service a peer serves: on to the peer (Case 2 in, Case 1
 * out), header from network-in's header buffer (no hbuf; trace fields are added there),
 * body from the received mbufs; the answer comes back by token. Inline in net_request(),
 * its only caller. */
[[gnu::always_inline]] inline void stage::relay(net_message &m, const verdict &a,
						uint64_t now) noexcept
{
	const service_rules &sr = _cur->services()[a.svc];
	const uint32_t token =
		open_request({pending::party::kind::peer, 0, UINT16_MAX}, /* a client, not a peer */
			     {pending::party::kind::peer, 0, sr.peer}, a, m.view, false, &m.reply_to,
			     m.source, now, m.correlation);
	if (token == 0) {
		verdict v = a;
		_admission->overloaded(v);
		_admission->count_refusal(*_cur, v);
		reply_net(m.reply_to, m.correlation, v.status, v.reason(), now);
		return _net_in->release(m);
	}
	/* a message of one frame: the sum port RX took of its payload (header and body) as it
	 * checked the UDP checksum, not the header's read again; kept true as the header grows
	 * in front of the body (by fields of even lengths: each body byte keeps its parity) */
	const uint16_t old_len = static_cast<uint16_t>(m.cmd.header_len);
	const port::rx_msg *rm = m.held;
	bool body_in_sum = rm && rm->msg.payload_sum;
	uint16_t sum = body_in_sum ? rm->msg.payload_sum : wire::l7_sum(m.l7, old_len);
	/* the deadline this node holds it to, in network-in's copy of the header (every frame
	 * below is made from it) */
	stamp_leaving(m.l7, m.view, *a.route, &sum);
	/* the egress in a register: the frame's and the fields' byte stores may alias
	 * anything, so its pointer was loaded again after them (relay 1294.3 -> 1291.0) */
	egress &eg = *_egress;
	const peer_link &peer = eg.peer(sr.peer);
	bool sent = false;
	/* a message of one frame goes on in the mbuf it came in (no mbuf to take, no body to
	 * copy, no mbuf to free). One without trace fields (nearly all) has its header made
	 * where the frame has it: the received header copied there from network-in's buffer
	 * and both fields formatted after it, not in that buffer and the grown header copied
	 * after (relay 1329.0 -> 1307.2 instructions a message, routes 131B) */
	constexpr unsigned both = policy::trace_request_id | policy::trace_traceparent;
	const unsigned need = policy::trace_missing(m.view);
	const uint16_t grown = static_cast<uint16_t>(old_len + policy::trace_both_size);
	wire::link_template::place at;
	if (need == both && m.held)
		at = eg.in_place_for(peer, m.held->msg.chain, old_len, grown);
	if (at.body) {
		uint8_t *hdr = at.header(grown);
		/* 64 bytes a step: the 122 bytes after the header are the fields', and
		 * network-in's buffer is whole cache lines (one step for ~60 bytes) */
		for (unsigned k = 0; k < old_len; k += 64)
			wire::detail::copy_64(hdr + k, m.l7 + k);
		/* writes only within the grown length (policy::detail::add_both()), or nothing;
		 * both fields added (grown) are counted here. Their room one test of the length
		 * against the stage's bound, and of the field count (a decoded header has at
		 * most wire::l7_max_fields) */
		const uint16_t nb = static_cast<uint16_t>(m.l7[6] << 8 | m.l7[7]);
		uint16_t hdr_len;
		if (old_len <= _trace_both_max && nb < wire::l7_max_fields - 1) [[likely]]
			hdr_len = static_cast<uint16_t>(
				add_both_fields(_trace_rng, hdr, old_len, nb, &sum));
		else
			hdr_len = static_cast<uint16_t>(add_trace_fields<false>(
				_trace_rng, _stats, _dpa.hbuf_size - DPA_HBUF_META_SIZE, need, hdr,
				old_len, &sum));
		const bool both_added = hdr_len == grown;
		/* no room for the fields: the header as it came, copied before the body */
		const uint8_t *l7 = both_added ? hdr : m.l7;
		sent = eg.forward_at(peer, at, wire::frame_kind::request, token,
					   wire::l7_summed{l7, hdr_len, sum, body_in_sum},
					   m.held->msg.chain);
		m.held->msg.chain = nullptr; /* the frame's now */
		if (sent && both_added) [[likely]] {
			/* its request_ids, traceparents, relayed_in_place and relayed at the
			 * burst's end (relays_flush()) */
			_relays_both++;
			_net_in->release_last(m);
			_budgets[a.svc].note_request(now, _tsc_hz);
			return;
		}
		if (both_added) {
			_stats.request_ids.inc();
			_stats.traceparents.inc();
		}
		if (sent)
			_stats.relayed_in_place.inc();
	} else {
		/* the trace fields added in network-in's buffer (an hbuf's room), the frame made
		 * in the mbuf all the same where it can be (the header copied there), fresh
		 * frames otherwise */
		const uint16_t hdr_len = static_cast<uint16_t>(
			add_trace(reinterpret_cast<uint64_t>(m.l7), old_len, m.view, &sum));
		/* the body's bytes moved to the other parity: the header's sum alone, again */
		if (body_in_sum && ((hdr_len ^ old_len) & 1)) [[unlikely]] {
			body_in_sum = false;
			sum = wire::l7_sum(m.l7, hdr_len);
		}
		if (m.held &&
		    eg.forward_in_place(
			    peer, wire::frame_kind::request, token,
			    wire::l7_summed{m.l7, hdr_len, sum, body_in_sum},
			    m.held->msg.chain, old_len, &sent)) {
			m.held->msg.chain = nullptr; /* the frame's now */
			if (sent)
				_stats.relayed_in_place.inc();
		} else {
			if (body_in_sum && m.cmd.body_len) /* the header's own: fragment() sums the body */
				sum = wire::l7_sum(m.l7, hdr_len);
			const dpa::local_body body = m.relay_body();
			sent = eg.forward(peer.to, wire::frame_kind::request, token, m.l7,
						hdr_len, &body, m.cmd.body_len, &sum);
		}
	}
	_net_in->release_last(m); /* the frames hold what they need of the received mbufs */
	if (!sent) {
		_requests->close(token);
		reply_net(m.reply_to, m.correlation, 503, "egress_failed", now);
		return;
	}
	_budgets[a.svc].note_request(now, _tsc_hz);
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
