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

#include <cstdint>
#include <memory>

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

/** What the stage owes: answers to pods (waiting for an hbuf) and to the network (an mbuf,
 *  TX ring room). */
struct owed {
	static constexpr uint32_t capacity = 4096; /* each; a power of two */
	owed_fifo pods{capacity};
	owed_fifo net{capacity};
	uint64_t next_net_try = 0; /* TSC: after a failed frame, the port is tried again then */
	bool empty() const noexcept { return pods.empty() && net.empty(); }
};

} // namespace dpumesh::sidecar
