// SPDX-License-Identifier: BSD-3-Clause
// In-order op bookkeeping shared by every DMA backend: a ring of ops with their segments.
//
// Invariants: ops enter at _tail, receive segment completions at _cursor (segments finish
// in submission order, as dmadev reports them), and leave at _head, so
// _head <= _cursor <= _tail and every op in [_head, _cursor) is finished. Ring space is
// counted in ops and in segments; both are returned when poll() hands the op out.
#pragma once

#include <cerrno>
#include <cstdint>
#include <memory>

#include "dpumesh/dma/dma.h"

namespace dpumesh::dma::internal {

/** Segments needed for `len` bytes with segments of at most `max_seg` bytes. */
inline uint32_t segments_for(uint32_t len, uint32_t max_seg) noexcept
{
	return static_cast<uint32_t>((static_cast<uint64_t>(len) + max_seg - 1) / max_seg);
}

class op_tracker {
public:
	/** `capacity`: ops and segments outstanding at most (1..32768). */
	explicit op_tracker(uint16_t capacity)
		: _capacity(capacity), _mask(ring_size(capacity) - 1),
		  _slots(std::make_unique<slot[]>(_mask + 1))
	{
	}

	uint16_t capacity() const noexcept { return _capacity; }
	uint16_t ops() const noexcept { return static_cast<uint16_t>(_tail - _head); }
	/** ops() for a thread other than the owner's (telemetry): _head and _tail are stored
	 * with relaxed atomic stores, so this reads them without a data race. Not gauges
	 * (counter.h): the owner's own reads stay plain, which keeps them in registers in
	 * submit()'s loop (as gauges, cpu_engine.o's Release code was 6 instructions longer). */
	uint16_t ops_seen() const noexcept
	{
		return static_cast<uint16_t>(__atomic_load_n(&_tail, __ATOMIC_RELAXED) -
					     __atomic_load_n(&_head, __ATOMIC_RELAXED));
	}
	uint32_t segments() const noexcept { return _segments; }

	/** True when one more op of `nb_segs` segments fits. */
	bool fits(uint32_t nb_segs) const noexcept
	{
		return ops() < _capacity && _segments + nb_segs <= _capacity;
	}

	/**
	 * Adds an op holding `nb_segs` ring segments of which `pending` have not completed
	 * yet; `status` is its error so far (0 = ok). Call only when fits(nb_segs).
	 */
	void push(uint64_t cookie, uint32_t len, uint32_t nb_segs, uint32_t pending,
		  int32_t status) noexcept
	{
		slot &s = _slots[_tail & _mask];
		s.cookie = cookie;
		s.len = len;
		s.nb_segs = nb_segs;
		s.pending = pending;
		s.status = status;
		__atomic_store_n(&_tail, _tail + 1, __ATOMIC_RELAXED); /* ops_seen() */
		_segments += nb_segs;
		_pending_segments_total += pending;
		advance();
	}

	/** Segments handed to the device and not yet reported done. */
	uint32_t pending_segments() const noexcept { return _pending_segments_total; }

	/** The next segment (in submission order) finished with `status` (0 = ok). */
	void segment_done(int32_t status) noexcept
	{
		slot &s = _slots[_cursor & _mask];
		if (status != 0 && s.status == 0)
			s.status = status;
		s.pending--;
		_pending_segments_total--;
		advance();
	}

	/** Hands out finished ops from the head; returns how many. */
	uint16_t drain(completion *out, uint16_t max, engine_stats &stats) noexcept
	{
		uint16_t n = 0;
		uint32_t segs = 0;
		uint64_t errors = 0;
		uint32_t head = _head;
		while (n < max && head != _cursor) {
			const slot &s = _slots[head & _mask];
			out[n].cookie = s.cookie;
			out[n].status = s.status;
			out[n].len = s.len;
			errors += s.status != 0;
			segs += s.nb_segs;
			head++;
			n++;
		}
		__atomic_store_n(&_head, head, __ATOMIC_RELAXED); /* ops_seen() */
		_segments -= segs;
		if (n) {
			stats.ops_completed.add(n);
			if (errors)
				stats.errors.add(errors);
		}
		return n;
	}

private:
	struct slot {
		uint64_t cookie;
		uint32_t len;
		uint32_t nb_segs;
		uint32_t pending;
		int32_t status;
	};

	static uint32_t ring_size(uint32_t n) noexcept
	{
		uint32_t r = 1;
		while (r < n)
			r <<= 1;
		return r;
	}

	/** Moves the cursor past finished ops (including ops that never had segments). */
	void advance() noexcept
	{
		while (_cursor != _tail && _slots[_cursor & _mask].pending == 0)
			_cursor++;
	}

	uint16_t _capacity;
	uint32_t _mask;
	std::unique_ptr<slot[]> _slots;
	uint32_t _head = 0;
	uint32_t _cursor = 0;
	uint32_t _tail = 0;
	uint32_t _segments = 0;
	uint32_t _pending_segments_total = 0;
};

} // namespace dpumesh::dma::internal

namespace dpumesh::dma::internal {

/**
 * The submit loop every backend shares: validates and splits each op, checks ring room,
 * and calls `copy(op, nb_segs, &pending)` to start the segments; `copy` returns the op's
 * error (0 = ok) and sets how many segments it handed to the device and still owes a
 * completion for (0 for a synchronous copy). Inlined per backend: no indirect call per op.
 */
template <typename Copy>
inline uint16_t submit_burst(op_tracker &t, engine_stats &stats, uint32_t max_seg,
			     const copy_op *ops, uint16_t n, Copy &&copy) noexcept
{
	uint16_t i = 0;
	uint64_t segs = 0;
	uint64_t bytes = 0;
	for (; i < n; i++) {
		const copy_op &op = ops[i];
		uint32_t nb = segments_for(op.len, max_seg);
		int32_t st = 0;
		if (op.len != 0 && (op.dst == nullptr || op.src == nullptr)) [[unlikely]]
			st = -EINVAL;
		else if (nb > t.capacity()) [[unlikely]]
			st = -E2BIG;
		if (st != 0)
			nb = 0;
		if (!t.fits(nb))
			break;
		uint32_t pending = 0;
		if (nb != 0)
			st = copy(op, nb, pending);
		t.push(op.cookie, op.len, nb, pending, st);
		segs += nb;
		if (nb != 0)
			bytes += op.len;
	}
	if (i) {
		stats.ops_submitted.add(i);
		stats.segments_submitted.add(segs);
		stats.bytes_submitted.add(bytes);
	}
	if (i < n)
		stats.ring_full.add(n - i);
	return i;
}

} // namespace dpumesh::dma::internal
