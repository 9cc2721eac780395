/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/podlayout/pod_layout.h - where each pool and ring sits inside a pod's region, and inside the
 * DPU-created TX SQ region, computed from a geometry by a pure function.
 *
 * Both sides call dpumesh_pod_layout_compute() with the geometry agreed at registration (the
 * pod asks, the DPU checks it against its limits and keeps its own copy); neither side ever
 * reads geometry or offsets from shared memory. Plain C11 without libc, for the DPA too.
 *
 *   struct dpumesh_geometry g = {{256, 1024}, {256, 65536}, {256, 1024}, {256, 65536}, 256, 0};
 *   struct dpumesh_pod_layout l;
 *   if (dpumesh_pod_layout_compute(&g, &l) != DPUMESH_LAYOUT_OK) ... ;
 *   struct sw_descriptor *rx_sq = (struct sw_descriptor *)(base + l.rx_sq_off);
 *
 * Region, each section starting on a 4096-byte boundary, in this order:
 *   TX header pool | TX body pool | RX header pool | RX body pool | RX SQ |
 *   RX header refill ring | RX body refill ring | pod control block
 * A pool is `slots` slots of `slot_size` bytes back to back; slot i is at off + i*slot_size.
 * The control block (struct dpumesh_pod_ctrl) holds words the pod writes and the DPU only
 * reads (the need-wakeup epoch, docs/memory-model.md "Doorbells").
 */
#ifndef DPUMESH_POD_LAYOUT_H
#define DPUMESH_POD_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "dpumesh/abi/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this layout; bumped with DPUMESH_CTRL_VERSION whenever a section moves or is
 *  added (2: the pod control block). */
#define DPUMESH_POD_LAYOUT_VERSION 2u
/** Alignment of every section (and of the region base). */
#define DPUMESH_LAYOUT_ALIGN 4096u
/** Largest region a geometry may describe. */
#define DPUMESH_LAYOUT_MAX_SIZE (4ull << 30)
#define DPUMESH_LAYOUT_MAX_SLOTS 65536u
#define DPUMESH_LAYOUT_MIN_SLOT_SIZE 64u
#define DPUMESH_LAYOUT_MIN_SQ_DEPTH 16u
#define DPUMESH_LAYOUT_MAX_SQ_DEPTH 65536u
/** Most TX SQs (worker threads) one pod may have. */
#define DPUMESH_MAX_WORKERS 16u

/** One fixed-slot pool. */
struct dpumesh_pool_geometry {
	uint32_t slots;     /**< 1 .. DPUMESH_LAYOUT_MAX_SLOTS */
	uint32_t slot_size; /**< bytes, >= DPUMESH_LAYOUT_MIN_SLOT_SIZE, a multiple of 64 */
};

/** What a pod asks for at registration (40 bytes, also the wire form). */
struct dpumesh_geometry {
	struct dpumesh_pool_geometry tx_header, tx_body, rx_header, rx_body;
	uint32_t sq_depth; /**< every SQ and refill ring: a power of two, 16 .. 65536 */
	uint32_t reserved; /**< zero */
};
DPUMESH_STATIC_ASSERT(sizeof(struct dpumesh_geometry) == 40, "dpumesh_geometry: 40 bytes");

/** dpumesh_pod_ctrl::rx_wait: the pod blocks (or is about to) on its doorbell. */
#define DPUMESH_RX_WAIT_ASLEEP 1u
/** dpumesh_pod_ctrl::rx_wait: ring for successful TX completions too. */
#define DPUMESH_RX_WAIT_TX_DONE 2u
/** dpumesh_pod_ctrl::rx_wait: where the epoch starts. */
#define DPUMESH_RX_WAIT_EPOCH_SHIFT 2

/**
 * The pod control block, the region's last section: one word the pod writes and the DPU only
 * reads (rx_wait), one the DPU writes and the pod only reads (tx_wait). Neither side trusts
 * the other's word beyond "ring or not": a pod that writes anything here only changes when
 * its own doorbells are rung (docs/memory-model.md "Doorbells").
 */
struct dpumesh_pod_ctrl {
	/**
	 * Need-wakeup word of the RX SQ (as AF_XDP's XDP_RING_NEED_WAKEUP): an epoch in the
	 * bits from DPUMESH_RX_WAIT_EPOCH_SHIFT up, a new one each time the pod arms, and two
	 * flags. DPUMESH_RX_WAIT_ASLEEP: set before the pod blocks on its doorbell (then it
	 * re-checks its RX SQ), clear while it is awake. DPUMESH_RX_WAIT_TX_DONE: wake it for
	 * plain TX completions too (it waits for TX buffers); without it a successful TX
	 * completion waits in the RX SQ for the pod's next wake-up, while requests, responses
	 * and refusals always ring. The DPU rings after posting only when the word is asleep,
	 * the post needs it, and the word is not one it has rung for yet. 64 bits, so it never
	 * wraps; accessed atomically (single-copy atomic on x86-64, Arm64 and RISC-V 64).
	 */
	uint64_t rx_wait;
	/**
	 * Need-wakeup epoch of the pod's TX SQs, the mirror of rx_wait: the DPU makes it odd (a
	 * new value each time) when it stops watching this pod's TX SQs ("parks" them), then
	 * re-checks them; even while it watches them. After posting, the pod rings its TX
	 * doorbell when it reads an odd epoch it has not rung for yet. Written by the DPU only
	 * (the DPU keeps its own copy and never reads this word back); zero at registration.
	 */
	uint64_t tx_wait;
	uint64_t reserved[6]; /**< zero */
};
DPUMESH_STATIC_ASSERT(sizeof(struct dpumesh_pod_ctrl) == 64, "dpumesh_pod_ctrl: 64 bytes");

/** Byte offsets from the region base; every one a multiple of DPUMESH_LAYOUT_ALIGN. */
struct dpumesh_pod_layout {
	uint64_t tx_header_off, tx_body_off, rx_header_off, rx_body_off;
	uint64_t rx_sq_off;             /**< sq_depth descriptors: DPU produces, pod consumes */
	uint64_t rx_header_refill_off;  /**< sq_depth descriptors: pod produces, DPU consumes */
	uint64_t rx_body_refill_off;    /**< sq_depth descriptors: pod produces, DPU consumes */
	uint64_t ctrl_off;              /**< struct dpumesh_pod_ctrl: pod writes, DPU reads */
	uint64_t total_size;            /**< bytes the region needs (aligned) */
};

enum dpumesh_layout_rc {
	DPUMESH_LAYOUT_OK = 0,
	DPUMESH_LAYOUT_ERR_SLOTS = -1,     /**< a pool has 0 or more than 65536 slots */
	DPUMESH_LAYOUT_ERR_SLOT_SIZE = -2, /**< a slot size below 64 or not a multiple of 64 */
	DPUMESH_LAYOUT_ERR_SQ_DEPTH = -3,  /**< sq_depth not a power of two in 16..65536 */
	DPUMESH_LAYOUT_ERR_TOO_LARGE = -4, /**< the region would exceed DPUMESH_LAYOUT_MAX_SIZE */
	DPUMESH_LAYOUT_ERR_RESERVED = -5,  /**< reserved field not zero */
};

static inline uint64_t dpumesh_layout_align_(uint64_t v)
{
	return (v + (DPUMESH_LAYOUT_ALIGN - 1)) & ~(uint64_t)(DPUMESH_LAYOUT_ALIGN - 1);
}

static inline int dpumesh_pool_geometry_check_(const struct dpumesh_pool_geometry *p)
{
	if (p->slots == 0 || p->slots > DPUMESH_LAYOUT_MAX_SLOTS)
		return DPUMESH_LAYOUT_ERR_SLOTS;
	if (p->slot_size < DPUMESH_LAYOUT_MIN_SLOT_SIZE || (p->slot_size & 63u) != 0)
		return DPUMESH_LAYOUT_ERR_SLOT_SIZE;
	return DPUMESH_LAYOUT_OK;
}

/*
 * Adds an aligned section of `bytes` at *off; fails once the running total passes the limit.
 * Each section is at most 65536 * 2^32 = 2^48 bytes and there are eight, so no sum can wrap.
 */
static inline int dpumesh_layout_add_(uint64_t *off, uint64_t bytes, uint64_t *section_off)
{
	*section_off = *off;
	*off = dpumesh_layout_align_(*off + bytes);
	return *off <= DPUMESH_LAYOUT_MAX_SIZE ? DPUMESH_LAYOUT_OK : DPUMESH_LAYOUT_ERR_TOO_LARGE;
}

/**
 * Validates a geometry and computes the region layout. Pure: the same geometry always gives
 * the same layout, on the pod, on the Arm and on the DPA.
 *
 * @return DPUMESH_LAYOUT_OK and *out filled; otherwise a negative enum dpumesh_layout_rc
 *         (out is then zeroed)
 */
static inline int dpumesh_pod_layout_compute(const struct dpumesh_geometry *g,
					     struct dpumesh_pod_layout *out)
{
	const struct dpumesh_pool_geometry *pools[4];
	uint64_t *offs[4];
	uint64_t off = 0, ring_bytes;
	int rc, i;

	out->tx_header_off = out->tx_body_off = out->rx_header_off = out->rx_body_off = 0;
	out->rx_sq_off = out->rx_header_refill_off = out->rx_body_refill_off = 0;
	out->ctrl_off = 0;
	out->total_size = 0;
	pools[0] = &g->tx_header;
	pools[1] = &g->tx_body;
	pools[2] = &g->rx_header;
	pools[3] = &g->rx_body;
	offs[0] = &out->tx_header_off;
	offs[1] = &out->tx_body_off;
	offs[2] = &out->rx_header_off;
	offs[3] = &out->rx_body_off;
	if (g->reserved != 0)
		return DPUMESH_LAYOUT_ERR_RESERVED;
	for (i = 0; i < 4; i++) {
		rc = dpumesh_pool_geometry_check_(pools[i]);
		if (rc != DPUMESH_LAYOUT_OK)
			return rc;
	}
	if (g->sq_depth < DPUMESH_LAYOUT_MIN_SQ_DEPTH || g->sq_depth > DPUMESH_LAYOUT_MAX_SQ_DEPTH ||
	    (g->sq_depth & (g->sq_depth - 1)) != 0)
		return DPUMESH_LAYOUT_ERR_SQ_DEPTH;
	rc = DPUMESH_LAYOUT_OK;
	for (i = 0; i < 4 && rc == DPUMESH_LAYOUT_OK; i++)
		rc = dpumesh_layout_add_(&off, (uint64_t)pools[i]->slots * pools[i]->slot_size,
					 offs[i]);
	ring_bytes = (uint64_t)g->sq_depth * sizeof(struct sw_descriptor);
	if (rc == DPUMESH_LAYOUT_OK)
		rc = dpumesh_layout_add_(&off, ring_bytes, &out->rx_sq_off);
	if (rc == DPUMESH_LAYOUT_OK)
		rc = dpumesh_layout_add_(&off, ring_bytes, &out->rx_header_refill_off);
	if (rc == DPUMESH_LAYOUT_OK)
		rc = dpumesh_layout_add_(&off, ring_bytes, &out->rx_body_refill_off);
	if (rc == DPUMESH_LAYOUT_OK)
		rc = dpumesh_layout_add_(&off, sizeof(struct dpumesh_pod_ctrl), &out->ctrl_off);
	if (rc != DPUMESH_LAYOUT_OK) {
		out->tx_header_off = out->tx_body_off = out->rx_header_off = out->rx_body_off = 0;
		out->rx_sq_off = out->rx_header_refill_off = out->rx_body_refill_off = 0;
		out->ctrl_off = 0;
		return rc;
	}
	out->total_size = off;
	return DPUMESH_LAYOUT_OK;
}

/** Bytes of one TX SQ inside the TX SQ region (aligned to DPUMESH_LAYOUT_ALIGN). */
static inline uint64_t dpumesh_tx_sq_stride(uint32_t sq_depth)
{
	return dpumesh_layout_align_((uint64_t)sq_depth * sizeof(struct sw_descriptor));
}

/** Offset of TX SQ `worker` in the DPU-created TX SQ region (one SQ per pod worker). */
static inline uint64_t dpumesh_tx_sq_offset(uint32_t sq_depth, uint32_t worker)
{
	return (uint64_t)worker * dpumesh_tx_sq_stride(sq_depth);
}

/** Size of the TX SQ region for nb_workers workers. */
static inline uint64_t dpumesh_tx_region_size(uint32_t sq_depth, uint32_t nb_workers)
{
	return (uint64_t)nb_workers * dpumesh_tx_sq_stride(sq_depth);
}

#define DPUMESH_SLOT_OUTSIDE (-1)   /**< addr is not inside the pool */
#define DPUMESH_SLOT_UNALIGNED (-2) /**< addr is inside but not on a slot boundary */
#define DPUMESH_SLOT_TOO_LONG (-3)  /**< len is larger than one slot */

/**
 * Which slot [addr, addr + len) is in the pool at pool_base (an address in the pod's space):
 * addr must be on a slot boundary and len <= slot_size. No sum is computed that could wrap.
 *
 * @return the slot index (>= 0); DPUMESH_SLOT_OUTSIDE, DPUMESH_SLOT_UNALIGNED or
 *         DPUMESH_SLOT_TOO_LONG
 */
static inline int64_t dpumesh_pool_slot(uint64_t pool_base, const struct dpumesh_pool_geometry *p,
					uint64_t addr, uint64_t len)
{
	uint64_t off;

	if (addr < pool_base)
		return DPUMESH_SLOT_OUTSIDE;
	off = addr - pool_base;
	if (off >= (uint64_t)p->slots * p->slot_size)
		return DPUMESH_SLOT_OUTSIDE;
	if (off % p->slot_size != 0)
		return DPUMESH_SLOT_UNALIGNED;
	if (len > p->slot_size)
		return DPUMESH_SLOT_TOO_LONG;
	return (int64_t)(off / p->slot_size);
}

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_POD_LAYOUT_H */
