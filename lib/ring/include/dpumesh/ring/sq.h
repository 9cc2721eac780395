/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dpumesh/ring/sq.h - the single-producer/single-consumer descriptor queue behind every SQ and
 * refill ring: a power-of-two array of struct sw_descriptor in shared memory, where the
 * `valid` field of each slot says who owns it.
 *
 * Plain C11 with GCC __atomic builtins and nothing else (no libc, no memcpy), so the same
 * code runs in host pods (C or C++), on the Arm data plane, in the DPA emulator and
 * freestanding on the DPA itself (RISC-V, -ffreestanding -nostdlib).
 *
 * Protocol
 *   - A slot belongs to the producer while valid == 0 and to the consumer while
 *     valid == DPUMESH_DESC_VALID. The creator of the ring memory zeroes it before anyone
 *     attaches (memfd and anonymous mappings start zeroed).
 *   - Producer: acquire-load valid; if 0, write every other field of the slot, then
 *     release-store valid = DPUMESH_DESC_VALID.
 *   - Consumer: acquire-load valid; if DPUMESH_DESC_VALID, copy the whole descriptor into
 *     its own memory, then release-store valid = 0. Every later check (lengths, addresses,
 *     flags) reads the private copy only, so a producer that rewrites a slot after
 *     publishing it cannot change what was validated (no double fetch).
 *   - There are no shared head/tail indices. Each side keeps its own position in a
 *     process-local struct dpumesh_sq, and the ring size comes from that handle (set at
 *     attach time from the control channel), never from shared memory. A peer can
 *     therefore corrupt only descriptor contents, which the consumer validates anyway;
 *     it cannot make the other side index outside the ring.
 *
 * Memory ordering
 *   - Producer release-store of valid=1 pairs with the consumer's acquire-load: once the
 *     consumer sees 1, every field the producer wrote before the store is visible.
 *   - Consumer release-store of valid=0 pairs with the producer's acquire-load: once the
 *     producer sees 0, the consumer's reads of the slot are complete, so the producer's
 *     next writes cannot be observed by that (already finished) copy.
 *   - `valid` is only ever accessed atomically; the other fields are accessed plainly, and
 *     never concurrently by a well-behaved peer because of the two pairs above.
 *
 * Bursts: the producer first checks how many consecutive slots it owns, then writes all
 * descriptors, then publishes valid slot by slot in ring order, each with release. Writing
 * first keeps the stores to the descriptor lines together (one line per slot, no
 * interleaving with the flag stores) and keeps the publication loop short, so the consumer
 * sees the burst appear nearly at once. Publishing per slot with release (rather than one
 * release fence followed by relaxed stores) keeps every publication self-contained: a slot
 * whose valid is 1 is complete regardless of its neighbours, which is the guarantee the
 * consumer relies on, and it maps to one store-release per slot on Arm (stlr) and to a
 * plain store on x86. In-order publication means a consumer that reads ahead always finds
 * a prefix of the burst, never a hole.
 *
 * Example:
 *
 *     struct dpumesh_sq tx;
 *     if (dpumesh_sq_init(&tx, ring_mem, 1024) != DPUMESH_SQ_OK) ... ;
 *     uint32_t posted = dpumesh_sq_enqueue_burst(&tx, descs, n);   // producer side
 *
 *     struct dpumesh_sq rx;                                        // consumer side
 *     dpumesh_sq_init(&rx, its_mapping_of_ring_mem, 1024);
 *     struct sw_descriptor burst[32];
 *     uint32_t got = dpumesh_sq_dequeue_burst(&rx, burst, 32);
 *
 * One handle serves one side; a producer and a consumer never share a handle.
 */
#ifndef DPUMESH_SQ_H
#define DPUMESH_SQ_H

#include <stddef.h>
#include <stdint.h>

#include "dpumesh/abi/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Return codes of dpumesh_sq_init(). */
enum dpumesh_sq_rc {
	DPUMESH_SQ_OK = 0,
	DPUMESH_SQ_ERR_SIZE = -1,  /**< nb_slots is 0 or not a power of two */
	DPUMESH_SQ_ERR_ALIGN = -2, /**< memory is NULL or not aligned for struct sw_descriptor */
};

/** One side's process-local view of a ring. Never placed in shared memory. */
struct dpumesh_sq {
	struct sw_descriptor *slots; /**< this process's mapping of the ring */
	uint32_t mask;               /**< nb_slots - 1 */
	uint32_t pos;                /**< next slot this side will produce into / consume from */
};

/**
 * Attaches a handle to ring memory of nb_slots descriptors, at position 0.
 *
 * @param sq handle to initialise (process-local)
 * @param mem the ring: nb_slots * 64 bytes, zeroed by its creator before first use
 * @param nb_slots number of slots, a power of two (trusted: from the handle's owner)
 * @return DPUMESH_SQ_OK; DPUMESH_SQ_ERR_SIZE if nb_slots is 0 or not a power of two;
 *         DPUMESH_SQ_ERR_ALIGN if mem is NULL or not 8-byte aligned. On error the handle
 *         is left zeroed (every burst on it moves nothing).
 */
static inline int dpumesh_sq_init(struct dpumesh_sq *sq, void *mem, uint32_t nb_slots)
{
	sq->slots = NULL;
	sq->mask = 0;
	sq->pos = 0;
	if (nb_slots == 0 || (nb_slots & (nb_slots - 1)) != 0)
		return DPUMESH_SQ_ERR_SIZE;
	if (mem == NULL || ((uintptr_t)mem & (__alignof__(struct sw_descriptor) - 1)) != 0)
		return DPUMESH_SQ_ERR_ALIGN;
	sq->slots = (struct sw_descriptor *)mem;
	sq->mask = nb_slots - 1;
	return DPUMESH_SQ_OK;
}

/** Number of slots of the ring (from the handle, not from shared memory). */
static inline uint32_t dpumesh_sq_size(const struct dpumesh_sq *sq)
{
	return sq->slots != NULL ? sq->mask + 1 : 0;
}

/*
 * Copies every field but `valid`, scalar by scalar: `valid` is never written non-atomically,
 * and no compiler can turn the copy into a memcpy call (GCC does for a struct or union
 * assignment at -Os, and there is no libc on the DPA; the sq_riscv_freestanding test checks
 * this). The ip bytes cover dst.pod_id; adjacent stores are merged by the compiler.
 */
#define DPUMESH_SQ_COPY_IP_(i) d->dst.external.ip[i] = s->dst.external.ip[i]
static inline void dpumesh_sq_copy_fields_(struct sw_descriptor *d, const struct sw_descriptor *s)
{
	d->header_buf_addr = s->header_buf_addr;
	d->header_len = s->header_len;
	d->body_buf_addr = s->body_buf_addr;
	d->body_len = s->body_len;
	d->req_id = s->req_id;
	d->step_id = s->step_id;
	DPUMESH_SQ_COPY_IP_(0); DPUMESH_SQ_COPY_IP_(1); DPUMESH_SQ_COPY_IP_(2);
	DPUMESH_SQ_COPY_IP_(3); DPUMESH_SQ_COPY_IP_(4); DPUMESH_SQ_COPY_IP_(5);
	DPUMESH_SQ_COPY_IP_(6); DPUMESH_SQ_COPY_IP_(7); DPUMESH_SQ_COPY_IP_(8);
	DPUMESH_SQ_COPY_IP_(9); DPUMESH_SQ_COPY_IP_(10); DPUMESH_SQ_COPY_IP_(11);
	DPUMESH_SQ_COPY_IP_(12); DPUMESH_SQ_COPY_IP_(13); DPUMESH_SQ_COPY_IP_(14);
	DPUMESH_SQ_COPY_IP_(15);
	d->dst.external.port = s->dst.external.port;
	d->flags = s->flags;
}
#undef DPUMESH_SQ_COPY_IP_

/**
 * Producer: posts up to n descriptors, in order. The `valid` field of src is ignored; the
 * ring sets it. Stops at the first slot the consumer still owns.
 *
 * @return how many descriptors were posted (0..n, and at most the ring size)
 */
static inline uint32_t dpumesh_sq_enqueue_burst(struct dpumesh_sq *sq,
						const struct sw_descriptor *src, uint32_t n)
{
	struct sw_descriptor *slots = sq->slots;
	const uint32_t mask = sq->mask;
	const uint32_t pos = sq->pos;
	uint32_t nb, i;

	if (slots == NULL)
		return 0;
	if (n > mask + 1)
		n = mask + 1; /* beyond that the scan would count the same free slots twice */
	for (nb = 0; nb < n; nb++) {
		if (__atomic_load_n(&slots[(pos + nb) & mask].valid, __ATOMIC_ACQUIRE) != 0)
			break;
	}
	for (i = 0; i < nb; i++)
		dpumesh_sq_copy_fields_(&slots[(pos + i) & mask], &src[i]);
	for (i = 0; i < nb; i++)
		__atomic_store_n(&slots[(pos + i) & mask].valid, DPUMESH_DESC_VALID,
				 __ATOMIC_RELEASE);
	sq->pos = pos + nb;
	return nb;
}

/**
 * Consumer: takes up to n descriptors, in order, copying each into dst before handing its
 * slot back. Stops at the first slot whose valid is not DPUMESH_DESC_VALID. In each copy,
 * valid == DPUMESH_DESC_VALID; validate the copies, never the ring.
 *
 * @return how many descriptors were taken (0..n)
 */
static inline uint32_t dpumesh_sq_dequeue_burst(struct dpumesh_sq *sq, struct sw_descriptor *dst,
						uint32_t n)
{
	struct sw_descriptor *slots = sq->slots;
	const uint32_t mask = sq->mask;
	uint32_t pos = sq->pos;
	uint32_t nb;

	if (slots == NULL)
		return 0;
	for (nb = 0; nb < n; nb++) {
		struct sw_descriptor *slot = &slots[pos & mask];

		if (__atomic_load_n(&slot->valid, __ATOMIC_ACQUIRE) != DPUMESH_DESC_VALID)
			break;
		dpumesh_sq_copy_fields_(&dst[nb], slot);
		dst[nb].valid = DPUMESH_DESC_VALID;
		__atomic_store_n(&slot->valid, 0u, __ATOMIC_RELEASE);
		pos++;
	}
	sq->pos = pos;
	return nb;
}

#ifdef __cplusplus
}
#endif

#endif /* DPUMESH_SQ_H */
