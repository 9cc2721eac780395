// SPDX-License-Identifier: BSD-3-Clause
// Port TX stage: the sidecar's frames out of a port queue, owed in order to a slow peer.
#include "dpumesh/port/tx.h"

#include <algorithm>

#include <rte_cycles.h>
#include <rte_ethdev.h>

#include "dpumesh/common/tsan.h"

namespace dpumesh::port {

status tx_ctx::set_backlog(uint32_t frames)
{
	if (frames == 0) {
		_bl.reset();
		_bl_mask = 0;
		return status::ok();
	}
	if ((frames & (frames - 1)) != 0 || frames < burst || frames > (1u << 20))
		return errorf("port TX backlog of %u frames: need 0 or a power of two from %u to %u",
			      frames, burst, 1u << 20);
	_bl = std::make_unique<rte_mbuf *[]>(frames);
	_bl_mask = frames - 1;
	_bl_head = _bl_tail = 0;
	return status::ok();
}

tx_ctx::~tx_ctx()
{
	rte_pktmbuf_free_bulk(held, nb_held);
	nb_held = 0;
	for (; _bl_head != _bl_tail; _bl_head++)
		rte_pktmbuf_free(_bl[_bl_head & _bl_mask]);
	void *m = nullptr;
	while (in && rte_ring_dequeue(in, &m) == 0)
		rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
}

namespace {

/* `n` frames to the NIC: what it took is counted, and a stall ends; what it did not take
 * stays where it was (the caller's) */
uint16_t burst_out(tx_ctx &c, rte_mbuf **frames, uint16_t n) noexcept
{
	/* before: what the NIC took is no longer ours. Four frames a step: the loop's add,
	 * compare and branch a frame were ~6 instructions a forwarded message (two frames) */
	uint64_t bytes = 0;
	unsigned i = 0;
	for (; i + 4 <= n; i += 4)
		bytes += uint64_t(frames[i]->pkt_len) + frames[i + 1]->pkt_len +
			 frames[i + 2]->pkt_len + frames[i + 3]->pkt_len;
	for (; i < n; i++)
		bytes += frames[i]->pkt_len;
	DPUMESH_TSAN_PMD_GIVES(frames, n);
	const uint16_t sent = rte_eth_tx_burst(c.port, c.queue, frames, n);
	if (sent) {
		for (unsigned k = sent; k < n; k++)
			bytes -= frames[k]->pkt_len;
		c.stats.frames.add(sent);
		c.stats.bytes.add(bytes);
		c.stalled = 0;
	} else {
		c.stats.stalls.inc();
	}
	return sent;
}

} // namespace

/* The backlog's operations; a friend of tx_ctx (its ring indices are private). */
struct tx_backlog_ops {
	static uint64_t tsc_of_ms(uint32_t ms) noexcept { return rte_get_tsc_hz() / 1000 * ms; }

	/* the held burst moves to the (empty) backlog: it is owed now */
	static void owe_held(tx_ctx &c) noexcept
	{
		for (unsigned i = 0; i < c.nb_held; i++)
			c._bl[c._bl_tail++ & c._bl_mask] = c.held[i];
		c.stats.owed.add(c.nb_held);
		c.nb_held = 0;
	}

	/* what the sidecar queued since goes behind what is owed, while there is room: its
	 * ring keeps room for new answers, and no frame overtakes an older one */
	static void take_in(tx_ctx &c) noexcept
	{
		const uint32_t cap = c._bl_mask + 1;
		for (int part = 0; part < 2; part++) {
			const uint32_t room = cap - (c._bl_tail - c._bl_head);
			const uint32_t at = c._bl_tail & c._bl_mask;
			const uint32_t k = std::min(room, cap - at); /* contiguous */
			if (k == 0)
				break;
			const unsigned n = rte_ring_dequeue_burst(
				c.in, reinterpret_cast<void **>(&c._bl[at]), k, nullptr);
			c._bl_tail += n;
			c.stats.owed.add(n);
			if (n < k)
				return;
		}
		const bool full = c._bl_tail - c._bl_head == cap;
		if (full && !c._bl_full && !rte_ring_empty(c.in))
			c.stats.backlog_full.inc();
		c._bl_full = full;
	}

	/* the oldest owed frames to the NIC: one contiguous run of at most a burst */
	static uint16_t send(tx_ctx &c) noexcept
	{
		take_in(c);
		const uint32_t size = c._bl_tail - c._bl_head;
		const uint32_t at = c._bl_head & c._bl_mask;
		const uint16_t n = static_cast<uint16_t>(
			std::min({size, c._bl_mask + 1 - at, uint32_t(tx_ctx::burst)}));
		const uint16_t sent = burst_out(c, &c._bl[at], n);
		if (sent) {
			c._bl_head += sent;
			return sent;
		}
		const uint64_t now = rte_rdtsc();
		if (c.stalled == 0) {
			c.stalled = now;
		} else if (size == c._bl_mask + 1 && now - c.stalled >= tsc_of_ms(c.give_up_ms)) {
			/* full, and nothing taken for give_up_ms: a dead link, not a slow peer */
			c.stats.dropped.add(size);
			for (; c._bl_head != c._bl_tail; c._bl_head++)
				rte_pktmbuf_free(c._bl[c._bl_head & c._bl_mask]);
			c.stalled = 0;
		}
		return 0;
	}
};

namespace {

uint16_t tx_one(tx_ctx &c) noexcept
{
	if (c.nb_held < tx_ctx::burst)
		c.nb_held += rte_ring_dequeue_burst(c.in, reinterpret_cast<void **>(c.held + c.nb_held),
						    tx_ctx::burst - c.nb_held, nullptr);
	if (c.nb_held == 0)
		return 0;
	const uint16_t sent = burst_out(c, c.held, static_cast<uint16_t>(c.nb_held));
	if (sent) {
		for (unsigned i = sent; i < c.nb_held; i++)
			c.held[i - sent] = c.held[i];
		c.nb_held -= sent;
		return sent;
	}
	/* time, not polls: an idle lcore polls fast and a descheduled peer (a generator on a
	 * loaded machine) may take nothing for a second and then everything */
	const uint64_t now = rte_rdtsc();
	if (c.stalled == 0) {
		c.stalled = now;
	} else if (c.backlog_capacity() &&
		   now - c.stalled >= tx_backlog_ops::tsc_of_ms(c.owe_after_ms)) {
		tx_backlog_ops::owe_held(c); /* the stall goes on: `stalled` keeps its start */
	} else if (!c.backlog_capacity() &&
		   now - c.stalled >= tx_backlog_ops::tsc_of_ms(c.give_up_ms)) {
		c.stats.dropped.add(c.nb_held);
		rte_pktmbuf_free_bulk(c.held, c.nb_held);
		c.nb_held = 0;
		c.stalled = 0;
	}
	return 0;
}

} // namespace

uint16_t tx_poll(void *arg) noexcept
{
	/* a poll takes up to max_bursts bursts while the NIC takes whole ones: the sidecar
	 * makes more than one frame per message it takes in (a relay and its 504, fragments);
	 * while frames are owed they go first, and everything new goes behind them */
	auto &c = *static_cast<tx_ctx *>(arg);
	uint32_t sent = 0;
	for (unsigned b = 0; b < tx_ctx::max_bursts; b++) {
		const uint16_t n = c._bl_head != c._bl_tail ? tx_backlog_ops::send(c) : tx_one(c);
		sent += n;
		if (n < tx_ctx::burst)
			break;
	}
	return static_cast<uint16_t>(sent);
}

} // namespace dpumesh::port
