// SPDX-License-Identifier: BSD-3-Clause
// The network's requests scheduled among their sources (internal/net_sched.h).
#include "internal/net_sched.h"

#include "internal/quota.h"

namespace dpumesh::sidecar {

static_assert(quota::nb_sources % net_sched::nb_queues == 0,
	      "a quota bucket maps onto one FIFO");
static_assert(net_sched::nb_queues <= 256, "turns are kept in bytes");

uint32_t net_sched::queue_of(const wire::endpoint &src) noexcept
{
	/* the address only, as the quotas count sources: one host's ports are one source */
	return quota::bucket_of(src) % nb_queues;
}

bool net_sched::push(port::rx_msg *m, bool always) noexcept
{
	/* the quota bucket, kept for the request's quota check (network_in::take() passes it
	 * on): its FIFO is the bucket's, so the address is hashed once */
	const uint32_t b = quota::bucket_of(m->msg.src);
	m->source_bucket = static_cast<uint16_t>(b);
	const uint32_t q = b % nb_queues;
	fifo &f = _q[q];
	/* full: a source with work holds its share of it at most (the sources with work, this
	 * one counted if it has none yet) */
	if (!always && _waiting >= _limit &&
	    f.count >= _limit / (_nb_active + (f.count == 0 ? 1 : 0))) [[unlikely]]
		return false;
	m->sched_next = nullptr;
	if (f.count == 0) {
		f.head = m;
		_turns[(_first + _nb_active) % nb_queues] = static_cast<uint8_t>(q);
		_nb_active++;
	} else {
		f.tail->sched_next = m;
	}
	f.tail = m;
	f.count++;
	_waiting++;
	return true;
}

unsigned net_sched::pop(port::rx_msg **out, unsigned n) noexcept
{
	unsigned k = 0;
	while (k < n && _nb_active != 0) {
		const uint32_t q = _turns[_first];
		fifo &f = _q[q];
		port::rx_msg *m = f.head;
		f.head = m->sched_next;
		m->sched_next = nullptr;
		out[k++] = m;
		_waiting--;
		_first = (_first + 1) % nb_queues;
		if (--f.count == 0) {
			f.tail = nullptr;
			_nb_active--;
		} else { /* its next turn after the others' */
			_turns[(_first + _nb_active - 1) % nb_queues] = static_cast<uint8_t>(q);
		}
	}
	return k;
}

} // namespace dpumesh::sidecar
