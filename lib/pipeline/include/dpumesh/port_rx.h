// SPDX-License-Identifier: BSD-3-Clause
// The port RX stage: receives bursts from its (port, queue) pairs and classifies frames.
//
// It accepts UDP datagrams to the node's mesh port (IPv4 or IPv6) and drops everything
// else, counting each drop by reason. Accepted frames go to the next stage's ring when one
// is attached; without one (a node with no external pipeline) they are counted and freed.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <rte_mbuf.h>
#include <rte_ring.h>

#include "dpumesh/counter.h"
#include "dpumesh/engine.h"

namespace dpumesh::pipeline {

/** Why port RX drops a frame. */
#define DPUMESH_FOREACH_RX_DROP(_)                                                       \
	_(not_ip, "neither IPv4 nor IPv6")                                               \
	_(not_udp, "IP but not UDP")                                                     \
	_(ip_fragment, "an IP fragment (mesh messages are fragmented at L7)")            \
	_(other_port, "UDP to a port other than the mesh port")                          \
	_(no_consumer, "mesh frame with no downstream stage attached")                   \
	_(ring_full, "downstream ring full")

enum class rx_drop : uint8_t {
#define DPUMESH_RX_DROP_ENUM(n, d) n,
	DPUMESH_FOREACH_RX_DROP(DPUMESH_RX_DROP_ENUM)
#undef DPUMESH_RX_DROP_ENUM
	count
};

const char *rx_drop_name(rx_drop d);
const char *rx_drop_help(rx_drop d);

struct alignas(64) port_rx_stats {
	counter frames;
	counter bytes;
	counter accepted;
	std::array<counter, static_cast<size_t>(rx_drop::count)> drops;
};

/** One instance per lcore that runs port RX. */
struct port_rx_ctx {
	static constexpr unsigned burst = 32;
	struct queue {
		uint16_t port;
		uint16_t queue;
	};
	std::vector<queue> queues;  /**< polled round-robin, one burst each per call */
	uint16_t mesh_port_be = 0;  /**< mesh UDP port, network byte order */
	rte_ring *next = nullptr;   /**< accepted frames go here; nullptr: count and free */
	port_rx_stats stats;
	unsigned next_queue = 0;
};

/** The stage's poll function (engine::poll_fn). */
uint16_t port_rx_poll(void *arg) noexcept;

/** Classifies one frame: true if it is a mesh datagram, else sets *why. */
bool port_rx_classify(const rte_mbuf *m, uint16_t mesh_port_be, rx_drop *why) noexcept;

inline engine::stage_def port_rx_stage(port_rx_ctx &ctx)
{
	return {"port_rx", &port_rx_poll, &ctx};
}

} // namespace dpumesh::pipeline
