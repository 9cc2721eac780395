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
 * the NIC, in pieces); it is walked with dpa_local_body_next() and each piece copied (split
 * at DPA_MAX_COPY) to its place in the destination's body slot; once delivered it is released to the runtime.
 * A failed delivery hands the command back to the Arm, which still owns the body.
 *
 * DELIVER with HOLD: as DELIVER, but the sender's TX is not completed and the hbuf (and a
 * network body) is kept, and the Arm is told the delivery is done (the command back on the
 * notification queue with status OK): the Arm may deliver it again (a retry) and ends it
 * with a COMPLETE.
 *
 * COMPLETE (flags TX_DONE, ERROR and status when refused): complete the sender named in the
 * hbuf's metadata and free the hbuf.
 *
 * Order under back-pressure (docs/ordering.md): once a delivery to pod P is handed back for
 * want of room (DEST_FULL), P is held back: every later delivery to P is handed back too,
 * unread and in order, so none overtakes it. The Arm keeps them in P's queue and sends the
 * first one again marked RESUME: that one clears the hold and is tried, and its outcome
 * always comes back on the notification queue (status OK when delivered). O(1) per
 * command: the state is one handle per pod_id. A delivery marked NOTIFY (the last of a
 * window the Arm sends from a queue) is an ordinary one whose outcome is reported too.
 *
 * Copies name both sides by (mmap, address): the sender's body by its mmap (from
 * pod_lookup_table, so a sender gone since is SRC_GONE) and its own address, the header by
 * the DPU mmap, the destination by its mmap and its slot addresses.
 *
 * One activation: completions, finished deliveries in order, copies left over, then at
 * most DPA_BATCH new commands. It runs again on the next completion (armed while copies are
 * in flight), on a doorbell (a command or a TX completion for it), or at once (it notifies
 * itself) when it stopped with work left.
 */
#include "kernel_util.h"

static void rx_copy_done(void *ctx, uint64_t cookie, int32_t status)
{
	struct dpa_rx_state *s = (struct dpa_rx_state *)ctx;
	if (cookie >= DPA_MAX_INFLIGHT)
		return;
	struct dpa_rx_inflight *f = &s->slot[cookie];
	if (f->used != SLOT_DMA_WAIT && f->used != SLOT_NEED_DMA)
		return;
	if (status != 0 && f->error == 0)
		f->error = status;
	f->copies_left--;
	if (f->copies_left == 0 && f->used == SLOT_DMA_WAIT)
		f->used = SLOT_NEED_POST;
}

static int is_ingress(const struct sw_descriptor *cmd)
{
	return (cmd->flags & DPUMESH_CASE_MASK) == DPUMESH_CASE_INGRESS;
}

/* Posts the copies of a DPU-memory body's pieces, resuming where the last activation
 * stopped (the piece being posted and what is left of it). Sets f->queued bit 1 once every
 * piece is posted. */
static void rx_queue_local_body(struct dpa_dev *d, struct dpa_rx_inflight *f, uint32_t slot)
{
	const struct sw_descriptor *cmd = &f->cmd;
	while (f->body_queued < cmd->body_len || f->piece_left) {
		if (f->piece_left == 0) {
			uint64_t cursor = f->body_cursor, addr = 0;
			uint32_t len = dpa_local_body_next(d, cmd->body_buf_addr, &cursor, &addr);
			if (len == 0 || len > cmd->body_len - f->body_queued) {
				/* the body is shorter or longer than the command says: a runtime
				 * bug, reported as a copy error rather than a short or overrun copy */
				if (f->error == 0)
					f->error = -22;
				f->body_queued = cmd->body_len;
				break;
			}
			f->body_cursor = cursor;
			f->piece_addr = addr;
			f->piece_left = len;
		}
		const struct dpa_range r = {
			.dst_mmap = f->slots.mmap,
			.src_mmap = dpa_dpu_mmap(d),
			.dst = f->slots.body_addr + f->body_queued,
			.src = f->piece_addr,
			.len = f->piece_left,
		};
		uint32_t done = 0;
		f->copies_left += dpa_post_range(d, &r, &done, slot);
		f->body_queued += done;
		f->piece_addr += done;
		f->piece_left -= done;
		if (f->piece_left)
			return; /* the queue is full */
	}
	f->queued |= 2u;
}

/* Posts the copies of a delivery that are not posted yet; a full queue leaves the rest for
 * a later activation. */
static void rx_queue_copies(struct dpa_dev *d, struct dpa_rx_inflight *f, uint32_t slot)
{
	const struct sw_descriptor *cmd = &f->cmd;
	if (!(f->queued & 1u)) {
		/* a header is at most one hbuf: one copy when it fits DPA_MAX_COPY, else the
		 * queue must have room for all its pieces (posted in one go) */
		const struct dpa_range r = {
			.dst_mmap = f->slots.mmap,
			.src_mmap = dpa_dpu_mmap(d),
			.dst = f->slots.header_addr,
			.src = cmd->header_buf_addr,
			.len = cmd->header_len,
		};
		if (dpa_async_room(d) < (r.len + DPA_MAX_COPY - 1) / DPA_MAX_COPY)
			return;
		uint32_t done = 0;
		f->copies_left += dpa_post_range(d, &r, &done, slot);
		f->queued |= 1u;
	}
	if (cmd->body_len && !(f->queued & 2u)) {
		if (is_ingress(cmd)) {
			rx_queue_local_body(d, f, slot);
		} else {
			const struct dpa_range r = {
				.dst_mmap = f->slots.mmap,
				.src_mmap = f->src_mmap,
				.dst = f->slots.body_addr,
				.src = cmd->body_buf_addr,
				.len = cmd->body_len,
			};
			f->copies_left += dpa_post_range(d, &r, &f->body_queued, slot);
			if (f->body_queued == cmd->body_len)
				f->queued |= 2u;
		}
		if (!(f->queued & 2u))
			return;
	}
	f->used = f->copies_left ? SLOT_DMA_WAIT : SLOT_NEED_POST;
}

/* The hbuf metadata behind a command's header (NULL: not in the DPU mmap, a runtime bug). */
static struct dpa_hbuf_meta *meta_of(struct dpa_dev *d, const struct sw_descriptor *cmd)
{
	return (struct dpa_hbuf_meta *)dpa_mmap_ptr(d, dpa_dpu_mmap(d),
						    cmd->header_buf_addr - DPA_HBUF_META_SIZE,
						    DPA_HBUF_META_SIZE);
}

static void release_slot(struct dpa_rx_state *s, struct dpa_rx_inflight *f)
{
	f->used = SLOT_FREE;
	dpa_gauge_set(&s->nb_inflight, s->nb_inflight - 1);
}

/* Hands a command back to the Arm with a status; 0 if the notification queue is full. */
static int give_back(struct dpa_dev *d, struct dpa_rx_state *s,
		     const struct sw_descriptor *cmd, uint32_t status)
{
	struct sw_descriptor note;
	desc_copy(&note, cmd);
	note.flags = (cmd->flags & ~DPUMESH_STATUS_MASK) | DPUMESH_OP_ERROR |
		     (status << DPUMESH_STATUS_SHIFT);
	note.valid = 0;
	if (dpa_notify_arm(d, &note) != DPA_OK)
		return 0;
	dpa_counter_add(&s->failed, 1);
	return 1;
}

/* Delivery done (or failed after slots were taken): post, complete, free. 0: retry later. */
static int rx_finish(struct dpa_dev *d, struct dpa_rx_state *s, struct dpa_rx_inflight *f)
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
	out.flags = cmd->flags & ((DPUMESH_OP_MASK & ~(DPUMESH_OP_HOLD | DPUMESH_OP_RESUME |
							 DPUMESH_OP_NOTIFY)) |
				  DPUMESH_CASE_MASK);
	const int hold = (cmd->flags & DPUMESH_OP_HOLD) != 0;
	/* the Arm hears of a held delivery (it keeps the buffers), of a resumed one and of
	 * the last of a window (it sends more of the destination's queue once it is in) */
	const int tell = hold || (cmd->flags & (DPUMESH_OP_RESUME | DPUMESH_OP_NOTIFY)) != 0;
	if (tell && dpa_notify_room(d) == 0)
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
	if (tell) {
		/* the copy is done: held, the Arm keeps the sender's buffers for a retry */
		struct sw_descriptor note;
		desc_copy(&note, cmd);
		note.valid = 0;
		(void)dpa_notify_arm(d, &note); /* room checked above; only this thread adds */
	}
	if (!hold) {
		const struct dpa_hbuf_meta *meta = meta_of(d, cmd);
		if (meta && meta->src)
			dpa_tx_complete(d, meta->src, &meta->orig, DPUMESH_STATUS_OK);
		if (is_ingress(cmd) && cmd->body_len)
			dpa_local_body_release(d, cmd->body_buf_addr);
		dpa_hbuf_free(d, cmd->header_buf_addr - DPA_HBUF_META_SIZE);
	}
	dpa_counter_add(&s->delivered, 1);
	release_slot(s, f);
	return 1;
}

/* Starts a DELIVER: source check, slots, then the copies (those the queue cannot take now
 * are posted in a later activation). Failures before any copy go back to the Arm at once. */
static void rx_start(struct dpa_dev *d, struct dpa_rx_state *s, const struct sw_descriptor *cmd,
		     uint32_t slot)
{
	struct dpa_rx_inflight *f = &s->slot[slot];
	uint32_t dst = cmd->dst.pod_id;
	uint32_t src_mmap = 0;
	if (cmd->body_len && !is_ingress(cmd)) {
		const struct dpa_hbuf_meta *meta = meta_of(d, cmd);
		src_mmap = meta ? dpa_pod_mmap(d, meta->src) : 0;
		if (!src_mmap) {
			give_back(d, s, cmd, DPUMESH_STATUS_SRC_GONE);
			return;
		}
	}
	uint32_t st = dpa_rx_slots_take(d, dst, cmd->header_len, cmd->body_len, &f->slots);
	if (st != DPUMESH_STATUS_OK) {
		if (st == DPUMESH_STATUS_DEST_FULL) /* later ones wait behind this one */
			s->held_back[DPUMESH_HANDLE_POD_ID(dst)] = dst;
		give_back(d, s, cmd, st);
		return;
	}
	desc_copy(&f->cmd, cmd);
	f->src_mmap = src_mmap;
	f->body_cursor = 0;
	f->body_queued = 0;
	f->piece_addr = 0;
	f->piece_left = 0;
	f->error = 0;
	f->copies_left = 0;
	f->queued = 0;
	f->used = SLOT_NEED_DMA;
	dpa_gauge_set(&s->nb_inflight, s->nb_inflight + 1);
	rx_queue_copies(d, f, slot);
}

void dpa_rx_kernel(struct dpa_dev *d, struct dpa_rx_state *s)
{
	dpa_counter_add(&s->activations, 1);
	/* a full batch of completions may leave more: come back without waiting */
	int blocked = dpa_take_completions(d, rx_copy_done, s) == DPA_BATCH;

	/* finish deliveries oldest first, so each destination sees them in the order the Arm
	 * sent them (its copies may finish in between) */
	while (s->nb_inflight && s->slot[s->head].used == SLOT_NEED_POST) {
		if (!rx_finish(d, s, &s->slot[s->head])) {
			blocked = 1;
			break;
		}
		s->head = (s->head + 1) % DPA_MAX_INFLIGHT;
	}
	for (uint32_t k = 0; k < s->nb_inflight; k++) {
		uint32_t i = (s->head + k) % DPA_MAX_INFLIGHT;
		if (s->slot[i].used == SLOT_NEED_DMA) {
			rx_queue_copies(d, &s->slot[i], i);
			if (s->slot[i].used == SLOT_NEED_DMA) {
				blocked = 1;
				break; /* the queue is full: later copies wait their turn */
			}
		}
	}

	const int stopping = dpa_thread_stop_requested(d);
	if (stopping && s->nb_inflight == 0) {
		dpa_thread_finish(d);
		return;
	}

	/* take new commands only while there are in-flight slots and queue room */
	struct sw_descriptor cmds[16];
	uint32_t room = DPA_MAX_INFLIGHT - s->nb_inflight;
	if (room > DPA_BATCH)
		room = DPA_BATCH;
	if (dpa_async_room(d) == 0 || stopping)
		room = 0;
	/* every command taken may have to be handed back at once: never take more than the
	 * notification queue can hold, so a refusal is never lost */
	uint32_t notify_room = dpa_notify_room(d);
	if (notify_room < room)
		room = notify_room;
	const uint32_t want = room < 16 ? room : 16;
	uint32_t n = want ? dpa_sidecar_rx_take(d, cmds, want) : 0;
	for (uint32_t i = 0; i < n; i++) {
		const struct sw_descriptor *cmd = &cmds[i];
		uint32_t op = cmd->flags & DPUMESH_OP_MASK &
			      ~(DPUMESH_OP_HOLD | DPUMESH_OP_RESUME | DPUMESH_OP_NOTIFY);
		if (op & DPUMESH_OP_TX_DONE) {
			const struct dpa_hbuf_meta *meta = meta_of(d, cmd);
			if (meta && meta->src)
				dpa_tx_complete(d, meta->src, &meta->orig,
						dpumesh_flags_status(cmd->flags));
			dpa_hbuf_free(d, cmd->header_buf_addr - DPA_HBUF_META_SIZE);
			dpa_counter_add(&s->completions, 1);
			continue;
		}
		if (op != DPUMESH_OP_REQUEST && op != DPUMESH_OP_RESPONSE) {
			dpa_counter_add(&s->bad_commands, 1);
			continue;
		}
		uint32_t *held = &s->held_back[DPUMESH_HANDLE_POD_ID(cmd->dst.pod_id)];
		if (cmd->flags & DPUMESH_OP_RESUME) {
			*held = 0; /* the first of the destination's queue: tried now */
		} else if (*held == cmd->dst.pod_id) {
			/* an earlier delivery to it waits on the Arm: this one goes behind it */
			give_back(d, s, cmd, DPUMESH_STATUS_DEST_FULL);
			continue;
		}
		uint32_t slot = (s->head + s->nb_inflight) % DPA_MAX_INFLIGHT;
		rx_start(d, s, cmd, slot);
	}
	if (n == want && n > 0)
		blocked = 1; /* there may be more commands: come back without a doorbell */

	if (s->nb_inflight)
		dpa_completion_request_notification(d); /* copies in flight wake it */
	if (blocked || (stopping && s->nb_inflight))
		dpa_thread_notify(d);
	dpa_thread_reschedule(d);
}
