// SPDX-License-Identifier: BSD-3-Clause
// The node's DPA on DOCA (--dpa-backend doca, DOCA and DOCA_CHECK builds only): the DOCA
// backend (device, DPA runtime), the DPU memory, the node memory and the pods' comch
// channel, in place of the DPA emulator and the Unix registrar; the sidecar reaches it
// through the backend seam (dpumesh/dpa/arm_side.h), the pod registry keeps the routing view.
//
// Never run on a BlueField-3: tested through the real node against the FAKES
// (tests/unit/doca_node_run_test.cc), docs/doca.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "dpumesh/common/status.h"
#include "dpumesh/config/config.h"
#include "dpumesh/doca/dpa_runtime.h"
#include "dpumesh/doca/node_memory.h"
#include "dpumesh/doca/pod_channel.h"
#include "dpumesh/doca/pod_doorbell.h"
#include "dpumesh/dpa/arm_side.h"
#include "dpumesh/node/node.h"
#include "dpumesh/podreg/pod_registry.h"

namespace dpumesh::node::internal {

class doca_side {
public:
	/**
	 * The backend on cfg.dpa.device with `pairs` TX+RX kernel pairs of `prog`, 16 MiB of
	 * DPU memory, the node memory (hbufs sized as the emulator's), the comch server for the
	 * host PF cfg.dpa.host_device; pods admitted into `reg` (register_remote) and the
	 * node memory, in that order.
	 * @return the side; an error naming the part and the DOCA call (everything undone)
	 */
	static result<std::unique_ptr<doca_side>> create(const config::node_config &cfg,
							 const doca_program &prog, pod_registry &reg,
							 unsigned pairs);
	~doca_side();
	doca_side(const doca_side &) = delete;
	doca_side &operator=(const doca_side &) = delete;

	/** The seam for the sidecar: every pair's rings, the Arm's hbufs, the per-poll call. */
	dpa::arm_side side() noexcept;
	/** Every kernel's first activation (after the sidecar lcores were launched). */
	status start_threads();
	/** The comch server's events (control thread): registrations, unregistrations. */
	unsigned poll() noexcept;
	/**
	 * While the lcores still run (the sidecar's grace periods, the kernels' wakes): the
	 * pods go out as gone() takes each (the registry, the DPA tables, the DPA threads'
	 * quiescence) while their imports live, then the comch server closes and releases
	 * the imports. Idempotent.
	 */
	void close_pods() noexcept;
	/**
	 * Once the lcores stopped: close_pods() if not done, then the drain word, the
	 * cooperative stop, and a wait (bounded) until every thread reported that it
	 * finished (node_memory::finished), so no kernel runs on the memory freed after this.
	 * @return ok; an error naming what did not end in time (memory is then kept)
	 */
	status stop();
	size_t nb_pods() const noexcept { return _chan ? _chan->nb_pods() : 0; }
	/** The Arm's DOORBELL to a pod over comch (control thread): its dpumesh_fd() wakes. */
	status ring_pod(uint32_t pod_id)
	{
		if (!_chan)
			return errorf("DOCA node: the pod channel is closed");
		return _chan->ring(pod_id);
	}
	/** A pod's doorbell as the DPA rings it (its sync event's DPA handle; 0: none). */
	uint64_t doorbell(uint32_t pod_id) const noexcept { return _chan ? _chan->doorbell(pod_id) : 0; }
	const doca::node_memory &memory() const noexcept { return *_nm; }
	doca::dpa_runtime &runtime() noexcept { return _backend->runtime(); }
	/** RX kernel wakes (notify RPCs) that failed, from the sidecar lcore (counted). */
	uint64_t wake_errors() const noexcept { return _wake_errors.load(std::memory_order_relaxed); }
	/** Unregistrations that did not end cleanly (the DPA threads not seen quiescent in
	 *  time, or a DOCA call failing): logged, counted. */
	uint64_t gone_errors() const noexcept { return _gone_errors.load(std::memory_order_relaxed); }
	/** The pods' TX doorbell seen rung and forwarded to a TX kernel (once per poll at most). */
	uint64_t tx_rings() const noexcept { return _tx_rings.load(std::memory_order_relaxed); }

private:
	doca_side() = default;
	doca::pod_admission admit(const doca::comch_register_view &v, doca_dpa_dev_mmap_t mkey);
	void gone(uint32_t pod_id);
	/** Waits until every DPA thread completed an activation begun at membership m. */
	status wait_quiescent(uint32_t m, bool notify);
	/** Waits until every DPA thread finished (after request_stop). */
	status wait_finished();
	static void *take_hbuf(void *ctx) noexcept;
	static void give_hbuf(void *ctx, void *hbuf) noexcept;
	static void service(void *ctx, unsigned pair, bool posted) noexcept;

	pod_registry *_reg = nullptr;
	unsigned _pairs = 0;
	bool _started = false, _stopped = false, _kept = false;
	std::atomic<bool> _lcores_run{false}; /* start_threads() .. stop(): wakes come from lcores */
	std::atomic<uint32_t> _nudge{0};      /* pairs whose kernels the lcore notifies (a bit each) */
	std::atomic<uint64_t> _wake_errors{0};
	std::atomic<uint64_t> _gone_errors{0};
	std::atomic<uint64_t> _tx_rings{0};
	std::vector<uint64_t> _tx_seen; /* per pair: the TX doorbell's value last forwarded (lcore) */
	/* construction order; destruction runs it backwards (the channel's imports go before
	 * the node memory, which goes before the runtime and the device) */
	std::unique_ptr<doca::dpa_backend> _backend;
	std::vector<std::unique_ptr<doca::tx_bell>> _tx_bells; /* one per pair */
	std::unique_ptr<doca::dpu_memory> _dpu;
	std::unique_ptr<doca::node_memory> _nm;
	std::unique_ptr<doca::pod_channel_server> _chan;
};

} // namespace dpumesh::node::internal
