// SPDX-License-Identifier: BSD-3-Clause
// The DPU's pod registry: pod_lookup_table, per-pod state, and the security core.
//
// Control path (main lcore): register_pod / unregister_pod, the action functions shared by
// the control socket (registrar.h) and the console. Data path (DPA kernels, emulated on
// lcores): take_tx, take_rx_slots, return_rx_slots, deliver, complete_tx, pick_pod - all
// noexcept, no allocation, no lock, every refusal counted by reason.
//
//   dpumesh::pod_registry reg(cfg.pools, cfg.services);
//   reg.dp_thread_register(0);                       // each data-path thread, once
//   for (;;) {                                       // data-path loop
//     dpumesh::tx_item it;
//     if (reg.take_tx(pod_id, sq, &it) == dpumesh::take_rc::ok) { route; copy; deliver; }
//     reg.dp_quiescent(0);                           // once per loop: no pointer kept
//   }
//
// Quiescence (rte_rcu_qsbr): begin_unregister deactivates the entry and starts a grace
// period; poll_retiring tears down once every registered data-path thread has called
// dp_quiescent() since (or is offline), so none still holds a pointer into the pod's memory
// (unregister_pod does both and waits). A data-path thread must therefore not keep
// pointers from take_tx/take_rx_slots across dp_quiescent(), and the control thread must not
// itself be an online data-path thread while it unregisters (it would wait for itself).
//
// All producers into one pod's RX SQ (deliver, complete_tx, refusal reports from take_tx)
// must run on one thread, and each TX SQ has one consumer thread: the SQs are SPSC. Per-pod
// counters are written by those threads and read by control (approximate while running).
#pragma once

#include <rte_rcu_qsbr.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dpumesh/abi/abi.h"
#include "dpumesh/config/config.h"
#include "dpumesh/podchan/proto.h"
#include "dpumesh/region/mkey_table.h"
#include "dpumesh/podlayout/pod_check.h"
#include "dpumesh/podlayout/pod_layout.h"
#include "dpumesh/region/region.h"
#include "dpumesh/ring/sq.h"
#include "dpumesh/common/counter.h"
#include "dpumesh/common/status.h"
#include "dpumesh/common/unique_fd.h"

namespace dpumesh {

/** Why take_tx refused a descriptor (DPUMESH_FOREACH_TX_REFUSAL, dpumesh/podlayout/pod_check.h:
 *  the checks are shared with the DOCA device mapping). */
enum class tx_refusal : uint8_t {
#define DPUMESH_TX_REFUSAL_ENUM(n, s, d) n,
	DPUMESH_FOREACH_TX_REFUSAL(DPUMESH_TX_REFUSAL_ENUM)
#undef DPUMESH_TX_REFUSAL_ENUM
	count
};
const char *tx_refusal_name(tx_refusal r) noexcept;
uint32_t tx_refusal_status(tx_refusal r) noexcept;

/** Why take_rx_slots discarded a refill descriptor the pod posted (pod_check.h). */
enum class refill_refusal : uint8_t {
#define DPUMESH_REFILL_REFUSAL_ENUM(n, d) n,
	DPUMESH_FOREACH_REFILL_REFUSAL(DPUMESH_REFILL_REFUSAL_ENUM)
#undef DPUMESH_REFILL_REFUSAL_ENUM
	count
};
const char *refill_refusal_name(refill_refusal r) noexcept;
static_assert(static_cast<int>(tx_refusal::count) == DPUMESH_TX_ACCEPT &&
		      static_cast<int>(refill_refusal::count) == DPUMESH_REFILL_ACCEPT,
	      "the C++ refusal enums index the C checks' reasons");

/** Per-pod counters as control reads them: a copy (pod_counters_live::read). */
struct pod_counters {
	uint64_t tx_taken = 0;                                  /**< valid descriptors taken */
	uint64_t tx_refused[static_cast<size_t>(tx_refusal::count)] = {};
	uint64_t tx_done_posted = 0;                            /**< TX_DONE completions posted */
	uint64_t rx_delivered = 0;
	uint64_t rx_sq_full = 0;                                /**< deliver/complete: RX SQ full */
	uint64_t rx_no_slot = 0;                                /**< take_rx_slots: ring empty */
	uint64_t refill_refused[static_cast<size_t>(refill_refusal::count)] = {};
	uint64_t dropped_on_unregister = 0; /**< TX work still queued at unregistration */
	uint64_t doorbells = 0;            /**< doorbell eventfd writes (the pod was asleep) */
	uint64_t doorbells_suppressed = 0; /**< post batches that needed no write (pod awake) */
	uint64_t doorbells_deferred = 0;   /**< of those: only TX completions, pod asleep */

	uint64_t tx_refused_total() const noexcept;
	uint64_t refill_refused_total() const noexcept;
	void add(const pod_counters &o) noexcept;
};

/**
 * The counters the data path writes: single writer per field (the pod's owner DPA thread;
 * dropped_on_unregister: control, while the threads are held off), relaxed load+store
 * (dpumesh::counter), so control's reads are defined behaviour while they run.
 */
struct pod_counters_live {
	counter tx_taken;
	std::array<counter, static_cast<size_t>(tx_refusal::count)> tx_refused;
	counter tx_done_posted;
	counter rx_delivered;
	counter rx_sq_full;
	counter rx_no_slot;
	std::array<counter, static_cast<size_t>(refill_refusal::count)> refill_refused;
	counter dropped_on_unregister;
	counter doorbells;
	counter doorbells_suppressed;
	counter doorbells_deferred;

	pod_counters read() const noexcept;
	void reset() noexcept;
};

/** A descriptor taken from a pod's TX SQ, validated. */
struct tx_item {
	sw_descriptor desc;    /**< the validated private copy (dst.pod_id is the pod's claim only) */
	uint32_t src = 0;      /**< pod handle of the sender: from the SQ, never from desc */
	const uint8_t *header = nullptr; /**< local pointer to desc.header_len bytes */
	const uint8_t *body = nullptr;   /**< local pointer to desc.body_len bytes, or nullptr */
	uint32_t mkey = 0;     /**< the sender's mkey: desc's addresses are in its region */
};

enum class take_rc {
	ok,      /**< *out holds a valid descriptor */
	empty,   /**< nothing queued (or no room to report a refusal: try later) */
	refused, /**< a descriptor was refused, counted and reported to the pod */
	gone,    /**< no active pod there, or no such SQ */
};

/** RX slots taken from a destination pod's refill rings. */
struct rx_slots {
	uint8_t *header = nullptr;  /**< local pointer (nullptr when no header was asked for) */
	uint64_t header_addr = 0;   /**< the pod's own address of it, for the descriptor */
	uint8_t *body = nullptr;
	uint64_t body_addr = 0;
	uint32_t mkey = 0;          /**< the pod's mkey: both addresses are in its region */
};

/** What a pod asks for at registration. */
struct register_request {
	std::string service;
	uint32_t nb_workers = 1;
	dpumesh_geometry geometry = {};
};

/** What registration hands back (fds and the region stay owned by the registry). */
struct pod_registration {
	uint32_t pod_id = 0;
	uint32_t generation = 0;
	uint32_t handle = 0;
	uint32_t mkey = 0;
	uint32_t nb_workers = 0;
	uint32_t sq_depth = 0;
	int doorbell_fd = -1;               /**< send to the pod (SCM_RIGHTS duplicates it) */
	int tx_doorbell_fd = -1;            /**< the pod rings it (TX need-wakeup); send too */
	const region *tx_region = nullptr;  /**< export to the pod */
};

class pod_registry {
public:
	/**
	 * @param limits the node's pools: a pod's geometry may not exceed any of them
	 * @param services the services pods may register under, with their max_pods
	 * @param max_dp_threads data-path threads that may report quiescence (ids 0..n-1)
	 * @param mkey_capacity slots of the mkey table
	 */
	pod_registry(const config::pools_config &limits,
		     const std::vector<config::service_config> &services,
		     unsigned max_dp_threads = 16, uint32_t mkey_capacity = mkey_table::max_capacity);
	~pod_registry();
	pod_registry(const pod_registry &) = delete;
	pod_registry &operator=(const pod_registry &) = delete;

	/* ---- control path (one thread) ---- */

	/**
	 * Registers a pod: checks the request against the config, imports nothing (the caller
	 * already did), registers the region in the mkey table, creates the doorbell eventfd and
	 * the TX SQ region, fills pod_lookup_table[pod_id] (is_active released last).
	 *
	 * @param code set to a dpumesh_ctrl_result (DPUMESH_CTRL_OK on success)
	 * @return the registration; an error with a message for the pod, the region then
	 *         destroyed: unknown service (ERR_SERVICE), invalid geometry or a region smaller
	 *         than the layout or not page-aligned (ERR_GEOMETRY), geometry over the node's
	 *         limits (ERR_LIMITS), service at max_pods (ERR_SERVICE_FULL), no free pod_id
	 *         or mkey (ERR_TABLE_FULL), eventfd/memfd failure (ERR_INTERNAL)
	 */
	result<pod_registration> register_pod(const register_request &req, region &&pod_region,
					      uint32_t *code);

	/**
	 * Registers a pod whose memory and queues live on the DPA's side (the DOCA backend: its
	 * memory an imported doca_mmap whose DPA handle is `mkey`, its TX SQs in that memory,
	 * its doorbell a DPA signal): the checks of register_pod (but the region's size, which
	 * the import bounds) and the same pod_id, generation, pod_lookup_table entry and
	 * service membership, but no region, eventfds, TX SQs or refill state here. The routing
	 * calls (pick_pod, handle_live, rx_capacity, nb_live) and unregister_pod serve it; the
	 * emulator's security core finds no SQ (nb_tx_sqs() is 0). The registration's fds are
	 * -1 and its tx_region nullptr.
	 *
	 * @param base the pod's address of its memory's byte 0 (4096-aligned)
	 * @return as register_pod
	 */
	result<pod_registration> register_remote(const register_request &req, uint32_t mkey,
						 uint64_t base, uint32_t *code);

	/**
	 * Starts an unregistration without waiting (the control socket's way, so that one pod's
	 * departure never holds up another's REGISTER): is_active = 0 (release), drop from its
	 * service (a replacement may register at once), start a grace period (rte_rcu_qsbr
	 * token). The pod_id stays taken until poll_retiring() finishes it. Again on a pod
	 * already retiring: ok, nothing more.
	 *
	 * @return ok; an error if pod_id is not registered
	 */
	status begin_unregister(uint32_t pod_id);

	/**
	 * Finishes the unregistrations begun whose grace period has passed (every data-path
	 * thread reported quiescence since) and whose zero-copy TX holds are back (or 2 s passed
	 * since the grace period: the region then stays mapped): drain and count queued TX work,
	 * unregister the mkey (unmaps the region), destroy the TX SQ region, close the doorbells,
	 * free the pod_id; its counters are added to retired_counters(). Never waits. An
	 * unregistration slower than retire_slow_ms is logged with where its time went.
	 *
	 * @param done receives the finished pod_ids (at most max)
	 * @return how many were finished
	 */
	unsigned poll_retiring(uint32_t *done, unsigned max) noexcept;
	/** Unregistrations begun and not finished yet. */
	size_t nb_retiring() const noexcept { return _retiring.size(); }

	/** What unregistrations cost (control thread only). */
	struct retire_stats {
		uint64_t retired = 0; /**< finished */
		uint64_t slow = 0;    /**< took retire_slow_ms or longer */
		uint64_t max_ms = 0;  /**< the longest, begin to finish */
		uint64_t lagging = 0; /**< grace periods still waiting after retire_slow_ms
					   (logged with the threads behind) */
	};
	static constexpr uint64_t retire_slow_ms = 100;
	const retire_stats &retirements() const noexcept { return _retire_stats; }

	/**
	 * Unregisters and waits until it is finished (begin_unregister, then poll its own
	 * retirement every 100 us): for callers with nothing else to do meanwhile (shutdown,
	 * the DOCA side's comch server, tests). A pod already retiring is waited for.
	 *
	 * @return ok; an error if pod_id is not registered
	 */
	status unregister_pod(uint32_t pod_id);

	/**
	 * Called with every pod region as it is registered (add = true, before any data path
	 * can use it) and unregistered (add = false, after quiescence, before it is unmapped):
	 * the node registers pod memory with DPDK (rte_extmem_register) here, so a DMA
	 * engine can reach it. A failed add refuses the registration.
	 */
	void set_region_hook(std::function<status(const region &, bool add)> hook)
	{
		_region_hook = std::move(hook);
	}

	/** The registration of an active pod (for REGISTER repeated on one connection). */
	result<pod_registration> registration(uint32_t pod_id) const;

	/** Registered pods; any thread (control writes it, telemetry reads it). */
	uint32_t nb_pods() const noexcept { return _nb_pods.load(std::memory_order_relaxed); }
	const mkey_table &mkeys() const noexcept { return _mkeys; }
	/** TX descriptors of an active pod taken and not completed yet (now; at most its TX
	 *  header slots: what it has in flight in the node), 0 for a free pod_id. */
	uint32_t tx_outstanding(uint32_t pod_id) const noexcept;
	/** Counters of an active pod (zeroed for a free pod_id). */
	pod_counters counters(uint32_t pod_id) const noexcept;
	/** Counters of every pod unregistered so far, summed. */
	const pod_counters &retired_counters() const noexcept { return _retired; }
	/** Index of a service (for pick_pod), or UINT32_MAX if unknown. */
	uint32_t service_index(std::string_view name) const noexcept;
	/** Name of the service of an active pod ("" if none). */
	std::string_view pod_service(uint32_t pod_id) const noexcept;

	/* ---- data-path threads: quiescent-state reporting ---- */

	/** Registers thread `id` (< max_dp_threads) with the QSBR variable and marks it online. */
	status dp_thread_register(unsigned id);
	/** Marks thread `id` offline and unregisters it. */
	void dp_thread_unregister(unsigned id) noexcept;
	/** Thread `id` holds no pointer or handle obtained before this call. Once per loop. */
	void dp_quiescent(unsigned id) noexcept { rte_rcu_qsbr_quiescent(_qsbr, id); }
	/**
	 * Whether thread `id` has reported quiescence since the latest grace period began (its
	 * counter is the QSBR token): every grace period waiting now has what it needs from
	 * it. Reads the QSBR variable's token and the thread's counter, as
	 * rte_rcu_qsbr_quiescent writes them.
	 */
	bool dp_caught_up(unsigned id) const noexcept
	{
		return __atomic_load_n(&_qsbr->qsbr_cnt[id].cnt, __ATOMIC_RELAXED) ==
		       __atomic_load_n(&_qsbr->token, __ATOMIC_ACQUIRE);
	}
	/**
	 * Control path: returns once every online data-path thread has reported quiescence
	 * after the call, so none still uses what was unpublished before it (RCU grace period;
	 * the sidecar's policy swap uses it too). It sleeps between looks, never spins: the
	 * control thread may run real-time (`lcores.control_priority`) on a CPU that a
	 * data-path thread shares, and that thread must run to report.
	 */
	void dp_synchronize() noexcept;

	/* ---- data path: the security core (noexcept, counted) ---- */

	/** pod_lookup_table, indexed by pod_id; read is_active with acquire. */
	const pod_registry_entry *table() const noexcept { return _table; }

	/** The current handle of an active pod, or 0. */
	uint32_t handle(uint32_t pod_id) const noexcept;
	/** Whether a handle names the current registration of an active pod. */
	bool handle_live(uint32_t handle) const noexcept;
	/** TX SQs of an active pod (0 if none). */
	uint32_t nb_tx_sqs(uint32_t pod_id) const noexcept;
	/**
	 * Where TX SQ sq's head `valid` is now (nullptr: no active pod or SQ), for a data-path
	 * thread that watches its SQs with one load each: valid until the SQ's next take (the
	 * head moves) and, like every pod pointer, until the thread reports quiescence after
	 * the pod's unregistration began (membership() moves first).
	 */
	const uint32_t *tx_head(uint32_t pod_id, uint32_t sq) const noexcept;
	/**
	 * The TX doorbell of an active pod (-1: none): an eventfd the pod writes after posting
	 * while its TX need-wakeup word is odd. The owning data-path thread watches it (epoll);
	 * it stays open until that thread reported quiescence after the pod's unregistration
	 * began, so it can still be removed from an epoll set then.
	 */
	int tx_doorbell(uint32_t pod_id) const noexcept;
	/** The pod's TX need-wakeup word (dpumesh_pod_ctrl::tx_wait, in its region; nullptr: no
	 *  active pod): written by the owning data-path thread only, never read back. Valid as
	 *  long as tx_head(). */
	uint64_t *tx_wait(uint32_t pod_id) noexcept;
	/** Changes on every registration and unregistration (release; read with acquire): a
	 *  data-path thread rebuilds its list of SQs when it moves. */
	uint32_t membership() const noexcept { return _membership.load(std::memory_order_acquire); }
	/** Changes on every unregistration alone (release; read with acquire): the sidecar
	 *  shards then end the pending requests of pods that are no longer live. */
	uint32_t departures() const noexcept { return _departures.load(std::memory_order_acquire); }

	/**
	 * Dequeues one descriptor from TX SQ sq_index of pod_id and validates the copy: flags
	 * (only REQUEST or RESPONSE, case LOCAL or EXTERNAL, no reserved or status bits),
	 * header (required) and body (optional) each inside the pod's own TX header / TX body
	 * pool, on a slot start, no longer than a slot, translated with the pod's own mkey. A
	 * refused descriptor is counted by reason and reported to the pod on its RX SQ as
	 * TX_DONE|ERROR with the status, the original req_id/step_id, addresses and lengths, and
	 * its doorbell rung. Nothing is dequeued while the pod's RX SQ has no room for a report.
	 *
	 * @return take_rc::ok with *out filled (out->src = the pod's handle); empty; refused;
	 *         gone (pod not active, or sq_index >= its TX SQs)
	 */
	take_rc take_tx(uint32_t pod_id, uint32_t sq_index, tx_item *out) noexcept;

	/**
	 * Takes one RX header slot (when header_len > 0) and one RX body slot (when body_len >
	 * 0) from the refill rings of the registration named by dst_handle. Refill descriptors
	 * whose generation (step_id) is not current, or whose address is not a slot start in the
	 * pod's RX pool, are discarded and counted. Also checks the RX SQ has room for the
	 * delivery. On failure nothing is kept (a slot already taken is put back).
	 *
	 * @return DPUMESH_STATUS_OK and *out filled; DEST_GONE (handle not live), TOO_LARGE
	 *         (longer than the slot size), DEST_FULL (no valid refill slot, or RX SQ full)
	 */
	uint32_t take_rx_slots(uint32_t dst_handle, uint32_t header_len, uint32_t body_len,
			       rx_slots *out) noexcept;

	/**
	 * Local pointer to [addr, addr+len) in the TX body pool of the registration named by
	 * src_handle (same checks as take_tx: inside the pool, on a slot start, within a slot),
	 * for reading a sender's body after its descriptor was taken.
	 *
	 * @return the pointer; nullptr if the handle is not live or the range is not valid
	 */
	const uint8_t *tx_body(uint32_t src_handle, uint64_t addr, uint32_t len) noexcept;

	/**
	 * True while an unregistration waits for data-path threads to be quiescent. A thread
	 * that reports quiescence only when it holds no pod pointer (e.g. the DPA emulator,
	 * whose DMA copies outlive a loop) stops taking new work while this is set, so it
	 * drains and reports promptly.
	 */
	bool quiesce_pending() const noexcept
	{
		return _quiesce_waiters.load(std::memory_order_acquire) != 0;
	}

	/**
	 * Doorbells for sleepers only (docs/memory-model.md "Doorbells"). A post to a pod's RX SQ
	 * (deliver, complete_tx, a refusal report) rings its eventfd only when the pod's
	 * need-wakeup word (dpumesh_pod_ctrl::rx_wait, in its region) says it sleeps, has not
	 * been rung for, and wants this kind of post (a successful TX completion only if it
	 * asked: dpumesh_doorbell_needed). Inside a batch, posts only mark the pod;
	 * flush_doorbells() then rings each marked pod at most once (one fence for all).
	 * Outside a batch, each post checks at once. A post refused for a full RX SQ marks the
	 * pod too (urgent): a sleeping pod must drain.
	 */
	struct doorbell_batch {
		const pod_registry *reg = nullptr;
		uint32_t nb = 0;
		/** flushes that wrote to go until one is timed on the thread clock (0: this one) */
		uint32_t time_in = 0;
		uint64_t read_ns = 0; /**< a thread-clock read's own cost (measured once) */
		uint32_t handles[DPUMESH_MAX_PODS]; /**< pods posted to since the last flush */
	};
	/** One flush in this many that wrote is timed on the thread clock (three clock reads,
	 *  ~0.5 us here): the writes' CPU without the time the thread was descheduled in them,
	 *  which their TSC (`cycles`) includes. */
	static constexpr uint32_t doorbell_time_period = 32;
	/** Makes posts on the calling thread mark pods in b until end_doorbells(). */
	void begin_doorbells(doorbell_batch *b) noexcept;
	/** What a flush did: eventfd writes, and marked pods that needed none (awake). */
	struct doorbell_counts {
		uint32_t rung = 0, suppressed = 0;
		/** TSC cycles of the writes (rung > 0 only): what the emulated DPA's doorbells
		 *  cost the thread that rang them (on a BlueField-3 the DPA rings, not an Arm core) */
		uint64_t cycles = 0;
		/** a timed flush (doorbell_time_period): the writes' thread CPU, and how many */
		uint64_t timed_ns = 0;
		uint32_t timed_rung = 0;
	};
	/** Rings the marked pods that sleep (at most once each), empties b. Same thread. */
	doorbell_counts flush_doorbells(doorbell_batch *b) noexcept;
	/** flush_doorbells(), then posts on this thread check at once again. */
	doorbell_counts end_doorbells(doorbell_batch *b) noexcept;

	/** Gives back slots from take_rx_slots that were not delivered (used before anything else). */
	void return_rx_slots(uint32_t dst_handle, const rx_slots &slots) noexcept;

	/**
	 * Posts desc (addresses from take_rx_slots) to the pod's RX SQ and rings its doorbell
	 * (an eventfd write here; a comch/DPA completion on hardware).
	 *
	 * @return DPUMESH_STATUS_OK; DEST_GONE (handle not live); DEST_FULL (RX SQ full)
	 */
	uint32_t deliver(uint32_t dst_handle, const sw_descriptor &desc) noexcept;

	/**
	 * Posts the TX completion of desc (a descriptor taken by take_tx) to its sender: flags
	 * TX_DONE, plus ERROR and the status when status != OK; addresses, lengths, req_id and
	 * step_id of desc, so the pod can free its TX slots. Rings the doorbell.
	 *
	 * @return DPUMESH_STATUS_OK; DEST_GONE (the sender is gone: nothing to complete);
	 *         DEST_FULL (its RX SQ is full: retry later)
	 */
	uint32_t complete_tx(uint32_t src_handle, const sw_descriptor &desc, uint32_t status) noexcept;

	/**
	 * Zero-copy TX (Case 1): the local address of a body in src's TX body pool, with a hold
	 * on the pod's region that outlives quiescence: unregister_pod() waits (bounded) until
	 * every hold is released, because the NIC may still read the body after the thread
	 * that attached it moved on. Call from a registered data-path thread.
	 * @return nullptr (nothing held) when src is not live or the range is not a slot
	 */
	const uint8_t *tx_body_hold(uint32_t src_handle, uint64_t addr, uint32_t len) noexcept;
	/** Releases a hold (any thread, e.g. an mbuf free callback). */
	void tx_body_release(uint32_t src_handle) noexcept;
	/** Holds released after their registration was torn down (unregister timed out). */
	uint64_t zc_orphans() const noexcept { return _zc_orphans.load(std::memory_order_relaxed); }

	/**
	 * Round robin over the active pods of a service.
	 *
	 * @return a pod handle, or 0 if the service has no active pod (or is unknown)
	 */
	uint32_t pick_pod(uint32_t service_index) noexcept;
	/** Active pods of a service. */
	uint32_t nb_live(uint32_t service_index) const noexcept;
	/**
	 * Requests a live pod can hold at once: the smaller of its RX header and RX body slot
	 * counts (its geometry); what the sidecar admits to it at the first look is bounded by
	 * this plus a queue (docs/overload.md).
	 * @return the slot count; 0 when the handle is not live
	 */
	uint32_t rx_capacity(uint32_t handle) const noexcept;

private:
	struct pod_state;
	struct service_state;

	uint32_t admit(const register_request &req, dpumesh_pod_layout *layout, uint32_t *code,
		       status *why) const;
	result<pod_registration> publish(uint32_t id, const register_request &req,
					 const dpumesh_pod_layout &layout, uint32_t *code);
	pod_state *live_state(uint32_t handle) noexcept;
	const pod_state *live_state(uint32_t handle) const noexcept;
	bool post_rx(pod_state &p, const sw_descriptor &d) noexcept;
	bool ring_if_asleep(pod_state &p, bool urgent) noexcept;
	/* marks p in the current batch (urgent: a post that must wake it), or checks at once */
	void note_post(pod_state &p, bool urgent) noexcept;
	bool rx_room(const pod_state &p) const noexcept;
	uint64_t take_refill(pod_state &p, bool body) noexcept;
	/* finishes a retiring pod if it can now (true), else false; never waits */
	bool try_retire(uint32_t pod_id) noexcept;
	void note_lagging(uint32_t pod_id, uint64_t token) noexcept;

	alignas(64) pod_registry_entry _table[DPUMESH_MAX_PODS] = {};
	std::unique_ptr<pod_state[]> _pods;
	std::unique_ptr<service_state[]> _services;
	uint32_t _nb_services = 0;
	config::pools_config _limits;
	mkey_table _mkeys;
	rte_rcu_qsbr *_qsbr = nullptr;
	unsigned _max_dp_threads;
	std::atomic<uint32_t> _nb_pods{0}; /* single writer: control */
	std::atomic<uint32_t> _membership{0}; /* single writer: control */
	std::atomic<uint32_t> _departures{0}; /* single writer: control */
	std::atomic<uint32_t> _quiesce_waiters{0};
	std::atomic<uint64_t> _zc_orphans{0};
	std::vector<std::unique_ptr<region>> _lingering; /* kept mapped for a stalled port */
	std::vector<uint32_t> _retiring; /* begun, not finished (capacity DPUMESH_MAX_PODS) */
	retire_stats _retire_stats;
	std::function<status(const region &, bool)> _region_hook;
	uint32_t _next_pod = 0;
	uint32_t _next_generation = 1;
	pod_counters _retired;
};

} // namespace dpumesh
