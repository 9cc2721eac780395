/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPA TX kernel: pod TX SQs -> DPU header buffer (DMA) -> sidecar TX SQ.
 *
 * Per owned SQ with work (dpa_tx_ready), round robin: take a validated descriptor (the runtime checked its flags and
 * that header and body lie in the sender's own TX pools; the sender is the SQ's pod), copy
 * its header from (sender's mmap, its address) into an hbuf in the DPU mmap, and when the
 * copy is done post a descriptor to the Arm with the hbuf's header, the sender's body
 * address left in place (bodies never go to the Arm), and the sender's handle in
 * dst.pod_id. The hbuf's metadata keeps the original descriptor so the RX kernel can
 * complete the sender's TX after delivery.
 *
 * One activation: completions, then posts in order, then at most DPA_BATCH new
 * descriptors, one per SQ with work per round (an idle SQ is never visited, so a pass costs
 * what the busy SQs need, not what the pods count). Where the runtime has TX doorbells
 * (dpa_tx_doorbells) the kernel does not poll: it is activated by a pod's doorbell, or by
 * itself while headers are in flight or after a full batch, which may have left work
 * behind. Without them it notifies itself every activation (polls).
 */
#include "kernel_util.h"

static void tx_copy_done(void *ctx, uint64_t cookie, int32_t status)
{
	struct dpa_tx_state *s = (struct dpa_tx_state *)ctx;
	if (cookie >= DPA_MAX_INFLIGHT)
		return;
	struct dpa_tx_inflight *f = &s->slot[cookie];
	if (f->used != SLOT_DMA_WAIT && f->used != SLOT_NEED_DMA)
		return;
	if (status != 0 && f->error == 0)
		f->error = status;
	f->copies_left--;
	if (f->copies_left == 0 && f->used == SLOT_DMA_WAIT)
		f->used = SLOT_NEED_POST;
}

/* Posts what is left of a slot's header copy; DMA_WAIT once all of it is posted. */
static uint32_t tx_queue_copy(struct dpa_dev *d, struct dpa_tx_inflight *f, uint32_t slot)
{
	const struct dpa_range r = {
		.dst_mmap = dpa_dpu_mmap(d),
		.src_mmap = f->item.mmap,
		.dst = f->hbuf + DPA_HBUF_META_SIZE,
		.src = f->item.desc.header_buf_addr,
		.len = f->item.desc.header_len,
	};
	uint32_t before = f->queued;
	f->copies_left += dpa_post_range(d, &r, &f->queued, slot);
	if (f->queued == r.len)
		f->used = SLOT_DMA_WAIT;
	return f->queued != before;
}

static int tx_post(struct dpa_dev *d, struct dpa_tx_state *s, struct dpa_tx_inflight *f)
{
	struct dpa_hbuf_meta *meta = (struct dpa_hbuf_meta *)dpa_mmap_ptr(d, dpa_dpu_mmap(d),
									 f->hbuf, DPA_HBUF_META_SIZE);
	struct sw_descriptor out;
	desc_copy(&out, &f->item.desc);
	if (f->error != 0) {
		/* a failed header copy is reported to the Arm like any header: it sees garbage
		 * it cannot decode and refuses the message; flag it so it does not try */
		dpa_counter_add(&s->dma_errors, 1);
		out.flags |= DPUMESH_OP_ERROR | (DPUMESH_STATUS_DMA_ERROR << DPUMESH_STATUS_SHIFT);
	}
	if (meta) {
		desc_copy(&meta->orig, &out);
		meta->src = f->item.src;
		dpa_window_writeback(d);
	}
	out.header_buf_addr = f->hbuf + DPA_HBUF_META_SIZE;
	out.dst.pod_id = f->item.src;
	out.valid = 0;
	if (dpa_sidecar_tx_post(d, &out) != DPA_OK)
		return 0;
	dpa_counter_add(&s->posted, 1);
	f->used = SLOT_FREE;
	dpa_gauge_set(&s->nb_inflight, s->nb_inflight - 1);
	return 1;
}

void dpa_tx_kernel(struct dpa_dev *d, struct dpa_tx_state *s)
{
	dpa_counter_add(&s->activations, 1);
	dpa_take_completions(d, tx_copy_done, s);

	/* in flight, oldest first: post finished headers in order; post copies the queue
	 * could not take before */
	uint32_t n_inflight = s->nb_inflight;
	int blocked = 0;
	for (uint32_t k = 0; k < n_inflight; k++) {
		uint32_t i = (s->head + k) % DPA_MAX_INFLIGHT;
		struct dpa_tx_inflight *f = &s->slot[i];
		if (f->used == SLOT_NEED_DMA) {
			tx_queue_copy(d, f, i);
			if (f->used == SLOT_NEED_DMA)
				break; /* the queue is full: later copies wait their turn */
		}
		if (!blocked && f->used == SLOT_NEED_POST && k == 0) {
			if (tx_post(d, s, f)) {
				s->head = (s->head + 1) % DPA_MAX_INFLIGHT;
				k--; /* the next one is now the head */
				n_inflight--;
				continue;
			}
			blocked = 1;
		}
	}

	const int stopping = dpa_thread_stop_requested(d);
	if (stopping && s->nb_inflight == 0) {
		dpa_thread_finish(d);
		return;
	}

	/* then take new work from the SQs that have some: one descriptor per SQ per round,
	 * rounds until DPA_BATCH, while slots, hbufs and queue room last; an SQ found empty
	 * leaves the round. One hbuf is taken ahead and carried until a descriptor needs it. */
	uint32_t nr = stopping ? 0 : dpa_tx_ready(d, s->ready, DPA_BATCH);
	uint32_t hbuf_room = dpa_hbuf_size(d) - DPA_HBUF_META_SIZE;
	uint64_t hbuf = 0;
	int have_hbuf = 0;
	uint32_t taken = 0, k = 0;
	while (nr > 0 && taken < DPA_BATCH && s->nb_inflight < DPA_MAX_INFLIGHT &&
	       dpa_async_room(d) > 0) {
		if (k >= nr)
			k = 0; /* next round */
		uint32_t sq = s->ready[k];
		uint32_t slot = (s->head + s->nb_inflight) % DPA_MAX_INFLIGHT;
		struct dpa_tx_inflight *f = &s->slot[slot];
		if (!have_hbuf) {
			if (dpa_hbuf_alloc(d, &hbuf) != DPA_OK) {
				dpa_counter_add(&s->no_hbuf, 1);
				break;
			}
			have_hbuf = 1;
		}
		int rc = dpa_tx_take(d, sq, &f->item);
		if (rc == DPA_REFUSED) {
			k++; /* consumed and reported (a unit of work); the SQ may hold more */
			taken++;
			continue;
		}
		if (rc != DPA_OK) {
			s->ready[k] = s->ready[--nr]; /* empty (or gone): out of the rounds */
			continue;
		}
		k++;
		have_hbuf = 0;
		taken++;
		if (f->item.desc.header_len > hbuf_room) {
			/* cannot happen when hbufs are sized to the TX header slots; never
			 * overrun the hbuf if they are not */
			dpa_tx_complete(d, f->item.src, &f->item.desc, DPUMESH_STATUS_TOO_LARGE);
			dpa_hbuf_free(d, hbuf);
			continue;
		}
		f->hbuf = hbuf;
		f->queued = 0;
		f->copies_left = 0;
		f->error = 0;
		f->used = SLOT_NEED_DMA;
		dpa_gauge_set(&s->nb_inflight, s->nb_inflight + 1);
		tx_queue_copy(d, f, slot);
	}
	if (have_hbuf)
		dpa_hbuf_free(d, hbuf);

	if (s->nb_inflight)
		dpa_completion_request_notification(d); /* copies in flight wake it */
	/* a full batch may have left work behind, and a header waiting for queue room (DMA or
	 * the sidecar TX SQ) has no completion to wake it: run again at once. Otherwise the
	 * next activation comes from a pod's doorbell (it does not poll its SQs). */
	if (taken >= DPA_BATCH || s->nb_inflight || !dpa_tx_doorbells(d))
		dpa_thread_notify(d);
	dpa_thread_reschedule(d);
}
