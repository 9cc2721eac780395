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

/** Creates the packet mbuf pool from the config's mempool section. */
result<rte_mempool *> create_pktmbuf_pool(const config::node_config &cfg);

/** Opens, configures and starts every configured port. On error, nothing is left open. */
result<std::vector<port_info>> open_all(const config::node_config &cfg, rte_mempool *pool);

/** Stops, closes and (for hot-plugged ones) detaches every port. */
void close_all(std::vector<port_info> &ports);

} // namespace dpumesh::port
