/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers shared by the DPA kernels. No libc: explicit word copies, so the compiler emits
 * no memcpy/memset calls in the freestanding RISC-V build. */
#ifndef DPUMESH_KERNEL_UTIL_H
#define DPUMESH_KERNEL_UTIL_H

#include "dpumesh/kernels/dpa_dev.h"

static inline void desc_copy(struct sw_descriptor *dst, const struct sw_descriptor *src)
{
	const volatile uint64_t *s = (const volatile uint64_t *)src;
	uint64_t *d = (uint64_t *)dst;
	d[0] = s[0];
	d[1] = s[1];
	d[2] = s[2];
	d[3] = s[3];
	d[4] = s[4];
	d[5] = s[5];
	d[6] = s[6];
	d[7] = s[7];
}

static inline void desc_zero(struct sw_descriptor *dst)
{
	volatile uint64_t *d = (volatile uint64_t *)dst;
	d[0] = 0;
	d[1] = 0;
	d[2] = 0;
	d[3] = 0;
	d[4] = 0;
	d[5] = 0;
	d[6] = 0;
	d[7] = 0;
}

/** A copy, possibly longer than DPA_MAX_COPY, being posted piece by piece. */
struct dpa_range {
	uint32_t dst_mmap, src_mmap;
	uint64_t dst, src; /**< where the whole range starts */
	uint32_t len;
};

/**
 * Posts the pieces of [*done, r->len) while the queue has room: pieces of DPA_MAX_COPY
 * (a multiple of DPA_COPY_UNIT), the last one reported and flushed, the others coalesced
 * (OPTIMIZE_REPORTS). A piece after which the queue is full is reported and flushed too, so
 * every post reaches the hardware and a full queue always drains. Advances *done.
 * @return reported copies posted (each gives one completion with `cookie`)
 */
uint32_t dpa_post_range(struct dpa_dev *d, const struct dpa_range *r, uint32_t *done,
			uint64_t cookie);

/**
 * Takes up to DPA_BATCH completions, takes the cookies each covers and calls done(ctx,
 * cookie, status) for the cookie of each reported copy; acks them.
 * @return completions taken
 */
uint32_t dpa_take_completions(struct dpa_dev *d, void (*done)(void *, uint64_t, int32_t),
			      void *ctx);

/* in-flight slot states */
enum { SLOT_FREE = 0, SLOT_NEED_DMA = 1, SLOT_DMA_WAIT = 2, SLOT_NEED_POST = 3 };

#endif
