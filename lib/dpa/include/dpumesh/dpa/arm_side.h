// SPDX-License-Identifier: BSD-3-Clause
// The backend seam: the DPA threads as the Arm's sidecar sees them, whichever backend runs
// them (the DPA emulator on lcores, or DOCA DPA threads on a BlueField-3).
//
// The sidecar needs the same few things of either: per DPA thread (a TX + RX kernel pair)
// the Arm's ends of three queues (the sidecar TX SQ it consumes, the sidecar RX SQ it
// produces commands to, the notification queue it consumes), the header buffers (hbufs) of
// messages it makes itself and where the hbufs of commands it drops go back, and on DOCA a
// call once per poll per thread (wake an RX kernel that got commands, take back what the
// threads gave back). Both backends keep the queues as dpumesh_sq in memory the Arm reads
// directly, so the hot path is the same loads and stores on either: the seam is data (queue
// pointers) plus one optional indirect call per thread per poll, never one per message
// (docs/architecture.md, "The DPA backend seam").
//
//   dpa::arm_side s = emu->side();                      // or the DOCA node memory's
//   n = dpumesh_sq_dequeue_burst(s.threads[t].from_dpa, in, burst);
//   void *h = s.take_hbuf(); ... s.give_hbuf(h);        // error answers, dropped commands
//   if (s.service) s.service(s.ctx, t, posted);         // once per thread per poll
#pragma once

#include <cstdint>
#include <vector>

#include <rte_mempool.h>

#include "dpumesh/abi/abi.h"
#include "dpumesh/ring/sq.h"

namespace dpumesh::dpa {

/** The Arm's ends of one DPA thread's queues (memory the Arm reads and writes directly). */
struct arm_rings {
	dpumesh_sq *from_dpa = nullptr; /**< sidecar TX SQ: headers the TX kernel took (consumer) */
	dpumesh_sq *to_dpa = nullptr;   /**< sidecar RX SQ: commands to the RX kernel (producer) */
	dpumesh_sq *notify = nullptr;   /**< what the RX kernel hands back (consumer) */
};

/** The DOCA side's calls (nullptr members: the emulator's case). */
struct arm_side_ops {
	/** An hbuf for a message the Arm makes (its dpa_hbuf_meta), or nullptr. */
	void *(*take_hbuf)(void *ctx) noexcept = nullptr;
	/** An hbuf back without a command carrying it to the DPA. */
	void (*give_hbuf)(void *ctx, void *hbuf) noexcept = nullptr;
	/**
	 * Once per poll per thread the calling sidecar shard owns: `posted` says whether it put
	 * commands on the thread's sidecar RX SQ in this poll (DOCA: wake the RX kernel once,
	 * then take back the hbufs and bodies the threads gave back).
	 */
	void (*service)(void *ctx, unsigned thread, bool posted) noexcept = nullptr;
};

/** The seam itself: filled by the backend at node creation, copied into each sidecar shard. */
struct arm_side {
	std::vector<arm_rings> threads; /**< by DPA thread; pods go to pod_id % size */
	uint32_t hbuf_size = 0;         /**< an hbuf: DPA_HBUF_META_SIZE + the largest header */
	/** The emulator's hbufs (an rte_mempool the kernels share): taken and given back here
	 *  without a call through `ops`; nullptr on DOCA. Case 2 headers come from it. */
	rte_mempool *hbuf_pool = nullptr;
	arm_side_ops ops;
	void *ctx = nullptr;

	unsigned nb_threads() const noexcept { return static_cast<unsigned>(threads.size()); }
	/** The thread owning a pod (by handle or pod id). */
	unsigned owner(uint32_t handle) const noexcept
	{
		return DPUMESH_HANDLE_POD_ID(handle) % nb_threads();
	}
	void *take_hbuf() const noexcept
	{
		void *obj = nullptr;
		if (hbuf_pool)
			return rte_mempool_get(hbuf_pool, &obj) == 0 ? obj : nullptr;
		return ops.take_hbuf ? ops.take_hbuf(ctx) : nullptr;
	}
	void give_hbuf(void *hbuf) const noexcept
	{
		if (hbuf_pool)
			rte_mempool_put(hbuf_pool, hbuf);
		else if (ops.give_hbuf)
			ops.give_hbuf(ctx, hbuf);
	}
};

} // namespace dpumesh::dpa
