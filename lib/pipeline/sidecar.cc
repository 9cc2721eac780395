// SPDX-License-Identifier: BSD-3-Clause
// Sidecar stage: L7 header decode, routing, pending table, mesh-generated errors.
#include "dpumesh/sidecar.h"

#include <algorithm>
#include <cstring>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ring.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>

namespace dpumesh::pipeline {

namespace {

constexpr unsigned burst = 32;

inline uint8_t *hbuf_of(const sw_descriptor &d)
{
	return reinterpret_cast<uint8_t *>(d.header_buf_addr - DPA_HBUF_META_SIZE);
}

inline route::party pod_party(uint32_t handle) { return {route::party::kind::pod, handle, 0}; }

const char *reason_of(uint32_t status)
{
	switch (status) {
	case DPUMESH_STATUS_DEST_FULL: return "dest_full";
	case DPUMESH_STATUS_DEST_GONE: return "dest_gone";
	case DPUMESH_STATUS_TOO_LARGE: return "too_large";
	case DPUMESH_STATUS_DMA_ERROR: return "dma_error";
	default: return "delivery_failed";
	}
}

} // namespace

result<std::unique_ptr<sidecar>> sidecar::create(const config::node_config &cfg,
						 pod_registry &reg, dpa::emulator &emu,
						 const network &net)
{
	std::unique_ptr<sidecar> s(new sidecar());
	s->_reg = &reg;
	s->_emu = &emu;
	s->_tsc_hz = rte_get_tsc_hz();
	s->_pending = std::make_unique<route::pending_table>(65536, s->_tsc_hz);
	s->_default_timeout_ms = cfg.policy.default_timeout_ms;
	s->_hop = cfg.node.name + "/sidecar";
	std::memcpy(s->_mac, cfg.node.mac, 6);
	if (cfg.node.ipv4)
		s->_ep4 = wire::endpoint::from_v4(cfg.node.ipv4->s_addr, cfg.node.mesh_port);
	if (cfg.node.ipv6) {
		wire::endpoint e;
		std::memcpy(e.ip, cfg.node.ipv6->s6_addr, 16);
		e.port = cfg.node.mesh_port;
		s->_ep6 = e;
	}
	s->_ingress = net.ingress;
	s->_pkts = net.pkts;
	s->_ports = net.ports;
	s->_iova_va = rte_eal_iova_mode() == RTE_IOVA_VA;
	int first_external = -1;
	for (size_t i = 0; i < s->_ports.size(); i++)
		if (s->_ports[i].external && s->_ports[i].tx && first_external < 0)
			first_external = static_cast<int>(i);
	for (size_t i = 0; i < cfg.peers.size(); i++) {
		const config::peer_config &pc = cfg.peers[i];
		peer_view pv;
		pv.name = pc.name;
		std::memcpy(pv.addr.src_mac, s->_mac, 6);
		std::memcpy(pv.addr.dst_mac, pc.mac, 6);
		if (pc.ipv4 && s->_ep4) {
			pv.addr.src = *s->_ep4;
			pv.addr.dst = wire::endpoint::from_v4(pc.ipv4->s_addr, pc.mesh_port);
		} else if (pc.ipv6 && s->_ep6) {
			pv.addr.src = *s->_ep6;
			std::memcpy(pv.addr.dst.ip, pc.ipv6->s6_addr, 16);
			pv.addr.dst.port = pc.mesh_port;
		} else {
			return errorf("%s: peer %s has no IP address family in common with node %s",
				      cfg.where("/peers/" + std::to_string(i)).c_str(), pc.name.c_str(),
				      cfg.node.name.c_str());
		}
		pv.egress = first_external;
		s->_peers.push_back(std::move(pv));
	}
	uint32_t max_msg = s->_emu->hbuf_size() + cfg.pools.tx_body.slot_size;
	uint32_t max_frames = 1;
	for (const network::port &p : s->_ports)
		if (p.external)
			max_frames = std::max(max_frames, wire::frames_needed(max_msg, p.mtu, true));
	if (max_frames > UINT16_MAX)
		return errorf("sidecar: a %u-byte message needs %u frames at the ports' MTU (at most "
			      "65535): lower pools.tx_body.slot_size or raise the MTU",
			      max_msg, max_frames);
	s->_frames.resize(max_frames);
	s->_remotes = std::make_unique<remote[]>(65536);
	s->_qsbr_id = emu.nb_threads(); /* the DPA threads use 0..n-1 */
	std::string rname = "sidecar_txdone";
	s->_tx_done = rte_ring_create(rname.c_str(), 16384, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (!s->_tx_done)
		return errorf("sidecar: TX-done ring: %s", rte_strerror(rte_errno));
	status qs = reg.dp_thread_register(s->_qsbr_id);
	if (!qs) {
		rte_ring_free(s->_tx_done);
		s->_tx_done = nullptr;
		return qs.with_context("sidecar");
	}
	s->_registered = true;
	s->_services.resize(cfg.services.size());
	for (const config::service_config &svc : cfg.services) {
		uint32_t idx = reg.service_index(svc.name);
		if (idx >= s->_services.size())
			return errorf("sidecar: service %s unknown to the pod registry", svc.name.c_str());
		service_view &v = s->_services[idx];
		const config::route_config *r = cfg.find_route(svc.name);
		v.local = !r || r->is_local();
		if (!v.local) {
			for (size_t i = 0; i < cfg.peers.size(); i++)
				if (cfg.peers[i].name == r->to)
					v.peer = static_cast<uint16_t>(i);
		}
		for (const config::timeout_config &t : cfg.policy.timeouts)
			if (t.service == svc.name)
				v.policies.push_back({t.path_prefix, t.timeout_ms});
		std::sort(v.policies.begin(), v.policies.end(), [](const auto &a, const auto &b) {
			return a.path_prefix.size() > b.path_prefix.size();
		});
	}
	for (unsigned t = 0; t < emu.nb_threads(); t++)
		s->_backlogs.push_back(std::make_unique<backlog>());
	s->_parking = std::make_unique<parking>();
	return s;
}

sidecar::~sidecar()
{
	if (_registered)
		_reg->dp_thread_unregister(_qsbr_id);
	/* bodies and headers of commands nobody will carry out any more */
	if (_tx_done) {
		void *obj;
		while (rte_ring_dequeue(_tx_done, &obj) == 0)
			rte_mempool_put(_emu->hbufs(), obj);
		rte_ring_free(_tx_done);
	}
	for (uint32_t i = 0; _parking && i < _parking->count; i++)
		drop_cmd(_parking->q[(_parking->head + i) % parking::size].cmd);
	for (auto &b : _backlogs)
		for (uint32_t i = 0; i < b->count; i++) {
			const sw_descriptor &c = b->q[(b->head + i) % backlog::size];
			if (c.flags & (DPUMESH_OP_REQUEST | DPUMESH_OP_RESPONSE))
				drop_cmd(c);
		}
}

const sidecar::route_policy *sidecar::policy_for(uint32_t service, std::string_view path) const noexcept
{
	for (const route_policy &p : _services[service].policies)
		if (path.substr(0, p.path_prefix.size()) == p.path_prefix)
			return &p;
	return nullptr;
}

void sidecar::to_dpa(unsigned thread, const sw_descriptor &cmd) noexcept
{
	backlog &b = *_backlogs[thread];
	if (b.count == 0 && dpumesh_sq_enqueue_burst(&_emu->arm(thread).to_dpa, &cmd, 1) == 1)
		return;
	/* keep order behind what is already waiting; room is kept by backlog_room() */
	if (b.count == backlog::size) [[unlikely]] {
		_stats.backlog_overflow.inc();
		if (cmd.flags & (DPUMESH_OP_REQUEST | DPUMESH_OP_RESPONSE))
			drop_cmd(cmd);
		else
			rte_mempool_put(_emu->hbufs(), hbuf_of(cmd));
		return;
	}
	b.q[(b.head + b.count) % backlog::size] = cmd;
	b.count++;
}

void sidecar::flush_backlogs() noexcept
{
	for (unsigned t = 0; t < _backlogs.size(); t++) {
		backlog &b = *_backlogs[t];
		while (b.count) {
			if (dpumesh_sq_enqueue_burst(&_emu->arm(t).to_dpa, &b.q[b.head], 1) != 1)
				break;
			b.head = (b.head + 1) % backlog::size;
			b.count--;
		}
	}
}

/* Each input descriptor yields at most 3 commands; new input is taken only while a burst of
 * it and a burst of notifications (which must keep flowing: the RX kernel takes commands
 * only while it has room to hand refusals back) both fit. */
uint32_t sidecar::backlog_free() const noexcept
{
	uint32_t f = backlog::size;
	for (const auto &b : _backlogs)
		f = std::min(f, backlog::size - b->count);
	return f;
}

void sidecar::complete(const sw_descriptor &d, uint32_t status) noexcept
{
	const auto *meta = reinterpret_cast<const dpa_hbuf_meta *>(hbuf_of(d));
	sw_descriptor cmd{};
	cmd.header_buf_addr = d.header_buf_addr;
	cmd.flags = DPUMESH_OP_TX_DONE;
	if (status != DPUMESH_STATUS_OK)
		cmd.flags |= DPUMESH_OP_ERROR | (status << DPUMESH_STATUS_SHIFT);
	to_dpa(meta->src ? _emu->owner(meta->src) : 0, cmd);
}

void sidecar::reply_error(uint32_t origin, uint32_t req_id, uint32_t step_id, uint16_t status,
			  const char *reason) noexcept
{
	void *obj;
	if (rte_mempool_get(_emu->hbufs(), &obj) != 0) {
		_stats.hbuf_empty.inc();
		return;
	}
	auto *meta = static_cast<dpa_hbuf_meta *>(obj);
	std::memset(meta, 0, sizeof(*meta));
	uint8_t *hdr = static_cast<uint8_t *>(obj) + DPA_HBUF_META_SIZE;
	wire::l7_writer w(hdr, _emu->hbuf_size() - DPA_HBUF_META_SIZE);
	w.response(status, wire::l7_flag_mesh_generated, reason, _hop);
	uint32_t len = static_cast<uint32_t>(w.finish());
	sw_descriptor cmd{};
	cmd.header_buf_addr = reinterpret_cast<uint64_t>(hdr);
	cmd.header_len = len;
	cmd.req_id = req_id;
	cmd.step_id = step_id;
	cmd.dst.pod_id = origin;
	cmd.flags = DPUMESH_OP_RESPONSE | DPUMESH_CASE_LOCAL;
	to_dpa(_emu->owner(origin), cmd);
}

/* A pending entry for a request to `svc`, due by the route's timeout (or the request's own
 * shorter deadline); its token, or 0 when the table is full. */
uint32_t sidecar::open_pending(route::party origin, route::party dest, uint32_t req_id,
			       uint32_t step_id, uint64_t correlation, uint32_t svc,
			       const wire::l7_view &v, uint64_t now) noexcept
{
	const route_policy *pol = policy_for(svc, v.path);
	uint64_t timeout_ms = pol ? pol->timeout_ms : _default_timeout_ms;
	if (v.deadline_ms && v.deadline_ms < timeout_ms)
		timeout_ms = v.deadline_ms;
	route::pending_entry e{};
	e.origin = origin;
	e.dest = dest;
	e.origin_req_id = req_id;
	e.step_id = step_id;
	e.origin_correlation = correlation;
	e.start_tsc = now;
	e.deadline_tsc = now + timeout_ms * _tsc_hz / 1000;
	e.service = svc;
	return _pending->insert(e);
}

void sidecar::request(const sw_descriptor &d, const wire::l7_view &v, uint64_t now) noexcept
{
	const uint32_t src = d.dst.pod_id;
	_stats.requests.inc();
	uint32_t svc = _reg->service_index(v.service);
	if (svc >= _services.size()) {
		_stats.no_route.inc();
		reply_error(src, d.req_id, d.step_id, 404, "no_route");
		return complete(d, DPUMESH_STATUS_OK);
	}
	const service_view &sv = _services[svc];
	uint32_t dst = 0;
	if (sv.local && (dst = _reg->pick_pod(svc)) == 0) {
		_stats.no_live_pod.inc();
		reply_error(src, d.req_id, d.step_id, 503, "no_live_pod");
		return complete(d, DPUMESH_STATUS_OK);
	}
	const route::party dest = sv.local ? pod_party(dst)
					   : route::party{route::party::kind::peer, 0, sv.peer};
	uint32_t token = open_pending(pod_party(src), dest, d.req_id, d.step_id, 0, svc, v, now);
	if (token == 0) {
		_stats.overloaded.inc();
		reply_error(src, d.req_id, d.step_id, 503, "overloaded");
		return complete(d, DPUMESH_STATUS_OK);
	}
	if (!sv.local) { /* Case 1: to the node that serves it */
		const peer_view &pv = _peers[sv.peer];
		if (!send_out({&pv.addr, pv.egress, wire::frame_kind::request, token}, d)) {
			_pending->remove(token);
			reply_error(src, d.req_id, d.step_id, 503, "egress_failed");
			return;
		}
		_stats.to_peer.inc();
		return;
	}
	sw_descriptor cmd = d;
	cmd.req_id = token;
	cmd.dst.pod_id = dst;
	cmd.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
	cmd.valid = 0;
	to_dpa(_emu->owner(dst), cmd);
	_stats.forwarded.inc();
}

void sidecar::response(const sw_descriptor &d) noexcept
{
	const uint32_t src = d.dst.pod_id;
	_stats.responses.inc();
	route::pending_entry *e = _pending->match(d.req_id, pod_party(src), d.step_id);
	if (!e) {
		_stats.no_match.inc();
		return complete(d, DPUMESH_STATUS_NO_MATCH);
	}
	if (e->origin.type != route::party::kind::pod) { /* Case 1: back to the network */
		const remote &r = _remotes[d.req_id & 0xffff];
		uint64_t corr = e->origin_correlation;
		_pending->remove(d.req_id);
		if (send_out({&r.addr, r.egress, wire::frame_kind::response, corr}, d))
			_stats.to_network.inc();
		else
			_stats.responses_lost.inc();
		return;
	}
	sw_descriptor cmd = d;
	cmd.req_id = e->origin_req_id;
	cmd.dst.pod_id = e->origin.pod_handle;
	cmd.flags = DPUMESH_OP_RESPONSE | DPUMESH_CASE_LOCAL;
	cmd.valid = 0;
	_pending->remove(d.req_id);
	to_dpa(_emu->owner(cmd.dst.pod_id), cmd);
	_stats.answered.inc();
}

void sidecar::from_pod(const sw_descriptor &d, uint64_t now) noexcept
{
	if (d.flags & DPUMESH_OP_ERROR) {
		_stats.header_dma_error.inc();
		return complete(d, DPUMESH_STATUS_DMA_ERROR);
	}
	wire::l7_view v;
	wire::l7_error err = wire::l7_decode(reinterpret_cast<const uint8_t *>(d.header_buf_addr),
					     d.header_len, &v);
	const uint32_t op = d.flags & DPUMESH_OP_MASK;
	if (err == wire::l7_error::ok &&
	    (op == DPUMESH_OP_REQUEST) != (v.kind == wire::l7_kind::request))
		err = wire::l7_error::bad_kind; /* descriptor and header disagree */
	if (err != wire::l7_error::ok) {
		_stats.bad_header.inc();
		_stats.l7_errors[static_cast<size_t>(err)].inc();
		return complete(d, DPUMESH_STATUS_BAD_DESCRIPTOR);
	}
	if (op == DPUMESH_OP_REQUEST)
		request(d, v, now);
	else
		response(d);
}

/* Parks a delivery whose destination is full; false when the parking is full. */
bool sidecar::park(const sw_descriptor &cmd, uint64_t now, uint64_t give_up_at) noexcept
{
	parking &p = *_parking;
	if (p.count == parking::size)
		return false;
	/* The first give-up time travels with the command (in dst bytes 8-15, unused next to
	 * dst.pod_id on the DPU-internal queues; pods never see them), so a delivery that
	 * bounces again and again still ends on time. */
	uint64_t first = 0;
	std::memcpy(&first, cmd.dst.external.ip + 8, sizeof(first));
	if (first && first < give_up_at)
		give_up_at = first;
	parked_cmd &pc = p.q[(p.head + p.count) % parking::size];
	pc.cmd = cmd;
	std::memcpy(pc.cmd.dst.external.ip + 8, &give_up_at, sizeof(give_up_at));
	/* back off exponentially per bounce (byte 7 counts them): 20 us .. 1.28 ms */
	uint8_t bounces = pc.cmd.dst.external.ip[7];
	pc.cmd.dst.external.ip[7] = static_cast<uint8_t>(bounces < 255 ? bounces + 1 : 255);
	pc.cmd.flags = cmd.flags & (DPUMESH_OP_REQUEST | DPUMESH_OP_RESPONSE | DPUMESH_CASE_MASK);
	pc.delay_us = 20u << std::min<uint8_t>(bounces, 6);
	pc.retry_at = now + _tsc_hz / 1000000 * pc.delay_us;
	pc.give_up_at = give_up_at;
	p.count++;
	_stats.parked.inc();
	return true;
}

/* A delivery that cannot be made: a request is answered 503, a response is lost. */
void sidecar::give_up(const sw_descriptor &n) noexcept
{
	const uint32_t status = dpumesh_flags_status(n.flags);
	if (n.flags & DPUMESH_OP_RESPONSE) {
		_stats.responses_lost.inc();
		return finish_cmd(n, status);
	}
	route::pending_entry *e = _pending->find(n.req_id);
	if (!e)
		return finish_cmd(n, status); /* answered or timed out meanwhile */
	reply_to_origin(n.req_id, *e, 503, reason_of(status));
	_pending->remove(n.req_id);
	finish_cmd(n, DPUMESH_STATUS_OK);
}

/* Re-posts parked deliveries whose retry time has come (in order; FIFO per delay). */
uint32_t sidecar::unpark(uint64_t now) noexcept
{
	parking &p = *_parking;
	uint32_t n = 0, visited = 0, count = p.count;
	while (visited++ < count && backlog_room()) {
		parked_cmd pc = p.q[p.head];
		p.head = (p.head + 1) % parking::size;
		p.count--;
		if (now < pc.retry_at) { /* not yet: back to the end */
			p.q[(p.head + p.count) % parking::size] = pc;
			p.count++;
			continue;
		}
		const uint32_t dst = pc.cmd.dst.pod_id;
		if (now >= pc.give_up_at) {
			pc.cmd.flags |= DPUMESH_OP_ERROR | (DPUMESH_STATUS_DEST_FULL << DPUMESH_STATUS_SHIFT);
			_stats.park_expired.inc();
			give_up(pc.cmd);
		} else if (!_reg->handle_live(dst)) {
			pc.cmd.flags |= DPUMESH_OP_ERROR | (DPUMESH_STATUS_DEST_GONE << DPUMESH_STATUS_SHIFT);
			_stats.dest_gone.inc();
			give_up(pc.cmd);
		} else {
			to_dpa(_emu->owner(dst), pc.cmd);
		}
		n++;
	}
	return n;
}

void sidecar::note(const sw_descriptor &n) noexcept
{
	const uint32_t status = dpumesh_flags_status(n.flags);
	const uint32_t op = n.flags & DPUMESH_OP_MASK & ~DPUMESH_OP_ERROR;
	const uint64_t now = rte_rdtsc();
	if (status == DPUMESH_STATUS_DEST_FULL)
		_stats.dest_full.inc();
	else if (status == DPUMESH_STATUS_DEST_GONE)
		_stats.dest_gone.inc();
	else if (status == DPUMESH_STATUS_SRC_GONE)
		_stats.src_gone.inc();
	if (op == DPUMESH_OP_RESPONSE) {
		/* the origin is busy: hold its response a while (it frees RX slots as it goes) */
		if (status == DPUMESH_STATUS_DEST_FULL && park(n, now, now + _tsc_hz))
			return;
		return give_up(n);
	}
	/* a request */
	route::pending_entry *e = _pending->find(n.req_id);
	if (!e)
		return finish_cmd(n, status); /* answered or timed out meanwhile */
	if (status == DPUMESH_STATUS_SRC_GONE) {
		_pending->remove(n.req_id);
		return finish_cmd(n, status);
	}
	if (status == DPUMESH_STATUS_DEST_FULL || status == DPUMESH_STATUS_DEST_GONE) {
		/* another live pod of the service takes it at once */
		uint32_t alt = _reg->pick_pod(e->service);
		if (alt && alt != e->dest.pod_handle && e->attempt < 2) {
			e->attempt++;
			e->dest = pod_party(alt);
			sw_descriptor cmd = n;
			cmd.dst.pod_id = alt;
			cmd.flags = DPUMESH_OP_REQUEST | (n.flags & DPUMESH_CASE_MASK);
			to_dpa(_emu->owner(alt), cmd);
			_stats.retries.inc();
			return;
		}
		/* else wait for room at the same pod, up to the request's deadline */
		/* give up a little before the deadline, so the origin hears "dest_full" rather
		 * than a bare timeout */
		uint64_t margin = _tsc_hz / 200; /* 5 ms */
		uint64_t give_up = e->deadline_tsc > now + margin ? e->deadline_tsc - margin : now;
		/* a network request's body holds packet mbufs the port needs to keep receiving:
		 * it waits only while a quarter of the pool is free, else its sender hears 503
		 * dest_full at once (load shedding rather than a port that stops receiving) */
		const bool ingress = (n.flags & DPUMESH_CASE_MASK) == DPUMESH_CASE_INGRESS;
		if (status == DPUMESH_STATUS_DEST_FULL && (!ingress || pkts_plenty()) &&
		    park(n, now, give_up))
			return;
	}
	give_up(n);
}

/* ---- external traffic ---- */

void sidecar::nic_done(void *, void *opaque)
{
	auto *meta = static_cast<dpa_hbuf_meta *>(opaque);
	auto *self = reinterpret_cast<sidecar *>(meta->arm[3]);
	self->_reg->tx_body_release(meta->src);
	/* the ring holds more than there are hbufs: this never fails */
	if (rte_ring_mp_enqueue(self->_tx_done, meta) != 0)
		self->_stats.hbuf_empty.inc();
}

/* Sends a pod's message (header in its hbuf, body in its TX pool) out of a port, and
 * completes the pod's TX: at once when the body was copied (or there is none), when the
 * NIC frees the last frame when it was attached zero-copy. false: nothing was sent. */
bool sidecar::send_out(const outgoing &o, const sw_descriptor &d) noexcept
{
	auto *meta = reinterpret_cast<dpa_hbuf_meta *>(hbuf_of(d));
	const uint32_t src = meta->src;
	if (o.egress < 0 || !_ports[o.egress].tx) {
		_stats.no_egress.inc();
		complete(d, DPUMESH_STATUS_OK);
		return false;
	}
	const network::port &eg = _ports[o.egress];
	wire::body_ref body;
	rte_mbuf_ext_shared_info *shinfo = nullptr;
	if (d.body_len) {
		const uint8_t *b = eg.zero_copy ? _reg->tx_body_hold(src, d.body_buf_addr, d.body_len)
						: _reg->tx_body(src, d.body_buf_addr, d.body_len);
		if (!b) { /* the sender went away since its header was taken */
			_stats.src_gone.inc();
			complete(d, DPUMESH_STATUS_SRC_GONE);
			return false;
		}
		body.data = b;
		body.len = d.body_len;
		if (eg.zero_copy) {
			static_assert(sizeof(rte_mbuf_ext_shared_info) <= 3 * sizeof(uint64_t));
			shinfo = reinterpret_cast<rte_mbuf_ext_shared_info *>(&meta->arm[0]);
			shinfo->free_cb = &sidecar::nic_done;
			shinfo->fcb_opaque = meta;
			rte_mbuf_ext_refcnt_set(shinfo, 1);
			meta->arm[3] = reinterpret_cast<uint64_t>(this);
			body.shinfo = shinfo;
			body.iova = _iova_va ? reinterpret_cast<rte_iova_t>(b) : RTE_BAD_IOVA;
		}
	}
	const bool sent = emit(eg, *o.addr, o.kind, o.correlation,
			       reinterpret_cast<const uint8_t *>(d.header_buf_addr),
			       static_cast<uint16_t>(d.header_len), body);
	if (sent)
		(shinfo ? _stats.zero_copy : _stats.copied_out).add(d.body_len ? 1 : 0);
	if (shinfo) {
		/* our own reference: the last one to go (ours or the NIC's) completes the TX */
		if (rte_mbuf_ext_refcnt_update(shinfo, -1) == 0)
			nic_done(nullptr, meta);
	} else {
		complete(d, DPUMESH_STATUS_OK);
	}
	return sent;
}

/* An error response made here, to a requester on the network. */
void sidecar::reply_remote(const remote &r, uint64_t correlation, uint16_t status,
			   const char *reason) noexcept
{
	if (r.egress < 0 || !_ports[r.egress].tx) {
		_stats.no_egress.inc();
		return;
	}
	uint8_t hdr[256];
	wire::l7_writer w(hdr, sizeof(hdr));
	w.response(status, wire::l7_flag_mesh_generated, reason, _hop);
	size_t len = w.finish();
	emit(_ports[r.egress], r.addr, wire::frame_kind::response, correlation, hdr,
	     static_cast<uint16_t>(len), wire::body_ref{});
}

/* Frames of one message onto a port's TX ring, all or none; false (counted) when none. */
bool sidecar::emit(const network::port &eg, const wire::link_addr &addr, wire::frame_kind kind,
		   uint64_t correlation, const uint8_t *l7, uint16_t l7_len,
		   const wire::body_ref &body) noexcept
{
	uint16_t n = wire::fragment(addr, kind, ++_msg_id, correlation, l7, l7_len, body, eg.mtu,
				    _pkts, _frames.data(), static_cast<uint16_t>(_frames.size()));
	if (n == 0) {
		_stats.egress_no_mbuf.inc();
		return false;
	}
	if (rte_ring_sp_enqueue_bulk(eg.tx, reinterpret_cast<void **>(_frames.data()), n,
				     nullptr) == 0) {
		_stats.egress_ring_full.inc();
		rte_pktmbuf_free_bulk(_frames.data(), n);
		return false;
	}
	return true;
}

/* An error response to whoever asked for the pending request `token`. */
void sidecar::reply_to_origin(uint32_t token, const route::pending_entry &e, uint16_t status,
			      const char *reason) noexcept
{
	if (e.origin.type == route::party::kind::pod)
		reply_error(e.origin.pod_handle, e.origin_req_id, e.step_id, status, reason);
	else
		reply_remote(_remotes[token & 0xffff], e.origin_correlation, status, reason);
}

/* Frees what a command holds without carrying it out: its hbuf and a network body. */
void sidecar::drop_cmd(const sw_descriptor &cmd) noexcept
{
	release_network_body(cmd);
	rte_mempool_put(_emu->hbufs(), hbuf_of(cmd));
}

/* A command that ends here: a network body is released, the sender completed. */
void sidecar::finish_cmd(const sw_descriptor &cmd, uint32_t status) noexcept
{
	release_network_body(cmd);
	complete(cmd, status);
}

/* A network (Case 2) body still held by a command goes back to the packet pool. */
void sidecar::release_network_body(const sw_descriptor &cmd) noexcept
{
	if ((cmd.flags & DPUMESH_CASE_MASK) == DPUMESH_CASE_INGRESS && cmd.body_len)
		dpa::release_local_body(cmd.body_buf_addr);
}

bool sidecar::pkts_plenty() const noexcept
{
	return !_pkts || rte_mempool_avail_count(_pkts) > _pkts->size / 4;
}

int sidecar::peer_of(const wire::endpoint &ep) const noexcept
{
	for (size_t i = 0; i < _peers.size(); i++)
		if (std::memcmp(_peers[i].addr.dst.ip, ep.ip, 16) == 0)
			return static_cast<int>(i);
	return -1;
}

/* Where the answer to a network message goes: back to its sender, from this node's address
 * of the same family, out of the port it came in on (if that port may send). */
sidecar::remote sidecar::remote_of(const rx_msg &m) const noexcept
{
	remote r;
	std::memcpy(r.addr.src_mac, _mac, 6);
	std::memcpy(r.addr.dst_mac, m.msg.src_mac, 6);
	r.addr.dst = m.msg.src;
	const std::optional<wire::endpoint> &self = m.msg.src.is_v4() ? _ep4 : _ep6;
	if (!self)
		return r; /* egress -1: nothing can be sent back */
	r.addr.src = *self;
	for (size_t i = 0; i < _ports.size(); i++)
		if (_ports[i].port_id == m.port_id && _ports[i].external && _ports[i].tx)
			r.egress = static_cast<int>(i);
	return r;
}

static void copy_from_chain(const rte_mbuf *m, uint32_t len, uint8_t *dst) noexcept
{
	while (m && len) {
		uint32_t n = std::min<uint32_t>(m->data_len, len);
		std::memcpy(dst, rte_pktmbuf_mtod(m, const uint8_t *), n);
		dst += n;
		len -= n;
		m = m->next;
	}
}

/* A whole message from the network: its header goes into an hbuf (the Arm reads headers);
 * its body stays in the received mbufs until the DPA copies it into the pod. */
void sidecar::from_network(rx_msg *m, uint64_t now) noexcept
{
	const wire::message &msg = m->msg;
	const bool is_request = msg.kind == wire::frame_kind::request;
	(is_request ? _stats.net_requests : _stats.net_responses).inc();
	if (msg.l7_len > _emu->hbuf_size() - DPA_HBUF_META_SIZE) {
		_stats.net_header_too_large.inc();
		if (is_request)
			reply_remote(remote_of(*m), msg.correlation, 431, "header_too_large");
		return rx_msg_free(m);
	}
	void *obj;
	if (rte_mempool_get(_emu->hbufs(), &obj) != 0) {
		_stats.hbuf_empty.inc();
		return rx_msg_free(m);
	}
	auto *meta = static_cast<dpa_hbuf_meta *>(obj);
	std::memset(meta, 0, sizeof(*meta));
	uint8_t *hdr = static_cast<uint8_t *>(obj) + DPA_HBUF_META_SIZE;
	copy_from_chain(msg.chain, msg.l7_len, hdr);
	wire::l7_view v;
	wire::l7_error err = wire::l7_decode(hdr, msg.l7_len, &v);
	if (err == wire::l7_error::ok && is_request != (v.kind == wire::l7_kind::request))
		err = wire::l7_error::bad_kind; /* frame and header disagree */
	if (err != wire::l7_error::ok) {
		_stats.bad_header.inc();
		_stats.l7_errors[static_cast<size_t>(err)].inc();
		if (is_request)
			reply_remote(remote_of(*m), msg.correlation, 400, "bad_header");
		rte_mempool_put(_emu->hbufs(), obj);
		return rx_msg_free(m);
	}
	sw_descriptor cmd{};
	cmd.header_buf_addr = reinterpret_cast<uint64_t>(hdr);
	cmd.header_len = msg.l7_len;
	cmd.body_len = msg.msg_len - msg.l7_len;
	cmd.flags = (is_request ? DPUMESH_OP_REQUEST : DPUMESH_OP_RESPONSE) | DPUMESH_CASE_INGRESS;
	const remote r = is_request ? remote_of(*m) : remote{};
	const wire::endpoint from = msg.src;
	const uint64_t correlation = msg.correlation;
	if (cmd.body_len) {
		/* the body starts l7_len bytes into the chain */
		rte_mbuf *seg = msg.chain;
		uint32_t off = msg.l7_len;
		while (seg && off >= seg->data_len) {
			off -= seg->data_len;
			seg = seg->next;
		}
		m->body.chain = msg.chain;
		m->body.first = seg;
		m->body.first_off = off;
		m->msg.chain = nullptr;
		cmd.body_buf_addr = reinterpret_cast<uint64_t>(&m->body);
	} else {
		rx_msg_free(m);
	}
	if (is_request)
		net_request(cmd, v, r, correlation, now);
	else
		net_response(cmd, from, correlation);
}

void sidecar::net_request(const sw_descriptor &in, const wire::l7_view &v, const remote &r,
			  uint64_t correlation, uint64_t now) noexcept
{
	uint32_t svc = _reg->service_index(v.service);
	const char *refused = nullptr;
	uint16_t status = 503;
	uint32_t dst = 0;
	if (svc >= _services.size()) {
		_stats.no_route.inc();
		refused = "no_route";
		status = 404;
	} else if (!_services[svc].local) {
		_stats.misrouted.inc();
		refused = "misrouted";
	} else if ((dst = _reg->pick_pod(svc)) == 0) {
		_stats.no_live_pod.inc();
		refused = "no_live_pod";
	}
	uint32_t token = 0;
	if (!refused) {
		int peer = peer_of(r.addr.dst);
		route::party origin{route::party::kind::peer, 0,
				    static_cast<uint16_t>(peer < 0 ? UINT16_MAX : peer)};
		token = open_pending(origin, pod_party(dst), 0, 0, correlation, svc, v, now);
		if (token == 0) {
			_stats.overloaded.inc();
			refused = "overloaded";
		}
	}
	if (refused) {
		reply_remote(r, correlation, status, refused);
		return drop_cmd(in);
	}
	_remotes[token & 0xffff] = r;
	sw_descriptor cmd = in;
	cmd.req_id = token;
	cmd.step_id = 0;
	cmd.dst.pod_id = dst;
	cmd.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_INGRESS;
	to_dpa(_emu->owner(dst), cmd);
	_stats.forwarded.inc();
}

void sidecar::net_response(const sw_descriptor &in, const wire::endpoint &from,
			   uint64_t correlation) noexcept
{
	/* the correlation is our token; the answer must come from the peer we asked */
	route::pending_entry *e = correlation <= UINT32_MAX
					  ? _pending->find(static_cast<uint32_t>(correlation))
					  : nullptr;
	if (!e || e->dest.type != route::party::kind::peer || e->origin.type != route::party::kind::pod ||
	    peer_of(from) != e->dest.peer) {
		_stats.no_match.inc();
		return drop_cmd(in);
	}
	sw_descriptor cmd = in;
	cmd.req_id = e->origin_req_id;
	cmd.step_id = e->step_id;
	cmd.dst.pod_id = e->origin.pod_handle;
	cmd.flags = DPUMESH_OP_RESPONSE | DPUMESH_CASE_INGRESS;
	_pending->remove(static_cast<uint32_t>(correlation));
	to_dpa(_emu->owner(cmd.dst.pod_id), cmd);
	_stats.answered.inc();
}

uint32_t sidecar::run() noexcept
{
	const uint64_t now = rte_rdtsc();
	uint32_t work = 0;
	flush_backlogs();
	if (_parking->count)
		work += unpark(now);
	/* zero-copy bodies the NIC let go of: their senders' TX completes now */
	void *done[burst];
	unsigned nd = backlog_room() ? rte_ring_sc_dequeue_burst(_tx_done, done, burst, nullptr) : 0;
	for (unsigned i = 0; i < nd; i++) {
		sw_descriptor d{};
		d.header_buf_addr = reinterpret_cast<uint64_t>(done[i]) + DPA_HBUF_META_SIZE;
		complete(d, DPUMESH_STATUS_OK);
	}
	work += nd;
	sw_descriptor in[burst];
	for (unsigned t = 0; t < _emu->nb_threads(); t++) {
		/* notifications first: they free pending entries and hbufs, and the RX kernel
		 * needs their queue drained to take more commands */
		uint32_t n = 0;
		if (note_room()) {
			n = dpumesh_sq_dequeue_burst(&_emu->arm(t).notify, in, burst);
			for (uint32_t i = 0; i < n; i++)
				note(in[i]);
			work += n;
		}
		if (!backlog_room()) {
			_stats.backlog_stalls.inc();
			continue;
		}
		n = dpumesh_sq_dequeue_burst(&_emu->arm(t).from_dpa, in, burst);
		for (uint32_t i = 0; i < n; i++) {
			if (i + 1 < n)
				rte_prefetch0(reinterpret_cast<const void *>(in[i + 1].header_buf_addr));
			from_pod(in[i], now);
		}
		work += n;
	}
	if (_ingress && backlog_room()) {
		rx_msg *msgs[burst];
		unsigned n = rte_ring_sc_dequeue_burst(_ingress, reinterpret_cast<void **>(msgs), burst,
						       nullptr);
		for (unsigned i = 0; i < n; i++)
			from_network(msgs[i], now);
		work += n;
	}
	if (++_polls % 64 == 0 && backlog_room()) {
		/* each expiry makes one command at most: a burst per sweep, the rest stays due */
		work += _pending->expire(now, [&](uint32_t token, route::pending_entry &e) {
			_stats.timeouts.inc();
			reply_to_origin(token, e, 504, "timeout");
		}, burst);
	}
	_reg->dp_quiescent(_qsbr_id);
	return work;
}

uint16_t sidecar::poll(void *arg) noexcept
{
	uint32_t w = static_cast<sidecar *>(arg)->run();
	return static_cast<uint16_t>(std::min<uint32_t>(w, UINT16_MAX));
}

} // namespace dpumesh::pipeline
