// SPDX-License-Identifier: BSD-3-Clause
// The running node as one object: it builds and owns every resource of a dpumesh node (packet
// and message pools, ports, the ring from port RX to the sidecar, the pod registry and its
// registration socket, the DPA runtime with its DMA engines, the sidecar, the port stages and
// their placement on lcores) and tears them down in one order.
//
// The application keeps only EAL, its options, the console and the control loop; tests build
// nodes in-process the same way (EAL initialised once by the test program):
//
//   auto n = dpumesh::node::create(cfg, {});          // result<std::unique_ptr<instance>>
//   if (!n) return fail(n.error());                    // "ports: net_pcap0: ..." and nothing left
//   (*n)->start();                                      // lcores run the stages
//   while (running) (*n)->poll_control();               // registrations, unregistrations
//   n->reset();                                         // stop, then free in reverse order
//
// Teardown order (members are declared in construction order, so destruction runs it):
// pods are unregistered first while the DPA threads still run (they report quiescence), then
// the lcores stop; port RX contexts give their reassembly mbufs back; port TX stages free
// what they queued (zero-copy frames complete into the sidecar); the sidecar, the DPA runtime
// and the registry go; the RX->sidecar ring is drained and freed; the message pool, the
// ports and last the packet pool.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpumesh/common/status.h"
#include "dpumesh/config/config.h"
#include "dpumesh/dpa/emulator.h"
#include "dpumesh/lcore/runner.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/podreg/registrar.h"
#include "dpumesh/port/port.h"
#include "dpumesh/port/rx.h"
#include "dpumesh/port/tx.h"
#include "dpumesh/sidecar/sidecar.h"
#if DPUMESH_NODE_DOCA
#include "dpumesh/doca/doca_api.h"
#endif

namespace dpumesh::node {

#if DPUMESH_NODE_DOCA
/**
 * The DPA program --dpa-backend doca runs (DOCA and DOCA_CHECK builds): the dpacc-built
 * application (dpumesh_dpa) and its entry points. The node does not name them itself: on a
 * DPU they come from the program dpacc built (app/dpumesh); in tests, the kernels built for
 * the host against the FAKES.
 */
struct doca_program {
	doca_dpa_app *app = nullptr;
	doca_dpa_func_t *tx = nullptr;         /**< dpumesh_dpa_tx_entry */
	doca_dpa_func_t *rx = nullptr;         /**< dpumesh_dpa_rx_entry */
	doca_dpa_func_t *notify_rpc = nullptr; /**< dpumesh_dpa_notify_rpc */
};
#endif

namespace internal {
class doca_side;
}

struct options {
	/** Start with forwarding off until this many pods registered (0: forward at once). */
	unsigned wait_pods = 0;
	/** Serve dpdk-dumpcap/dpdk-pdump (rte_pdump_init); off for in-process tests. */
	bool pdump = false;
#if DPUMESH_NODE_DOCA
	/** --dpa-backend doca: the DPA program to run. */
	doca_program doca;
#endif
};

namespace internal {
struct mempool_free {
	void operator()(rte_mempool *p) const noexcept { rte_mempool_free(p); }
};
struct ring_free {
	void operator()(rte_ring *r) const noexcept;
};
/** The open ports; closed (and hot-plugged vdevs detached) on destruction. */
struct port_set {
	std::vector<port::port_info> list;
	port_set() = default;
	port_set(const port_set &) = delete;
	port_set &operator=(const port_set &) = delete;
	~port_set() { port::close_all(list); }
};
} // namespace internal

class instance {
public:
	~instance();
	instance(const instance &) = delete;
	instance &operator=(const instance &) = delete;

	/** Launches the lcores. @return an error naming the stage or lcore that failed */
	status start();
	/**
	 * Unregisters every pod (closing the registration socket), then stops the lcores.
	 * Idempotent; the destructor calls it.
	 */
	void stop() noexcept;
	/**
	 * stop(), then frees the data path's state: port RX contexts (reassembly mbufs), port TX
	 * stages (queued frames), the sidecar, the DPA runtime, the messages left on the ring to
	 * the sidecar. Afterwards every mbuf and message object the data path took is back in
	 * its pool (packet_pool()/message_pool() in-use counts), while ports and pools remain.
	 * Idempotent; the destructor calls it.
	 */
	void drain() noexcept;
	/**
	 * Control-path work of one loop turn (main lcore): registrations, unregistrations and
	 * crashed pods; starts forwarding once options::wait_pods pods are there.
	 * @return how many events were handled
	 */
	unsigned poll_control() noexcept;

	/**
	 * The control passes' watchdog (poll_control()): a pass that comes
	 * control_stall_ms or more after the previous one is a stall, logged once with the
	 * control thread's time on a CPU and waiting for one in between (pods wait 5 s for
	 * REGISTERED, and grace periods end only when this thread looks: docs/memory-model.md).
	 */
	struct control_watch {
		uint64_t passes = 0;
		uint64_t stalls = 0;        /**< gaps of control_stall_ms or more */
		uint64_t worst_gap_ns = 0;  /**< the longest gap between two passes */
		uint64_t slow_passes = 0;   /**< passes that themselves took control_stall_ms */
	};
	static constexpr unsigned control_stall_ms = 500;
	const control_watch &control_watched() const noexcept { return _watch; }

	const config::node_config &config() const noexcept { return _cfg; }
	const std::vector<port::port_info> &ports() const noexcept { return _ports.list; }
	const std::vector<port::rx_ctx *> &rx() const noexcept { return _rx_view; }
	const std::vector<port::tx_ctx *> &tx() const noexcept { return _tx_view; }
	lcore::runner &runner() noexcept { return *_runner; }
	const lcore::runner &runner() const noexcept { return *_runner; }
	pod_registry &registry() noexcept { return *_registry; }
	const pod_registry &registry() const noexcept { return *_registry; }
	/** The Unix registration socket (nullptr on DOCA: pods register over comch). */
	const registrar *pod_socket() const noexcept { return _registrar.get(); }
	/** The first sidecar shard (the only one with one worker). */
	sidecar::stage &sidecar() noexcept { return *_sidecars.front(); }
	const sidecar::stage &sidecar() const noexcept { return *_sidecars.front(); }
	/** Every sidecar shard, by shard (one per worker; `lcores.workers`). */
	const std::vector<sidecar::stage *> &shards() const noexcept { return _shard_view; }
	/** Worker k's lcore (`lcores.workers` > 1), by worker; empty with one worker. */
	const std::vector<unsigned> &worker_lcores() const noexcept { return _workers; }
	/** Worker k's port RX context (nullptr: it has no RX queue), by worker. */
	const std::vector<port::rx_ctx *> &worker_rx() const noexcept { return _worker_rx; }
	/** The DPA emulator (nullptr with --dpa-backend doca). */
	const dpa::emulator *emulator() const noexcept { return _emu.get(); }
	/** DPA threads (TX + RX kernel pairs), on either backend. */
	unsigned nb_dpa_threads() const noexcept { return _nb_dpa_threads; }
#if DPUMESH_NODE_DOCA
	/** The DOCA side (nullptr with the emulator): lib/node/internal/doca_side.h. */
	internal::doca_side *doca() noexcept { return _doca.get(); }
#endif
	const rte_mempool *packet_pool() const noexcept { return _pkts.get(); }
	const rte_mempool *message_pool() const noexcept { return _msgs.get(); }
	/** rx_msgs only port RX's refusals take when message_pool() is empty. */
	const rte_mempool *message_reserve() const noexcept { return _msg_reserve.get(); }
	/** Whether rte_pdump_init succeeded (options::pdump). */
	bool pdump() const noexcept { return _pdump; }

private:
	friend result<std::unique_ptr<instance>> create(const config::node_config &cfg,
							 const options &opt);
	instance(const config::node_config &cfg, const options &opt);
	status build();
	status build_port_stages();
	status build_mesh();
	/** Worker k's port RX answers a saturated service's one-frame requests itself on the
	 *  ports whose TX queue runs on its lcore (docs/overload.md); the others' go to shard k. */
	void attach_rx_answers(unsigned k, const sidecar::stage &shard);
	/** The watchdog's bookkeeping at the end of a control pass that began at begin_ns. */
	void watch_control(uint64_t begin_ns) noexcept;
	/** The lcore of stage `stage` of worker k: worker k's lcore, or the config's mapping. */
	result<unsigned> lcore_of(unsigned worker, const std::string &stage) const;

	config::node_config _cfg;
	options _opt;
	bool _pdump = false;
	bool _stopped = false;
	unsigned _nb_dpa_threads = 0;
	control_watch _watch;
	int _control_tid = 0;                /* the thread of the latest control pass */
	uint64_t _last_pass_ns = 0;          /* CLOCK_MONOTONIC at its end */
	uint64_t _last_oncpu_ns = 0, _last_runq_ns = 0; /* its schedstat then */
	/* construction order; destruction runs it backwards */
	std::unique_ptr<rte_mempool, internal::mempool_free> _pkts;
	internal::port_set _ports;
	std::unique_ptr<rte_mempool, internal::mempool_free> _msgs;
	std::unique_ptr<rte_mempool, internal::mempool_free> _msg_reserve;
	/* rx_msg*: worker k's port RX -> its sidecar shard, by worker */
	std::vector<std::unique_ptr<rte_ring, internal::ring_free>> _ingress;
	/* port RX's refusals -> its sidecar shard, by worker */
	std::vector<std::unique_ptr<rte_ring, internal::ring_free>> _refusals;
	/* each sidecar shard's hand-off ring (two workers or more) */
	std::vector<std::unique_ptr<rte_ring, internal::ring_free>> _handoff;
	std::vector<unsigned> _workers;
	std::unique_ptr<pod_registry> _registry;
	std::unique_ptr<dpa::emulator> _emu;
#if DPUMESH_NODE_DOCA
	std::unique_ptr<internal::doca_side> _doca; /* --dpa-backend doca, in _emu's place */
#endif
	std::vector<std::unique_ptr<sidecar::stage>> _sidecars;
	std::vector<sidecar::stage *> _shard_view;
	std::vector<std::unique_ptr<port::tx_ctx>> _tx;
	std::vector<std::unique_ptr<port::rx_ctx>> _rx;
	std::vector<port::rx_ctx *> _rx_view;
	std::vector<port::rx_ctx *> _worker_rx;
	std::vector<port::tx_ctx *> _tx_view;
	std::unique_ptr<lcore::runner> _runner;
	std::unique_ptr<registrar> _registrar;
};

/**
 * Builds a node from a validated config: every resource, the stages placed on their lcores
 * (`/lcores/stages`, else the first worker lcore), the registration socket listening. EAL must
 * be initialised. The lcores are not launched yet (instance::start()).
 *
 * @return the node; or an error naming the part that failed ("ports: ...", "DPA emulator:
 *         ...", "/node/control_socket: ..."), with everything built so far torn down
 */
result<std::unique_ptr<instance>> create(const config::node_config &cfg, const options &opt);

} // namespace dpumesh::node
