// SPDX-License-Identifier: BSD-3-Clause
// A port made from rings (rte_eth_from_rings) for in-process nodes: the test is the network on its other side.
//
//   ring_port port("fair", 1);                        // ethdev net_ring_fair, one queue
//   inproc_node n("fair", config_with_dev(port.name));
//   port.send(0, src_ip, sport, peer_mac, wire::frame_kind::request, corr, l7, len, body, id);
//   port.take(0, &frame);                             // what the node sent
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <rte_byteorder.h>
#include <rte_eth_ring.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpumesh/common/tsan.h"
#include "dpumesh/wire/frame.h"

namespace dpumesh::test {

struct ring_port {
	static constexpr unsigned max_queues = 2;
	std::string name;
	unsigned nb_queues;
	rte_ring *rx[max_queues] = {}; /* the test enqueues frames the node receives on queue q */
	rte_ring *tx[max_queues] = {}; /* the node's TX queue q */
	rte_mempool *pool = nullptr;
	/* the node's side: where send() addresses its frames */
	uint8_t node_mac[6] = {0x02, 0, 0, 0, 0, 0x01};
	uint32_t node_ip = RTE_IPV4(10, 0, 0, 1);
	uint16_t mesh_port = 7000;

	/** The ethdev is named net_ring_<n> (rte_eth_from_rings' naming). */
	explicit ring_port(const std::string &n, unsigned queues = 2)
		: name("net_ring_" + n), nb_queues(queues)
	{
		for (unsigned q = 0; q < nb_queues; q++) {
			rx[q] = rte_ring_create((n + "_rx" + std::to_string(q)).c_str(), 4096, 0,
						RING_F_SP_ENQ | RING_F_SC_DEQ);
			tx[q] = rte_ring_create((n + "_tx" + std::to_string(q)).c_str(), 4096, 0,
						RING_F_SP_ENQ | RING_F_SC_DEQ);
		}
		pool = rte_pktmbuf_pool_create((n + "_pool").c_str(), 8191, 0, 0, 2176, 0);
		EXPECT_GE(rte_eth_from_rings(n.c_str(), rx, nb_queues, tx, nb_queues, 0), 0) << name;
	}
	~ring_port()
	{
		for (unsigned q = 0; q < nb_queues; q++) {
			drain(q);
			rte_ring_free(rx[q]);
			rte_ring_free(tx[q]);
		}
		/* frames the node never took */
		rte_mempool_free(pool);
	}
	ring_port(const ring_port &) = delete;
	ring_port &operator=(const ring_port &) = delete;

	void drain(unsigned q)
	{
		void *m;
		while (rte_ring_dequeue(rx[q], &m) == 0)
			rte_pktmbuf_free(static_cast<rte_mbuf *>(m));
		rte_mbuf *f;
		while (take(q, &f))
			rte_pktmbuf_free(f);
	}

	/** The next frame the node sent on its TX queue q, if any (the PMD's enqueue is not
	 *  instrumented: dpumesh/common/tsan.h orders the node's writes before the test's
	 *  reads). */
	bool take(unsigned q, rte_mbuf **frame)
	{
		void *m;
		if (rte_ring_dequeue(tx[q], &m) != 0)
			return false;
		*frame = static_cast<rte_mbuf *>(m);
		DPUMESH_TSAN_PMD_TOOK(frame, 1);
		return true;
	}

	/** One single-frame message from (src_ip, sport) to the node, on RX queue q (waits
	 *  while the queue's ring is full). */
	bool send(unsigned q, uint32_t src_ip, uint16_t sport, const uint8_t *src_mac,
		  wire::frame_kind kind, uint64_t correlation, const uint8_t *l7, uint16_t l7_len,
		  const std::string &body, uint32_t msg_id)
	{
		wire::link_addr a{};
		std::memcpy(a.src_mac, src_mac, 6);
		std::memcpy(a.dst_mac, node_mac, 6);
		a.src = wire::endpoint::from_v4(rte_cpu_to_be_32(src_ip), sport);
		a.dst = wire::endpoint::from_v4(rte_cpu_to_be_32(node_ip), mesh_port);
		wire::body_ref b;
		b.data = reinterpret_cast<const uint8_t *>(body.data());
		b.len = static_cast<uint32_t>(body.size());
		rte_mbuf *f[1];
		if (wire::fragment(a, kind, msg_id, correlation, l7, l7_len, b, 1500, pool, f, 1) != 1)
			return false;
		DPUMESH_TSAN_PMD_GIVES(f, 1);
		while (rte_ring_enqueue(rx[q], f[0]) != 0)
			std::this_thread::sleep_for(std::chrono::microseconds(100));
		return true;
	}
};

} // namespace dpumesh::test
