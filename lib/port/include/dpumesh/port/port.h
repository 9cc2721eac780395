// SPDX-License-Identifier: BSD-3-Clause
// Ports: finds or probes each configured ethdev, configures and starts it, reads stats.
//
// A port's "dev" is a PCI address ("0000:03:00.0"), a device already created with EAL's
// --vdev ("net_pcap0"), or full vdev devargs ("net_ring0" / "net_tap0,iface=dm0"), which
// are hot-plugged with rte_dev_probe.
//
//   auto ports = dpumesh::port::open_all(cfg, pool);   // result<std::vector<port_info>>
//   ...
//   dpumesh::port::close_all(*ports);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <rte_ethdev.h>
#include <rte_mempool.h>

#include "dpumesh/config/config.h"
#include "dpumesh/common/status.h"

namespace dpumesh::port {

struct port_info {
	uint16_t port_id = 0;
	std::string name;   /**< the config's name */
	std::string dev;    /**< ethdev name */
	std::string driver; /**< e.g. net_pcap, mlx5_pci */
	config::port_role role = config::port_role::external;
	uint16_t nb_rxq = 1;
	uint16_t nb_txq = 1;
	bool hotplugged = false; /**< probed by us, so detached by us */
};

/**
 * The packet pool's backend: EAL's --mbuf-pool-ops-name when it was given; else a LIFO,
 * "lf_stack" (lock-free), where this DPDK has it; else DPDK's best (a FIFO ring). LIFO
 * because a worker frees and takes mbufs in swings larger than its mempool cache (port TX
 * frees up to 8 bursts a poll, a deadline sweep frames up to 8 bursts of 504s): what
 * overflows the cache goes back to the backend, and a ring hands it out again only after
 * every other free mbuf, cold in cache and TLB by then (docs/benchmarks-log.md, track side5).
 */
const char *pktmbuf_pool_ops() noexcept;

/**
 * The bytes that pad a packet mbuf's mempool object of @p obj_size bytes (header, mbuf and
 * data room) on pages of @p page bytes to one cache line past a page; 0 when a page holds two
 * or more objects, or none. DPDK places no object across a page, so an object of more than
 * half a page takes a page of its own and every object starts at the same page offset: every
 * mbuf header then shares one L1 set and 1/64 of L2's sets. An object one cache line longer
 * than a page is packed, each a line further into its page, for 1/64 more memory (--no-huge:
 * 4 KiB pages; docs/benchmarks-log.md, track portrx).
 * @return the pad, a multiple of RTE_CACHE_LINE_SIZE when @p obj_size is one, or 0.
 */
size_t pktmbuf_obj_pad(size_t obj_size, size_t page) noexcept;

/**
 * Creates the packet mbuf pool from the config's mempool section, on pktmbuf_pool_ops();
 * without hugepages, each object padded after its data room by pktmbuf_obj_pad() (the
 * mbufs' buf_len, headroom and private area are the config's either way).
 */
result<rte_mempool *> create_pktmbuf_pool(const config::node_config &cfg);

/** Opens, configures and starts every configured port. On error, nothing is left open. */
result<std::vector<port_info>> open_all(const config::node_config &cfg, rte_mempool *pool);

/** Stops, closes and (for hot-plugged ones) detaches every port. */
void close_all(std::vector<port_info> &ports);

} // namespace dpumesh::port
