// SPDX-License-Identifier: BSD-3-Clause
// The network's requests scheduled among their sources (internal/net_sched.h).
#include "internal/net_sched.h"

#include <algorithm>

#include "internal/quota.h"

namespace dpumesh::sidecar {

static_assert(quota::nb_sources % net_sched::nb_queues == 0,
	      "a quota bucket maps onto one FIFO");
static_assert(net_sched::nb_queues <= 256, "turns are kept in bytes");

/* The ring's state in locals, written back once: a store to _turns (bytes) may alias
 * anything, so the members were read again after each message's. */
unsigned net_sched::pop(port::rx_msg **out, unsigned n) noexcept
{
	unsigned k = 0;
	uint32_t first = _first, active = _nb_active;
	while (k < n && active != 0) {
		const uint32_t q = _turns[first];
		fifo &f = _q[q];
		if (active == 1) {
			/* one source with work: its turns follow each other, so its FIFO is taken
			 * as a run (the same order and state as one turn at a time) */
			const uint32_t run = std::min<uint32_t>(n - k, f.count);
			port::rx_msg *m = f.head;
			for (uint32_t i = 0; i < run; i++) {
				port::rx_msg *next = m->sched_next;
				m->sched_next = nullptr;
				out[k++] = m;
				m = next;
			}
			f.head = m;
			f.count -= run;
			first = (first + run) % nb_queues;
			if (f.count == 0) {
				f.tail = nullptr;
				active = 0;
			} else {
				_turns[first] = static_cast<uint8_t>(q);
			}
			break;
		}
		port::rx_msg *m = f.head;
		f.head = m->sched_next;
		m->sched_next = nullptr;
		out[k++] = m;
		first = (first + 1) % nb_queues;
		if (--f.count == 0) {
			f.tail = nullptr;
			active--;
		} else { /* its next turn after the others' */
			_turns[(first + active - 1) % nb_queues] = static_cast<uint8_t>(q);
		}
	}
	_first = first;
	_nb_active = active;
	_waiting -= k;
	return k;
}

} // namespace dpumesh::sidecar
