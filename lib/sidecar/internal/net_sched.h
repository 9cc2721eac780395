// SPDX-License-Identifier: BSD-3-Clause
// The network's requests, scheduled among their sources: a FIFO per source address, served round robin.
//
// Port RX hands whole messages on in arrival order, one ring per shard. A flooding peer
// would own that ring: a light peer's request waits behind everything the floods sent, or
// finds the backlog full and is refused with them. The sidecar therefore takes what the
// ring holds into a FIFO per source (a hash of the source address, as the quotas key
// sources) and serves them one message per source with work per turn (deficit round robin
// with a quantum of one message). Order within a source is kept; across sources it is the
// turn's.
//
// The backlog is bounded (`limit` messages waiting, all sources together). A request that
// finds it full is refused when its own source holds at least its share (`limit` over the
// sources with work) and taken otherwise: the floods are refused beyond their share, a
// light peer never (docs/overload.md "Fairness between network peers").
//
//   net_sched s(1024);
//   if (!s.push(m)) refuse(m);                  // its source at its share of a full backlog
//   unsigned n = s.pop(batch, quantum);         // one per source per turn, up to quantum
//
// Links are the messages' own (`rx_msg::sched_next`): no allocation, O(1) per message.
#pragma once

#include <array>
#include <cstdint>

#include "dpumesh/port/rx.h"
#include "quota.h"

namespace dpumesh::sidecar {

class net_sched {
public:
	/** Sources are told apart by a hash of their address into this many FIFOs. */
	static constexpr uint32_t nb_queues = 64;

	explicit net_sched(uint32_t limit) noexcept : _limit(limit) {}
	net_sched(const net_sched &) = delete;
	net_sched &operator=(const net_sched &) = delete;

	/** Takes a message; false (not taken) when the backlog is full and its source holds
	 *  its share of it: the caller answers it. `always`: taken whatever the backlog (an
	 *  answer from the network, bounded by the requests the node sent). */
	inline bool push(port::rx_msg *m, bool always = false) noexcept;
	/** push() of a message whose quota bucket (quota::bucket_of() of its source address)
	 *  the caller has: its intake, which hashes an address once for a run of messages
	 *  from it. */
	inline bool push(port::rx_msg *m, uint32_t bucket, bool always) noexcept;
	/** Up to `n` messages into `out`, one per source with work per turn, oldest first
	 *  within a source. */
	unsigned pop(port::rx_msg **out, unsigned n) noexcept;

	uint32_t waiting() const noexcept { return _waiting; }
	/** The backlog's bound: a FIFO holding nothing else takes this many. */
	uint32_t limit() const noexcept { return _limit; }
	uint32_t sources() const noexcept { return _nb_active; }
	/** Takes every message out, in no particular order (teardown). */
	template <typename Fn>
	void drain(Fn &&fn)
	{
		port::rx_msg *m[32];
		for (unsigned n; (n = pop(m, 32)) != 0;)
			for (unsigned i = 0; i < n; i++)
				fn(m[i]);
	}

	/** The FIFO of a quota bucket (quota::bucket_of()): the address only, as the quotas
	 *  count sources (one host's ports are one source). push() and queue_of() map alike. */
	static constexpr uint32_t queue_of_bucket(uint32_t bucket) noexcept
	{
		return bucket % nb_queues;
	}
	static uint32_t queue_of(const wire::endpoint &src) noexcept
	{
		return queue_of_bucket(quota::bucket_of(src));
	}

private:
	struct fifo {
		port::rx_msg *head = nullptr, *tail = nullptr;
		uint32_t count = 0;
	};
	std::array<fifo, nb_queues> _q{};
	std::array<uint8_t, nb_queues> _turns{}; /* the sources with work, a ring, in turn order */
	uint32_t _first = 0;                     /* _turns index of the next turn */
	uint32_t _nb_active = 0;
	uint32_t _waiting = 0;
	const uint32_t _limit;
};

/* Inline: the intake's only work on a request (the calls to it, to queue_of() and to
 * quota::bucket_of() were ~25 of the intake's ~85 instructions a message). */
inline bool net_sched::push(port::rx_msg *m, bool always) noexcept
{
	return push(m, quota::bucket_of(m->msg.src), always);
}

inline bool net_sched::push(port::rx_msg *m, uint32_t b, bool always) noexcept
{
	/* the quota bucket, kept for the request's quota check (network_in::take() passes it
	 * on): its FIFO is the bucket's, so the address is hashed once */
	m->source_bucket = static_cast<uint16_t>(b);
	const uint32_t q = queue_of_bucket(b);
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

} // namespace dpumesh::sidecar
