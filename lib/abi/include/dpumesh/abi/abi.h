/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/abi/abi.h - the descriptor ABI shared by host pods, DPA kernels and the Arm pipeline.
 *
 * Everything that crosses a trust or device boundary is defined here, in plain C11 with
 * only <stdint.h> and <stddef.h>, so the same header builds for the host (C and C++),
 * for the Arm data plane and freestanding for the DPA (RISC-V, no libc).
 *
 * Every queue (host TX SQ, host RX SQ, sidecar TX/RX SQs, RX refill rings) is a ring of
 * 64-byte struct sw_descriptor. `valid` is the ownership bit: the producer fills every
 * other field, then stores valid = DPUMESH_DESC_VALID with release semantics; the consumer
 * loads valid with acquire semantics, copies the descriptor out, then stores 0 to hand the
 * slot back. A consumer never trusts a descriptor it has not copied (no double fetch).
 *
 * Example (producer side):
 *
 *     struct sw_descriptor d = {0};
 *     d.header_buf_addr = (uint64_t)(uintptr_t)hdr; d.header_len = hlen;
 *     d.body_buf_addr = (uint64_t)(uintptr_t)body; d.body_len = blen;
 *     d.req_id = ctx_id; d.step_id = step;
 *     d.dst.pod_id = 0; d.flags = DPUMESH_OP_REQUEST | DPUMESH_CASE_LOCAL;
 *     ... copy all but `valid` into the slot, then release-store valid.
 */
#ifndef DPUMESH_ABI_H
#define DPUMESH_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define DPUMESH_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define DPUMESH_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/** ABI version; bumped on any incompatible change of this file. */
#define DPUMESH_ABI_VERSION 1u

/** The descriptor, exactly as in the seed (DESIGN.md). 64 bytes, one cache line. */
struct sw_descriptor {
	uint64_t header_buf_addr; /**< 0 when there is no separate header (Case 2 body-only) */
	uint32_t header_len;
	/* 4 bytes of implicit padding at offset 12: reserved, written as zero */
	uint64_t body_buf_addr;
	uint32_t body_len;
	uint32_t req_id;  /**< ExecutionContext id */
	uint32_t step_id; /**< EgressStep id within the request */
	union {
		struct {
			uint8_t ip[16]; /**< IPv6, or IPv4-mapped IPv6 (::ffff:a.b.c.d) */
			uint16_t port;  /**< host byte order */
		} external;             /**< Case 1 */
		uint32_t pod_id;        /**< Case 2/3 */
	} dst;
	uint32_t flags; /**< DPUMESH_OP_* | DPUMESH_CASE_* | status << DPUMESH_STATUS_SHIFT */
	uint32_t valid; /**< ownership bit, written last (release), read first (acquire) */
};

DPUMESH_STATIC_ASSERT(sizeof(struct sw_descriptor) == 64, "sw_descriptor must be 64 bytes");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, header_buf_addr) == 0, "header_buf_addr");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, header_len) == 8, "header_len");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, body_buf_addr) == 16, "body_buf_addr");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, body_len) == 24, "body_len");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, req_id) == 28, "req_id");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, step_id) == 32, "step_id");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, dst) == 36, "dst");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, dst.external.ip) == 36, "dst.external.ip");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, dst.external.port) == 52, "dst.external.port");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, dst.pod_id) == 36, "dst.pod_id");
DPUMESH_STATIC_ASSERT(sizeof(((struct sw_descriptor *)0)->dst) == 20, "dst size");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, flags) == 56, "flags");
DPUMESH_STATIC_ASSERT(offsetof(struct sw_descriptor, valid) == 60, "valid");

/** Value of `valid` while the consumer owns the slot; 0 while the producer owns it. */
#define DPUMESH_DESC_VALID 1u

/*
 * flags: bits 0-7 OpFlag, bits 8-9 CaseFlag, bits 16-31 status (enum dpumesh_status) on
 * completions and errors. Bits 10-15 are reserved and must be zero.
 */
/* Plain macros, not enums: C++20 deprecates `|` between two enumeration types, and every
 * descriptor combines an op with a case. */
#define DPUMESH_OP_REQUEST (1u << 0)  /**< a request (ExecutionContext step) */
#define DPUMESH_OP_RESPONSE (1u << 1) /**< a response to (req_id, step_id) */
#define DPUMESH_OP_TX_DONE (1u << 2)  /**< the sender's TX buffers may be reused */
#define DPUMESH_OP_ERROR (1u << 3)    /**< the status field says what failed */
/** DPU-internal, Arm -> RX kernel only (a pod never sees it, and one that posts it is
 *  refused): deliver, but keep the sender's TX buffers and the hbuf (and a network body)
 *  until the Arm sends a COMPLETE for them: the request may still be retried. */
#define DPUMESH_OP_HOLD (1u << 4)
/** DPU-internal, Arm -> RX kernel only (and back on its notes): the first command the Arm
 *  sends again to a destination the RX kernel holds back (it gave back a delivery to it
 *  for want of room, and gives back every later one unread until this one comes). The
 *  kernel tries it, and reports the outcome on the notification queue in every case (with
 *  status OK when delivered); docs/ordering.md. */
#define DPUMESH_OP_RESUME (1u << 5)
/** DPU-internal, Arm -> RX kernel only (and back on its notes): an ordinary delivery whose
 *  outcome the kernel reports on the notification queue in every case (status OK when
 *  delivered): the last of a window the Arm sends from a destination's queue. */
#define DPUMESH_OP_NOTIFY (1u << 6)
#define DPUMESH_OP_MASK 0xffu

#define DPUMESH_CASE_EXTERNAL (1u << 8) /**< Case 1: pod -> another node, through the NIC */
#define DPUMESH_CASE_INGRESS (2u << 8)  /**< Case 2: network -> pod */
#define DPUMESH_CASE_LOCAL (3u << 8)    /**< Case 3: pod -> pod on this node */
#define DPUMESH_CASE_MASK (3u << 8)
#define DPUMESH_CASE_SHIFT 8
#define DPUMESH_FLAGS_RESERVED_MASK (0x3fu << 10)

#define DPUMESH_STATUS_SHIFT 16
#define DPUMESH_STATUS_MASK (0xffffu << DPUMESH_STATUS_SHIFT)

/** Why a descriptor was refused or failed; carried in flags bits 16-31. */
enum dpumesh_status {
	DPUMESH_STATUS_OK = 0,
	DPUMESH_STATUS_BAD_DESCRIPTOR = 1, /**< reserved bits, bad op/case combination */
	DPUMESH_STATUS_BAD_ADDRESS = 2,    /**< address/length outside the sender's region */
	DPUMESH_STATUS_TOO_LARGE = 3,      /**< longer than the destination slot or limits */
	DPUMESH_STATUS_NO_ROUTE = 4,       /**< unknown service or destination */
	DPUMESH_STATUS_NO_POD = 5,         /**< service has no live pod (503) */
	DPUMESH_STATUS_DEST_FULL = 6,      /**< destination has no free RX slot / SQ space */
	DPUMESH_STATUS_DEST_GONE = 7,      /**< destination unregistered while in flight */
	DPUMESH_STATUS_TIMEOUT = 8,        /**< no response before the deadline (504) */
	DPUMESH_STATUS_POLICY = 9,         /**< refused by L7 policy (401/403/429/503) */
	DPUMESH_STATUS_DMA_ERROR = 10,     /**< a copy failed */
	DPUMESH_STATUS_NO_MATCH = 11,      /**< a response that matches no pending request */
	DPUMESH_STATUS_SRC_GONE = 12,      /**< the sender unregistered before its body was read */
};

static inline uint32_t dpumesh_flags_status(uint32_t flags)
{
	return (flags & DPUMESH_STATUS_MASK) >> DPUMESH_STATUS_SHIFT;
}

/**
 * One entry of pod_lookup_table[pod_id], in DPU memory the DPA indexes directly.
 * A DPA kernel reads is_active first (acquire); an entry is deactivated before anything
 * it names is torn down. `generation` changes on every registration of the pod_id, so
 * work stamped with an older generation is refused.
 */
struct pod_registry_entry {
	uint32_t rx_header_mkey; /**< mkey of the pod region holding the RX header pool */
	uint32_t rx_body_mkey;   /**< mkey of the pod region holding the RX body pool */
	uint64_t rx_sq_doorbell; /**< doorbell handle: emulator index / comch handle on hardware */
	uint32_t is_active;      /**< 1 while registered */
	uint32_t generation;     /**< registration generation of this pod_id */
	uint8_t padding[40];     /**< pads the entry to one cache line; zero */
};

DPUMESH_STATIC_ASSERT(sizeof(struct pod_registry_entry) == 64, "pod_registry_entry: 64 bytes");
DPUMESH_STATIC_ASSERT(offsetof(struct pod_registry_entry, rx_header_mkey) == 0, "rx_header_mkey");
DPUMESH_STATIC_ASSERT(offsetof(struct pod_registry_entry, rx_body_mkey) == 4, "rx_body_mkey");
DPUMESH_STATIC_ASSERT(offsetof(struct pod_registry_entry, rx_sq_doorbell) == 8, "rx_sq_doorbell");
DPUMESH_STATIC_ASSERT(offsetof(struct pod_registry_entry, is_active) == 16, "is_active");
DPUMESH_STATIC_ASSERT(offsetof(struct pod_registry_entry, generation) == 20, "generation");
DPUMESH_STATIC_ASSERT(offsetof(struct pod_registry_entry, padding) == 24, "padding");

/** Largest number of pods one node tracks (size of pod_lookup_table). */
#define DPUMESH_MAX_PODS 256u

/*
 * Pod handles: how DPU-internal descriptors (sidecar SQs, the Arm's pending table) name a
 * destination or source pod in the 32-bit dst.pod_id. Bits 0-7 are the pod_id (index into
 * pod_lookup_table), bits 8-31 the registration generation (1 .. 2^24-1, never 0, so a
 * handle is never 0). A handle whose generation differs from the entry's current one names a
 * registration that is gone: every use of it is refused (DPUMESH_STATUS_DEST_GONE), so late
 * work of a dead pod never lands in the memory of a newer registration of the same pod_id.
 * Pods never write handles: the DPU ignores dst.pod_id on a pod's TX SQ.
 *
 * RX refill descriptors (pod -> DPU, on the RX header/body refill rings) carry the pod's
 * generation in step_id (as received in REGISTERED); the DPU refuses a refill slot whose
 * step_id is not the pod's current generation.
 */
#define DPUMESH_POD_ID_BITS 8u
#define DPUMESH_POD_ID_MASK ((1u << DPUMESH_POD_ID_BITS) - 1u)
#define DPUMESH_GENERATION_MAX ((1u << (32u - DPUMESH_POD_ID_BITS)) - 1u)
#define dpumesh_pod_handle(pod_id, generation)                                           \
	(((uint32_t)(pod_id) & DPUMESH_POD_ID_MASK) |                                      \
	 ((uint32_t)(generation) << DPUMESH_POD_ID_BITS))
#define DPUMESH_HANDLE_POD_ID(handle) ((uint32_t)(handle) & DPUMESH_POD_ID_MASK)
#define DPUMESH_HANDLE_GENERATION(handle) ((uint32_t)(handle) >> DPUMESH_POD_ID_BITS)
DPUMESH_STATIC_ASSERT(DPUMESH_MAX_PODS == (1u << DPUMESH_POD_ID_BITS), "pod id bits");

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_ABI_H */
