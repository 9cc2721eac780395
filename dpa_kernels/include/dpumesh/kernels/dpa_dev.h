/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/kernels/dpa_dev.h - the device API the DPA kernels are written against, shaped
 * one-to-one on DOCA DPA's device API (doca_dpa_dev*.h).
 *
 * The kernels (dpa_kernels/tx_kernel.c, rx_kernel.c) only move bytes and descriptors; every
 * decision (routing, policy, retries, errors to senders) is the Arm's. They reach hardware
 * and the node's state only through these functions, so the same C11 sources run on the
 * DPA emulator (lib/dpa) and build freestanding for the BlueField-3 DPA (RISC-V, no libc),
 * where a thin DOCA mapping implements them. docs/doca.md lists each function next to the
 * DOCA device call (or short, documented sequence of calls) it stands for.
 *
 * The DOCA model, which the emulator enforces (a kernel that breaks a rule is caught there;
 * see dpa::rule in lib/dpa):
 *  - Memory is named by (mmap handle, the owner's own address). A pod's handle is the mkey
 *    in its pod_lookup_table entry; DPU memory (header buffers, network bodies) has the
 *    handle dpa_dpu_mmap(). The hardware checks every copy against the mmap's range.
 *  - Copies are posted to the thread's async-ops queue (dpa_post_memcpy), at most
 *    DPA_MAX_COPY bytes each, never more than DPA_ASYNC_QUEUE outstanding; a post only
 *    reaches the hardware once a post with DPA_SUBMIT_FLUSH rings the doorbell. A post
 *    without DPA_SUBMIT_OPTIMIZE_REPORTS produces one completion, which also covers the
 *    posts before it that asked for none. Completions carry no per-copy tag: the cookie
 *    given to dpa_post_memcpy is kept in a FIFO by the runtime and taken back, in order,
 *    with dpa_cookie_take() once a completion covering it was taken.
 *  - A kernel is a thread entered once per activation (a completion on its armed
 *    completion context, a notification, a doorbell), does at most a bounded batch within
 *    the time-alive budget, then ends the activation with dpa_thread_reschedule(), or
 *    dpa_thread_finish() for good once dpa_thread_stop_requested() and nothing is in
 *    flight (cooperative stop: nothing stops a thread from outside).
 *
 * Queues a kernel touches (all single-producer/single-consumer):
 *   pod TX SQs it owns      -> dpa_tx_ready(), dpa_tx_take()  (TX kernel)
 *   sidecar TX SQ           <- dpa_sidecar_tx_post()    (TX kernel, to the Arm: headers)
 *   sidecar RX SQ           -> dpa_sidecar_rx_take()    (RX kernel, from the Arm: commands)
 *   Arm notification queue  <- dpa_notify_arm()         (RX kernel: failures, held ones done)
 *   RX SQs of pods it owns  <- dpa_deliver(), dpa_tx_complete()
 */
#ifndef DPUMESH_DPA_DEV_H
#define DPUMESH_DPA_DEV_H

#include <stdint.h>

#include "dpumesh/abi/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The runtime's per-thread context (on DOCA: the thread's argument in DPA memory). */
struct dpa_dev;

enum dpa_rc {
	DPA_OK = 0,
	DPA_EMPTY = 1,   /**< nothing to take */
	DPA_REFUSED = 2, /**< a descriptor was refused (counted and reported by the runtime) */
	DPA_GONE = 3,    /**< the pod or queue no longer exists */
	DPA_FULL = 4,    /**< no room: try again later */
};

/* ---- limits (DOCA's, enforced by the emulator) ---- */

/** Most bytes one dpa_post_memcpy() may copy; longer copies are split by the kernel. */
#define DPA_MAX_COPY 8192u
/** Split boundaries are multiples of this (comch DMA's unit), so a split suits both paths. */
#define DPA_COPY_UNIT 128u
/** Posts outstanding (posted, cookie not yet taken) per async-ops queue. */
#define DPA_ASYNC_QUEUE 1024u
/** Units of work (descriptors taken, completions handled) per activation, per kind. */
#define DPA_BATCH 64u

/** dpa_post_memcpy() flags (DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH / _OPTIMIZE_REPORTS). */
#define DPA_SUBMIT_FLUSH 1u            /**< ring the doorbell: this and earlier posts start */
#define DPA_SUBMIT_OPTIMIZE_REPORTS 2u /**< no completion of its own (a later one covers it) */

/* ---- memory: mmaps and pod_lookup_table ---- */

/** Handle of the DPU-memory mmap (header buffers, network bodies): a thread-argument field. */
uint32_t dpa_dpu_mmap(struct dpa_dev *d);

/** pod_lookup_table (in DPA memory on hardware; written by control, read here). */
const struct pod_registry_entry *dpa_pod_table(struct dpa_dev *d);

/**
 * The mmap handle (mkey) of the live registration named by a pod handle, or 0 when that
 * registration is gone. A short sequence of loads from pod_lookup_table: is_active with
 * acquire, then the generation and the mkey. All of a pod's pools are in its one region, so
 * rx_body_mkey names its TX pools too.
 */
static inline uint32_t dpa_pod_mmap(struct dpa_dev *d, uint32_t handle)
{
	const struct pod_registry_entry *e =
		&dpa_pod_table(d)[DPUMESH_HANDLE_POD_ID(handle) % DPUMESH_MAX_PODS];
	if (__atomic_load_n(&e->is_active, __ATOMIC_ACQUIRE) == 0)
		return 0;
	if (e->generation != DPUMESH_HANDLE_GENERATION(handle))
		return 0;
	return e->rx_body_mkey;
}

/**
 * A load/store window onto [addr, addr+len) of an mmap (doca_dpa_dev_mmap_get_external_ptr;
 * the emulator also checks the range). NULL if the range is outside the mmap.
 */
void *dpa_mmap_ptr(struct dpa_dev *d, uint32_t mmap, uint64_t addr, uint32_t len);
/** Makes stores through windows visible before a later post (__dpa_thread_window_writeback). */
void dpa_window_writeback(struct dpa_dev *d);

/* ---- copies: the async-ops queue and its completion context ---- */

/**
 * Posts a copy of len bytes (1 .. DPA_MAX_COPY) from (src_mmap, src_addr) to
 * (dst_mmap, dst_addr): the runtime pushes `cookie` on the queue's FIFO, then
 * doca_dpa_dev_post_memcpy(async_ops, dst_mmap, dst_addr, src_mmap, src_addr, len, flags).
 * The caller checks dpa_async_room() first.
 */
void dpa_post_memcpy(struct dpa_dev *d, uint32_t dst_mmap, uint64_t dst_addr, uint32_t src_mmap,
		     uint64_t src_addr, uint32_t len, uint32_t flags, uint64_t cookie);
/** Posts the queue takes now: DPA_ASYNC_QUEUE minus the FIFO's length. */
uint32_t dpa_async_room(struct dpa_dev *d);

/** A completion taken from the thread's completion context. */
struct dpa_completion {
	int32_t status; /**< 0, or a negative errno: a copy it covers failed */
	uint32_t reserved;
};

/** doca_dpa_dev_get_completion (+ doca_dpa_dev_get_completion_type): 1 if one was taken. */
int dpa_get_completion(struct dpa_dev *d, struct dpa_completion *out);
/**
 * Takes the oldest cookie from the FIFO; allowed only for copies the completions taken so
 * far cover, so a kernel takes every covered cookie before the next dpa_get_completion().
 * *last is 1 for the copy that produced the completion (the others asked for no report).
 * DPA_OK, or DPA_EMPTY (and a rule violation) when no taken completion covers a cookie.
 */
int dpa_cookie_take(struct dpa_dev *d, uint64_t *cookie, int *last);
/** doca_dpa_dev_completion_ack: releases n taken completions. */
void dpa_completion_ack(struct dpa_dev *d, uint32_t n);
/** doca_dpa_dev_completion_request_notification: the next completion activates the thread. */
void dpa_completion_request_notification(struct dpa_dev *d);

/* ---- the thread ---- */

/** doca_dpa_dev_thread_notify(own notification handle): activate again soon. */
void dpa_thread_notify(struct dpa_dev *d);
/** doca_dpa_dev_thread_reschedule: ends this activation; the last call of one. */
void dpa_thread_reschedule(struct dpa_dev *d);
/** doca_dpa_dev_thread_finish: ends the thread for good; the last call of its activation. */
void dpa_thread_finish(struct dpa_dev *d);
/** The stop word of the thread's argument (written by the host, then a notification). */
int dpa_thread_stop_requested(struct dpa_dev *d);

/* ---- pods' TX SQs (TX kernel) ---- */

/** A descriptor taken from a pod's TX SQ, already validated by the runtime. */
struct dpa_tx_item {
	struct sw_descriptor desc; /**< the sender's descriptor (pod addresses) */
	uint32_t src;              /**< sender's pod handle, from the SQ it came from */
	uint32_t mmap;             /**< sender's mmap handle: desc's addresses are in it */
};

/**
 * The owned pod TX SQs that have work, at most max of them, into sqs[] (ids for
 * dpa_tx_take()), in a rotating order so no SQ is always last. A pass over TX SQs visits
 * these only, not every owned SQ: an SQ with nothing queued costs the kernel nothing. On the
 * emulator: one acquire load of the head `valid` of each SQ of a hot pod (one that recently
 * posted or was delivered to) and of up to 8 cold pods, round robin (DPU memory; pods are
 * parked, not looked at until they ring, only while the lcore sleeps); on a BlueField-3 (the
 * DOCA mapping):
 * one load of each owned SQ's head through its window while the kernel is awake; parked, the
 * kernel is not run until a pod rings (docs/doca.md). Empty while the thread drains
 * for a quiescence wait.
 * @return how many ids were written
 */
uint32_t dpa_tx_ready(struct dpa_dev *d, uint32_t *sqs, uint32_t max);
/**
 * Whether the runtime activates the TX kernel when a pod posts (a doorbell: 1), so the
 * kernel need not poll its SQs; 0: it notifies itself every activation (polls). The
 * emulator: 1 (pods ring a per-pod TX doorbell while the thread has parked them,
 * docs/memory-model.md "Doorbells, pod to DPU"). The DOCA mapping: 1 after an idle pass
 * in which it parked every owned pod (their TX doorbell is forwarded by the Arm), else 0
 * (docs/doca.md "Doorbells on a DOCA node").
 */
int dpa_tx_doorbells(struct dpa_dev *d);
/** Takes one validated descriptor from owned TX SQ `sq` (an id from dpa_tx_ready()):
 *  DPA_OK, DPA_EMPTY, DPA_REFUSED (one was refused, reported to the pod), DPA_GONE. */
int dpa_tx_take(struct dpa_dev *d, uint32_t sq, struct dpa_tx_item *out);

/* ---- DPU header buffers (in the DPU mmap) ---- */

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

/** Size of one hbuf, metadata included. */
uint32_t dpa_hbuf_size(struct dpa_dev *d);
/** Allocates an hbuf; *addr is its address in the DPU mmap. DPA_OK or DPA_FULL. */
int dpa_hbuf_alloc(struct dpa_dev *d, uint64_t *addr);
void dpa_hbuf_free(struct dpa_dev *d, uint64_t addr);

/* ---- queues to and from the Arm ---- */

/**
 * Posts a header for the Arm: header_buf_addr is the hbuf's address + meta size,
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

/** RX slots of a destination pod: its addresses, in its mmap. */
struct dpa_rx_slots {
	uint64_t header_addr;
	uint64_t body_addr;
	uint32_t mmap; /**< the destination's mmap handle */
	uint32_t reserved;
};

/** Takes RX slots of pod `dst`; returns a dpumesh_status (OK, DEST_GONE, DEST_FULL, TOO_LARGE). */
uint32_t dpa_rx_slots_take(struct dpa_dev *d, uint32_t dst, uint32_t header_len,
			   uint32_t body_len, struct dpa_rx_slots *out);
void dpa_rx_slots_return(struct dpa_dev *d, uint32_t dst, const struct dpa_rx_slots *slots);
/*
 * Bodies in DPU memory (Case 2: a message that came in through the NIC). The command's
 * flags carry DPUMESH_CASE_INGRESS and body_buf_addr is the runtime's handle of the body,
 * not a pod address. The body may be scattered (one piece per received frame): the kernel
 * walks it piece by piece and copies each to its place in the destination's RX body slot.
 */
/**
 * Next piece of a DPU-memory body. *cursor starts at 0 and is advanced; returns the piece's
 * length (its address in the DPU mmap in *addr), or 0 after the last piece.
 */
uint32_t dpa_local_body_next(struct dpa_dev *d, uint64_t body, uint64_t *cursor,
			     uint64_t *addr);
/** The body was delivered: its memory goes back to the runtime. */
void dpa_local_body_release(struct dpa_dev *d, uint64_t body);

/** Posts a delivery to pod dst's RX SQ and rings its doorbell; a dpumesh_status. */
uint32_t dpa_deliver(struct dpa_dev *d, uint32_t dst, const struct sw_descriptor *desc);
/** Posts the TX completion of `orig` to sender src (TX_DONE, ERROR if status != OK). */
uint32_t dpa_tx_complete(struct dpa_dev *d, uint32_t src, const struct sw_descriptor *orig,
			 uint32_t status);

/* ---- counters: single writer (the kernel), read by control ---- */

/**
 * A counter the kernel writes and control reads: C11 relaxed atomic load + store (the
 * __atomic builtins: C11 atomic operations on a plain object, as lib/common's `counter`),
 * a plain add on RISC-V, x86 and Arm.
 */
struct dpa_counter {
	uint64_t v;
};
static inline void dpa_counter_add(struct dpa_counter *c, uint64_t n)
{
	__atomic_store_n(&c->v, __atomic_load_n(&c->v, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
static inline uint64_t dpa_counter_get(const struct dpa_counter *c)
{
	return __atomic_load_n(&c->v, __ATOMIC_RELAXED);
}
/** A gauge (in-flight counts): the kernel's own reads are plain, its stores relaxed atomic. */
static inline void dpa_gauge_set(uint32_t *g, uint32_t v)
{
	__atomic_store_n(g, v, __ATOMIC_RELAXED);
}
static inline uint32_t dpa_gauge_get(const uint32_t *g)
{
	return __atomic_load_n(g, __ATOMIC_RELAXED);
}

/* ---- the kernels ---- */

/** Per-thread kernel state; lives in the runtime, sized here so it needs no allocation. */
#define DPA_MAX_INFLIGHT 64u
struct dpa_tx_inflight {
	struct dpa_tx_item item;
	uint64_t hbuf;
	uint32_t used;
	uint32_t queued;      /**< header bytes whose copies are posted */
	uint32_t copies_left; /**< reported copies posted and not yet completed */
	int32_t error;        /**< first copy error */
};
struct dpa_rx_inflight {
	struct sw_descriptor cmd; /**< the Arm's command */
	struct dpa_rx_slots slots;
	uint32_t src_mmap;        /**< sender's mmap (0: DPU-memory body) */
	uint32_t body_queued;     /**< body bytes whose copies are posted */
	uint64_t body_cursor;     /**< DPU-memory body: dpa_local_body_next()'s cursor */
	uint64_t piece_addr;      /**< DPU-memory body: the current piece and what is left of it */
	uint32_t piece_left;
	uint32_t copies_left;     /**< reported copies posted and not yet completed */
	int32_t error;            /**< first copy error */
	uint32_t used;
	uint32_t queued;          /**< bit 0: header copy posted, bit 1: every body copy posted */
	uint32_t reserved;
};
/* in-flight slots are rings, used and finished in order: per-SQ order is kept even though
 * copies of different sizes are started in between */
struct dpa_tx_state {
	struct dpa_tx_inflight slot[DPA_MAX_INFLIGHT];
	uint32_t ready[DPA_BATCH]; /**< this activation's SQs with work (dpa_tx_ready) */
	uint32_t nb_inflight; /**< gauge */
	uint32_t head;        /**< oldest in-flight slot (index mod DPA_MAX_INFLIGHT) */
	uint32_t reserved;
	struct dpa_counter posted, no_hbuf, dma_errors, activations;
};
struct dpa_rx_state {
	struct dpa_rx_inflight slot[DPA_MAX_INFLIGHT];
	uint32_t nb_inflight; /**< gauge */
	uint32_t head;
	/** By pod_id: the handle of a destination held back (a delivery to it was given back
	 *  for want of room; later ones are given back unread until a RESUME comes), or 0 */
	uint32_t held_back[DPUMESH_MAX_PODS];
	struct dpa_counter delivered, failed, completions, bad_commands, activations;
};

/**
 * One activation of the TX kernel: takes descriptors from the owned TX SQs that have work
 * (dpa_tx_ready), one per SQ per round, rounds until DPA_BATCH, copies each header into an
 * hbuf, and posts it to the sidecar TX SQ once the copy is done.
 * Ends with dpa_thread_reschedule() (or dpa_thread_finish() once stopped and drained).
 */
void dpa_tx_kernel(struct dpa_dev *d, struct dpa_tx_state *s);

/**
 * One activation of the RX kernel: takes the Arm's commands (deliver, complete), copies
 * body source -> destination and header hbuf -> destination, posts the delivery, rings the
 * doorbell and completes the sender's TX; failures go back to the Arm.
 * Ends with dpa_thread_reschedule() (or dpa_thread_finish() once stopped and drained).
 */
void dpa_rx_kernel(struct dpa_dev *d, struct dpa_rx_state *s);

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_DPA_DEV_H */
