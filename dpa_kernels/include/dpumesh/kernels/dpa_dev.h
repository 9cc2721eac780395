/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/kernels/dpa_dev.h - the device API the DPA kernels are written against.
 *
 * The kernels (dpa_kernels/tx_kernel.c, rx_kernel.c) only move bytes and descriptors; every
 * decision (routing, policy, retries, errors to senders) is the Arm's. They reach hardware
 * and the node's state only through these functions, so the same C11 sources run on the
 * DPA emulator (lib/dpa: lcores, lib/dma engines, the pod registry) and build freestanding
 * for the BlueField-3 DPA (RISC-V, no libc), where a DOCA DPA runtime implements them.
 *
 * Addresses named "local" are in the runtime's own address space (the Arm's, or the DPA's
 * window onto the same memory); pod addresses are the pods' own virtual addresses and are
 * only ever translated by the runtime, with bounds checks, never dereferenced here.
 *
 * Queues a DPA thread touches (all single-producer/single-consumer):
 *   pod TX SQs it owns      -> dpa_tx_take()
 *   sidecar TX SQ           <- dpa_sidecar_tx_post()   (to the Arm: a header to look at)
 *   sidecar RX SQ           -> dpa_sidecar_rx_take()   (from the Arm: commands)
 *   Arm notification queue  <- dpa_notify_arm()        (deliveries that failed; held ones done)
 *   RX SQs of pods it owns  <- via dpa_deliver(), dpa_tx_complete()
 */
#ifndef DPUMESH_DPA_DEV_H
#define DPUMESH_DPA_DEV_H

#include <stdint.h>

#include "dpumesh/abi/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The runtime's per-thread context; opaque to kernels. */
struct dpa_dev;

enum dpa_rc {
	DPA_OK = 0,
	DPA_EMPTY = 1,   /**< nothing to take */
	DPA_REFUSED = 2, /**< a descriptor was refused (counted and reported by the runtime) */
	DPA_GONE = 3,    /**< the pod or queue no longer exists */
	DPA_FULL = 4,    /**< no room: try again later */
};

/** A descriptor taken from a pod's TX SQ, already validated by the runtime. */
struct dpa_tx_item {
	struct sw_descriptor desc; /**< the sender's descriptor (pod addresses) */
	uint32_t src;              /**< sender's pod handle, from the SQ it came from */
	uint32_t reserved;
	uint64_t header;           /**< local address of desc.header_len header bytes */
};

/**
 * Metadata at the start of every DPU header buffer ("hbuf"), ahead of the header bytes.
 * Written by the TX kernel (or the Arm, for headers it makes), read by the RX kernel: it
 * keeps what is needed to complete the sender's TX once the message has been delivered.
 */
struct dpa_hbuf_meta {
	struct sw_descriptor orig; /**< the sender's descriptor as taken (for TX-done) */
	uint32_t src;              /**< sender's pod handle; 0 when the Arm made the header */
	uint32_t reserved;
	uint64_t arm[7];           /**< the Arm's scratch (Case 1: the NIC's release state) */
};
#define DPA_HBUF_META_SIZE 128u
DPUMESH_STATIC_ASSERT(sizeof(struct dpa_hbuf_meta) == DPA_HBUF_META_SIZE, "hbuf meta size");

/** RX slots of a destination pod: local addresses for DMA, pod addresses for its SQ. */
struct dpa_rx_slots {
	uint64_t header_local, header_addr;
	uint64_t body_local, body_addr;
};

/** A finished DMA copy. */
struct dpa_dma_done {
	uint64_t cookie;
	int32_t status; /**< 0, or a negative errno */
	uint32_t reserved;
};

/* ---- pods' TX SQs (TX kernel) ---- */

/** Number of pod TX SQs this thread owns right now (pods come and go). */
uint32_t dpa_tx_sq_count(struct dpa_dev *d);
/** Takes one validated descriptor from the i-th owned TX SQ. */
int dpa_tx_take(struct dpa_dev *d, uint32_t i, struct dpa_tx_item *out);

/* ---- DPU header buffers ---- */

/** Size of one hbuf, metadata included. */
uint32_t dpa_hbuf_size(struct dpa_dev *d);
/** Allocates an hbuf; *local is its address. DPA_OK or DPA_FULL. */
int dpa_hbuf_alloc(struct dpa_dev *d, uint64_t *local);
void dpa_hbuf_free(struct dpa_dev *d, uint64_t local);

/* ---- DMA ---- */

/** Queues a copy; DPA_OK or DPA_FULL (nothing queued). Completions come in order. */
int dpa_dma_copy(struct dpa_dev *d, uint64_t dst_local, uint64_t src_local, uint32_t len,
		 uint64_t cookie);
/** How many more copies dpa_dma_copy() accepts now. */
uint32_t dpa_dma_room(struct dpa_dev *d);
/** Starts the copies queued so far (one doorbell per burst). */
void dpa_dma_kick(struct dpa_dev *d);
uint32_t dpa_dma_poll(struct dpa_dev *d, struct dpa_dma_done *out, uint32_t max);

/* ---- queues to and from the Arm ---- */

/**
 * Posts a header for the Arm: header_buf_addr is the hbuf's local address + meta size,
 * body_buf_addr/body_len the sender's (pod address), dst.pod_id the sender's handle.
 */
int dpa_sidecar_tx_post(struct dpa_dev *d, const struct sw_descriptor *desc);
/** Takes up to max commands from the Arm. */
uint32_t dpa_sidecar_rx_take(struct dpa_dev *d, struct sw_descriptor *out, uint32_t max);
/** Tells the Arm a command could not be carried out (status in flags), or that a HOLD
 *  delivery was made (the command, status OK). DPA_OK or DPA_FULL. */
int dpa_notify_arm(struct dpa_dev *d, const struct sw_descriptor *note);
/** Free entries in the notification queue (the RX kernel never takes more commands). */
uint32_t dpa_notify_room(struct dpa_dev *d);

/* ---- destinations and senders (RX kernel) ---- */

/** Takes RX slots of pod `dst`; returns a dpumesh_status (OK, DEST_GONE, DEST_FULL, TOO_LARGE). */
uint32_t dpa_rx_slots_take(struct dpa_dev *d, uint32_t dst, uint32_t header_len,
			   uint32_t body_len, struct dpa_rx_slots *out);
void dpa_rx_slots_return(struct dpa_dev *d, uint32_t dst, const struct dpa_rx_slots *slots);
/** Local address of [addr, addr+len) in the TX body pool of live pod `src`, or 0. */
uint64_t dpa_src_body(struct dpa_dev *d, uint32_t src, uint64_t addr, uint32_t len);
/*
 * Bodies in DPU memory (Case 2: a message that came in through the NIC). The command's
 * flags carry DPUMESH_CASE_INGRESS and body_buf_addr is the runtime's handle of the body,
 * not a pod address. The body may be scattered (one piece per received frame): the kernel
 * walks it piece by piece and DMAs each to its place in the destination's RX body slot.
 */
/**
 * Next piece of a DPU-memory body. *cursor starts at 0 and is advanced; returns the piece's
 * length (its local address in *local), or 0 after the last piece.
 */
uint32_t dpa_local_body_next(struct dpa_dev *d, uint64_t body, uint64_t *cursor,
			     uint64_t *local);
/** The body was delivered: its memory goes back to the runtime. */
void dpa_local_body_release(struct dpa_dev *d, uint64_t body);

/** Posts a delivery to pod dst's RX SQ and rings its doorbell; a dpumesh_status. */
uint32_t dpa_deliver(struct dpa_dev *d, uint32_t dst, const struct sw_descriptor *desc);
/** Posts the TX completion of `orig` to sender src (TX_DONE, ERROR if status != OK). */
uint32_t dpa_tx_complete(struct dpa_dev *d, uint32_t src, const struct sw_descriptor *orig,
			 uint32_t status);

/** Marks a point where the thread holds no pointer into pod memory (RCU quiescent state). */
void dpa_quiescent(struct dpa_dev *d);

/* ---- the kernels ---- */

/** Per-thread kernel state; lives in the runtime, sized here so it needs no allocation. */
#define DPA_MAX_INFLIGHT 64u
struct dpa_tx_inflight {
	struct dpa_tx_item item;
	uint64_t hbuf;
	uint32_t used;
	uint32_t reserved;
};
struct dpa_rx_inflight {
	struct sw_descriptor cmd; /**< the Arm's command */
	struct dpa_rx_slots slots;
	uint64_t body_src;        /**< local address of the sender's body (0: DPU-memory body) */
	uint64_t body_cursor;     /**< DPU-memory body: dpa_local_body_next()'s cursor */
	uint32_t body_queued;     /**< DPU-memory body: bytes whose copies are queued */
	uint32_t copies_left;     /**< DMA copies queued and not yet completed */
	int32_t error;            /**< first copy error */
	uint32_t used;
	uint32_t queued;          /**< bit 0: header copy queued, bit 1: body copies queued */
	uint32_t reserved;
};
struct dpa_kernel_state {
	struct dpa_tx_inflight tx[DPA_MAX_INFLIGHT];
	struct dpa_rx_inflight rx[DPA_MAX_INFLIGHT];
	/* in-flight slots are rings, used and finished in order: per-SQ order is kept even
	 * though copies of different sizes are started in between */
	uint32_t tx_next_sq;
	uint32_t nb_tx_inflight;
	uint32_t nb_rx_inflight;
	uint32_t tx_head, rx_head; /* oldest in-flight slot (index mod DPA_MAX_INFLIGHT) */
	uint64_t tx_posted, tx_no_hbuf, tx_dma_errors;
	uint64_t rx_delivered, rx_failed, rx_completions, rx_bad_commands;
};

/**
 * One pass of the TX kernel: takes descriptors from the owned TX SQs round-robin, copies
 * each header into an hbuf by DMA, and posts it to the sidecar TX SQ once the copy is done.
 * @return units of work done (0: idle)
 */
uint32_t dpa_tx_kernel(struct dpa_dev *d, struct dpa_kernel_state *s);

/**
 * One pass of the RX kernel: takes the Arm's commands (deliver, complete), DMAs body
 * source -> destination and header hbuf -> destination, posts the delivery, rings the
 * doorbell and completes the sender's TX; failures go back to the Arm.
 * @return units of work done (0: idle)
 */
uint32_t dpa_rx_kernel(struct dpa_dev *d, struct dpa_kernel_state *s);

/** Cookie encoding of DMA copies: kernel (bit 63), slot index, and a per-copy tag. */
#define DPA_COOKIE(rx, slot) (((uint64_t)(rx) << 63) | (uint64_t)(slot))
#define DPA_COOKIE_IS_RX(c) ((c) >> 63)
#define DPA_COOKIE_SLOT(c) ((uint32_t)((c) & 0xffffffffu))

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_DPA_DEV_H */
