/* SPDX-License-Identifier: BSD-3-Clause */
/* DMA completion dispatch shared by the TX and RX kernels of one DPA thread. */
#include "kernel_util.h"

uint32_t dpa_dma_dispatch(struct dpa_dev *d, struct dpa_kernel_state *s)
{
	struct dpa_dma_done done[32];
	uint32_t n = dpa_dma_poll(d, done, 32);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = DPA_COOKIE_SLOT(done[i].cookie);
		if (slot >= DPA_MAX_INFLIGHT)
			continue;
		if (DPA_COOKIE_IS_RX(done[i].cookie))
			dpa_rx_copy_done(s, slot, done[i].status);
		else
			dpa_tx_copy_done(s, slot, done[i].status);
	}
	return n;
}
