// SPDX-License-Identifier: BSD-3-Clause
// Egress: Case 1 framing (wire::fragment), zero-copy bodies, link addresses of peers and remotes.
#include "internal/egress.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include <rte_errno.h>
#include <rte_mempool.h>

#include "internal/command.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/wire/l7.h"

namespace dpumesh::sidecar {

result<std::unique_ptr<egress>> egress::create(const config::node_config &cfg,
					       const network &net, uint32_t max_msg,
					       pod_registry *reg, counters &stats)
{
	std::unique_ptr<egress> e(new egress(reg, stats));
	std::memcpy(e->_mac, cfg.node.mac, 6);
	if (cfg.node.ipv4)
		e->_ep4 = wire::endpoint::from_v4(cfg.node.ipv4->s_addr, cfg.node.mesh_port);
	if (cfg.node.ipv6)
		e->_ep6 = wire::endpoint::from_v6(cfg.node.ipv6->s6_addr, cfg.node.mesh_port);
	e->_pkts = net.pkts;
	e->_mbufs = std::make_unique<wire::mbuf_stash>(net.pkts);
	/* message ids of the node's shards never meet: shard k sends k + s, k + 2s, ... (s:
	 * id_step, the shards and port RX stages; or the shards) */
	e->_msg_id = net.shard;
	e->_msg_id_step = net.id_step ? net.id_step : net.nb_shards ? net.nb_shards : 1;
	for (const network::port &p : net.ports) {
		port_view v;
		v.port_id = p.port_id;
		v.mtu = p.mtu;
		v.external = p.external;
		v.zero_copy = p.zero_copy;
		v.tx = p.external ? p.tx : nullptr;
		/* a ring other shards also fill may have less room than it had: no staging */
		if (v.tx && rte_ring_get_prod_sync_type(v.tx) == RTE_RING_SYNC_ST) {
			v.stage = true;
			v.staged = std::make_unique<rte_mbuf *[]>(staged_max);
			v.next = v.end = v.staged.get();
		}
		e->_ports.push_back(std::move(v));
	}
	e->_iova_va = rte_eal_iova_mode() == RTE_IOVA_VA;
	/* a message is answered out of the port it came in on, the last of the ports with
	 * that id that may send */
	e->_reply_port.fill(-1);
	for (size_t i = 0; i < e->_ports.size(); i++)
		if (e->_ports[i].tx && e->_ports[i].port_id < e->_reply_port.size())
			e->_reply_port[e->_ports[i].port_id] = static_cast<int16_t>(i);
	int first_external = -1;
	for (size_t i = 0; i < e->_ports.size(); i++)
		if (e->_ports[i].tx && first_external < 0)
			first_external = static_cast<int>(i);
	for (size_t i = 0; i < cfg.peers.size(); i++) {
		const config::peer_config &pc = cfg.peers[i];
		peer_link pl;
		pl.name = pc.name;
		std::memcpy(pl.to.addr.src_mac, e->_mac, 6);
		std::memcpy(pl.to.addr.dst_mac, pc.mac, 6);
		if (pc.ipv4 && e->_ep4) {
			pl.to.addr.src = *e->_ep4;
			pl.to.addr.dst = wire::endpoint::from_v4(pc.ipv4->s_addr, pc.mesh_port);
		} else if (pc.ipv6 && e->_ep6) {
			pl.to.addr.src = *e->_ep6;
			pl.to.addr.dst = wire::endpoint::from_v6(pc.ipv6->s6_addr, pc.mesh_port);
		} else {
			return errorf("%s: peer %s has no IP address family in common with node %s",
				      cfg.where("/peers/" + std::to_string(i)).c_str(), pc.name.c_str(),
				      cfg.node.name.c_str());
		}
		pl.to.port = first_external;
		pl.frame.make(pl.to.addr);
		if (e->can_send(pl.to.port))
			pl.in_place_max = pl.frame.max_payload(e->_ports[pl.to.port].mtu);
		e->_peers.push_back(std::move(pl));
	}
	uint32_t max_frames = 1;
	for (const port_view &p : e->_ports)
		if (p.external)
			max_frames = std::max(max_frames, wire::frames_needed(max_msg, p.mtu, true));
	if (max_frames > UINT16_MAX)
		return errorf("sidecar: a %u-byte message needs %u frames at the ports' MTU (at most "
			      "65535): lower pools.tx_body.slot_size or raise the MTU",
			      max_msg, max_frames);
	e->_frames.resize(max_frames);
	/* one ring per egress: names are process-wide */
	static std::atomic<unsigned> seq{0};
	const unsigned n = seq.fetch_add(1);
	std::string rname = n == 0 ? "sidecar_txdone" : "sidecar_txdone" + std::to_string(n);
	e->_tx_done = rte_ring_create(rname.c_str(), 16384, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (!e->_tx_done)
		return errorf("sidecar: TX-done ring: %s", rte_strerror(rte_errno));
	return e;
}

egress::~egress()
{
	for (port_view &p : _ports) /* a poll always ends its burst; nothing is left here */
		if (p.nb_staged())
			rte_pktmbuf_free_bulk(p.staged.get(), p.nb_staged());
	if (!_tx_done)
		return;
	/* hbufs of zero-copy frames released but never reaped: nobody will complete them */
	void *obj;
	while (rte_ring_dequeue(_tx_done, &obj) == 0)
		rte_mempool_put(rte_mempool_from_obj(obj), obj);
	rte_ring_free(_tx_done);
}

int egress::peer_of(const wire::endpoint &ep) const noexcept
{
	for (size_t i = 0; i < _peers.size(); i++)
		if (std::memcmp(_peers[i].to.addr.dst.ip, ep.ip, 16) == 0)
			return static_cast<int>(i);
	return -1;
}

bool egress::pkts_plenty() const noexcept
{
	return !_pkts || rte_mempool_avail_count(_pkts) > _pkts->size / 4;
}

void egress::nic_done(void *, void *opaque)
{
	auto *meta = static_cast<dpa_hbuf_meta *>(opaque);
	hbuf_scratch &s = *reinterpret_cast<hbuf_scratch *>(meta->arm);
	auto *self = reinterpret_cast<egress *>(s.nic_owner);
	if (self->_reg && meta->src)
		self->_reg->tx_body_release(meta->src);
	/* the ring holds more than there are hbufs: this never fails */
	if (rte_ring_mp_enqueue(self->_tx_done, meta) != 0)
		self->_stats.hbuf_empty.inc();
}

unsigned egress::reap(void **hbufs, unsigned max) noexcept
{
	return rte_ring_sc_dequeue_burst(_tx_done, hbufs, max, nullptr);
}

/* A message's frames onto its port's TX ring, all or none: staged in a burst (the ring is
 * single-producer, so the room read once stays there for them), at once otherwise. */
bool egress::enqueue(port_view &p, rte_mbuf **frames, uint16_t n) noexcept
{
	if (!_in_burst || !p.stage || n > staged_max)
		return rte_ring_enqueue_bulk(p.tx, reinterpret_cast<void **>(frames), n, nullptr) != 0;
	if (p.nb_staged() + n > staged_max)
		flush(p);
	if (p.room() < n) {
		flush(p);
		/* no more than the stage takes (put_one() reads the room alone) */
		p.end = p.next + std::min(rte_ring_free_count(p.tx), staged_max);
		if (p.room() < n)
			return false;
	}
	if (n == 1) /* most messages: a memcpy of a run-time length is a call into libc */
		p.next[0] = frames[0];
	else
		std::memcpy(p.next, frames, n * sizeof(*frames));
	p.next += n; /* the room less n */
	return true;
}

/* A message's n frames (none: fragment() found no mbuf) onto the port's ring, or counted
 * and freed. */
bool egress::put(port_view &p, uint16_t n) noexcept
{
	if (n == 0) {
		_stats.egress_no_mbuf.inc();
		return false;
	}
	if (!enqueue(p, _frames.data(), n)) {
		_stats.egress_ring_full.inc();
		rte_pktmbuf_free_bulk(_frames.data(), n);
		return false;
	}
	return true;
}

/* The staged frames in one enqueue; they fit (the room was read before they were staged,
 * and only the port's TX stage takes from the ring since). */
void egress::flush(port_view &p) noexcept
{
	const unsigned n = p.nb_staged();
	if (!n)
		return;
	const unsigned k = rte_ring_enqueue_burst(p.tx, reinterpret_cast<void **>(p.staged.get()),
						  n, nullptr);
	if (k < n) [[unlikely]] { /* cannot happen: counted, never silent */
		_stats.egress_ring_full.add(n - k);
		rte_pktmbuf_free_bulk(p.staged.get() + k, n - k);
	}
	/* none staged, the room as it was */
	p.end = p.staged.get() + p.room();
	p.next = p.staged.get();
}

bool egress::send(const remote &to, wire::frame_kind kind, uint64_t correlation,
		  const uint8_t *l7, uint16_t l7_len, const uint8_t *body, uint32_t body_len,
		  dpa_hbuf_meta *zc_meta) noexcept
{
	port_view &eg = _ports[to.port];
	wire::body_ref b;
	b.data = body;
	b.len = body_len;
	rte_mbuf_ext_shared_info *shinfo = nullptr;
	if (zc_meta) {
		hbuf_scratch &s = *reinterpret_cast<hbuf_scratch *>(zc_meta->arm);
		static_assert(sizeof(rte_mbuf_ext_shared_info) <= sizeof(s.nic_shinfo));
		shinfo = reinterpret_cast<rte_mbuf_ext_shared_info *>(s.nic_shinfo);
		shinfo->free_cb = &egress::nic_done;
		shinfo->fcb_opaque = zc_meta;
		rte_mbuf_ext_refcnt_set(shinfo, 1);
		s.nic_owner = reinterpret_cast<uint64_t>(this);
		b.shinfo = shinfo;
		b.iova = _iova_va ? reinterpret_cast<rte_iova_t>(body) : RTE_BAD_IOVA;
	}
	const bool sent = put(eg, wire::fragment(to.addr, kind, _msg_id += _msg_id_step, correlation,
						 l7, l7_len, b, eg.mtu, *_mbufs, _frames.data(),
						 static_cast<uint16_t>(_frames.size())));
	if (shinfo) {
		/* our own reference: the last one to go (ours or the NIC's) releases the body */
		if (rte_mbuf_ext_refcnt_update(shinfo, -1) == 0)
			nic_done(nullptr, zc_meta);
	}
	return sent;
}

bool egress::forward(const remote &to, wire::frame_kind kind, uint64_t correlation,
		     const uint8_t *l7, uint16_t l7_len, const dpa::local_body *body,
		     uint32_t body_len, const uint16_t *l7_sum) noexcept
{
	if (!can_send(to.port)) {
		_stats.no_egress.inc();
		return false;
	}
	port_view &eg = _ports[to.port];
	wire::body_ref b;
	b.len = body_len;
	if (body_len) {
		b.seg = body->first;
		b.seg_off = body->first_off;
		b.attach = eg.zero_copy;
	}
	/* the shard's own message ids, as send() and reply() take (++ was the next shard's) */
	const uint32_t id = _msg_id += _msg_id_step;
	const uint16_t n =
		l7_sum ? wire::fragment(to.addr, kind, id, correlation,
					wire::l7_summed{l7, l7_len, *l7_sum}, b, eg.mtu, *_mbufs,
					_frames.data(), static_cast<uint16_t>(_frames.size()))
		       : wire::fragment(to.addr, kind, id, correlation, l7, l7_len, b, eg.mtu,
					*_mbufs, _frames.data(),
					static_cast<uint16_t>(_frames.size()));
	if (!put(eg, n))
		return false;
	if (body_len)
		(eg.zero_copy ? _stats.zero_copy : _stats.copied_out).inc();
	return true;
}

egress::outcome egress::send_pod_message(const remote &to, wire::frame_kind kind,
					 uint64_t correlation, const pod_message &m) noexcept
{
	outcome o;
	if (!can_send(to.port)) {
		_stats.no_egress.inc();
		return o;
	}
	const bool zc = _ports[to.port].zero_copy && m.body_len;
	const uint8_t *body = nullptr;
	if (m.body_len) {
		body = !_reg ? nullptr
		       : zc  ? _reg->tx_body_hold(m.src, m.body, m.body_len)
			     : _reg->tx_body(m.src, m.body, m.body_len);
		if (!body) { /* the sender went away since its header was taken */
			_stats.src_gone.inc();
			o.status = DPUMESH_STATUS_SRC_GONE;
			return o;
		}
	}
	dpa_hbuf_meta *meta = zc ? hbuf_meta(m.header) : nullptr;
	o.sent = send(to, kind, correlation, reinterpret_cast<const uint8_t *>(m.header),
		      static_cast<uint16_t>(m.header_len), body, m.body_len, meta);
	if (o.sent)
		(zc ? _stats.zero_copy : _stats.copied_out).add(m.body_len ? 1 : 0);
	o.complete = !zc; /* zero-copy: when the NIC lets go (reap) */
	return o;
}

/* reply()'s header for an answer not made yet (or no longer kept): made in the next of the
 * kept ones, its kept frames cleared (they were stamped from the header it replaces). */
egress::reply_hdr *egress::make_reply(uint16_t status, const char *reason,
				      const std::string &hop) noexcept
{
	reply_hdr *r = &_replies[_next_reply++ % _replies.size()];
	wire::l7_writer w(r->hdr, sizeof(r->hdr));
	w.response(status, wire::l7_flag_mesh_generated, reason, hop);
	r->len = static_cast<uint16_t>(w.finish());
	r->sum = wire::l7_sum(r->hdr, r->len);
	r->status = status;
	r->reason = reason;
	r->hop = &hop;
	for (kept_frame &k : r->kept) {
		k.frame.clear();
		k.port = kept_frame::not_made;
	}
	return r;
}

/* reply()'s frame for a requester address not kept yet: made for it, or (no template for
 * it: the answer needs more than one frame, or the families differ) fragment()ed. */
bool egress::reply_new_address(const remote &to, uint32_t id, uint64_t correlation,
			       reply_hdr &r, kept_frame &k) noexcept
{
	port_view &eg = _ports[to.port];
	const wire::l7_summed l7{r.hdr, r.len, r.sum};
	k.port = k.frame.make(to.addr, wire::frame_kind::response, l7, eg.mtu) ? to.port
									      : kept_frame::not_made;
	if (k.port == to.port) {
		rte_mbuf *m = k.frame.stamp(id, correlation, to.addr.dst.port, *_mbufs);
		return m ? put_one(eg, m) : put(eg, 0);
	}
	return put(eg, wire::fragment(to.addr, wire::frame_kind::response, id, correlation, l7,
				      eg.mtu, *_mbufs, _frames.data(),
				      static_cast<uint16_t>(_frames.size())));
}

inline egress::reply_hdr &egress::find_reply(uint16_t status, const char *reason,
				      const std::string &hop) noexcept
{
	/* the same few answers again and again (504 timeout, 429, 503): made once each, with
	 * the sum of their bytes for the UDP checksum; the reasons are static strings or the
	 * policy engine's names, so a pointer is the key */
	for (reply_hdr &c : _replies)
		if (c.len && c.status == status && c.reason == reason && c.hop == &hop)
			return c;
	return *make_reply(status, reason, hop);
}

bool egress::reply(const remote &to, uint64_t correlation, uint16_t status, const char *reason,
		   const std::string &hop) noexcept
{
	if (!can_send(to.port)) {
		_stats.no_egress.inc();
		return false;
	}
	return send_reply(to, correlation, find_reply(status, reason, hop));
}

kept_reply &egress::reply_of(uint16_t status, const char *reason, const std::string &hop) noexcept
{
	return find_reply(status, reason, hop);
}

} // namespace dpumesh::sidecar
