/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpa_doca.h - what the DOCA device mapping (dpa_dev_doca.c) finds in DPA memory: a
 * thread's argument block (struct dpa_dev), the node block and the per-pod blocks. The
 * host-side runtime (backend/doca) writes them with doca_dpa_h2d_memcpy before a thread
 * runs or a pod's pod_lookup_table entry goes active; the mapping keeps its own positions
 * in them. Plain C11, freestanding (docs/doca.md "Device side: the security core").
 *
 * Memory the mapping reaches:
 *  - DPA memory (plain loads and stores; atomics between DPA threads): these blocks;
 *  - pods' memory and the Arm's (DPU mmap) only through windows
 *    (doca_dpa_dev_mmap_get_external_ptr) named by (mmap handle, address): the pods' rings,
 *    their need-wakeup word, the sidecar queues, hbufs and network bodies.
 */
#ifndef DPUMESH_DPA_DOCA_H
#define DPUMESH_DPA_DOCA_H

#include <stdint.h>

#include "dpumesh/abi/abi.h"
#include "dpumesh/kernels/dpa_dev.h"
#include "dpumesh/podlayout/pod_check.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Most DPA thread pairs (TX + RX kernel) of a node. */
#define DPA_DOCA_MAX_PAIRS 16u
/** RX slots a pod block keeps aside (taken, then not delivered): at most one header and one
 *  body per in-flight delivery of the owner's RX kernel. */
#define DPA_DOCA_SPARES DPA_MAX_INFLIGHT
/** Entries of a pair's inbox (TX completions and refusal reports for the pods it owns). */
#define DPA_DOCA_INBOX 256u
/** Pieces of a network body (struct dpa_doca_body). */
#define DPA_DOCA_BODY_PIECES 32u

/**
 * A single-producer/single-consumer ring of struct sw_descriptor (dpumesh/ring/sq.h) reached
 * through a window: slot i is at addr + (i & mask) * 64 in mmap. One side of it: the other
 * side is the pod or the Arm. addr 0: no ring.
 */
struct dpa_doca_ring {
	uint64_t addr;
	uint32_t mmap;
	uint32_t mask; /**< slots - 1 */
	uint32_t pos;  /**< this side's position (the mapping's) */
	uint32_t reserved;
};

/** Per-pod counters of the mapping (the emulator's pod_counters, same meaning). */
enum dpa_doca_pod_counter {
	DPA_DOCA_TX_TAKEN = 0,
	DPA_DOCA_TX_REFUSED = 1, /**< + enum dpumesh_tx_refusal */
	DPA_DOCA_TX_DONE_POSTED = DPA_DOCA_TX_REFUSED + DPUMESH_TX_ACCEPT,
	DPA_DOCA_RX_DELIVERED,
	DPA_DOCA_RX_SQ_FULL,
	DPA_DOCA_RX_NO_SLOT,
	DPA_DOCA_REFILL_REFUSED, /**< + enum dpumesh_refill_refusal */
	DPA_DOCA_DOORBELLS = DPA_DOCA_REFILL_REFUSED + DPUMESH_REFILL_ACCEPT,
	DPA_DOCA_DOORBELLS_SUPPRESSED,
	DPA_DOCA_SPARES_LOST, /**< a returned slot with no spare room (not expected) */
	DPA_DOCA_POD_COUNTERS
};

/**
 * One pod, in DPA memory: written whole by the Arm while the pod's table entry is inactive
 * (the first half: what registration decided; the second half zeroed), then only by the
 * threads of the pair that owns it (pod_id % nb_pairs): its TX kernel consumes the TX SQs,
 * its RX kernel alone produces into the RX SQ and consumes the refill rings.
 */
struct dpa_doca_pod {
	/* ---- written by the Arm at registration ---- */
	uint32_t generation;
	uint32_t nb_workers;  /**< TX SQs */
	uint32_t mmap;        /**< the pod region's mmap handle (= its mkey) */
	uint32_t reserved0;
	uint64_t base;        /**< the pod's address of its region's byte 0 */
	uint64_t doorbell;    /**< the pod's doorbell (docs/doca.md: UNVERIFIED, a sync event) */
	struct dpumesh_geometry geometry;
	uint32_t reserved1;
	struct dpumesh_pod_layout layout;
	/** TX SQ w: its place (the TX SQ region's mmap and address; UNVERIFIED placement) */
	struct dpa_doca_ring tx_sq[DPUMESH_MAX_WORKERS];
	/* ---- the mapping's (zeroed at registration) ---- */
	struct dpa_doca_ring rx_sq, refill_header, refill_body; /**< addr set by the Arm too */
	uint64_t rung_epoch;
	uint32_t nb_spare_header, nb_spare_body;
	uint32_t marked; /**< posted to in this activation (the doorbell batch): 1, | 2 urgent */
	uint32_t reserved2;
	uint64_t spare_header[DPA_DOCA_SPARES], spare_body[DPA_DOCA_SPARES];
	struct dpa_counter counters[DPA_DOCA_POD_COUNTERS];
};

/** An inbox entry: an RX SQ entry for pod `dst` (a TX completion or a refusal report). */
struct dpa_doca_mail {
	uint32_t seq; /**< the slot's turn (bounded MPMC queue with per-slot sequence numbers) */
	uint32_t dst;
	uint32_t reserved[14];
	struct sw_descriptor desc;
};

/**
 * A pair's inbox, in DPA memory: entries for the RX SQs of the pods it owns, from any DPA
 * thread (its own TX kernel's refusal reports, other pairs' TX completions); its RX kernel
 * alone takes them. The Arm sets seq[i] = i.
 */
struct dpa_doca_inbox {
	uint32_t tail; /**< producers: next entry to claim (CAS) */
	uint32_t pad0[15];
	uint32_t head; /**< the RX kernel's */
	uint32_t pad1[15];
	struct dpa_doca_mail mail[DPA_DOCA_INBOX];
};

/** The node, in DPA memory: written by the Arm. */
struct dpa_doca_node {
	uint32_t nb_pairs;
	uint32_t membership; /**< moves on every registration and unregistration */
	uint32_t drain;      /**< 1 while an unregistration waits: take no new work */
	uint32_t tx_bells;   /**< 1: pods ring their pair's TX doorbell (the Arm forwards it to the
			      *   TX kernel), so a TX kernel parks idle pods and sleeps; 0: it polls */
	uint64_t pods;       /**< struct dpa_doca_pod[DPUMESH_MAX_PODS] */
	uint64_t rx_notify[DPA_DOCA_MAX_PAIRS]; /**< each RX kernel's notification handle */
	uint64_t inbox[DPA_DOCA_MAX_PAIRS];     /**< struct dpa_doca_inbox *, one per pair */
};

/** A network body in the DPU mmap (Case 2): its pieces, written by the Arm. */
struct dpa_doca_body {
	uint32_t nb_pieces;
	uint32_t reserved;
	struct {
		uint64_t addr; /**< in the DPU mmap */
		uint32_t len;
		uint32_t reserved;
	} piece[DPA_DOCA_BODY_PIECES];
};

/** What goes back to the Arm on a thread's `back` ring: flags says which. */
#define DPA_DOCA_BACK_HBUF 1u /**< header_buf_addr: an hbuf the kernels are done with */
#define DPA_DOCA_BACK_BODY 2u /**< body_buf_addr: a network body (struct dpa_doca_body) */

enum dpa_doca_role { DPA_DOCA_TX = 0, DPA_DOCA_RX = 1 };

/** Thread statistics (the emulator's thread_stats where they apply). */
enum dpa_doca_thread_stat {
	DPA_DOCA_ST_TX_TAKEN = 0,
	DPA_DOCA_ST_TX_POSTED,
	DPA_DOCA_ST_RX_DELIVERED,
	DPA_DOCA_ST_HANDED_BACK,
	DPA_DOCA_ST_TX_COMPLETIONS,
	DPA_DOCA_ST_REMOTE_COMPLETIONS,
	DPA_DOCA_ST_INBOX_FULL,
	DPA_DOCA_ST_BACK_FULL,
	DPA_DOCA_ST_COUNT
};

/**
 * A DPA thread's argument block, in DPA memory. The first fields are backend/doca's
 * thread_args (the runtime writes them; same order). The kernel's own state (dpa_tx_state /
 * dpa_rx_state) is the thread's local storage.
 */
struct dpa_dev {
	/* ---- the runtime's thread_args ---- */
	uint64_t async_ops;    /**< doca_dpa_dev_async_ops_t */
	uint64_t completion;   /**< doca_dpa_dev_completion_t */
	uint64_t notification; /**< its own notification completion */
	uint64_t table;        /**< pod_lookup_table */
	uint32_t dpu_mmap;
	uint32_t stop;
	/* ---- the cookie FIFO: indices only grow; slot = index % DPA_ASYNC_QUEUE ---- */
	uint32_t head, covered, tail, reserved;
	uint64_t cookie[DPA_ASYNC_QUEUE];
	uint8_t reported[DPA_ASYNC_QUEUE];
	/* ---- the node (written by the Arm before thread_run) ---- */
	uint64_t node;     /**< struct dpa_doca_node * */
	uint32_t pair;     /**< which pair this thread is in */
	uint32_t role;     /**< enum dpa_doca_role */
	uint32_t hbuf_size;
	uint32_t tx_found; /**< TX: SQs with work in the last dpa_tx_ready (0: an idle pass) */
	struct dpa_doca_ring sidecar;   /**< TX: the sidecar TX SQ (produce); RX: commands (consume) */
	struct dpa_doca_ring notify;    /**< RX: the Arm's notification queue (produce) */
	struct dpa_doca_ring hbuf_free; /**< TX: hbufs the Arm hands out (consume) */
	struct dpa_doca_ring back;      /**< hbufs and network bodies back to the Arm (produce) */
	/* ---- the mapping's ---- */
	uint32_t membership; /**< the node's, when owned[] was built (TX) */
	uint32_t nb_owned;
	uint32_t ready_cursor;
	uint32_t nb_marked;
	/** the quiescence report the Arm reads (doca_dpa_d2h_memcpy): the node's membership
	 *  when this activation began (`entered`) and, + 1, when the last completed one began
	 *  (`quiescent`: 0 until one completed). An activation begun after membership m holds
	 *  nothing the change to m took away. */
	uint32_t entered;
	uint32_t quiescent;
	/** 1 once the thread called doca_dpa_dev_thread_finish (the cooperative stop): the
	 *  Arm frees nothing the thread runs on before every thread set it */
	uint32_t finished;
	/** TX: the need-wakeup epoch last stored in the owned pods' tx_wait (odd: parked) */
	uint32_t tx_epoch;
	struct {
		uint16_t pod_id, sq;
		uint32_t generation;
	} owned[DPUMESH_MAX_PODS * DPUMESH_MAX_WORKERS]; /**< TX: SQs of the pods it owns */
	uint32_t marked[DPUMESH_MAX_PODS]; /**< RX: handles of pods posted to (doorbell batch) */
	struct dpa_counter stats[DPA_DOCA_ST_COUNT];
};

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_DPA_DOCA_H */
