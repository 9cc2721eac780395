/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPA RX kernel: the Arm's commands -> destination pod.
 *
 * DELIVER (flags REQUEST or RESPONSE): take the destination's RX slots from its refill
 * rings, DMA the body straight from the sender's TX buffer to the destination (it never
 * passes through the Arm) and the header from the hbuf, then post the destination's RX SQ
 * entry, ring its doorbell, complete the sender's TX and free the hbuf. Anything that
 * fails (no slot, pod gone, copy error) is handed back to the Arm unchanged with the
 * status in flags; the Arm decides (retry elsewhere, or complete the sender with an error).
 *
 * Case 2 (flags CASE_INGRESS): the body is in DPU memory (a message that came in through
 * the NIC, in pieces); it is walked with dpa_local_body_next() and each piece copied to its
 * place in the destination's body slot; once delivered it is released to the runtime.
 * A failed delivery hands the command back to the Arm, which still owns the body.
 *
 * DELIVER with HOLD: as DELIVER, but the sender's TX is not completed and the hbuf (and a
 * network body) is kept, and the Arm is told the delivery is done (the command back on the
 * notification queue with status OK): the Arm may deliver it again (a retry) and ends it
 * with a COMPLETE.
 *
 * COMPLETE (flags TX_DONE, ERROR and status when refused): complete the sender named in the
 * hbuf's metadata and free the hbuf.
 */
#include "kernel_util.h"

void dpa_rx_copy_done(struct dpa_kernel_state *s, uint32_t slot, int32_t status)
{
	struct dpa_rx_inflight *f = &s->rx[slot];
	if (f->used != SLOT_DMA_WAIT && f->used != SLOT_NEED_DMA)
		return;
	if (status != 0 && f->error == 0)
		f->error = status;
	f->copies_left--;
	if (f->copies_left == 0 && f->used == SLOT_DMA_WAIT)
		f->used = SLOT_NEED_POST;
}

/* Queues the copies of a delivery that are not queued yet; a full engine leaves the rest
 * for the next pass. Returns how many were queued now. */
static int is_ingress(const struct sw_descriptor *cmd)
{
	return (cmd->flags & DPUMESH_CASE_MASK) == DPUMESH_CASE_INGRESS;
}

/* Queues the copies of a DPU-memory body's pieces, resuming where the last pass stopped.
 * Returns copies queued; sets f->queued bit 1 once every piece is queued. */
static uint32_t rx_queue_local_body(struct dpa_dev *d, struct dpa_rx_inflight *f, uint32_t slot)
{
	const struct sw_descriptor *cmd = &f->cmd;
	uint32_t n = 0;
	while (f->body_queued < cmd->body_len) {
		if (dpa_dma_room(d) == 0)
			return n;
		uint64_t cursor = f->body_cursor, local = 0;
		uint32_t len = dpa_local_body_next(d, cmd->body_buf_addr, &cursor, &local);
		if (len == 0 || len > cmd->body_len - f->body_queued) {
			/* the body is shorter or longer than the command says: a runtime bug,
			 * reported as a copy error rather than a short or overrun copy */
			if (f->error == 0)
				f->error = -22;
			f->body_queued = cmd->body_len;
			break;
		}
		if (dpa_dma_copy(d, f->slots.body_local + f->body_queued, local, len,
				 DPA_COOKIE(1, slot)) != DPA_OK)
			return n;
		f->body_cursor = cursor;
		f->body_queued += len;
		f->copies_left++;
		n++;
	}
	f->queued |= 2u;
	return n;
}

static uint32_t rx_queue_copies(struct dpa_dev *d, struct dpa_rx_inflight *f, uint32_t slot)
{
	const struct sw_descriptor *cmd = &f->cmd;
	uint32_t n = 0;
	if (!(f->queued & 1u)) {
		if (dpa_dma_copy(d, f->slots.header_local, cmd->header_buf_addr, cmd->header_len,
				 DPA_COOKIE(1, slot)) != DPA_OK)
			return n;
		f->queued |= 1u;
		f->copies_left++;
		n++;
	}
	if (cmd->body_len && !(f->queued & 2u) && is_ingress(cmd)) {
		n += rx_queue_local_body(d, f, slot);
		if (!(f->queued & 2u))
			return n;
	} else if (cmd->body_len && !(f->queued & 2u)) {
		if (dpa_dma_copy(d, f->slots.body_local, f->body_src, cmd->body_len,
				 DPA_COOKIE(1, slot)) != DPA_OK)
			return n;
		f->queued |= 2u;
		f->copies_left++;
		n++;
	}
	f->used = f->copies_left ? SLOT_DMA_WAIT : SLOT_NEED_POST;
	return n;
}

static struct dpa_hbuf_meta *meta_of(const struct sw_descriptor *cmd)
{
	return (struct dpa_hbuf_meta *)(uintptr_t)(cmd->header_buf_addr - DPA_HBUF_META_SIZE);
}

static void release_slot(struct dpa_kernel_state *s, struct dpa_rx_inflight *f)
{
	f->used = SLOT_FREE;
	s->nb_rx_inflight--;
}

/* Hands a command back to the Arm with a status; 0 if the notification queue is full. */
static int give_back(struct dpa_dev *d, struct dpa_kernel_state *s,
		     const struct sw_descriptor *cmd, uint32_t status)
{
	struct sw_descriptor note;
	desc_copy(&note, cmd);
	note.flags = (cmd->flags & ~DPUMESH_STATUS_MASK) | DPUMESH_OP_ERROR |
		     (status << DPUMESH_STATUS_SHIFT);
	note.valid = 0;
	if (dpa_notify_arm(d, &note) != DPA_OK)
		return 0;
	s->rx_failed++;
	return 1;
}

/* Delivery done (or failed after slots were taken): post, complete, free. 0: retry later. */
static int rx_finish(struct dpa_dev *d, struct dpa_kernel_state *s, struct dpa_rx_inflight *f)
{
	const struct sw_descriptor *cmd = &f->cmd;
	uint32_t dst = cmd->dst.pod_id;
	if (f->error != 0) {
		if (!give_back(d, s, cmd, DPUMESH_STATUS_DMA_ERROR))
			return 0;
		dpa_rx_slots_return(d, dst, &f->slots);
		release_slot(s, f);
		return 1;
	}
	struct sw_descriptor out;
	desc_zero(&out);
	out.header_buf_addr = f->slots.header_addr;
	out.header_len = cmd->header_len;
	out.body_buf_addr = cmd->body_len ? f->slots.body_addr : 0;
	out.body_len = cmd->body_len;
	out.req_id = cmd->req_id;
	out.step_id = cmd->step_id;
	out.flags = cmd->flags & ((DPUMESH_OP_MASK & ~DPUMESH_OP_HOLD) | DPUMESH_CASE_MASK);
	const int hold = (cmd->flags & DPUMESH_OP_HOLD) != 0;
	if (hold && dpa_notify_room(d) == 0)
		return 0; /* the Arm must hear of it: wait for room first */
	uint32_t st = dpa_deliver(d, dst, &out);
	if (st == DPUMESH_STATUS_DEST_FULL)
		return 0; /* its RX SQ had room at take time; try again */
	if (st != DPUMESH_STATUS_OK) {
		if (!give_back(d, s, cmd, st))
			return 0;
		release_slot(s, f);
		return 1;
	}
	if (hold) {
		/* the Arm keeps the sender's buffers for a retry: tell it the copy is done */
		struct sw_descriptor note;
		desc_copy(&note, cmd);
		note.valid = 0;
		(void)dpa_notify_arm(d, &note); /* room checked above; only this thread adds */
	} else {
		struct dpa_hbuf_meta *meta = meta_of(cmd);
		if (meta->src)
			dpa_tx_complete(d, meta->src, &meta->orig, DPUMESH_STATUS_OK);
		if (is_ingress(cmd) && cmd->body_len)
			dpa_local_body_release(d, cmd->body_buf_addr);
		dpa_hbuf_free(d, cmd->header_buf_addr - DPA_HBUF_META_SIZE);
	}
	s->rx_delivered++;
	release_slot(s, f);
	return 1;
}

/* Starts a DELIVER: source check, slots, then the copies (those the engine cannot take
 * now are queued on a later pass). Failures before any copy go back to the Arm at once.
 * Returns 1 when copies were queued now. */
static int rx_start(struct dpa_dev *d, struct dpa_kernel_state *s, const struct sw_descriptor *cmd,
		    uint32_t slot)
{
	struct dpa_rx_inflight *f = &s->rx[slot];
	uint32_t dst = cmd->dst.pod_id;
	struct dpa_hbuf_meta *meta = meta_of(cmd);
	uint64_t body_src = 0;
	if (cmd->body_len && !is_ingress(cmd)) {
		body_src = dpa_src_body(d, meta->src, cmd->body_buf_addr, cmd->body_len);
		if (!body_src) {
			give_back(d, s, cmd, DPUMESH_STATUS_SRC_GONE);
			return 0;
		}
	}
	uint32_t st = dpa_rx_slots_take(d, dst, cmd->header_len, cmd->body_len, &f->slots);
	if (st != DPUMESH_STATUS_OK) {
		give_back(d, s, cmd, st);
		return 0;
	}
	desc_copy(&f->cmd, cmd);
	f->body_src = body_src;
	f->body_cursor = 0;
	f->body_queued = 0;
	f->error = 0;
	f->copies_left = 0;
	f->queued = 0;
	f->used = SLOT_NEED_DMA;
	s->nb_rx_inflight++;
	return rx_queue_copies(d, f, slot) ? 1 : 0;
}

uint32_t dpa_rx_kernel(struct dpa_dev *d, struct dpa_kernel_state *s)
{
	uint32_t work = dpa_dma_dispatch(d, s);

	uint32_t kicked = 0;
	/* finish deliveries oldest first, so each destination sees them in the order the Arm
	 * sent them (its copies may finish in between) */
	while (s->nb_rx_inflight && s->rx[s->rx_head].used == SLOT_NEED_POST) {
		if (!rx_finish(d, s, &s->rx[s->rx_head]))
			break;
		s->rx_head = (s->rx_head + 1) % DPA_MAX_INFLIGHT;
		work++;
	}
	for (uint32_t k = 0; k < s->nb_rx_inflight; k++) {
		uint32_t i = (s->rx_head + k) % DPA_MAX_INFLIGHT;
		if (s->rx[i].used == SLOT_NEED_DMA) {
			uint32_t q = rx_queue_copies(d, &s->rx[i], i);
			kicked += q;
			if (s->rx[i].used == SLOT_NEED_DMA)
				break; /* the engine is full: later copies wait their turn */
		}
	}

	/* take new commands only while there are in-flight slots and DMA room */
	struct sw_descriptor cmds[16];
	uint32_t room = DPA_MAX_INFLIGHT - s->nb_rx_inflight;
	if (dpa_dma_room(d) == 0)
		room = 0;
	/* every command taken may have to be handed back at once: never take more than the
	 * notification queue can hold, so a refusal is never lost */
	uint32_t notify_room = dpa_notify_room(d);
	if (notify_room < room)
		room = notify_room;
	uint32_t n = room ? dpa_sidecar_rx_take(d, cmds, room < 16 ? room : 16) : 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct sw_descriptor *cmd = &cmds[i];
		uint32_t op = cmd->flags & DPUMESH_OP_MASK & ~DPUMESH_OP_HOLD;
		work++;
		if (op & DPUMESH_OP_TX_DONE) {
			struct dpa_hbuf_meta *meta = meta_of(cmd);
			if (meta->src)
				dpa_tx_complete(d, meta->src, &meta->orig,
						dpumesh_flags_status(cmd->flags));
			dpa_hbuf_free(d, cmd->header_buf_addr - DPA_HBUF_META_SIZE);
			s->rx_completions++;
			continue;
		}
		if (op != DPUMESH_OP_REQUEST && op != DPUMESH_OP_RESPONSE) {
			s->rx_bad_commands++;
			continue;
		}
		if (s->nb_rx_inflight == DPA_MAX_INFLIGHT) {
			give_back(d, s, cmd, DPUMESH_STATUS_DEST_FULL); /* not reached: see room */
			continue;
		}
		uint32_t slot = (s->rx_head + s->nb_rx_inflight) % DPA_MAX_INFLIGHT;
		kicked += (uint32_t)rx_start(d, s, cmd, slot);
	}
	if (kicked)
		dpa_dma_kick(d);
	return work;
}
