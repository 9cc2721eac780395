// SPDX-License-Identifier: BSD-3-Clause
// Sidecar stage: L7 header decode, routing, pending table, mesh-generated errors.
#include "dpumesh/sidecar/sidecar.h"

#include <time.h>

#include <algorithm>
#include <cstring>

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ring.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>
#include <rte_random.h>

namespace dpumesh::sidecar {

namespace {

constexpr unsigned burst = 32;

inline uint8_t *hbuf_of(const sw_descriptor &d)
{
	return reinterpret_cast<uint8_t *>(d.header_buf_addr - DPA_HBUF_META_SIZE);
}

inline pending::party pod_party(uint32_t handle) { return {pending::party::kind::pod, handle, 0}; }

/* pending_entry::user bits */
constexpr uint16_t pend_held = 1u << 0;      /* _held[slot] keeps the sender's buffers */
constexpr uint16_t pend_in_flight = 1u << 1; /* a held delivery not yet reported done */
constexpr uint16_t pend_ended = 1u << 2;     /* answered while in flight: ends when reported */
constexpr uint16_t pend_policy = 1u << 3;    /* admitted by the engine: report its outcome */

inline uint32_t slot_of(uint32_t token) { return token & 0xffff; }

/* A pod's answer that another pod may give better (RFC 9110: gateway errors). */
inline bool retryable(uint16_t status) { return status == 502 || status == 503 || status == 504; }

/* The per-source key of a requester on the network: its address and port. */
uint64_t source_of(const wire::endpoint &ep)
{
	uint64_t a, b;
	std::memcpy(&a, ep.ip, 8);
	std::memcpy(&b, ep.ip + 8, 8);
	uint64_t x = a * 0x9e3779b97f4a7c15ull ^ (b + ep.port) * 0xc2b2ae3d27d4eb4full;
	return x ^ (x >> 29) ^ (uint64_t(1) << 63); /* top bit: never a pod handle */
}

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

result<std::unique_ptr<stage>> stage::create(const config::node_config &cfg,
						 pod_registry &reg, dpa::emulator &emu,
						 const network &net)
{
	std::unique_ptr<stage> s(new stage());
	s->_reg = &reg;
	s->_emu = &emu;
	s->_tsc_hz = rte_get_tsc_hz();
	s->_pending = std::make_unique<pending::table>(65536, s->_tsc_hz);
	s->_hop = cfg.node.name + "/sidecar";
	s->_ns_mult = static_cast<uint64_t>((static_cast<unsigned __int128>(1000000000) << 32) /
					    s->_tsc_hz);
	timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	s->_unix_base = wall.tv_sec - static_cast<int64_t>(rte_rdtsc() / s->_tsc_hz);
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
	s->_nb_services = static_cast<uint32_t>(cfg.services.size());
	s->_svc_names.resize(s->_nb_services);
	for (const config::service_config &svc : cfg.services) {
		uint32_t idx = reg.service_index(svc.name);
		if (idx >= s->_nb_services)
			return errorf("sidecar: service %s unknown to the pod registry", svc.name.c_str());
		s->_svc_names[idx] = svc.name;
	}
	s->_svc_metrics = std::make_unique<l7_metrics[]>(s->_nb_services);
	s->_retry_windows.resize(s->_nb_services);
	s->_held = std::make_unique<sw_descriptor[]>(65536);
	auto pol = ruleset::build(cfg, reg, 1);
	if (!pol)
		return pol.error().with_context("sidecar");
	s->_owned = std::move(*pol);
	s->_cur = s->_owned.get();
	s->_published.store(s->_cur, std::memory_order_release);
	for (unsigned t = 0; t < emu.nb_threads(); t++)
		s->_backlogs.push_back(std::make_unique<backlog>());
	s->_parking = std::make_unique<parking>();
	return s;
}

stage::~stage()
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
	/* held requests whose delivery was reported done: nobody else frees their buffers */
	if (_pending)
		_pending->for_each([&](uint32_t token, const pending::entry &e) {
			if ((e.user & pend_held) && !(e.user & pend_in_flight))
				drop_cmd(_held[slot_of(token)]);
		});
	for (auto &b : _backlogs)
		for (uint32_t i = 0; i < b->count; i++) {
			const sw_descriptor &c = b->q[(b->head + i) % backlog::size];
			if (c.flags & (DPUMESH_OP_REQUEST | DPUMESH_OP_RESPONSE))
				drop_cmd(c);
		}
}

void stage::apply(std::shared_ptr<ruleset> next)
{
	std::lock_guard<std::mutex> lk(_policy_mu);
	_published.store(next.get(), std::memory_order_release);
	/* the sidecar lcore loads the pointer at the start of a poll and reports quiescence at
	 * its end: after one grace period nobody uses the old version on the data path */
	_reg->dp_synchronize();
	_owned = std::move(next);
	_stats.policy_swaps.inc();
}

std::shared_ptr<ruleset> stage::policy() const
{
	std::lock_guard<std::mutex> lk(_policy_mu);
	return _owned;
}

void stage::to_dpa(unsigned thread, const sw_descriptor &cmd) noexcept
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

void stage::flush_backlogs() noexcept
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
uint32_t stage::backlog_free() const noexcept
{
	uint32_t f = backlog::size;
	for (const auto &b : _backlogs)
		f = std::min(f, backlog::size - b->count);
	return f;
}

void stage::complete(const sw_descriptor &d, uint32_t status) noexcept
{
	const auto *meta = reinterpret_cast<const dpa_hbuf_meta *>(hbuf_of(d));
	sw_descriptor cmd{};
	cmd.header_buf_addr = d.header_buf_addr;
	cmd.flags = DPUMESH_OP_TX_DONE;
	if (status != DPUMESH_STATUS_OK)
		cmd.flags |= DPUMESH_OP_ERROR | (status << DPUMESH_STATUS_SHIFT);
	to_dpa(meta->src ? _emu->owner(meta->src) : 0, cmd);
}

void stage::reply_error(uint32_t origin, uint32_t req_id, uint32_t step_id, uint16_t status,
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
uint32_t stage::open_pending(pending::party origin, pending::party dest, uint32_t req_id,
			       uint32_t step_id, uint64_t correlation, const admission &a,
			       const wire::l7_view &v, bool hold, uint64_t now) noexcept
{
	uint64_t timeout_ms = a.route->timeout_ms;
	if (v.deadline_ms && v.deadline_ms < timeout_ms)
		timeout_ms = v.deadline_ms;
	pending::entry e{};
	e.origin = origin;
	e.dest = dest;
	e.origin_req_id = req_id;
	e.step_id = step_id;
	e.origin_correlation = correlation;
	e.start_tsc = now;
	e.deadline_tsc = now + timeout_ms * _tsc_hz / 1000;
	e.service = a.svc;
	e.route = a.route->metrics;
	e.version = static_cast<uint32_t>(_cur->version());
	e.backoff_ms = a.route->backoff_ms;
	e.retries_left = hold ? static_cast<uint16_t>(a.route->retries) : 0;
	e.user = (hold ? pend_held | pend_in_flight : 0) | (_cur->services()[a.svc].local ? pend_policy : 0);
	return _pending->insert(e);
}

/* Routing and policy for one request: the service, its route, the L7 policy (services
 * served here), and a live pod. Refusals are counted here; the caller answers them. */
stage::admission stage::admit(const wire::l7_view &v, uint64_t source_id, bool from_network,
				  uint64_t now) noexcept
{
	admission a;
	a.svc = _reg->service_index(v.service);
	if (a.svc >= _nb_services) {
		a.svc = UINT32_MAX;
		_stats.no_route.inc();
		a.status = 404;
		a.reason = "no_route";
		return a;
	}
	const service_rules &sr = _cur->services()[a.svc];
	a.route = &_cur->route_for(a.svc, v.path);
	_svc_metrics[a.svc].requests.inc();
	_cur->route_metrics(a.route->metrics).requests.inc();
	if (!sr.local) {
		if (from_network) { /* a peer sent us what it should serve itself */
			_stats.misrouted.inc();
			a.status = 503;
			a.reason = "misrouted";
		} else if (!_cur->engine().breaker_allows(v.service, now_ns(now))) {
			_stats.policy_refused.inc();
			a.status = 503;
			a.reason = "circuit_open";
		}
		return a;
	}
	const int64_t unix_s = _unix_base + static_cast<int64_t>(now / _tsc_hz);
	policy::verdict vd = _cur->engine().check_request(v, source_id, now_ns(now), unix_s);
	if (!vd.allowed()) {
		_stats.policy_refused.inc();
		a.status = vd.status;
		a.reason = vd.reason_name();
		return a;
	}
	if ((a.dst = _reg->pick_pod(a.svc)) == 0) {
		_stats.no_live_pod.inc();
		a.status = 503;
		a.reason = "no_live_pod";
	}
	return a;
}

/* A refusal made here, in the service's and route's metrics. */
void stage::count_refusal(const admission &a) noexcept
{
	if (a.svc == UINT32_MAX)
		return;
	for (l7_metrics *m : {&_svc_metrics[a.svc], &_cur->route_metrics(a.route->metrics)}) {
		m->refused.inc();
		m->answer(a.status, true);
	}
}

/* Adds x-request-id and traceparent to a request header (in an hbuf) that has none; both
 * carry the same 128 random bits. Returns the header's new length. */
uint32_t stage::add_trace(uint64_t hdr_addr, uint32_t len, const wire::l7_view &v) noexcept
{
	std::string_view have;
	const bool need_id = !v.find("x-request-id", &have);
	const bool need_tp = !v.find("traceparent", &have);
	if (!need_id && !need_tp)
		return len;
	const uint64_t hi = rte_rand(), lo = rte_rand(), span = rte_rand() | 1;
	auto *hdr = reinterpret_cast<uint8_t *>(hdr_addr);
	wire::l7_writer w = wire::l7_writer::extend(hdr, len, _emu->hbuf_size() - DPA_HBUF_META_SIZE);
	/* lowercase hex by hand: no printf machinery on the data path */
	static constexpr char hex[] = "0123456789abcdef";
	auto put_hex = [](char *out, uint64_t x, unsigned digits) {
		for (unsigned i = 0; i < digits; i++)
			out[i] = hex[(x >> (4 * (digits - 1 - i))) & 0xf];
	};
	if (need_id) {
		/* UUID form 8-4-4-4-12, version 4, variant 1 */
		char id[36];
		put_hex(id, hi >> 32, 8);
		id[8] = '-';
		put_hex(id + 9, (hi >> 16) & 0xffff, 4);
		id[13] = '-';
		put_hex(id + 14, 0x4000 | (hi & 0xfff), 4);
		id[18] = '-';
		put_hex(id + 19, 0x8000 | ((lo >> 48) & 0x3fff), 4);
		id[23] = '-';
		put_hex(id + 24, lo & 0xffffffffffffULL, 12);
		w.field("x-request-id", std::string_view(id, sizeof(id)));
	}
	if (need_tp) {
		char tp[55];
		std::memcpy(tp, "00-", 3);
		put_hex(tp + 3, hi, 16);
		put_hex(tp + 19, lo, 16);
		tp[35] = '-';
		put_hex(tp + 36, span, 16);
		std::memcpy(tp + 52, "-01", 3);
		w.field("traceparent", std::string_view(tp, sizeof(tp)));
	}
	size_t n = w.finish();
	if (n == 0) { /* no room in the hbuf: the header is left as it was */
		_stats.trace_no_room.inc();
		return len;
	}
	if (need_id)
		_stats.request_ids.inc();
	if (need_tp)
		_stats.traceparents.inc();
	return static_cast<uint32_t>(n);
}

/* Whether a request goes out held (its sender's buffers kept for a retry). */
bool stage::hold_for_retry(const admission &a, const wire::l7_view &v) const noexcept
{
	return a.route->retries > 0 && a.dst != 0 &&
	       (a.route->retry_non_idempotent || idempotent(v.method, v.flags));
}

/* An answer is on its way to the origin of a pending request: metrics, and the outcome
 * for the service's circuit breaker (`report`: answers from a pod or a peer, timeouts). */
void stage::answered(const pending::entry &e, uint16_t status, bool mesh, uint64_t now,
		       bool report) noexcept
{
	const uint64_t us = (now - e.start_tsc) * 1000000 / _tsc_hz;
	l7_metrics &sm = _svc_metrics[e.service];
	sm.answer(status, mesh);
	sm.latency.record(us);
	if (e.version == _cur->version()) {
		l7_metrics &rm = _cur->route_metrics(e.route);
		rm.answer(status, mesh);
		rm.latency.record(us);
		if (report && (e.user & pend_policy))
			_cur->engine().on_response(_svc_names[e.service], status, now_ns(now));
	}
}

/* A held request whose answer came (or that ended): its sender's buffers go back. */
void stage::release_held(uint32_t token, pending::entry &e) noexcept
{
	if (!(e.user & pend_held))
		return;
	e.user &= static_cast<uint16_t>(~pend_held);
	finish_cmd(_held[slot_of(token)], DPUMESH_STATUS_OK);
}

/* Sends a held request again, to another live pod where there is one, after the route's
 * back-off (doubling per attempt). false: no retry (budget, breaker, no pod). */
bool stage::retry(uint32_t token, pending::entry &e, uint64_t now) noexcept
{
	if (!(e.user & pend_held) || (e.user & pend_in_flight) || e.retries_left == 0)
		return false;
	retry_window &w = _retry_windows[e.service];
	if (now - w.start_tsc > _tsc_hz) { /* a new one-second window */
		w.start_tsc = now;
		w.requests = w.retries = 0;
	}
	const route_rule *r = nullptr;
	if (e.version == _cur->version())
		for (const route_rule &x : _cur->services()[e.service].routes)
			if (x.metrics == e.route)
				r = &x;
	const uint32_t pct = r ? r->retry_budget_percent : 20;
	if (w.retries >= 3 + static_cast<uint64_t>(w.requests) * pct / 100) {
		_stats.retry_budget.inc();
		return false;
	}
	if ((e.user & pend_policy) && !_cur->engine().breaker_allows(_svc_names[e.service], now_ns(now)))
		return false;
	uint32_t alt = _reg->pick_pod(e.service);
	if (alt == e.dest.pod_handle) /* round robin: the next one, if there is another */
		alt = _reg->pick_pod(e.service);
	if (alt == 0)
		return false;
	w.retries++;
	e.retries_left--;
	e.attempt++;
	e.dest = pod_party(alt);
	e.user |= pend_in_flight;
	sw_descriptor cmd = _held[slot_of(token)];
	cmd.dst.pod_id = alt;
	cmd.flags = DPUMESH_OP_REQUEST | DPUMESH_OP_HOLD | (cmd.flags & DPUMESH_CASE_MASK);
	std::memset(cmd.dst.external.ip + 4, 0, 12); /* fresh parking state */
	const uint64_t delay_ms = uint64_t(e.backoff_ms) << std::min<uint16_t>(e.attempt - 1, 10);
	const uint64_t at = now + delay_ms * _tsc_hz / 1000;
	if (delay_ms == 0 || !park(cmd, now, e.deadline_tsc, at))
		to_dpa(_emu->owner(alt), cmd);
	_stats.retries.inc();
	_svc_metrics[e.service].retries.inc();
	if (e.version == _cur->version())
		_cur->route_metrics(e.route).retries.inc();
	return true;
}

/* The DPA reports a held delivery done: the request may end now if it was waiting for it. */
void stage::held_done(const sw_descriptor &n) noexcept
{
	_stats.held_done.inc();
	pending::entry *e = _pending->find(n.req_id);
	if (!e || !(e->user & pend_held))
		return; /* answered meanwhile: its buffers went back with the answer */
	e->user &= static_cast<uint16_t>(~pend_in_flight);
	if (e->user & pend_ended) {
		release_held(n.req_id, *e);
		_pending->remove(n.req_id);
	}
}

/* A request's deadline passed: 504 to its origin. A held one whose delivery is still on
 * its way ends when the DPA reports it (its buffers are in use until then). */
void stage::expired(uint32_t token, pending::entry &e, uint64_t now) noexcept
{
	if (e.user & pend_ended) { /* the DPA never reported the delivery */
		_stats.held_lost.inc();
		return;
	}
	_stats.timeouts.inc();
	_svc_metrics[e.service].timeouts.inc();
	if (e.version == _cur->version())
		_cur->route_metrics(e.route).timeouts.inc();
	answered(e, 504, true, now, true);
	reply_to_origin(token, e, 504, "timeout");
	if (e.user & pend_in_flight) {
		e.user |= pend_ended;
		_pending->rearm(token, now + 10 * _tsc_hz); /* stays until the DPA reports */
		return;
	}
	release_held(token, e);
}

void stage::request(const sw_descriptor &d, const wire::l7_view &v, uint64_t now) noexcept
{
	const uint32_t src = d.dst.pod_id;
	_stats.requests.inc();
	admission a = admit(v, src, false, now);
	if (a.status != 0) {
		count_refusal(a);
		reply_error(src, d.req_id, d.step_id, a.status, a.reason);
		return complete(d, DPUMESH_STATUS_OK);
	}
	const service_rules &sr = _cur->services()[a.svc];
	sw_descriptor cmd = d;
	cmd.header_len = add_trace(d.header_buf_addr, d.header_len, v);
	const bool hold = hold_for_retry(a, v);
	const pending::party dest = sr.local ? pod_party(a.dst)
					   : pending::party{pending::party::kind::peer, 0, sr.peer};
	uint32_t token = open_pending(pod_party(src), dest, d.req_id, d.step_id, 0, a, v, hold, now);
	if (token == 0) {
		_stats.overloaded.inc();
		a.status = 503;
		a.reason = "overloaded";
		count_refusal(a);
		reply_error(src, d.req_id, d.step_id, 503, "overloaded");
		return complete(d, DPUMESH_STATUS_OK);
	}
	if (!sr.local) { /* Case 1: to the node that serves it */
		const peer_view &pv = _peers[sr.peer];
		if (!send_out({&pv.addr, pv.egress, wire::frame_kind::request, token}, cmd)) {
			_pending->remove(token);
			reply_error(src, d.req_id, d.step_id, 503, "egress_failed");
			return;
		}
		_stats.to_peer.inc();
		return;
	}
	cmd.req_id = token;
	cmd.dst.pod_id = a.dst;
	cmd.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL | (hold ? DPUMESH_OP_HOLD : 0);
	cmd.valid = 0;
	if (hold) {
		_held[slot_of(token)] = cmd;
		_stats.held.inc();
	}
	_retry_windows[a.svc].requests++;
	to_dpa(_emu->owner(a.dst), cmd);
	_stats.forwarded.inc();
}

void stage::response(const sw_descriptor &d, const wire::l7_view &v, uint64_t now) noexcept
{
	const uint32_t src = d.dst.pod_id;
	_stats.responses.inc();
	pending::entry *e = _pending->match(d.req_id, pod_party(src), d.step_id);
	if (!e || (e->user & pend_ended)) {
		_stats.no_match.inc();
		return complete(d, DPUMESH_STATUS_NO_MATCH);
	}
	const bool mesh = v.flags & wire::l7_flag_mesh_generated;
	if (retryable(v.status) && retry(d.req_id, *e, now)) {
		/* this answer is not passed on: another pod gets the request */
		if (e->user & pend_policy)
			_cur->engine().on_response(_svc_names[e->service], v.status, now_ns(now));
		return complete(d, DPUMESH_STATUS_OK);
	}
	answered(*e, v.status, mesh, now, true);
	release_held(d.req_id, *e);
	if (e->origin.type != pending::party::kind::pod) { /* Case 1: back to the network */
		const remote &r = _remotes[slot_of(d.req_id)];
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

void stage::from_pod(const sw_descriptor &d, uint64_t now) noexcept
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
		response(d, v, now);
}

/* Parks a delivery whose destination is full; false when the parking is full. */
bool stage::park(const sw_descriptor &cmd, uint64_t now, uint64_t give_up_at,
		   uint64_t retry_at) noexcept
{
	parking &p = *_parking;
	/* responses may take the last slots, requests may not: a request refused here is
	 * answered 503 by the mesh, a response refused here is never answered at all (the
	 * soak lost responses to a parking full of bounced Case 2 requests) */
	const bool response = cmd.flags & DPUMESH_OP_RESPONSE;
	if (p.count >= (response ? parking::size : parking::size - parking::response_reserve))
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
	pc.cmd.flags = cmd.flags & (DPUMESH_OP_REQUEST | DPUMESH_OP_RESPONSE | DPUMESH_OP_HOLD |
				    DPUMESH_CASE_MASK);
	pc.delay_us = 20u << std::min<uint8_t>(bounces, 6);
	pc.retry_at = retry_at ? retry_at : now + _tsc_hz / 1000000 * pc.delay_us;
	pc.give_up_at = give_up_at;
	p.count++;
	_stats.parked.inc();
	return true;
}

/* A delivery that cannot be made: a request is answered 503, a response is lost. */
void stage::give_up(const sw_descriptor &n) noexcept
{
	const uint32_t status = dpumesh_flags_status(n.flags);
	if (n.flags & DPUMESH_OP_RESPONSE) {
		/* the request is no longer pending: unless the requester is what failed, it
		 * hears a 502 made here instead of the answer that cannot be delivered */
		if (status == DPUMESH_STATUS_SRC_GONE || status == DPUMESH_STATUS_DMA_ERROR ||
		    status == DPUMESH_STATUS_TOO_LARGE) {
			_stats.responses_failed.inc();
			reply_error(n.dst.pod_id, n.req_id, n.step_id, 502,
				    status == DPUMESH_STATUS_SRC_GONE ? "responder_gone"
								      : reason_of(status));
		} else {
			_stats.responses_lost.inc();
		}
		return finish_cmd(n, status);
	}
	pending::entry *e = _pending->find(n.req_id);
	if (!e)
		return finish_cmd(n, status); /* answered or timed out meanwhile */
	if (!(e->user & pend_ended)) {
		answered(*e, 503, true, rte_rdtsc(), false);
		reply_to_origin(n.req_id, *e, 503, reason_of(status));
	}
	_pending->remove(n.req_id); /* n is the held command itself, if any */
	finish_cmd(n, DPUMESH_STATUS_OK);
}

/* Re-posts parked deliveries whose retry time has come (in order; FIFO per delay). */
uint32_t stage::unpark(uint64_t now) noexcept
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

void stage::note(const sw_descriptor &n) noexcept
{
	const uint32_t status = dpumesh_flags_status(n.flags);
	const uint32_t op = n.flags & DPUMESH_OP_MASK & ~(DPUMESH_OP_ERROR | DPUMESH_OP_HOLD);
	const uint64_t now = rte_rdtsc();
	if (status == DPUMESH_STATUS_OK && (n.flags & DPUMESH_OP_HOLD))
		return held_done(n);
	if (status == DPUMESH_STATUS_DEST_FULL)
		_stats.dest_full.inc();
	else if (status == DPUMESH_STATUS_DEST_GONE)
		_stats.dest_gone.inc();
	else if (status == DPUMESH_STATUS_SRC_GONE)
		_stats.src_gone.inc();
	if (op == DPUMESH_OP_RESPONSE) {
		/* the origin is busy: hold its response (it frees RX slots as it goes). Its request
		 * is no longer pending, so a response given up here is never answered at all: wait
		 * long (a starved pod on a loaded node took more than a second in the soak) */
		if (status == DPUMESH_STATUS_DEST_FULL && park(n, now, now + 10 * _tsc_hz))
			return;
		return give_up(n);
	}
	/* a request */
	pending::entry *e = _pending->find(n.req_id);
	if (!e)
		return finish_cmd(n, status); /* answered or timed out meanwhile */
	if (status == DPUMESH_STATUS_SRC_GONE) {
		_pending->remove(n.req_id);
		return finish_cmd(n, status);
	}
	if (e->user & pend_ended) { /* answered 504 already: only its buffers are left */
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
			cmd.flags = DPUMESH_OP_REQUEST | (n.flags & (DPUMESH_CASE_MASK | DPUMESH_OP_HOLD));
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

void stage::nic_done(void *, void *opaque)
{
	auto *meta = static_cast<dpa_hbuf_meta *>(opaque);
	auto *self = reinterpret_cast<stage *>(meta->arm[3]);
	self->_reg->tx_body_release(meta->src);
	/* the ring holds more than there are hbufs: this never fails */
	if (rte_ring_mp_enqueue(self->_tx_done, meta) != 0)
		self->_stats.hbuf_empty.inc();
}

/* Sends a pod's message (header in its hbuf, body in its TX pool) out of a port, and
 * completes the pod's TX: at once when the body was copied (or there is none), when the
 * NIC frees the last frame when it was attached zero-copy. false: nothing was sent. */
bool stage::send_out(const outgoing &o, const sw_descriptor &d) noexcept
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
			shinfo->free_cb = &stage::nic_done;
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
void stage::reply_remote(const remote &r, uint64_t correlation, uint16_t status,
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
bool stage::emit(const network::port &eg, const wire::link_addr &addr, wire::frame_kind kind,
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
void stage::reply_to_origin(uint32_t token, const pending::entry &e, uint16_t status,
			      const char *reason) noexcept
{
	if (e.origin.type == pending::party::kind::pod)
		reply_error(e.origin.pod_handle, e.origin_req_id, e.step_id, status, reason);
	else
		reply_remote(_remotes[token & 0xffff], e.origin_correlation, status, reason);
}

/* Frees what a command holds without carrying it out: its hbuf and a network body. */
void stage::drop_cmd(const sw_descriptor &cmd) noexcept
{
	release_network_body(cmd);
	rte_mempool_put(_emu->hbufs(), hbuf_of(cmd));
}

/* A command that ends here: a network body is released, the sender completed. */
void stage::finish_cmd(const sw_descriptor &cmd, uint32_t status) noexcept
{
	release_network_body(cmd);
	complete(cmd, status);
}

/* A network (Case 2) body still held by a command goes back to the packet pool. */
void stage::release_network_body(const sw_descriptor &cmd) noexcept
{
	if ((cmd.flags & DPUMESH_CASE_MASK) == DPUMESH_CASE_INGRESS && cmd.body_len)
		dpa::release_local_body(cmd.body_buf_addr);
}

bool stage::pkts_plenty() const noexcept
{
	return !_pkts || rte_mempool_avail_count(_pkts) > _pkts->size / 4;
}

int stage::peer_of(const wire::endpoint &ep) const noexcept
{
	for (size_t i = 0; i < _peers.size(); i++)
		if (std::memcmp(_peers[i].addr.dst.ip, ep.ip, 16) == 0)
			return static_cast<int>(i);
	return -1;
}

/* Where the answer to a network message goes: back to its sender, from this node's address
 * of the same family, out of the port it came in on (if that port may send). */
stage::remote stage::remote_of(const rx_msg &m) const noexcept
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
void stage::from_network(rx_msg *m, uint64_t now) noexcept
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
		net_response(cmd, v, from, correlation, now);
}

void stage::net_request(const sw_descriptor &in, const wire::l7_view &v, const remote &r,
			  uint64_t correlation, uint64_t now) noexcept
{
	admission a = admit(v, source_of(r.addr.dst), true, now);
	const bool hold = a.status == 0 && hold_for_retry(a, v);
	uint32_t token = 0;
	if (a.status == 0) {
		int peer = peer_of(r.addr.dst);
		pending::party origin{pending::party::kind::peer, 0,
				    static_cast<uint16_t>(peer < 0 ? UINT16_MAX : peer)};
		token = open_pending(origin, pod_party(a.dst), 0, 0, correlation, a, v, hold, now);
		if (token == 0) {
			_stats.overloaded.inc();
			a.status = 503;
			a.reason = "overloaded";
		}
	}
	if (a.status != 0) {
		count_refusal(a);
		reply_remote(r, correlation, a.status, a.reason);
		return drop_cmd(in);
	}
	_remotes[slot_of(token)] = r;
	sw_descriptor cmd = in;
	cmd.header_len = add_trace(in.header_buf_addr, in.header_len, v);
	cmd.req_id = token;
	cmd.step_id = 0;
	cmd.dst.pod_id = a.dst;
	cmd.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_INGRESS | (hold ? DPUMESH_OP_HOLD : 0);
	if (hold) {
		_held[slot_of(token)] = cmd;
		_stats.held.inc();
	}
	_retry_windows[a.svc].requests++;
	to_dpa(_emu->owner(a.dst), cmd);
	_stats.forwarded.inc();
}

void stage::net_response(const sw_descriptor &in, const wire::l7_view &v,
			   const wire::endpoint &from, uint64_t correlation, uint64_t now) noexcept
{
	/* the correlation is our token; the answer must come from the peer we asked */
	pending::entry *e = correlation <= UINT32_MAX
					  ? _pending->find(static_cast<uint32_t>(correlation))
					  : nullptr;
	if (!e || e->dest.type != pending::party::kind::peer || e->origin.type != pending::party::kind::pod ||
	    peer_of(from) != e->dest.peer) {
		_stats.no_match.inc();
		return drop_cmd(in);
	}
	answered(*e, v.status, v.flags & wire::l7_flag_mesh_generated, now, true);
	sw_descriptor cmd = in;
	cmd.req_id = e->origin_req_id;
	cmd.step_id = e->step_id;
	cmd.dst.pod_id = e->origin.pod_handle;
	cmd.flags = DPUMESH_OP_RESPONSE | DPUMESH_CASE_INGRESS;
	_pending->remove(static_cast<uint32_t>(correlation));
	to_dpa(_emu->owner(cmd.dst.pod_id), cmd);
	_stats.answered.inc();
}

uint32_t stage::run() noexcept
{
	const uint64_t now = rte_rdtsc();
	uint32_t work = 0;
	/* one routing and policy version for the whole poll (quiescent at its end) */
	_cur = _published.load(std::memory_order_acquire);
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
		work += _pending->expire(now, [&](uint32_t token, pending::entry &e) {
			expired(token, e, now);
		}, burst);
	}
	_reg->dp_quiescent(_qsbr_id);
	return work;
}

uint16_t stage::poll(void *arg) noexcept
{
	uint32_t w = static_cast<stage *>(arg)->run();
	return static_cast<uint16_t>(std::min<uint32_t>(w, UINT16_MAX));
}

} // namespace dpumesh::sidecar
