/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/podlayout/pod_check.h - the security core's checks of what a pod wrote, as pure
 * C11 with no libc: one implementation for the DPU's pod registry (lib/podreg, under the
 * DPA emulator) and for the DOCA device mapping on the DPA (dpa_kernels/doca), so the two
 * cannot drift.
 *
 * Everything here reads only the caller's private copy of a descriptor (taken from a ring
 * with dpumesh_sq_dequeue_burst) and the pod's geometry and layout as the DPU keeps them,
 * never shared memory. Translating an address into a local pointer (lib/region's mkey table
 * on the emulator; the hardware's mmap range check on a BlueField-3) is the caller's step.
 *
 *   int why = dpumesh_tx_check_flags(&d);
 *   if (why == DPUMESH_TX_ACCEPT)
 *           why = dpumesh_tx_check_slot(base + l.tx_header_off, &g.tx_header,
 *                                       d.header_buf_addr, d.header_len, 0);
 *   if (why != DPUMESH_TX_ACCEPT)
 *           dpumesh_tx_done_report(&d, dpumesh_tx_refusal_flags(why), &report);
 */
#ifndef DPUMESH_POD_CHECK_H
#define DPUMESH_POD_CHECK_H

#include <stdint.h>

#include "dpumesh/abi/abi.h"
#include "dpumesh/podlayout/pod_layout.h"
#include "dpumesh/ring/sq.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Why a TX descriptor is refused: name, status reported to the pod, description. The
 *  order is the refusal's index (lib/podreg's tx_refusal, the DOCA mapping's counters). */
#define DPUMESH_FOREACH_TX_REFUSAL(_)                                                    \
	_(reserved_bits, DPUMESH_STATUS_BAD_DESCRIPTOR, "reserved or status flag bits set")   \
	_(bad_op, DPUMESH_STATUS_BAD_DESCRIPTOR, "op is not exactly REQUEST or RESPONSE")     \
	_(bad_case, DPUMESH_STATUS_BAD_DESCRIPTOR, "case the pod may not post")              \
	_(no_header, DPUMESH_STATUS_BAD_DESCRIPTOR, "header address or length is 0")         \
	_(body_mismatch, DPUMESH_STATUS_BAD_DESCRIPTOR, "body address xor body length is 0") \
	_(header_too_long, DPUMESH_STATUS_TOO_LARGE, "header longer than a TX header slot")  \
	_(body_too_long, DPUMESH_STATUS_TOO_LARGE, "body longer than a TX body slot")        \
	_(header_outside, DPUMESH_STATUS_BAD_ADDRESS, "header not in the pod's TX header pool") \
	_(header_unaligned, DPUMESH_STATUS_BAD_ADDRESS, "header not at a slot start")        \
	_(body_outside, DPUMESH_STATUS_BAD_ADDRESS, "body not in the pod's TX body pool")    \
	_(body_unaligned, DPUMESH_STATUS_BAD_ADDRESS, "body not at a slot start")

/** Why a refill descriptor a pod posted is discarded: name, description. */
#define DPUMESH_FOREACH_REFILL_REFUSAL(_)                                                \
	_(stale_generation, "step_id is not the pod's current generation")               \
	_(outside, "slot address not in the pod's RX pool")                              \
	_(unaligned, "slot address not at a slot start")                                 \
	_(bad_fields, "flags or the other address field not zero")

enum dpumesh_tx_refusal {
#define DPUMESH_TX_REFUSAL_C_ENUM(n, s, d) DPUMESH_TX_REFUSED_##n,
	DPUMESH_FOREACH_TX_REFUSAL(DPUMESH_TX_REFUSAL_C_ENUM)
#undef DPUMESH_TX_REFUSAL_C_ENUM
	DPUMESH_TX_ACCEPT /**< not refused (also the number of reasons) */
};

enum dpumesh_refill_refusal {
#define DPUMESH_REFILL_REFUSAL_C_ENUM(n, d) DPUMESH_REFILL_REFUSED_##n,
	DPUMESH_FOREACH_REFILL_REFUSAL(DPUMESH_REFILL_REFUSAL_C_ENUM)
#undef DPUMESH_REFILL_REFUSAL_C_ENUM
	DPUMESH_REFILL_ACCEPT /**< not refused (also the number of reasons) */
};

/** The status a refusal reports to the pod (BAD_DESCRIPTOR for an unknown reason). */
static inline uint32_t dpumesh_tx_refusal_status(int why)
{
	switch (why) {
#define DPUMESH_TX_REFUSAL_C_STATUS(n, s, d)                                             \
	case DPUMESH_TX_REFUSED_##n:                                                      \
		return (uint32_t)(s);
		DPUMESH_FOREACH_TX_REFUSAL(DPUMESH_TX_REFUSAL_C_STATUS)
#undef DPUMESH_TX_REFUSAL_C_STATUS
	default:
		return (uint32_t)DPUMESH_STATUS_BAD_DESCRIPTOR;
	}
}

/** The flags of the report of a refusal: TX_DONE | ERROR | its status. */
static inline uint32_t dpumesh_tx_refusal_flags(int why)
{
	return DPUMESH_OP_TX_DONE | DPUMESH_OP_ERROR |
	       (dpumesh_tx_refusal_status(why) << DPUMESH_STATUS_SHIFT);
}

/** Cases a pod may post on its TX SQ: LOCAL and EXTERNAL. */
#define DPUMESH_POD_CASES                                                                \
	((1u << (DPUMESH_CASE_LOCAL >> DPUMESH_CASE_SHIFT)) |                              \
	 (1u << (DPUMESH_CASE_EXTERNAL >> DPUMESH_CASE_SHIFT)))

/**
 * The flag and presence checks of a TX descriptor, in order: no reserved or status bits,
 * op exactly REQUEST or RESPONSE, a case the pod may post, a header, body address and
 * length both 0 or both not.
 * @return DPUMESH_TX_ACCEPT, or the first reason (enum dpumesh_tx_refusal)
 */
static inline int dpumesh_tx_check_flags(const struct sw_descriptor *d)
{
	const uint32_t flags = d->flags;
	const uint32_t op = flags & DPUMESH_OP_MASK;
	if (flags & (DPUMESH_FLAGS_RESERVED_MASK | DPUMESH_STATUS_MASK))
		return DPUMESH_TX_REFUSED_reserved_bits;
	if (op != DPUMESH_OP_REQUEST && op != DPUMESH_OP_RESPONSE)
		return DPUMESH_TX_REFUSED_bad_op;
	if (!(DPUMESH_POD_CASES & (1u << ((flags & DPUMESH_CASE_MASK) >> DPUMESH_CASE_SHIFT))))
		return DPUMESH_TX_REFUSED_bad_case;
	if (d->header_buf_addr == 0 || d->header_len == 0)
		return DPUMESH_TX_REFUSED_no_header;
	if ((d->body_buf_addr == 0) != (d->body_len == 0))
		return DPUMESH_TX_REFUSED_body_mismatch;
	return DPUMESH_TX_ACCEPT;
}

/**
 * [addr, addr+len) must be one slot of the pod's TX header (body = 0) or TX body (body = 1)
 * pool at pool_base (the pod's address of it): inside, at a slot start, within the slot.
 * @return DPUMESH_TX_ACCEPT, or header/body _outside, _unaligned or _too_long
 */
static inline int dpumesh_tx_check_slot(uint64_t pool_base, const struct dpumesh_pool_geometry *pool,
					uint64_t addr, uint32_t len, int body)
{
	const int64_t slot = dpumesh_pool_slot(pool_base, pool, addr, len);
	if (slot == DPUMESH_SLOT_OUTSIDE)
		return body ? DPUMESH_TX_REFUSED_body_outside : DPUMESH_TX_REFUSED_header_outside;
	if (slot == DPUMESH_SLOT_UNALIGNED)
		return body ? DPUMESH_TX_REFUSED_body_unaligned : DPUMESH_TX_REFUSED_header_unaligned;
	if (slot == DPUMESH_SLOT_TOO_LONG)
		return body ? DPUMESH_TX_REFUSED_body_too_long : DPUMESH_TX_REFUSED_header_too_long;
	return DPUMESH_TX_ACCEPT;
}

/**
 * A refill descriptor the pod posted for its RX header (body = 0) or RX body (body = 1)
 * pool at pool_base: its generation (step_id) current, no flags, the other address 0, the
 * address a slot start inside the pool. *addr is the slot's address.
 * @return DPUMESH_REFILL_ACCEPT, or the reason (enum dpumesh_refill_refusal)
 */
static inline int dpumesh_refill_check(const struct sw_descriptor *d, uint32_t generation,
				       uint64_t pool_base, const struct dpumesh_pool_geometry *pool,
				       int body, uint64_t *addr)
{
	const uint64_t a = body ? d->body_buf_addr : d->header_buf_addr;
	const uint64_t other = body ? d->header_buf_addr : d->body_buf_addr;
	int64_t slot;
	*addr = a;
	if (d->step_id != generation)
		return DPUMESH_REFILL_REFUSED_stale_generation;
	if (d->flags != 0 || other != 0)
		return DPUMESH_REFILL_REFUSED_bad_fields;
	slot = dpumesh_pool_slot(pool_base, pool, a, pool->slot_size);
	if (slot == DPUMESH_SLOT_UNALIGNED)
		return DPUMESH_REFILL_REFUSED_unaligned;
	if (slot < 0)
		return DPUMESH_REFILL_REFUSED_outside;
	return DPUMESH_REFILL_ACCEPT;
}

/** Whether a delivery of these lengths fits the pod's RX slots (else TOO_LARGE). */
static inline int dpumesh_rx_fits(const struct dpumesh_geometry *g, uint32_t header_len,
				  uint32_t body_len)
{
	return header_len <= g->rx_header.slot_size && body_len <= g->rx_body.slot_size;
}

/** The flags of a sender's TX completion: TX_DONE, its case, and ERROR + status if not OK. */
static inline uint32_t dpumesh_tx_done_flags(uint32_t orig_flags, uint32_t status)
{
	uint32_t f = DPUMESH_OP_TX_DONE | (orig_flags & DPUMESH_CASE_MASK);
	if (status != DPUMESH_STATUS_OK)
		f |= DPUMESH_OP_ERROR | ((status & 0xffffu) << DPUMESH_STATUS_SHIFT);
	return f;
}

/** The RX SQ entry that completes (or refuses) a sender's descriptor: its addresses,
 *  lengths, req_id and step_id, so the pod can free its TX slots; no pod id. */
static inline void dpumesh_tx_done_report(const struct sw_descriptor *d, uint32_t flags,
					  struct sw_descriptor *out)
{
	dpumesh_sq_copy_fields_(out, d);
	out->valid = d->valid;
	out->dst.pod_id = 0;
	out->flags = flags;
}

/** Whether a post to a pod's RX SQ must wake it: all but a successful TX completion,
 *  which may wait for the pod's next wake-up (DPUMESH_RX_WAIT_TX_DONE). */
static inline int dpumesh_post_urgent(uint32_t flags)
{
	return (flags & (DPUMESH_OP_TX_DONE | DPUMESH_OP_ERROR)) != DPUMESH_OP_TX_DONE;
}

/**
 * Doorbells for sleepers only (docs/memory-model.md "Doorbells"): given the pod's
 * need-wakeup word (loaded after a full fence that follows the posts) and whether any of
 * the posts is urgent (dpumesh_post_urgent, or a post refused for a full RX SQ), whether to
 * ring. A word rung for is remembered in *rung_epoch.
 */
static inline int dpumesh_doorbell_needed(uint64_t rx_wait, int urgent, uint64_t *rung_epoch)
{
	if ((rx_wait & DPUMESH_RX_WAIT_ASLEEP) == 0 || rx_wait == *rung_epoch)
		return 0;
	if (!urgent && (rx_wait & DPUMESH_RX_WAIT_TX_DONE) == 0)
		return 0;
	*rung_epoch = rx_wait;
	return 1;
}

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_POD_CHECK_H */
