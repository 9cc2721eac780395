// SPDX-License-Identifier: BSD-3-Clause
// Port RX stage: rx_burst, parse and validate mesh frames, reassemble, hand messages on.
#include "dpumesh/port/rx.h"

#include <cstring>

#include <rte_cycles.h>
#include <rte_ethdev.h>

namespace dpumesh::port {

void rx_msg_free(rx_msg *m) noexcept
{
	rte_pktmbuf_free(m->msg.chain);
	rte_pktmbuf_free(m->body.chain);
	m->msg.chain = m->body.chain = nullptr;
	rte_mempool_put(rte_mempool_from_obj(m), m);
}

uint16_t rx_poll(void *arg) noexcept
{
	auto &c = *static_cast<rx_ctx *>(arg);
	if (c.queues.empty()) [[unlikely]]
		return 0;
	const rx_ctx::queue &q = c.queues[c.next_queue];
	c.next_queue = c.next_queue + 1 == c.queues.size() ? 0 : c.next_queue + 1;
	const uint64_t now = rte_rdtsc();
	if (++c.polls == rx_ctx::expire_every) {
		c.polls = 0;
		c.reasm->expire(now);
	}

	rte_mbuf *pkts[rx_ctx::burst];
	uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, rx_ctx::burst);
	if (n == 0)
		return 0;

	/* rx_msgs for the burst in one go (a single-frame message per frame is the common
	 * case); what the burst did not use goes back at the end */
	rx_msg *done[rx_ctx::burst];
	unsigned nb_done = 0, nb_objs = 0;
	if (rte_mempool_get_bulk(c.msg_pool, reinterpret_cast<void **>(done), n) == 0)
		nb_objs = n;
	uint64_t bytes = 0;
	uint32_t accepted = 0;
	uint32_t drops[static_cast<size_t>(rx_drop::count)] = {};
	for (uint16_t i = 0; i < n; i++) {
		if (i + 2 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 2], void *));
		rte_mbuf *m = pkts[i];
		bytes += m->pkt_len;
		wire::parsed_frame pf;
		wire::wire_drop why = wire::parse_frame(m, c.mesh_port_be, c.max_message, &pf);
		if (why == wire::wire_drop::none) {
			const std::optional<wire::endpoint> &self = pf.dst.is_v4() ? c.ip4 : c.ip6;
			if (self && std::memcmp(self->ip, pf.dst.ip, 16) != 0)
				why = wire::wire_drop::other_host;
		}
		if (why != wire::wire_drop::none) {
			drops[static_cast<size_t>(why)]++;
			rte_pktmbuf_free(m);
			continue;
		}
		accepted++;
		wire::message msg;
		if (c.reasm->input(m, pf, now, &msg) != wire::reasm_result::complete)
			continue; /* held, or dropped and counted by the reassembler */
		void *obj;
		if (nb_done < nb_objs) {
			obj = done[nb_done];
		} else if (rte_mempool_get(c.msg_pool, &obj) != 0) [[unlikely]] {
			c.stats.msg_pool_empty.inc();
			rte_pktmbuf_free(msg.chain);
			continue;
		}
		auto *rm = static_cast<rx_msg *>(obj);
		rm->body = {};
		rm->msg = msg;
		rm->rx_tsc = now;
		rm->port_id = q.port;
		done[nb_done++] = rm;
	}
	if (nb_done < nb_objs)
		rte_mempool_put_bulk(c.msg_pool, reinterpret_cast<void *const *>(done + nb_done),
				     nb_objs - nb_done);
	if (nb_done) {
		unsigned sent = 0;
		if (c.next)
			sent = rte_ring_enqueue_burst(c.next, reinterpret_cast<void **>(done), nb_done,
						      nullptr);
		if (sent < nb_done) {
			(c.next ? c.stats.ring_full : c.stats.no_consumer).add(nb_done - sent);
			for (unsigned i = sent; i < nb_done; i++)
				rx_msg_free(done[i]);
		}
		c.stats.messages.add(sent);
	}
	c.stats.frames.add(n);
	c.stats.bytes.add(bytes);
	c.stats.accepted.add(accepted);
	for (size_t d = 0; d < static_cast<size_t>(rx_drop::count); d++)
		if (drops[d])
			c.stats.drops[d].add(drops[d]);
	return n;
}

} // namespace dpumesh::port
