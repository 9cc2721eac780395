// SPDX-License-Identifier: BSD-3-Clause
// The DPA emulator: runs the DPA kernels (dpa_kernels/) as "DPA threads" on lcores.
//
// Each DPA thread implements dpa_dev.h on top of a DMA engine (lib/dma), the pod registry
// (its security core) and DPU-memory queues shared with the Arm's sidecar stage. Pods are
// partitioned among threads (pod_id % nb_threads): a thread takes its pods' TX SQs and is
// the only producer into its pods' RX SQs, which keeps every SQ single-producer. A TX
// completion for a pod owned by another thread is handed to that thread's completion ring.
//
//   dpa::emulator emu(cfg, registry);                 // control: queues, hbufs, engines
//   runner.add(lcore, emu.tx_stage(i)); runner.add(lcore, emu.rx_stage(i));
//   sidecar.attach(emu);                              // the Arm side of the queues
#pragma once

#include <memory>
#include <vector>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpumesh/config/config.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/dma/dma.h"
#include "dpumesh/kernels/dpa_dev.h"
#include "dpumesh/lcore/runner.h"
#include "dpumesh/podreg/pod_registry.h"
#include "dpumesh/ring/sq.h"
#include "dpumesh/common/status.h"

/* The runtime's per-thread context (dpa_dev.h's opaque struct). */
struct dpa_dev;

namespace dpumesh::dpa {

/** A pending TX completion handed to the thread that owns the sender. */
struct tx_completion {
	sw_descriptor orig;
	uint32_t src;
	uint32_t status;
};

/**
 * A body in DPU memory (Case 2: a message received through the NIC, one mbuf per frame).
 * The handle a command carries in body_buf_addr is the address of one of these, at the
 * start of an object taken from an rte_mempool: releasing the body frees `chain` and puts
 * the object back into its pool (see release_local_body()).
 */
struct local_body {
	rte_mbuf *chain = nullptr; /**< owner of every segment */
	rte_mbuf *first = nullptr; /**< the segment where the body starts */
	uint32_t first_off = 0;    /**< offset of the body in `first` */
};

/** Frees a local body and the pool object it heads (the Arm's path for bodies it keeps). */
void release_local_body(uint64_t handle) noexcept;

/** The Arm's end of one DPA thread's queues. */
struct arm_queues {
	dpumesh_sq from_dpa;  /**< sidecar TX SQ: consumer */
	dpumesh_sq to_dpa;    /**< sidecar RX SQ: producer */
	dpumesh_sq notify;    /**< notification queue: consumer */
};

struct alignas(64) thread_stats {
	counter tx_taken, tx_posted, rx_delivered, rx_handed_back, rx_completions, tx_completions;
	counter remote_completions, completion_ring_full;
};

class emulator {
public:
	/** Creates the queues, the hbuf pool and one DMA engine per thread. */
	static result<std::unique_ptr<emulator>> create(const config::node_config &cfg,
							pod_registry &reg, unsigned nb_threads);
	~emulator();
	emulator(const emulator &) = delete;
	emulator &operator=(const emulator &) = delete;

	unsigned nb_threads() const noexcept { return static_cast<unsigned>(_threads.size()); }
	/** The thread owning a pod (by handle or pod id). */
	unsigned owner(uint32_t handle) const noexcept
	{
		return DPUMESH_HANDLE_POD_ID(handle) % nb_threads();
	}
	lcore::stage_def tx_stage(unsigned thread) noexcept;
	lcore::stage_def rx_stage(unsigned thread) noexcept;
	/** The sidecar's side of thread t's queues. */
	arm_queues &arm(unsigned t) noexcept;

	rte_mempool *hbufs() const noexcept { return _hbufs; }
	uint32_t hbuf_size() const noexcept { return _hbuf_size; }
	const thread_stats &stats(unsigned t) const noexcept;
	const dpa_kernel_state &kernel_state(unsigned t) const noexcept;
	const dma::engine &dma(unsigned t) const noexcept;
	/** Data-path thread ids the threads use with the registry's QSBR. */
	unsigned qsbr_id(unsigned t) const noexcept { return t; }

private:
	emulator() = default;
	rte_mempool *_hbufs = nullptr;
	uint32_t _hbuf_size = 0;
	std::vector<std::unique_ptr<::dpa_dev>> _threads;
	friend uint32_t(::dpa_tx_complete)(::dpa_dev *, uint32_t, const sw_descriptor *, uint32_t);
};

} // namespace dpumesh::dpa
