// SPDX-License-Identifier: BSD-3-Clause
// The node configuration: one JSON file describes a node, validated strictly.
//
// Every error names the file, line, column and JSON pointer of the offending value:
//
//   auto cfg = dpumesh::config::load_file("conf/default.json");
//   if (!cfg) { fprintf(stderr, "%s\n", cfg.error().message().c_str()); exit(1); }
//   // conf/x.json:14:17: /ports/0/mtu: 70000 is out of range [68, 9600]
//
// The reference for every key is docs/config.md.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/abi/abi.h"
#include "dpumesh/common/status.h"
#include "dpumesh/json/json.h"
#include "dpumesh/policy/schema.h"

namespace dpumesh::config {

/** 1-based line and column of a value in the source text. */
using position = json::position;

struct node_identity {
	std::string name;
	uint8_t mac[6] = {};
	std::optional<in_addr> ipv4;
	std::optional<in6_addr> ipv6;
	uint16_t mesh_port = 7000;
	std::string control_socket; /**< Unix socket pods register on */
};

enum class port_role {
	external, /**< the uplink: mesh traffic in (Case 2) and out (Case 1) */
	replay,   /**< receive only: frames are consumed as Case 2 input; nothing is sent */
};

struct port_config {
	std::string name; /**< user's name for the port ("uplink") */
	std::string dev;  /**< PCI address, vdev devargs, or the name of a device from --vdev */
	port_role role = port_role::external;
	uint16_t rx_queues = 1;
	uint16_t tx_queues = 1;
	uint16_t rx_desc = 1024;
	uint16_t tx_desc = 1024;
	uint16_t mtu = 1500;
	bool promiscuous = true;
	/** Frames port TX may owe a peer that takes nothing (per TX queue; 0 or a power of two);
	 *  unset: tx_backlog_of(). docs/overload.md, "Port TX owes, it does not drop". */
	std::optional<uint32_t> tx_backlog;
};

struct mempool_config {
	uint32_t mbufs = 8191;    /**< mbufs in the packet pool */
	uint32_t cache = 256;     /**< per-lcore mempool cache */
	uint16_t data_room = 2176; /**< mbuf data room incl. headroom */
};

enum class idle_policy {
	busy,     /**< poll without pause: dedicated cores, benchmarks */
	adaptive, /**< rte_pause, then short sleeps, after idle_polls empty polls */
};

/** Stages an lcore can run; the names used in "lcores.stages". */
inline constexpr std::string_view stage_names[] = {
	"port_rx", "port_tx", "sidecar", "dpa",
};

struct lcores_config {
	idle_policy idle = idle_policy::adaptive;
	uint32_t idle_polls = 256;    /**< empty polls before backing off (adaptive) */
	uint32_t max_sleep_us = 100; /**< longest back-off sleep (adaptive) */
	/**
	 * Adaptive: after the last work the lcore spins (rte_pause) this long (and idle_polls
	 * empty passes), then naps: short sleeps that arm no wake-up, 1 us doubling to
	 * max_sleep_us, until 1 ms without work, when it parks its pods and sleeps until one
	 * rings (docs/config.md). 1000 or more: no naps (it spins until then).
	 */
	uint32_t spin_us = 50;
	/**
	 * The control thread (main lcore: pod registrations, grace periods, console): 0 runs
	 * it under the default time-sharing policy; N (1-99) as SCHED_FIFO priority N, so that
	 * busy pods and other spinners on its CPU cannot keep it off for seconds (docs/config.md).
	 */
	uint32_t control_priority = 0;
	/**
	 * Run-to-completion workers, each with its own port RX queues, reassembler, sidecar
	 * shard and DPA threads, on the first `workers` worker lcores (docs/config.md). 1:
	 * every stage placed by `stages` (else on the first worker lcore).
	 */
	uint32_t workers = 1;
	std::map<std::string, unsigned> stages; /**< stage name -> lcore id */
};

struct pool_geometry {
	uint32_t slots = 0;
	uint32_t slot_size = 0;
};

/** Default geometry of every pod's region; a pod may ask for less at registration. */
struct pools_config {
	pool_geometry tx_header{256, 1024};
	pool_geometry tx_body{256, 65536};
	pool_geometry rx_header{256, 1024};
	pool_geometry rx_body{256, 65536};
	uint32_t sq_depth = 256; /**< entries in each SQ and refill ring (power of two) */
	/** Deliveries waiting for room at their pod, per sidecar shard (docs/ordering.md): the
	 *  pool all destinations share, and how many new requests one destination may hold */
	uint32_t dest_queue_entries = 8192;
	uint32_t dest_queue_share = 1024;
	/** Admission at the first look (docs/overload.md): requests one pod may have in flight
	 *  beyond its RX slots; more are refused 503 `saturated`. UINT32_MAX: per_destination */
	uint32_t admit_beyond_slots = UINT32_MAX;
	uint32_t admit_queue() const noexcept
	{
		return admit_beyond_slots == UINT32_MAX ? dest_queue_share : admit_beyond_slots;
	}
	/** Port RX's message buffers (4095) held by network requests (docs/overload.md, "A
	 *  reserve at port RX"): whole messages waiting for the sidecar at which port RX refuses
	 *  a request 503 overloaded (per worker); network requests that may wait in destination
	 *  queues, all shards together (more are refused 503 dest_full). */
	uint32_t network_backlog = 1024;
	uint32_t network_queued = 2047;
	/** What one tenant may hold of the node's shared resources (docs/quota.md): pending
	 *  requests a pod asked plus answers waiting for it; pending requests of one network
	 *  address (per sidecar shard); answers waiting for one pod's RX room, and how long;
	 *  how long a pod's RX may take nothing before its answers and requests are refused */
	struct quota_config {
		uint32_t requests_per_pod = 512;
		uint32_t requests_per_source = 4096;
		uint32_t answers_per_pod = 256;
		uint32_t answer_wait_ms = 5000;
		uint32_t rx_stall_ms = 500;
	} quota;
};

struct service_config {
	std::string name;
	uint32_t max_pods = 16;
};

struct peer_config {
	std::string name;
	uint8_t mac[6] = {};
	std::optional<in_addr> ipv4;
	std::optional<in6_addr> ipv6;
	uint16_t mesh_port = 7000;
};

struct route_config {
	std::string service;
	std::string to; /**< "local" or a peer name */
	bool is_local() const { return to == "local"; }
};

/* L7 policy's schema belongs to the policy module (dpumesh/policy/schema.h, read from
 * /policy by policy::read_config). The names below keep config:: users compiling. */
using jwt_alg = policy::schema::jwt_alg;
using jwt_key = policy::schema::jwt_key;
using jwt_config = policy::schema::jwt_config;
using path_match = policy::schema::path_match;
using rbac_rule = policy::schema::rbac_rule;
using rbac_policy = policy::schema::rbac_policy;
using ratelimit_key = policy::schema::ratelimit_key;
using ratelimit_config = policy::schema::ratelimit_config;
using breaker_config = policy::schema::breaker_config;
using timeout_config = policy::schema::timeout_config;
using policy_config = policy::schema::policy_config;

enum class dpa_backend { emu, doca };

struct dpa_config {
	dpa_backend backend = dpa_backend::emu;
	/** DPA threads; each runs the TX and RX kernels for the pods it owns (pod_id % threads) */
	uint32_t threads = 1;
	/** doca backend: PCI address of the function the DPA process runs on (the PF, e.g.
	 *  "0000:03:00.0"; valid_pci_address); empty with the emulator */
	std::string device;
	/** doca backend: the host PF the pods' control channel (DOCA comch server) serves, as
	 *  the Arm sees it (its representor's PCI address, e.g. "0000:3b:00.0"); empty with the
	 *  emulator */
	std::string host_device;
};

/** Whether s is a PCI address, [DDDD:]BB:DD.F in hex (domain 4 digits, bus 2, device 2 up to
 *  1f, function 0-7), as DOCA and DPDK write them. */
bool valid_pci_address(std::string_view s);

enum class dma_backend { cpu, dmadev };

struct dma_config {
	dma_backend backend = dma_backend::cpu;
	std::string device; /**< dmadev name or vdev devargs, e.g. "dma_skeleton" */
};

/** A whole node. */
struct node_config {
	std::string source; /**< file name the config came from */
	uint32_t version = 1;
	node_identity node;
	std::vector<port_config> ports;
	mempool_config mempool;
	lcores_config lcores;
	pools_config pools;
	std::vector<service_config> services;
	std::vector<peer_config> peers;
	std::vector<route_config> routes;
	policy_config policy;
	dpa_config dpa;
	dma_config dma;

	/** The JSON text it was loaded from (console `set` commands edit a copy of it). */
	std::string text;
	/** Source positions of every value, keyed by JSON pointer ("/ports/0/dev"). */
	std::map<std::string, position> positions;

	/** "file:line:col" of a JSON pointer, or the file name alone when unknown. */
	std::string where(const std::string &pointer) const;
	const service_config *find_service(std::string_view name) const;
	const peer_config *find_peer(std::string_view name) const;
	const route_config *find_route(std::string_view service) const;
	/** A port's TX backlog in frames: its `tx_backlog`, or the largest power of two
	 *  within a quarter of the packet pool. */
	uint32_t tx_backlog_of(const port_config &p) const;
};

/** Parses and validates a config file. */
result<node_config> load_file(const std::string &path);

/** Parses and validates config text; `source` names it in errors. */
result<node_config> load_string(std::string_view text, const std::string &source);

/** Validates a parsed document (its source names it in errors). */
result<node_config> load_document(json::document doc);

/**
 * Sets the number of run-to-completion workers (`--workers N`). With N > 1 it also drops
 * the `/lcores/stages` placement, which is for one worker (each worker runs every stage of
 * its share); returns true when it dropped one, so the caller can say so.
 */
bool set_workers(node_config &cfg, uint32_t workers);

std::string_view to_string(port_role r);
std::string_view to_string(idle_policy p);
std::string_view to_string(dpa_backend b);
std::string_view to_string(dma_backend b);

} // namespace dpumesh::config
