// SPDX-License-Identifier: BSD-3-Clause
// Port TX stage: the sidecar's frames out of a port queue.
#include "dpumesh/port/tx.h"

#include <rte_cycles.h>
#include <rte_ethdev.h>

namespace dpumesh::port {

tx_ctx::~tx_ctx()
{
	rte_pktmbuf_free_bulk(held, nb_held);
	nb_held = 0;
	void *m = nullptr;
	while (in && rte_ring_dequeue(in, &m) == 0)
		rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
}

namespace {

uint16_t tx_one(tx_ctx &c) noexcept
{
	if (c.nb_held < tx_ctx::burst)
		c.nb_held += rte_ring_dequeue_burst(c.in, reinterpret_cast<void **>(c.held + c.nb_held),
						    tx_ctx::burst - c.nb_held, nullptr);
	if (c.nb_held == 0)
		return 0;
	uint64_t bytes = 0;
	for (unsigned i = 0; i < c.nb_held; i++)
		bytes += c.held[i]->pkt_len;
	uint16_t sent = rte_eth_tx_burst(c.port, c.queue, c.held, static_cast<uint16_t>(c.nb_held));
	if (sent) {
		for (unsigned i = sent; i < c.nb_held; i++)
			bytes -= c.held[i]->pkt_len;
		c.stats.frames.add(sent);
		c.stats.bytes.add(bytes);
		for (unsigned i = sent; i < c.nb_held; i++)
			c.held[i - sent] = c.held[i];
		c.nb_held -= sent;
		c.stalled = 0;
		return sent;
	}
	c.stats.stalls.inc();
	/* time, not polls: an idle lcore polls fast and a descheduled peer (a generator on a
	 * loaded machine) may take nothing for a second and then everything */
	const uint64_t now = rte_rdtsc();
	if (c.stalled == 0) {
		c.stalled = now;
	} else if (now - c.stalled >= rte_get_tsc_hz() / 1000 * tx_ctx::give_up_ms) {
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
	 * makes more than one frame per message it takes in (a relay and its 504, fragments) */
	auto &c = *static_cast<tx_ctx *>(arg);
	uint32_t sent = 0;
	for (unsigned b = 0; b < tx_ctx::max_bursts; b++) {
		const uint16_t n = tx_one(c);
		sent += n;
		if (n < tx_ctx::burst)
			break;
	}
	return static_cast<uint16_t>(sent);
}

} // namespace dpumesh::port
