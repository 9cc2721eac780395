// SPDX-License-Identifier: BSD-3-Clause
// The DPA emulator: runs the DPA kernels (dpa_kernels/) as DOCA DPA threads on lcores.
//
// Emulator thread t is a pair of DPA threads, the TX kernel's and the RX kernel's, each with
// its own async-ops queue and completion context (dpa_dev.h), over one DMA engine (lib/dma,
// the emulated DMA hardware), the pod registry (its security core, pod_lookup_table and the
// mkeys) and DPU-memory queues shared with the Arm's sidecar stage. Pods are partitioned
// among threads (pod_id % nb_threads): a thread takes its pods' TX SQs and is the only
// producer into its pods' RX SQs, which keeps every SQ single-producer. A TX completion for
// a pod owned by another thread is handed to that thread's completion ring.
//
// DOCA's rules are enforced (dpumesh/dpa/runtime.h lists them): a kernel breaking one is
// counted in thread_stats::violations and logged; with DPUMESH_DPA_STRICT=1 in the
// environment the process aborts at the first one (the integration tests set it; time_alive
// excepted). Both stages of thread t must run on one lcore. docs/doca.md.
//
//   auto emu = dpa::emulator::create(cfg, registry, n); // control: queues, hbufs, engines
//   runner.add(lcore, emu->tx_stage(i)); runner.add(lcore, emu->rx_stage(i));
//   sidecar::stage::create(cfg, registry, emu->side(), ...); // the Arm side of the queues
//   ... runner.stop(); emu->stop();                     // cooperative finish of the kernels
#pragma once

#include <memory>
#include <vector>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "dpumesh/config/config.h"
#include "dpumesh/dpa/arm_side.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/dma/dma.h"
#include "dpumesh/dpa/runtime.h"
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
	counter violations; /**< DOCA rules broken by either kernel (see runtime.h) */
	/** pods' doorbell eventfds written (asleep), and pods posted to in a pass that needed
	 *  none (awake or already rung): one or the other per pod per pass with posts */
	counter doorbells, doorbells_suppressed;
	/** TSC cycles this thread spent writing those doorbells (the emulated DPA's work: on a
	 *  BlueField-3 the DPA rings a pod, not an Arm core) */
	counter doorbell_cycles;
	/* one flush in pod_registry::doorbell_time_period that wrote, on the thread clock: the
	 * writes' CPU and how many (their CPU per write without descheduled time) */
	counter doorbell_timed_ns, doorbell_timed_writes;
	/** pod -> DPA: pods parked when the lcore went to sleep, parked pods woken by their TX
	 *  doorbell (rings), and doorbell looks (epoll_wait) */
	counter tx_parks, tx_rings, tx_ring_checks;
	/** hot pods idle long enough to turn cold (swept), parked pods turned cold once the
	 *  lcore had work again, TX kernel looks for SQs with work (dpa_tx_ready) and the SQ
	 *  heads they loaded (heads per look: what a pass costs), cold pods the sweep found
	 *  with work */
	counter tx_cools, tx_unparks, tx_ready_calls, tx_sq_looks, tx_sweep_finds;
	/** follow-up rounds: kernels run again in a poll on copies that completed in it (a
	 *  message's leg in one poll: the header posted to the Arm, a delivery finished) */
	counter follow_ups;
};

/** The kernels' own counters, read with relaxed loads (a snapshot for control). */
struct kernel_counters {
	uint32_t nb_tx_inflight = 0, nb_rx_inflight = 0;
	uint64_t tx_posted = 0, tx_no_hbuf = 0, tx_dma_errors = 0, tx_activations = 0;
	uint64_t rx_delivered = 0, rx_failed = 0, rx_completions = 0, rx_bad_commands = 0;
	uint64_t rx_activations = 0;
};

class emulator {
public:
	/** Creates the queues, the hbuf pool and one DMA engine per thread. */
	static result<std::unique_ptr<emulator>> create(const config::node_config &cfg,
							pod_registry &reg, unsigned nb_threads);
	~emulator();
	emulator(const emulator &) = delete;
	emulator &operator=(const emulator &) = delete;

	/** One thread's TX and RX kernels and their state (emulator.cc). */
	struct pair;

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
	/** The backend seam for the sidecar (arm_side.h): every thread's queues, the hbuf pool. */
	arm_side side() noexcept;

	rte_mempool *hbufs() const noexcept { return _hbufs; }
	uint32_t hbuf_size() const noexcept { return _hbuf_size; }
	const thread_stats &stats(unsigned t) const noexcept;
	kernel_counters kernels(unsigned t) const noexcept;
	/** Rules broken by thread t's kernels, by rule. */
	uint64_t violations(unsigned t, rule r) const noexcept;

	/**
	 * Cooperative stop, once the lcores running the stages have returned: sets every
	 * kernel's stop word and notifies it, then runs activations on the calling thread until
	 * each kernel has called dpa_thread_finish() (copies in flight drain first).
	 * @return ok; an error naming the threads still running after `timeout_ms`
	 */
	status stop(unsigned timeout_ms = 1000);
	const dma::engine &dma(unsigned t) const noexcept;
	/** Data-path thread ids the threads use with the registry's QSBR. */
	unsigned qsbr_id(unsigned t) const noexcept { return t; }

private:
	emulator() = default;
	rte_mempool *_hbufs = nullptr;
	uint32_t _hbuf_size = 0;
	std::vector<std::unique_ptr<pair>> _threads;
	friend uint32_t(::dpa_tx_complete)(::dpa_dev *, uint32_t, const sw_descriptor *, uint32_t);
};

} // namespace dpumesh::dpa
