// SPDX-License-Identifier: BSD-3-Clause
// The Arm's side of the DOCA device mapping's memory (dpa_kernels/doca/dpa_doca.h): the DPU
// memory the DPA reaches through windows (doca_mmap over the Arm's memory, the "DPU mmap"),
// the node block, the pod blocks, the pairs' inboxes, each thread's rings (sidecar /
// commands, notifications, hbuf free list, give-back) and the hbufs; pods written at
// registration, the drain word, and the Arm's ends of the rings.
//
// Never run on a BlueField-3 (docs/doca.md): tested against FAKES of the host calls whose DPA
// memory is host memory, with the real kernels run by the device FAKES on what it wrote
// (tests/unit/doca_node_test.cc).
//
//   auto dpu = doca::dpu_memory::create(dev, 16 << 20);
//   auto nm = doca::node_memory::create(rt, *dpu, {pairs});
//   nm->register_pod({...});  (*nm)->commands(p) ...  nm->reclaim(p);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "dpumesh/abi/abi.h"
#include "dpumesh/common/status.h"
#include "dpumesh/doca/dpa_runtime.h"
#include "dpumesh/podlayout/pod_layout.h"
#include "dpumesh/ring/sq.h"

namespace dpumesh::doca {

/** The Arm's memory the DPA reaches through windows: allocated here, mapped for the device
 *  (doca_mmap local read-write), its DPA handle in every thread's dpu_mmap. */
class dpu_memory {
public:
	/** The memory (4 KiB-aligned, zeroed); doca_mmap_create, set_memrange, add_dev,
	 *  set_permissions(local read-write), start, doca_mmap_dev_get_dpa_handle. */
	static result<std::unique_ptr<dpu_memory>> create(doca_dev *dev, size_t len);
	~dpu_memory();
	uint8_t *base() const noexcept { return _base; }
	size_t size() const noexcept { return _len; }
	doca_dpa_dev_mmap_t handle() const noexcept { return _handle; }
	/** Carves n bytes (64-byte aligned). @return nullptr when full */
	uint8_t *carve(size_t n) noexcept;

private:
	dpu_memory() = default;
	uint8_t *_base = nullptr;
	size_t _len = 0, _used = 0;
	doca_mmap *_mmap = nullptr;
	doca_dpa_dev_mmap_t _handle = 0;
	undo_stack _undo;
};

struct node_memory_options {
	unsigned pairs = 1;          /**< the runtime's kernels are tx0, rx0, tx1, rx1, ... */
	uint32_t ring_slots = 1024;  /**< each thread ring: a power of two */
	uint32_t hbuf_size = 2048;   /**< a header buffer: DPA_HBUF_META_SIZE + the largest header */
	uint32_t hbufs = 512;        /**< per pair: kept on the TX kernel's free ring */
	uint32_t bodies = 256;       /**< network bodies (piece lists) in flight at once */
	uint32_t arm_hbufs = 256;    /**< hbufs the Arm takes for messages it makes (Case 2) */
	/** pods ring their pair's TX doorbell, which the Arm forwards (doca_side): the TX
	 *  kernels park idle pods and sleep (dpa_doca_node::tx_bells); false: they poll */
	bool tx_bells = false;
};

/** A piece of a network body: DPU memory (the Arm's address), not empty. */
struct body_piece {
	uint64_t addr = 0;
	uint32_t len = 0;
};

/** One pod as registration decided it (the pod block's first half). */
struct pod_placement {
	uint32_t pod_id = 0;
	uint32_t generation = 0;
	uint32_t nb_workers = 0;
	doca_dpa_dev_mmap_t mkey = 0; /**< the pod memory's DPA handle (pod_import::handle()) */
	uint64_t base = 0;            /**< the pod's address of its region's byte 0 */
	uint64_t doorbell = 0;        /**< the pod's doorbell (UNVERIFIED: a sync event handle) */
	dpumesh_geometry geometry{};
	/** where TX SQ w lives: (mmap, the owner's address); on DOCA in the pod's exported
	 *  memory right after its region unless given (docs/doca.md) */
	uint32_t tx_sq_mmap[DPUMESH_MAX_WORKERS] = {};
	uint64_t tx_sq_addr[DPUMESH_MAX_WORKERS] = {};
};

class node_memory {
public:
	/**
	 * In DPA memory (doca_dpa_mem_alloc + doca_dpa_h2d_memcpy): the pod blocks (zeroed), one
	 * inbox per pair (seq[i] = i), the node block; in the DPU memory: each thread's rings and
	 * each pair's hbufs (on its TX kernel's free ring); then each thread's node fields of its
	 * argument block (node, pair, role, hbuf size, rings, dpu_mmap).
	 * @return the node memory, or an error naming the DOCA call (everything undone)
	 */
	static result<std::unique_ptr<node_memory>> create(dpa_runtime &rt, dpu_memory &dpu,
							   const node_memory_options &opt);
	~node_memory() { _undo.unwind(); }

	/** Writes the pod's block whole, then its pod_lookup_table entry active, then moves
	 *  the membership. Refused for a pod_id that is registered (its entry active). */
	status register_pod(const pod_placement &p);
	/** The table entry inactive (generation kept: late handles stay gone), membership. */
	status unregister_pod(uint32_t pod_id, uint32_t generation);
	/** Every thread's first activation (dpa_runtime::notify of each kernel): after create,
	 *  once the node is ready for the kernels to run. */
	status start_threads();
	/** Wakes pair p's RX kernel: after the Arm posted commands (dpa_runtime::notify). */
	status wake_rx(unsigned p) { return _rt->notify(2 * p + 1); }
	/** The drain word: 1 while an unregistration waits (the kernels take no new work). */
	status set_drain(bool on);

	/** The Arm's ends of pair p's rings (local memory; the DPA's ends are windows). */
	dpumesh_sq &sidecar_tx(unsigned p) noexcept { return _pairs[p].sidecar_tx; }
	dpumesh_sq &commands(unsigned p) noexcept { return _pairs[p].commands; }
	dpumesh_sq &notes(unsigned p) noexcept { return _pairs[p].notes; }
	/**
	 * Drains pair p's give-back rings: hbufs back on the TX kernel's free ring, network
	 * bodies back on the body free list, each one's cookie to the release hook (the Arm's
	 * network path frees its buffers there).
	 * @return entries taken
	 */
	unsigned reclaim(unsigned p) noexcept;
	uint64_t bodies_back() const noexcept { return _bodies_back; }
	/** Given-back entries that named no hbuf or body of this node (counted, dropped). */
	uint64_t bad_back() const noexcept { return _bad_back; }

	/**
	 * A network body for the RX kernel (Case 2): its pieces written as a dpa_doca_body in
	 * the DPU memory. Control path of the Arm's network stage; no DOCA call.
	 * @return the handle for the command's body_buf_addr; an error when there are no or
	 *         too many pieces, a piece is empty or outside the DPU memory, or every body
	 *         is in flight
	 */
	result<uint64_t> make_body(std::span<const body_piece> pieces, uint64_t cookie);
	/**
	 * An hbuf for a message the Arm makes (Case 2): its metadata zeroed (no sender to
	 * complete); the header goes at the returned address, which is the command's
	 * header_buf_addr. Given back by the DPA like any hbuf; reclaim() returns it here.
	 * @return the header address; an error when all are in flight
	 */
	result<uint64_t> take_hbuf();
	/** take_hbuf for the Arm's data path (no allocation): the hbuf's metadata address
	 *  (zeroed), or 0 when all are in flight. */
	uint64_t try_take_hbuf() noexcept;
	/** An hbuf (its metadata address) back where it belongs without the DPA carrying it:
	 *  a pair's free ring or the Arm's own; one naming no hbuf is counted in bad_back(). */
	void release_hbuf(uint64_t hbuf) noexcept { give_back_hbuf(hbuf); }
	uint32_t hbuf_size() const noexcept { return _hbuf_size; }
	/** Called by reclaim() with the cookie of each body the DPA gave back. */
	void set_body_release(std::function<void(uint64_t cookie)> f) { _body_release = std::move(f); }

	/**
	 * The DPA threads' quiescence reports (doca_dpa_d2h_memcpy of each one's `quiescent`):
	 * whether every thread completed an activation that began at membership `m` or later,
	 * so none holds what the change to `m` took away. A parked thread reports at its next
	 * activation (docs/doca.md).
	 */
	result<bool> quiescent(uint32_t m);
	/** Whether every DPA thread has finished (its `finished` report, doca_dpa_d2h_memcpy):
	 *  after dpa_runtime::request_stop, the memory may be freed only then. */
	result<bool> finished();
	uint32_t membership() const noexcept { return _membership; }
	/** DPA addresses, for the statistics reader and tests. */
	doca_dpa_dev_uintptr_t node_ptr() const noexcept { return _node_ptr; }
	doca_dpa_dev_uintptr_t pods_ptr() const noexcept { return _pods_ptr; }

private:
	struct pair_rings {
		dpumesh_sq sidecar_tx{}, commands{}, notes{}, hbuf_free{}, back_tx{}, back_rx{};
		uint64_t hbuf_lo = 0, hbuf_hi = 0; /* its hbufs: [lo, hi), hbuf_size apart */
	};
	/** Where a given-back hbuf belongs: a pair's free ring, or the Arm's pool. */
	void give_back_hbuf(uint64_t hbuf) noexcept;
	node_memory() = default;
	status write_node();
	status write_threads(const node_memory_options &opt);

	dpa_runtime *_rt = nullptr;
	dpu_memory *_dpu = nullptr;
	uint32_t _nb_pairs = 0, _membership = 0;
	bool _tx_bells = false;
	std::vector<bool> _active = std::vector<bool>(DPUMESH_MAX_PODS, false);
	doca_dpa_dev_uintptr_t _node_ptr = 0, _pods_ptr = 0, _inbox_ptr = 0;
	std::vector<pair_rings> _pairs;
	uint64_t _bodies_back = 0, _bad_back = 0;
	uint8_t *_bodies = nullptr;             /* struct dpa_doca_body[nb], in DPU memory */
	std::vector<uint32_t> _free_bodies;
	std::vector<uint64_t> _body_cookie;
	std::function<void(uint64_t)> _body_release;
	uint32_t _hbuf_size = 0;
	uint64_t _arm_hbuf_lo = 0, _arm_hbuf_hi = 0;
	std::vector<uint64_t> _arm_hbufs; /* free */
	undo_stack _undo;
};

} // namespace dpumesh::doca
