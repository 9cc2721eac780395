// SPDX-License-Identifier: BSD-3-Clause
// Owed answers: error answers made here that found no buffer yet, kept in order until one returns.
//
// An error answer (404, 503, 504, 502 ...) is a request's one answer; when it cannot be made
// for want of a buffer it is owed, not dropped: an answer to a pod waits for a DPU header
// buffer (hbuf), one to a network requester for a packet mbuf and room on the port's TX
// ring. The stage pays what it owes at the start of each poll, oldest first, before any new
// input can take the buffers that came back (docs/quota.md, "One answer for every request").
// Fixed capacity, no allocation after construction; what does not fit is counted
// (`answers_unsent`, never expected: the quotas keep the hbufs and the pending table bounded).
//
//   owed o(4096);
//   if (!make_it(a) && !o.pods.push(a)) stats.answers_unsent.inc();
//   while (!o.pods.empty() && make_it(o.pods.front())) o.pods.pop();
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "dpumesh/abi/abi.h"
#include "dpumesh/common/counter.h"

#include "egress.h"

namespace dpumesh::sidecar {

/** One error answer that waits for a buffer. */
struct owed_answer {
	remote to;                 /**< a network requester: where the frame goes */
	uint64_t correlation = 0;  /**< a network requester: its message's correlation */
	uint32_t pod = 0;          /**< a pod requester: its handle */
	uint32_t req_id = 0;       /**< a pod requester: its request's ids */
	uint32_t step_id = 0;
	uint16_t status = 0;
	const char *reason = nullptr; /**< a literal or a static name (outlives the stage) */
};

/** A FIFO of owed answers with a fixed capacity (a power of two). */
class owed_fifo {
public:
	explicit owed_fifo(uint32_t capacity)
		: _q(std::make_unique<owed_answer[]>(capacity)), _mask(capacity - 1)
	{
	}
	bool empty() const noexcept { return _head == _tail; }
	uint32_t size() const noexcept { return _tail - _head; }
	/** false: full (the caller counts it). */
	bool push(const owed_answer &a) noexcept
	{
		if (size() > _mask)
			return false;
		_q[_tail++ & _mask] = a;
		return true;
	}
	const owed_answer &front() const noexcept { return _q[_head & _mask]; }
	void pop() noexcept { _head++; }

private:
	std::unique_ptr<owed_answer[]> _q;
	uint32_t _mask;
	uint32_t _head = 0, _tail = 0;
};

/**
 * Answers refused for want of their requester's RX room (it took nothing for rx_stall_ms,
 * or too many answers waited for it): each is owed to its requester as one 504
 * `answer_refused`, kept per pod until the pod takes deliveries again. An entry is the
 * request's ids (no buffer: the responder's went back at once). A pod's list is bounded by
 * its quota (quota::pod_may_ask counts it), all lists by one pool. docs/quota.md.
 *
 *   owed_refusals r(16384, tsc_hz);
 *   if (!r.push(pod, req_id, step_id, now)) stats.answers_unsent.inc();
 *   r.visit([&](uint32_t id, owed_refusals::pod_list &p) { ... r.pop(p) ... });
 */
class owed_refusals {
public:
	struct entry {
		uint32_t req_id = 0, step_id = 0;
		uint32_t next = UINT32_MAX;
	};
	struct pod_list {
		uint32_t handle = 0; /**< the generation the entries are for */
		uint32_t head = UINT32_MAX, tail = UINT32_MAX, count = 0;
		uint64_t next_try = 0; /**< TSC: not tried before */
		uint32_t backoff_us = 0; /**< doubles per try its pod refused again */
		bool listed = false;
	};

	owed_refusals(uint32_t capacity, uint64_t tsc_hz)
		: _pool(std::make_unique<entry[]>(capacity)), _tsc_us(tsc_hz / 1000000 + 1)
	{
		for (uint32_t i = capacity; i-- > 0;) {
			_pool[i].next = _free;
			_free = i;
		}
	}
	bool empty() const noexcept { return _nb_listed == 0; }
	uint32_t count(uint32_t pod_id) const noexcept { return _pods[pod_id % DPUMESH_MAX_PODS].count; }
	/** Every entry owed, all pods (control and tests). */
	uint32_t size() const noexcept { return _used; }

	/** Owes pod `handle` a refusal of (req_id, step_id); `again`: it was owed before and its
	 *  pod refused it again (the next try backs off: 1 ms doubling to 64 ms). false: the
	 *  pool is full (the caller counts it). A former generation's entries are forgotten. */
	bool push(uint32_t handle, uint32_t req_id, uint32_t step_id, uint64_t now,
		  bool again) noexcept
	{
		const uint32_t id = DPUMESH_HANDLE_POD_ID(handle);
		pod_list &p = _pods[id];
		if (p.count && p.handle != handle)
			forget(p);
		p.handle = handle;
		if (_free == UINT32_MAX)
			return false;
		const uint32_t i = _free;
		_free = _pool[i].next;
		_pool[i] = entry{req_id, step_id, UINT32_MAX};
		if (p.tail == UINT32_MAX)
			p.head = i;
		else
			_pool[p.tail].next = i;
		p.tail = i;
		p.count++;
		_used++;
		if (again)
			p.backoff_us = p.backoff_us ? std::min<uint32_t>(p.backoff_us * 2, 64000) : 1000;
		const uint64_t at = now + uint64_t(p.backoff_us ? p.backoff_us : 1000) * _tsc_us;
		if (!p.listed) {
			p.listed = true;
			p.next_try = at;
			_listed[_nb_listed++] = static_cast<uint8_t>(id);
		} else if (again) {
			p.next_try = at;
		}
		return true;
	}
	const entry &front(const pod_list &p) const noexcept { return _pool[p.head]; }
	void pop(pod_list &p) noexcept
	{
		const uint32_t i = p.head;
		p.head = _pool[i].next;
		if (p.head == UINT32_MAX)
			p.tail = UINT32_MAX;
		_pool[i].next = _free;
		_free = i;
		p.count--;
		_used--;
	}
	/** Drops a pod's entries (its requester is gone); how many. */
	uint32_t forget(pod_list &p) noexcept
	{
		const uint32_t n = p.count;
		while (p.count)
			pop(p);
		return n;
	}
	/** fn(pod_list&) for every pod that is owed something; a list left empty is unlisted
	 *  (and its back-off reset). */
	template <typename Fn>
	void visit(Fn &&fn)
	{
		for (uint32_t k = 0; k < _nb_listed;) {
			pod_list &p = _pods[_listed[k]];
			fn(p);
			if (p.count == 0) {
				p.listed = false;
				p.backoff_us = 0;
				_listed[k] = _listed[--_nb_listed];
				continue;
			}
			k++;
		}
	}

private:
	std::unique_ptr<entry[]> _pool;
	uint32_t _free = UINT32_MAX;
	gauge<uint32_t> _used; /* size() is read by control */
	const uint64_t _tsc_us;
	pod_list _pods[DPUMESH_MAX_PODS];
	uint8_t _listed[DPUMESH_MAX_PODS];
	uint32_t _nb_listed = 0;
};

/** What the stage owes: answers to pods (waiting for an hbuf) and to the network (an mbuf,
 *  TX ring room), and refused answers to pods that did not drain (waiting for them to). */
struct owed {
	static constexpr uint32_t capacity = 4096; /* each; a power of two */
	/** refused answers owed, all pods (each pod's bounded by its quota besides) */
	static constexpr uint32_t refusal_capacity = 16384;
	explicit owed(uint64_t tsc_hz) : refused(refusal_capacity, tsc_hz) {}
	owed_fifo pods{capacity};
	owed_fifo net{capacity};
	owed_refusals refused;
	uint64_t next_net_try = 0; /* TSC: after a failed frame, the port is tried again then */
	bool empty() const noexcept { return pods.empty() && net.empty() && refused.empty(); }
};

} // namespace dpumesh::sidecar
