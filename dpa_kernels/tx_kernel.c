/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPA TX kernel: pod TX SQs -> DPU header buffer (DMA) -> sidecar TX SQ.
 *
 * Per owned SQ, round robin: take a validated descriptor (the runtime translated and
 * bounds-checked it with the sender's own mkey; the sender is the SQ's pod), copy its
 * header into an hbuf by DMA, and when the copy is done post a descriptor to the Arm with
 * the hbuf's header, the sender's body address left in place (bodies never go to the
 * Arm), and the sender's handle in dst.pod_id. The hbuf's metadata keeps the original
 * descriptor so the RX kernel can complete the sender's TX after delivery.
 */
#include "kernel_util.h"

void dpa_tx_copy_done(struct dpa_kernel_state *s, uint32_t slot, int32_t status)
{
	struct dpa_tx_inflight *f = &s->tx[slot];
	if (f->used != SLOT_DMA_WAIT)
		return;
	if (status != 0)
		s->tx_dma_errors++;
	/* a failed header copy is reported to the Arm like any header: it sees garbage it
	 * cannot decode and refuses the message; flag it so it does not try */
	if (status != 0)
		f->item.desc.flags |= DPUMESH_OP_ERROR | (DPUMESH_STATUS_DMA_ERROR << DPUMESH_STATUS_SHIFT);
	f->used = SLOT_NEED_POST;
}

static int tx_post(struct dpa_dev *d, struct dpa_kernel_state *s, struct dpa_tx_inflight *f)
{
	struct dpa_hbuf_meta *meta = (struct dpa_hbuf_meta *)(uintptr_t)f->hbuf;
	struct sw_descriptor out;
	desc_copy(&meta->orig, &f->item.desc);
	meta->src = f->item.src;
	desc_copy(&out, &f->item.desc);
	out.header_buf_addr = f->hbuf + DPA_HBUF_META_SIZE;
	out.dst.pod_id = f->item.src;
	out.valid = 0;
	if (dpa_sidecar_tx_post(d, &out) != DPA_OK)
		return 0;
	s->tx_posted++;
	f->used = SLOT_FREE;
	s->nb_tx_inflight--;
	return 1;
}

uint32_t dpa_tx_kernel(struct dpa_dev *d, struct dpa_kernel_state *s)
{
	uint32_t work = dpa_dma_dispatch(d, s);
	uint32_t kicked = 0;

	/* in flight, oldest first: post finished headers in order; queue copies the engine
	 * could not take before */
	uint32_t n_inflight = s->nb_tx_inflight;
	int blocked = 0;
	for (uint32_t k = 0; k < n_inflight; k++) {
		uint32_t i = (s->tx_head + k) % DPA_MAX_INFLIGHT;
		struct dpa_tx_inflight *f = &s->tx[i];
		if (f->used == SLOT_NEED_DMA) {
			if (dpa_dma_copy(d, f->hbuf + DPA_HBUF_META_SIZE, f->item.header,
					 f->item.desc.header_len, DPA_COOKIE(0, i)) != DPA_OK)
				break;
			f->used = SLOT_DMA_WAIT;
			kicked++;
		}
		if (!blocked && f->used == SLOT_NEED_POST && k == 0) {
			if (tx_post(d, s, f)) {
				s->tx_head = (s->tx_head + 1) % DPA_MAX_INFLIGHT;
				work++;
				k--;          /* the next one is now the head */
				n_inflight--;
				continue;
			}
			blocked = 1;
		}
	}

	/* then take new work: one descriptor per SQ per pass, while slots and hbufs last. One
	 * hbuf is taken ahead and carried from SQ to SQ until a descriptor needs it, so a pass
	 * over many idle SQs costs one allocation, not one per SQ. */
	uint32_t nb_sqs = dpa_tx_sq_count(d);
	uint32_t hbuf_room = dpa_hbuf_size(d) - DPA_HBUF_META_SIZE;
	uint64_t hbuf = 0;
	int have_hbuf = 0;
	for (uint32_t n = 0; n < nb_sqs && s->nb_tx_inflight < DPA_MAX_INFLIGHT; n++) {
		uint32_t sq = s->tx_next_sq++ % nb_sqs;
		uint32_t slot = (s->tx_head + s->nb_tx_inflight) % DPA_MAX_INFLIGHT;
		struct dpa_tx_inflight *f = &s->tx[slot];
		if (!have_hbuf) {
			if (dpa_hbuf_alloc(d, &hbuf) != DPA_OK) {
				s->tx_no_hbuf++;
				break;
			}
			have_hbuf = 1;
		}
		if (dpa_tx_take(d, sq, &f->item) != DPA_OK)
			continue; /* the hbuf goes on to the next SQ */
		have_hbuf = 0;
		work++;
		if (f->item.desc.header_len > hbuf_room) {
			/* cannot happen when hbufs are sized to the TX header slots; never
			 * overrun the hbuf if they are not */
			dpa_tx_complete(d, f->item.src, &f->item.desc, DPUMESH_STATUS_TOO_LARGE);
			dpa_hbuf_free(d, hbuf);
			continue;
		}
		f->hbuf = hbuf;
		s->nb_tx_inflight++;
		if (dpa_dma_copy(d, hbuf + DPA_HBUF_META_SIZE, f->item.header,
				 f->item.desc.header_len, DPA_COOKIE(0, slot)) == DPA_OK) {
			f->used = SLOT_DMA_WAIT;
			kicked++;
		} else {
			f->used = SLOT_NEED_DMA;
		}
	}
	if (have_hbuf)
		dpa_hbuf_free(d, hbuf);
	if (kicked)
		dpa_dma_kick(d);
	return work;
}
