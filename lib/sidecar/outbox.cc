// SPDX-License-Identifier: BSD-3-Clause
// The outbox: per-DPA-thread backlogs in front of the sidecar RX SQs, per-destination
// queues, and parking.
#include "internal/outbox.h"

#include <algorithm>

#include <rte_cycles.h>

#include "dpumesh/dpa/emulator.h"
#include "dpumesh/sidecar/sidecar.h"
#include "dpumesh/wire/l7.h"

namespace dpumesh::sidecar {

void drop_command(const dpa_command &c, const dpa::arm_side &dpa) noexcept
{
	if (c.network_body())
		dpa::release_local_body(c.body);
	dpa.give_hbuf(hbuf_meta(c.header));
}

outbox::outbox(std::vector<dpumesh_sq *> to_dpa, const dpa::arm_side *dpa, uint64_t tsc_hz,
	       counters &stats, std::vector<rte_ring *> remote, uint32_t q_entries,
	       uint32_t q_share)
	: _to_dpa(std::move(to_dpa)), _remote(std::move(remote)), _dpa(dpa), _tsc_hz(tsc_hz),
	  _ms_per_tsc((uint64_t(1000) << 32) / std::max<uint64_t>(tsc_hz, 1)), _stats(stats),
	  _parking(std::make_unique<parked_cmd[]>(parking_size)),
	  _queues(q_entries, q_share, response_reserve, tsc_hz)
{
	_remote.resize(_to_dpa.size(), nullptr);
	for (size_t t = 0; t < _to_dpa.size(); t++)
		_backlogs.push_back(std::make_unique<backlog>());
}

bool outbox::put(unsigned thread, const dpa_command &c) noexcept
{
	if (rte_ring *r = _remote[thread]) [[unlikely]] {
		handoff_item h;
		h.what = handoff_item::kind::command;
		h.thread = thread;
		h.cmd = c;
		if (rte_ring_mp_enqueue_elem(r, &h, sizeof(h)) != 0)
			return false;
		_stats.handoff_out.inc();
		return true;
	}
	if (c.what == dpa_command::op::deliver_request)
		stamp_deadline(c);
	const sw_descriptor d = c.encode();
	if (dpumesh_sq_enqueue_burst(_to_dpa[thread], &d, 1) != 1)
		return false;
	_posted |= 1u << thread;
	return true;
}

/* What the pod sees of its request's deadline is what the mesh holds it to: the smaller of
 * the caller's budget and the route's timeout, less the time the request has spent in this
 * node (waiting for room in its pod, a retry's back-off), written into the header the DPA
 * is about to copy to the pod. To the nearest ms, at least 1 (0 would say "no deadline").
 * Only the mesh's own copy of the header changes (an hbuf in DPU memory), never the
 * sender's, and only where the value does: a request on time and under its route's timeout
 * keeps its budget, and the header's line stays as the DPA wrote it (a write would take it
 * from the DPA thread's cache for one more transfer back). */
void outbox::stamp_deadline(const dpa_command &c) const noexcept
{
	const uint64_t by = scratch_of(c.header).deliver_by;
	if (by == 0) [[unlikely]]
		return;
	const uint64_t now = _now ? _now : rte_rdtsc();
	const uint64_t left = by > now ? by - now : 0;
	const auto scaled = static_cast<unsigned __int128>(left) * _ms_per_tsc + (1ull << 31);
	const uint64_t ms = static_cast<uint64_t>(scaled >> 32);
	auto *hdr = reinterpret_cast<uint8_t *>(c.header);
	const uint32_t want = static_cast<uint32_t>(std::clamp<uint64_t>(ms, 1, UINT32_MAX));
	if (wire::l7_deadline(hdr) != want)
		wire::l7_set_deadline(hdr, want);
}

outbox::~outbox() = default;

void outbox::send(unsigned thread, const dpa_command &c) noexcept
{
	backlog &b = *_backlogs[thread];
	if (b.count == 0 && put(thread, c))
		return;
	/* keep order behind what is already waiting; room is kept by room() */
	if (b.count == backlog_size) [[unlikely]] {
		_stats.backlog_overflow.inc();
		if (c.delivers())
			drop_command(c, *_dpa);
		else
			_dpa->give_hbuf(hbuf_meta(c.header));
		return;
	}
	b.q[(b.head + b.count) % backlog_size] = c;
	b.count++;
	_backlogged++;
}

void outbox::flush() noexcept
{
	if (_backlogged == 0)
		return;
	for (size_t t = 0; t < _backlogs.size(); t++) {
		backlog &b = *_backlogs[t];
		while (b.count) {
			if (!put(static_cast<unsigned>(t), b.q[b.head]))
				break;
			b.head = (b.head + 1) % backlog_size;
			b.count--;
			_backlogged--;
		}
	}
}

uint32_t outbox::free() const noexcept
{
	uint32_t f = backlog_size;
	for (const auto &b : _backlogs)
		f = std::min(f, backlog_size - b->count);
	return f;
}

bool outbox::park(const dpa_command &c, uint64_t now, uint64_t give_up_at,
		  uint64_t retry_at) noexcept
{
	/* responses may take the last slots, requests may not: a request refused here is
	 * answered 503 by the mesh, a response refused here is never answered at all (the
	 * soak lost responses to a parking full of bounced Case 2 requests) */
	const bool response = c.what == dpa_command::op::deliver_response;
	if (_park_count >= (response ? parking_size : parking_size - response_reserve))
		return false;
	/* the first give-up time stays with the delivery (in its hbuf's scratch), so one that
	 * bounces again and again still ends on time */
	hbuf_scratch &s = scratch_of(c.header);
	if (s.park_give_up && s.park_give_up < give_up_at)
		give_up_at = s.park_give_up;
	s.park_give_up = give_up_at;
	/* back off exponentially per bounce: 20 us .. 1.28 ms */
	const uint32_t bounces = s.park_bounces;
	s.park_bounces = bounces < 255 ? bounces + 1 : 255;
	parked_cmd &pc = _parking[(_park_head + _park_count) % parking_size];
	pc.cmd = c;
	const uint64_t delay_us = 20u << std::min<uint32_t>(bounces, 6);
	pc.retry_at = retry_at ? retry_at : now + _tsc_hz / 1000000 * delay_us;
	pc.give_up_at = give_up_at;
	_park_count++;
	_stats.parked.inc();
	return true;
}

uint32_t outbox::unpark(uint64_t now, due *out, uint32_t max) noexcept
{
	uint32_t n = 0;
	while (_to_visit && n < max) {
		_to_visit--;
		parked_cmd pc = _parking[_park_head];
		_park_head = (_park_head + 1) % parking_size;
		_park_count--;
		if (now < pc.retry_at) { /* not yet: back to the end */
			_parking[(_park_head + _park_count) % parking_size] = pc;
			_park_count++;
			continue;
		}
		out[n].cmd = pc.cmd;
		out[n].expired = now >= pc.give_up_at;
		n++;
	}
	return n;
}

} // namespace dpumesh::sidecar
