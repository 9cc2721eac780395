// SPDX-License-Identifier: BSD-3-Clause
// Sidecar stage: L7 header decode, routing, pending table, mesh-generated errors.
#include "dpumesh/sidecar.h"

#include <algorithm>
#include <cstring>

#include <rte_cycles.h>
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
						 pod_registry &reg, dpa::emulator &emu)
{
	std::unique_ptr<sidecar> s(new sidecar());
	s->_reg = &reg;
	s->_emu = &emu;
	s->_tsc_hz = rte_get_tsc_hz();
	s->_pending = std::make_unique<route::pending_table>(65536, s->_tsc_hz);
	s->_default_timeout_ms = cfg.policy.default_timeout_ms;
	s->_hop = cfg.node.name + "/sidecar";
	s->_services.resize(cfg.services.size());
	for (const config::service_config &svc : cfg.services) {
		uint32_t idx = reg.service_index(svc.name);
		if (idx >= s->_services.size())
			return errorf("sidecar: service %s unknown to the pod registry", svc.name.c_str());
		service_view &v = s->_services[idx];
		const config::route_config *r = cfg.find_route(svc.name);
		v.local = !r || r->is_local();
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

sidecar::~sidecar() = default;

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
	/* keep order behind what is already waiting; room is guaranteed by backlog_room() */
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

/* Each input descriptor yields at most 3 commands; take a burst only if all fit. */
bool sidecar::backlog_room() const noexcept
{
	for (const auto &b : _backlogs)
		if (backlog::size - b->count < 3 * burst)
			return false;
	return true;
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
	if (!_services[svc].local) {
		_stats.remote_unavailable.inc();
		reply_error(src, d.req_id, d.step_id, 503, "remote_unavailable");
		return complete(d, DPUMESH_STATUS_OK);
	}
	uint32_t dst = _reg->pick_pod(svc);
	if (dst == 0) {
		_stats.no_live_pod.inc();
		reply_error(src, d.req_id, d.step_id, 503, "no_live_pod");
		return complete(d, DPUMESH_STATUS_OK);
	}
	const route_policy *pol = policy_for(svc, v.path);
	uint64_t timeout_ms = pol ? pol->timeout_ms : _default_timeout_ms;
	if (v.deadline_ms && v.deadline_ms < timeout_ms)
		timeout_ms = v.deadline_ms;
	route::pending_entry e{};
	e.origin = pod_party(src);
	e.dest = pod_party(dst);
	e.origin_req_id = d.req_id;
	e.step_id = d.step_id;
	e.start_tsc = now;
	e.deadline_tsc = now + timeout_ms * _tsc_hz / 1000;
	e.service = svc;
	uint32_t token = _pending->insert(e);
	if (token == 0) {
		_stats.overloaded.inc();
		reply_error(src, d.req_id, d.step_id, 503, "overloaded");
		return complete(d, DPUMESH_STATUS_OK);
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
		return complete(n, status);
	}
	route::pending_entry *e = _pending->find(n.req_id);
	if (!e)
		return complete(n, status); /* answered or timed out meanwhile */
	reply_error(e->origin.pod_handle, e->origin_req_id, e->step_id, 503, reason_of(status));
	_pending->remove(n.req_id);
	complete(n, DPUMESH_STATUS_OK);
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
		return complete(n, status); /* answered or timed out meanwhile */
	if (status == DPUMESH_STATUS_SRC_GONE) {
		_pending->remove(n.req_id);
		return complete(n, status);
	}
	if (status == DPUMESH_STATUS_DEST_FULL || status == DPUMESH_STATUS_DEST_GONE) {
		/* another live pod of the service takes it at once */
		uint32_t alt = _reg->pick_pod(e->service);
		if (alt && alt != e->dest.pod_handle && e->attempt < 2) {
			e->attempt++;
			e->dest = pod_party(alt);
			sw_descriptor cmd = n;
			cmd.dst.pod_id = alt;
			cmd.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
			to_dpa(_emu->owner(alt), cmd);
			_stats.retries.inc();
			return;
		}
		/* else wait for room at the same pod, up to the request's deadline */
		/* give up a little before the deadline, so the origin hears "dest_full" rather
		 * than a bare timeout */
		uint64_t margin = _tsc_hz / 200; /* 5 ms */
		uint64_t give_up = e->deadline_tsc > now + margin ? e->deadline_tsc - margin : now;
		if (status == DPUMESH_STATUS_DEST_FULL && park(n, now, give_up))
			return;
	}
	give_up(n);
}

uint32_t sidecar::run() noexcept
{
	const uint64_t now = rte_rdtsc();
	uint32_t work = 0;
	flush_backlogs();
	if (_parking->count)
		work += unpark(now);
	sw_descriptor in[burst];
	for (unsigned t = 0; t < _emu->nb_threads(); t++) {
		/* notifications first: they free pending entries and hbufs */
		if (!backlog_room()) {
			_stats.backlog_stalls.inc();
			break;
		}
		uint32_t n = dpumesh_sq_dequeue_burst(&_emu->arm(t).notify, in, burst);
		for (uint32_t i = 0; i < n; i++)
			note(in[i]);
		work += n;
		if (!backlog_room())
			break;
		n = dpumesh_sq_dequeue_burst(&_emu->arm(t).from_dpa, in, burst);
		for (uint32_t i = 0; i < n; i++) {
			if (i + 1 < n)
				rte_prefetch0(reinterpret_cast<const void *>(in[i + 1].header_buf_addr));
			from_pod(in[i], now);
		}
		work += n;
	}
	if (++_polls % 64 == 0 && backlog_room()) {
		work += _pending->expire(now, [&](uint32_t, route::pending_entry &e) {
			_stats.timeouts.inc();
			reply_error(e.origin.pod_handle, e.origin_req_id, e.step_id, 504, "timeout");
		});
	}
	return work;
}

uint16_t sidecar::poll(void *arg) noexcept
{
	uint32_t w = static_cast<sidecar *>(arg)->run();
	return static_cast<uint16_t>(std::min<uint32_t>(w, UINT16_MAX));
}

} // namespace dpumesh::pipeline
