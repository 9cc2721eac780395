// SPDX-License-Identifier: BSD-3-Clause
// Port RX stage: rx_burst, classify (IPv4/IPv6 UDP to the mesh port), hand off or drop.
#include "dpumesh/port_rx.h"

#include <rte_ethdev.h>
#include <rte_ip.h>
#include <rte_net.h>
#include <rte_udp.h>

namespace dpumesh::pipeline {

bool port_rx_classify(const rte_mbuf *m, uint16_t mesh_port_be, rx_drop *why) noexcept
{
	rte_net_hdr_lens lens{};
	uint32_t ptype = rte_net_get_ptype(m, &lens, RTE_PTYPE_L2_MASK | RTE_PTYPE_L3_MASK |
							     RTE_PTYPE_L4_MASK);
	if (!RTE_ETH_IS_IPV4_HDR(ptype) && !RTE_ETH_IS_IPV6_HDR(ptype)) {
		*why = rx_drop::not_ip;
		return false;
	}
	uint32_t l4 = ptype & RTE_PTYPE_L4_MASK;
	if (l4 == RTE_PTYPE_L4_FRAG) {
		*why = rx_drop::ip_fragment;
		return false;
	}
	if (l4 != RTE_PTYPE_L4_UDP) {
		*why = rx_drop::not_udp;
		return false;
	}
	rte_udp_hdr udp_buf;
	const auto *udp = static_cast<const rte_udp_hdr *>(rte_pktmbuf_read(
		m, lens.l2_len + lens.l3_len, sizeof(udp_buf), &udp_buf));
	if (!udp || udp->dst_port != mesh_port_be) {
		*why = rx_drop::other_port;
		return false;
	}
	return true;
}

uint16_t port_rx_poll(void *arg) noexcept
{
	auto &c = *static_cast<port_rx_ctx *>(arg);
	if (c.queues.empty()) [[unlikely]]
		return 0;
	const port_rx_ctx::queue &q = c.queues[c.next_queue];
	c.next_queue = c.next_queue + 1 == c.queues.size() ? 0 : c.next_queue + 1;

	rte_mbuf *pkts[port_rx_ctx::burst];
	uint16_t n = rte_eth_rx_burst(q.port, q.queue, pkts, port_rx_ctx::burst);
	if (n == 0)
		return 0;

	rte_mbuf *keep[port_rx_ctx::burst];
	uint16_t nb_keep = 0;
	uint64_t bytes = 0;
	uint32_t drops[static_cast<size_t>(rx_drop::count)] = {};
	for (uint16_t i = 0; i < n; i++) {
		if (i + 2 < n)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + 2], void *));
		rte_mbuf *m = pkts[i];
		bytes += m->pkt_len;
		rx_drop why;
		if (port_rx_classify(m, c.mesh_port_be, &why)) {
			keep[nb_keep++] = m;
		} else {
			drops[static_cast<size_t>(why)]++;
			rte_pktmbuf_free(m);
		}
	}
	uint16_t accepted = nb_keep;
	if (nb_keep) {
		if (c.next) {
			unsigned sent = rte_ring_enqueue_burst(c.next, reinterpret_cast<void **>(keep),
							       nb_keep, nullptr);
			if (sent < nb_keep) {
				drops[static_cast<size_t>(rx_drop::ring_full)] += nb_keep - sent;
				rte_pktmbuf_free_bulk(keep + sent, nb_keep - sent);
				accepted = static_cast<uint16_t>(sent);
			}
		} else {
			drops[static_cast<size_t>(rx_drop::no_consumer)] += nb_keep;
			rte_pktmbuf_free_bulk(keep, nb_keep);
		}
	}
	c.stats.frames.add(n);
	c.stats.bytes.add(bytes);
	c.stats.accepted.add(accepted);
	for (size_t d = 0; d < static_cast<size_t>(rx_drop::count); d++)
		if (drops[d])
			c.stats.drops[d].add(drops[d]);
	return n;
}

const char *rx_drop_name(rx_drop d)
{
	switch (d) {
#define DPUMESH_RX_DROP_NAME(n, h)                                                       \
	case rx_drop::n: return #n;
		DPUMESH_FOREACH_RX_DROP(DPUMESH_RX_DROP_NAME)
#undef DPUMESH_RX_DROP_NAME
	case rx_drop::count: break;
	}
	return "?";
}

const char *rx_drop_help(rx_drop d)
{
	switch (d) {
#define DPUMESH_RX_DROP_HELP(n, h)                                                       \
	case rx_drop::n: return h;
		DPUMESH_FOREACH_RX_DROP(DPUMESH_RX_DROP_HELP)
#undef DPUMESH_RX_DROP_HELP
	case rx_drop::count: break;
	}
	return "?";
}

} // namespace dpumesh::pipeline
