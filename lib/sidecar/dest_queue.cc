// SPDX-License-Identifier: BSD-3-Clause
// Head-of-line queues per destination pod in one fixed pool (internal/dest_queue.h).
#include "internal/dest_queue.h"

#include <algorithm>

namespace dpumesh::sidecar {

dest_queues::dest_queues(uint32_t entries, uint32_t per_destination, uint32_t response_reserve,
			 uint64_t tsc_hz)
	: _pool(std::make_unique<entry[]>(entries)), _entries(entries),
	  _share(per_destination), _reserve(std::min(response_reserve, entries)),
	  _tsc_us(std::max<uint64_t>(tsc_hz / 1000000, 1))
{
	for (uint32_t i = entries; i-- > 0;) {
		_pool[i].next = _free;
		_free = i;
	}
}

/* An entry from the pool holding c (none: empty). */
uint32_t dest_queues::take(const dpa_command &c, uint64_t give_up_at) noexcept
{
	const uint32_t i = _free;
	if (i == none)
		return none;
	_free = _pool[i].next;
	_pool[i].cmd = c;
	_pool[i].cmd.resume = false;
	_pool[i].cmd.notify = false;
	_pool[i].give_up_at = give_up_at;
	_pool[i].next = none;
	_used++;
	if (network_request(c))
		_net_requests++;
	return i;
}

/* Entry i off d's queue wherever it is (prev: the one before it, none at the head), back to
 * the pool: what came back before the others is a prefix of the queue, so its last one is
 * the one before i when i was */
void dest_queues::unlink(dest &d, uint32_t prev, uint32_t i) noexcept
{
	const uint32_t after = _pool[i].next;
	if (prev == none)
		d.head = after;
	else
		_pool[prev].next = after;
	if (d.tail == i)
		d.tail = prev;
	if (d.bounced_tail == i)
		d.bounced_tail = prev;
	d.count--;
	if (_pool[i].cmd.what == dpa_command::op::deliver_response)
		d.answers--;
	if (network_request(_pool[i].cmd))
		_net_requests--;
	_pool[i].next = _free;
	_free = i;
	_used--;
}

/* The first entry off d's queue (back to the pool by the caller's copy). */
uint32_t dest_queues::pop(dest &d) noexcept
{
	const uint32_t i = d.head;
	unlink(d, none, i);
	return i;
}

void dest_queues::list(uint32_t pod_id) noexcept
{
	dest &d = _dest[pod_id];
	if (d.listed)
		return;
	d.listed = true;
	_active[_nb_active++] = static_cast<uint8_t>(pod_id);
}

dest_queues::verdict dest_queues::admit(const dpa_command &c, uint64_t give_up_at) noexcept
{
	dest &d = _dest[DPUMESH_HANDLE_POD_ID(c.dst)];
	if (d.count == 0 && d.st == state::open)
		return verdict::send;
	/* requests stop at the destination's share and leave the reserve to responses (an
	 * answer refused here is never answered at all) */
	if (c.what == dpa_command::op::deliver_request &&
	    (d.count >= _share || _used + _reserve >= _entries))
		return verdict::refused;
	if (network_full(c))
		return verdict::refused_network;
	const uint32_t i = take(c, give_up_at);
	if (i == none)
		return verdict::refused;
	if (d.tail == none)
		d.head = i;
	else
		_pool[d.tail].next = i;
	d.tail = i;
	d.count++;
	if (c.what == dpa_command::op::deliver_response)
		d.answers++;
	return verdict::queued;
}

bool dest_queues::bounced(const dpa_command &c, uint64_t give_up_at, uint64_t now,
			  bool keep) noexcept
{
	const uint32_t id = DPUMESH_HANDLE_POD_ID(c.dst);
	dest &d = _dest[id];
	if (!d.suspect && (d.st == state::open || d.st == state::probing))
		d.stalled_since = now; /* it took deliveries until now */
	if (c.resume || d.st == state::open || d.st == state::probing) {
		/* held back now: try again after 20 us, doubling per resume that found it still
		 * full, up to 1.28 ms */
		d.bounces = c.resume ? std::min<uint32_t>(d.bounces + 1, 6) : 0;
		d.st = state::held;
		d.retry_at = now + _tsc_us * (20u << d.bounces);
		list(id);
	}
	/* refused (the caller answers it): the rest still waits for the next resume, and a
	 * window or resume that ends here has its outcome all the same */
	if (network_full(c))
		keep = false;
	const uint32_t i = keep ? take(c, give_up_at) : none;
	if (i == none)
		return false;
	/* it was sent before anything queued that was never sent: it goes behind what came
	 * back before it and ahead of the rest. A RESUME that found no room is the oldest of
	 * all (everything that came back since was sent behind it). */
	if (c.resume || d.bounced_tail == none) {
		_pool[i].next = d.head;
		d.head = i;
		if (d.tail == none)
			d.tail = i;
		if (d.bounced_tail == none)
			d.bounced_tail = i;
	} else {
		_pool[i].next = _pool[d.bounced_tail].next;
		_pool[d.bounced_tail].next = i;
		if (d.tail == d.bounced_tail)
			d.tail = i;
		d.bounced_tail = i;
	}
	d.count++;
	if (c.what == dpa_command::op::deliver_response)
		d.answers++;
	return true;
}

bool dest_queues::probe(uint32_t dst) noexcept
{
	const uint32_t id = DPUMESH_HANDLE_POD_ID(dst);
	dest &d = _dest[id];
	if (!d.suspect || d.st != state::open)
		return false;
	d.st = state::probing;
	list(id);
	return true;
}

void dest_queues::outcome(uint32_t dst) noexcept
{
	dest &d = _dest[DPUMESH_HANDLE_POD_ID(dst)];
	d.suspect = false; /* a delivery got in */
	if (d.st == state::resuming) {
		d.st = state::open;
		d.bounces = 0;
		d.window = 2;
	} else if (d.st == state::probing) {
		d.st = state::open;
		d.window = std::min<uint32_t>(d.window * 2, 256);
	}
}

uint32_t dest_queues::next(uint64_t now, out *o, uint32_t max, uint64_t answer_stall) noexcept
{
	uint32_t n = 0;
	for (uint32_t visited = 0; visited < _nb_active && n < max;) {
		if (_cursor >= _nb_active)
			_cursor = 0;
		const uint32_t id = _active[_cursor];
		dest &d = _dest[id];
		/* what waits past its give-up time at the head is answered, not sent; so are
		 * the answers at the head of a pod that has taken nothing for answer_stall */
		const bool stalled = (d.st == state::held || d.st == state::resuming) &&
				     now > d.stalled_since && now - d.stalled_since >= answer_stall;
		while (n < max && d.count &&
		       (now >= _pool[d.head].give_up_at ||
			(stalled && _pool[d.head].cmd.what == dpa_command::op::deliver_response))) {
			o[n].cmd = _pool[pop(d)].cmd;
			o[n].expired = true;
			n++;
		}
		if (d.st == state::held && d.count && now >= d.retry_at && n < max) {
			o[n].cmd = _pool[pop(d)].cmd;
			o[n].cmd.resume = true;
			o[n].expired = false;
			n++;
			d.st = state::resuming;
		} else if (d.st == state::held && d.count == 0) {
			/* every one expired: nothing is held back any more, but nothing got in
			 * either: the next delivery probes (probe()) */
			d.st = state::open;
			d.suspect = true;
		}
		if (d.st == state::open && d.count && n < max) {
			/* a window, in order; its last one reports back while more wait. What
			 * is left was not sent since: what of the window comes back goes ahead
			 * of all of it (the kernel gave back everything sent before the resume
			 * before it was in) */
			for (uint32_t w = 0; w < d.window && d.count && n < max; w++) {
				o[n].cmd = _pool[pop(d)].cmd;
				o[n].expired = false;
				n++;
			}
			d.bounced_tail = none;
			if (d.count) {
				o[n - 1].cmd.notify = true;
				d.st = state::probing;
			}
		}
		if (d.count == 0 && d.st == state::open) {
			/* idle: off the list (the last one moves here and is visited next) */
			d.listed = false;
			_active[_cursor] = _active[--_nb_active];
			continue;
		}
		_cursor++;
		visited++;
	}
	return n;
}

} // namespace dpumesh::sidecar
