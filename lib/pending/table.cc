// SPDX-License-Identifier: BSD-3-Clause
// Pending-request table: slot array with generation tokens, deadline FIFOs and a timing wheel.
#include "dpumesh/pending/table.h"

#include <algorithm>

namespace dpumesh::pending {

table::table(uint32_t capacity, uint64_t tsc_hz, uint32_t wheel_ticks)
{
	uint32_t c = 1;
	while (c < capacity && c < 65536)
		c <<= 1;
	_capacity = c;
	_tick_tsc = std::max<uint64_t>(tsc_hz / 1000, 1);
	uint32_t w = 1;
	while (w < wheel_ticks && w < (1u << 20))
		w <<= 1;
	_wheel_mask = w - 1;
	_slots = make_huge_array<slot>(c);
	_buckets.reset(new uint32_t[w]);
	std::fill(_buckets.get(), _buckets.get() + w, nil);
	for (uint32_t i = 0; i < c; i++) {
		_slots[i].next = i + 1 < c ? i + 1 : nil;
		_slots[i].gen = 1;
	}
	/* not initialised: a FIFO's pages are touched only as far as it is used */
	for (fifo &q : _fifos)
		q.items = make_huge_array<fifo_item>(c, false);
}

table::~table() = default;

uint32_t table::index_of(uint32_t token) const noexcept
{
	uint32_t idx = token & 0xffff;
	if (idx >= _capacity || !_slots[idx].used || _slots[idx].gen != (token >> 16))
		return nil;
	return idx;
}

void table::link(uint32_t idx) noexcept
{
	slot &s = _slots[idx];
	uint64_t tick = s.e.deadline_tsc / _tick_tsc;
	if (tick < _cur_tick)
		tick = _cur_tick; /* already late: the next expire() sees it */
	uint32_t b = static_cast<uint32_t>(tick & _wheel_mask);
	s.bucket = b;
	s.prev = nil;
	s.next = _buckets[b];
	if (s.next != nil)
		_slots[s.next].prev = idx;
	_buckets[b] = idx;
}

void table::unlink(uint32_t idx) noexcept
{
	slot &s = _slots[idx];
	if (s.prev != nil)
		_slots[s.prev].next = s.next;
	else
		_buckets[s.bucket] = s.next;
	if (s.next != nil)
		_slots[s.next].prev = s.prev;
}

uint32_t table::insert(const entry &e) noexcept
{
	entry *to = next_entry();
	if (!to)
		return 0;
	*to = e;
	return insert_written();
}

entry *table::find(uint32_t token) noexcept
{
	uint32_t idx = index_of(token);
	return idx == nil ? nullptr : &_slots[idx].e;
}

entry *table::match(uint32_t token, const party &responder,
				    uint32_t step_id) noexcept
{
	entry *e = find(token);
	if (!e || !(e->dest == responder) || e->step_id != step_id)
		return nullptr;
	return e;
}

void table::remove(uint32_t token) noexcept
{
	uint32_t idx = index_of(token);
	if (idx != nil)
		free_slot(idx);
}

void table::rearm(uint32_t token, uint64_t deadline_tsc) noexcept
{
	uint32_t idx = index_of(token);
	if (idx == nil)
		return;
	leave(idx); /* a re-armed entry goes to the wheel: its FIFO is in deadline order */
	_slots[idx].e.deadline_tsc = deadline_tsc;
	link(idx);
}

} // namespace dpumesh::pending
