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

/** Routes finished DMA copies to the TX or RX in-flight slot named by their cookie. */
uint32_t dpa_dma_dispatch(struct dpa_dev *d, struct dpa_kernel_state *s);

/* called by dpa_dma_dispatch */
void dpa_tx_copy_done(struct dpa_kernel_state *s, uint32_t slot, int32_t status);
void dpa_rx_copy_done(struct dpa_kernel_state *s, uint32_t slot, int32_t status);

/* in-flight slot states */
enum { SLOT_FREE = 0, SLOT_NEED_DMA = 1, SLOT_DMA_WAIT = 2, SLOT_NEED_POST = 3 };

#endif
