/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DOCA mapping of dpa_dev.h: compiled by dpacc with the kernels (docs/doca.md). Each
 * function is one doca_dpa_dev_* call or a short sequence of them, plus loads and stores
 * through windows onto the pods' and the Arm's memory; the cookie FIFO, the pods' ring
 * positions and the pairs' inboxes live in DPA memory (dpa_doca.h). The security core's
 * checks are dpumesh/podlayout/pod_check.h, the same C the emulator's pod registry runs.
 * Checked here by the freestanding RISC-V build (dpa_kernels_doca_mapping_freestanding) and,
 * compiled for the host against fakes of the doca_dpa_dev_* calls, by doca_dev_mapping_test.
 */
#include <stddef.h>

#include "../kernel_util.h"
#include "doca_dev_api.h"
#include "dpa_doca.h"
#include "dpumesh/podlayout/pod_check.h"
#include "dpumesh/ring/sq.h"

uint32_t dpa_dpu_mmap(struct dpa_dev *d) { return d->dpu_mmap; }

const struct pod_registry_entry *dpa_pod_table(struct dpa_dev *d)
{
	return (const struct pod_registry_entry *)(uintptr_t)d->table;
}

void *dpa_mmap_ptr(struct dpa_dev *d, uint32_t mmap, uint64_t addr, uint32_t len)
{
	(void)d;
	(void)len; /* the hardware checks the range on access */
	uint64_t p = 0;
	if (doca_dpa_dev_mmap_get_external_ptr(mmap, addr, &p) != 0)
		return 0;
	return (void *)(uintptr_t)p;
}

void dpa_window_writeback(struct dpa_dev *d)
{
	(void)d;
	__dpa_thread_window_writeback();
}

void dpa_post_memcpy(struct dpa_dev *d, uint32_t dst_mmap, uint64_t dst_addr, uint32_t src_mmap,
		     uint64_t src_addr, uint32_t len, uint32_t flags, uint64_t cookie)
{
	const uint32_t i = d->tail % DPA_ASYNC_QUEUE;
	d->cookie[i] = cookie;
	d->reported[i] = (flags & DPA_SUBMIT_OPTIMIZE_REPORTS) == 0;
	d->tail++;
	uint32_t f = 0;
	if (flags & DPA_SUBMIT_FLUSH)
		f |= DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH;
	if (flags & DPA_SUBMIT_OPTIMIZE_REPORTS)
		f |= DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS;
	doca_dpa_dev_post_memcpy(d->async_ops, dst_mmap, dst_addr, src_mmap, src_addr, len, f);
}

uint32_t dpa_async_room(struct dpa_dev *d)
{
	const uint32_t used = d->tail - d->head;
	return used >= DPA_ASYNC_QUEUE ? 0 : DPA_ASYNC_QUEUE - used;
}

int dpa_get_completion(struct dpa_dev *d, struct dpa_completion *out)
{
	doca_dpa_dev_completion_element_t e;
	if (!doca_dpa_dev_get_completion(d->completion, &e))
		return 0;
	/* it covers the posts up to and including the next one that asked for a report */
	uint32_t end = d->covered;
	while (end != d->tail && !d->reported[end % DPA_ASYNC_QUEUE])
		end++;
	d->covered = end == d->tail ? end : end + 1;
	out->status = doca_dpa_dev_get_completion_type(e) == DPUMESH_DOCA_COMP_OK ? 0 : -5;
	out->reserved = 0;
	return 1;
}

int dpa_cookie_take(struct dpa_dev *d, uint64_t *cookie, int *last)
{
	if (d->head == d->covered)
		return DPA_EMPTY;
	*cookie = d->cookie[d->head % DPA_ASYNC_QUEUE];
	d->head++;
	*last = d->head == d->covered;
	return DPA_OK;
}

void dpa_completion_ack(struct dpa_dev *d, uint32_t n) { doca_dpa_dev_completion_ack(d->completion, n); }

void dpa_completion_request_notification(struct dpa_dev *d)
{
	doca_dpa_dev_completion_request_notification(d->completion);
}

void dpa_thread_notify(struct dpa_dev *d) { doca_dpa_dev_thread_notify(d->notification); }
/* Both end the activation (neither returns on DOCA): the doorbell batch is rung first, then
 * the quiescence report (release: what the activation did is visible before it). */
static void flush_doorbells(struct dpa_dev *d);
static void report_quiescent(struct dpa_dev *d)
{
	__atomic_store_n(&d->quiescent, d->entered + 1u, __ATOMIC_RELEASE);
}
void dpa_thread_reschedule(struct dpa_dev *d)
{
	flush_doorbells(d);
	report_quiescent(d);
	doca_dpa_dev_thread_reschedule();
}
void dpa_thread_finish(struct dpa_dev *d)
{
	flush_doorbells(d);
	report_quiescent(d);
	__atomic_store_n(&d->finished, 1u, __ATOMIC_RELEASE);
	doca_dpa_dev_thread_finish();
}
int dpa_thread_stop_requested(struct dpa_dev *d)
{
	return __atomic_load_n(&d->stop, __ATOMIC_ACQUIRE) != 0;
}

/* ---- windows and rings ---- */

/* A load/store window onto (mmap, addr): one descriptor, a pod word, an Arm object. */
static void *window(uint32_t mmap, uint64_t addr)
{
	uint64_t p = 0;
	if (doca_dpa_dev_mmap_get_external_ptr(mmap, addr, &p) != 0)
		return 0;
	return (void *)(uintptr_t)p;
}

/* A one-slot dpumesh_sq over the window of the ring's slot pos + ahead: the ring code of
 * dpumesh/ring/sq.h runs unchanged on it (its position is the ring's, kept in DPA memory). */
static int ring_view(const struct dpa_doca_ring *r, uint32_t ahead, struct dpumesh_sq *v)
{
	v->mask = 0;
	v->pos = 0;
	v->slots = 0;
	if (r->addr == 0)
		return 0;
	v->slots = (struct sw_descriptor *)window(
		r->mmap, r->addr + (uint64_t)((r->pos + ahead) & r->mask) * sizeof(struct sw_descriptor));
	return v->slots != 0;
}

static int ring_take(struct dpa_doca_ring *r, struct sw_descriptor *out)
{
	struct dpumesh_sq v;
	if (!ring_view(r, 0, &v) || dpumesh_sq_dequeue_burst(&v, out, 1) != 1)
		return 0;
	r->pos++;
	__dpa_thread_window_writeback(); /* the slot's release reaches the producer */
	return 1;
}

static int ring_put(struct dpa_doca_ring *r, const struct sw_descriptor *in)
{
	struct dpumesh_sq v;
	if (!ring_view(r, 0, &v) || dpumesh_sq_enqueue_burst(&v, in, 1) != 1)
		return 0;
	r->pos++;
	__dpa_thread_window_writeback(); /* the post reaches the consumer */
	return 1;
}

/* valid of the slot pos + ahead, acquired (0: free for a producer; 1: work for a consumer) */
static uint32_t ring_valid_at(const struct dpa_doca_ring *r, uint32_t ahead)
{
	struct dpumesh_sq v;
	if (!ring_view(r, ahead, &v))
		return UINT32_MAX;
	return __atomic_load_n(&v.slots[0].valid, __ATOMIC_ACQUIRE);
}

/* ---- the node, pods, inboxes ---- */

static struct dpa_doca_node *node_of(struct dpa_dev *d)
{
	return (struct dpa_doca_node *)(uintptr_t)d->node;
}

static uint32_t nb_pairs(struct dpa_dev *d)
{
	const uint32_t n = node_of(d)->nb_pairs;
	return n == 0 ? 1 : n > DPA_DOCA_MAX_PAIRS ? DPA_DOCA_MAX_PAIRS : n;
}

static uint32_t owner_of(struct dpa_dev *d, uint32_t handle)
{
	return DPUMESH_HANDLE_POD_ID(handle) % nb_pairs(d);
}

static struct dpa_doca_pod *pod_block(struct dpa_dev *d, uint32_t pod_id)
{
	return &((struct dpa_doca_pod *)(uintptr_t)node_of(d)->pods)[pod_id % DPUMESH_MAX_PODS];
}

/* The pod block of the live registration a handle names, or NULL (dpa_pod_mmap's loads). */
static struct dpa_doca_pod *live_pod(struct dpa_dev *d, uint32_t handle)
{
	return dpa_pod_mmap(d, handle) != 0 ? pod_block(d, DPUMESH_HANDLE_POD_ID(handle)) : 0;
}

static void count(struct dpa_doca_pod *p, uint32_t c) { dpa_counter_add(&p->counters[c], 1); }
static void thread_stat(struct dpa_dev *d, uint32_t s) { dpa_counter_add(&d->stats[s], 1); }

static struct dpa_doca_inbox *inbox_of(struct dpa_dev *d, uint32_t pair)
{
	return (struct dpa_doca_inbox *)(uintptr_t)node_of(d)->inbox[pair % DPA_DOCA_MAX_PAIRS];
}

/* Any DPA thread: a bounded queue with a sequence number per entry (producers claim an entry
 * with a compare-and-swap on tail). 0 when full or contended past a bound. */
static int inbox_put(struct dpa_doca_inbox *q, uint32_t dst, const struct sw_descriptor *desc)
{
	uint32_t pos = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
	for (uint32_t tries = 0; tries < 64; tries++) {
		struct dpa_doca_mail *m = &q->mail[pos % DPA_DOCA_INBOX];
		const int32_t dif = (int32_t)(__atomic_load_n(&m->seq, __ATOMIC_ACQUIRE) - pos);
		if (dif < 0)
			return 0; /* full */
		if (dif > 0) {
			pos = __atomic_load_n(&q->tail, __ATOMIC_RELAXED);
			continue;
		}
		if (__atomic_compare_exchange_n(&q->tail, &pos, pos + 1, 0, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			m->dst = dst;
			desc_copy(&m->desc, desc);
			__atomic_store_n(&m->seq, pos + 1, __ATOMIC_RELEASE);
			return 1;
		}
	}
	return 0;
}

/* The owner pair's RX kernel only. */
static int inbox_take(struct dpa_doca_inbox *q, uint32_t *dst, struct sw_descriptor *out)
{
	const uint32_t head = q->head;
	struct dpa_doca_mail *m = &q->mail[head % DPA_DOCA_INBOX];
	if (__atomic_load_n(&m->seq, __ATOMIC_ACQUIRE) != head + 1)
		return 0;
	*dst = m->dst;
	desc_copy(out, &m->desc);
	__atomic_store_n(&m->seq, head + DPA_DOCA_INBOX, __ATOMIC_RELEASE);
	__atomic_store_n(&q->head, head + 1, __ATOMIC_RELAXED);
	return 1;
}

/* Entries free (a lower bound for this thread unless others fill it in between). */
static uint32_t inbox_room(struct dpa_doca_inbox *q)
{
	const uint32_t used = __atomic_load_n(&q->tail, __ATOMIC_RELAXED) -
			      __atomic_load_n(&q->head, __ATOMIC_RELAXED);
	return used >= DPA_DOCA_INBOX ? 0 : DPA_DOCA_INBOX - used;
}

/* Wakes a pair's RX kernel (a TX completion or a refusal report for it). */
static void wake_rx(struct dpa_dev *d, uint32_t pair)
{
	doca_dpa_dev_thread_notify(node_of(d)->rx_notify[pair % DPA_DOCA_MAX_PAIRS]);
}

/*
 * The DPA -> pod doorbell, the one place that rings it: 1 added to the pod's sync event
 * (the Arm's import of the pod's export: backend/doca pod_doorbell.h), on which libdpumesh
 * keeps a wait-not-equal task in its progress engine, so the pod's fd wakes. A pod that sent
 * no doorbell has handle 0: nothing to ring (it polls). UNVERIFIED (docs/doca.md).
 */
static void ring_pod(struct dpa_doca_pod *p)
{
	if (p->doorbell)
		doca_dpa_dev_sync_event_update_add(p->doorbell, 1);
}

/* ---- pods' RX SQs: the pair's RX kernel is their only producer ---- */

static int post_rx(struct dpa_dev *d, struct dpa_doca_pod *p, uint32_t handle,
		   const struct sw_descriptor *desc)
{
	const int ok = ring_put(&p->rx_sq, desc);
	if (!ok)
		count(p, DPA_DOCA_RX_SQ_FULL);
	/* a successful TX completion rings only a pod that asked for them; a full RX SQ
	 * always wakes a sleeping pod, so that it drains */
	const uint32_t mark = 1u | (!ok || dpumesh_post_urgent(desc->flags) ? 2u : 0u);
	if (p->marked) {
		p->marked |= mark;
	} else if (d->nb_marked < DPUMESH_MAX_PODS) {
		p->marked = mark;
		d->marked[d->nb_marked++] = handle;
	}
	return ok;
}

/* Doorbells for sleepers only, once per pod per activation (docs/memory-model.md
 * "Doorbells"): every post above before every need-wakeup load below. */
static void flush_doorbells(struct dpa_dev *d)
{
	if (d->nb_marked == 0)
		return;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (uint32_t i = 0; i < d->nb_marked; i++) {
		struct dpa_doca_pod *p = pod_block(d, DPUMESH_HANDLE_POD_ID(d->marked[i]));
		const int urgent = (p->marked & 2u) != 0;
		p->marked = 0;
		if (!live_pod(d, d->marked[i]))
			continue;
		const uint64_t *w = (const uint64_t *)window(
			p->mmap, p->base + p->layout.ctrl_off + offsetof(struct dpumesh_pod_ctrl, rx_wait));
		if (w && dpumesh_doorbell_needed(__atomic_load_n(w, __ATOMIC_RELAXED), urgent,
						 &p->rung_epoch)) {
			ring_pod(p);
			count(p, DPA_DOCA_DOORBELLS);
		} else {
			count(p, DPA_DOCA_DOORBELLS_SUPPRESSED);
		}
	}
	d->nb_marked = 0;
}

/* RX kernel, before each activation: the pair's inbox onto the pods' RX SQs. An entry
 * whose RX SQ is full goes to the back of the inbox and the thread runs again. */
static void drain_inbox(struct dpa_dev *d)
{
	struct dpa_doca_inbox *q = inbox_of(d, d->pair);
	struct sw_descriptor desc;
	uint32_t dst, n = 0;
	while (n < DPA_BATCH && inbox_take(q, &dst, &desc)) {
		n++;
		struct dpa_doca_pod *p = live_pod(d, dst);
		if (!p) {
			thread_stat(d, DPA_DOCA_ST_TX_COMPLETIONS); /* gone: nothing to complete */
			continue;
		}
		if (post_rx(d, p, dst, &desc)) {
			count(p, DPA_DOCA_TX_DONE_POSTED);
			thread_stat(d, DPA_DOCA_ST_TX_COMPLETIONS);
		} else if (!inbox_put(q, dst, &desc)) {
			thread_stat(d, DPA_DOCA_ST_INBOX_FULL);
		}
	}
	if (inbox_room(q) != DPA_DOCA_INBOX)
		dpa_thread_notify(d);
}

/* ---- pods' TX SQs (TX kernel) ---- */

/* owned[]: the SQs of the pods this pair owns, rebuilt when the node's membership moves
 * (d->membership keeps it + 1, so a zeroed block rebuilds at once) */
static void refresh_owned(struct dpa_dev *d, uint32_t membership)
{
	const struct pod_registry_entry *t = dpa_pod_table(d);
	d->membership = membership + 1;
	d->nb_owned = 0;
	for (uint32_t pid = d->pair; pid < DPUMESH_MAX_PODS; pid += nb_pairs(d)) {
		if (__atomic_load_n(&t[pid].is_active, __ATOMIC_ACQUIRE) == 0)
			continue;
		const struct dpa_doca_pod *p = pod_block(d, pid);
		const uint32_t nw = p->nb_workers < DPUMESH_MAX_WORKERS ? p->nb_workers : DPUMESH_MAX_WORKERS;
		for (uint32_t q = 0; q < nw; q++) {
			d->owned[d->nb_owned].pod_id = (uint16_t)pid;
			d->owned[d->nb_owned].sq = (uint16_t)q;
			d->owned[d->nb_owned].generation = t[pid].generation;
			d->nb_owned++;
		}
	}
}

/*
 * Which owned SQs have work: one acquire load of each SQ's head `valid` through the pod's
 * window, as the public BlueField-3 prototype polls host rings (the choice between this and
 * a doorbell the pod rings is docs/doca.md's UNVERIFIED row; it is made here only).
 */
uint32_t dpa_tx_ready(struct dpa_dev *d, uint32_t *sqs, uint32_t max)
{
	struct dpa_doca_node *node = node_of(d);
	if (__atomic_load_n(&node->drain, __ATOMIC_ACQUIRE))
		return 0;
	const uint32_t m = __atomic_load_n(&node->membership, __ATOMIC_ACQUIRE);
	if (d->membership != m + 1)
		refresh_owned(d, m);
	const uint32_t n = d->nb_owned;
	uint32_t got = 0;
	for (uint32_t k = 0; k < n && got < max; k++) {
		const uint32_t i = (d->ready_cursor + k) % n;
		const uint32_t h = dpumesh_pod_handle(d->owned[i].pod_id, d->owned[i].generation);
		struct dpa_doca_pod *p = live_pod(d, h);
		if (p && ring_valid_at(&p->tx_sq[d->owned[i].sq], 0) == DPUMESH_DESC_VALID)
			sqs[got++] = i;
	}
	if (n)
		d->ready_cursor = (d->ready_cursor + 1) % n;
	d->tx_found = got;
	return got;
}

/* An owned SQ's pod's tx_wait (its control block, through the pod's window). */
static uint64_t *tx_wait_of(struct dpa_dev *d, uint32_t i)
{
	const uint32_t h = dpumesh_pod_handle(d->owned[i].pod_id, d->owned[i].generation);
	struct dpa_doca_pod *p = live_pod(d, h);
	if (!p)
		return 0;
	return (uint64_t *)window(p->mmap, p->base + p->layout.ctrl_off + offsetof(struct dpumesh_pod_ctrl, tx_wait));
}

/*
 * Whether a pod's post wakes this TX kernel, so it may sleep instead of notifying itself.
 * Where the node forwards the pods' TX doorbell (node->tx_bells: a sync event per pair the
 * pods add to, read by the Arm's sidecar lcore, which then notifies this kernel) and the
 * last pass found nothing: park every owned pod (a new odd epoch in its tx_wait), one full
 * fence, then look at every owned SQ's head again (the Dekker pair with the pod's "post,
 * fence, load tx_wait", docs/memory-model.md). Work that slipped in: watched again (even
 * epoch), keep polling. Never while a drain waits (the kernel keeps running for its
 * quiescence report). docs/doca.md "Doorbells on a DOCA node".
 */
int dpa_tx_doorbells(struct dpa_dev *d)
{
	struct dpa_doca_node *node = node_of(d);
	if (!node->tx_bells || d->tx_found || __atomic_load_n(&node->drain, __ATOMIC_ACQUIRE))
		return 0;
	const uint32_t m = __atomic_load_n(&node->membership, __ATOMIC_ACQUIRE);
	if (d->membership != m + 1)
		return 0; /* a pod came or went: the next pass rebuilds owned[] first */
	d->tx_epoch = (d->tx_epoch + 2) | 1u;
	for (uint32_t i = 0; i < d->nb_owned; i++) {
		uint64_t *w = tx_wait_of(d, i);
		if (w)
			__atomic_store_n(w, (uint64_t)d->tx_epoch, __ATOMIC_RELAXED);
	}
	dpa_window_writeback(d);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	int slipped = 0;
	for (uint32_t i = 0; i < d->nb_owned && !slipped; i++) {
		const uint32_t h = dpumesh_pod_handle(d->owned[i].pod_id, d->owned[i].generation);
		struct dpa_doca_pod *p = live_pod(d, h);
		slipped = p && ring_valid_at(&p->tx_sq[d->owned[i].sq], 0) == DPUMESH_DESC_VALID;
	}
	if (!slipped)
		return 1; /* parked: a post rings */
	d->tx_epoch++; /* even: watched again, the pods stop ringing */
	for (uint32_t i = 0; i < d->nb_owned; i++) {
		uint64_t *w = tx_wait_of(d, i);
		if (w)
			__atomic_store_n(w, (uint64_t)d->tx_epoch, __ATOMIC_RELAXED);
	}
	dpa_window_writeback(d);
	return 0;
}

int dpa_tx_take(struct dpa_dev *d, uint32_t i, struct dpa_tx_item *out)
{
	if (i >= d->nb_owned)
		return DPA_GONE;
	const uint32_t h = dpumesh_pod_handle(d->owned[i].pod_id, d->owned[i].generation);
	const uint32_t sq = d->owned[i].sq;
	struct dpa_doca_pod *p = live_pod(d, h);
	if (!p || sq >= p->nb_workers || sq >= DPUMESH_MAX_WORKERS)
		return DPA_GONE;
	struct dpa_doca_inbox *q = inbox_of(d, d->pair);
	if (inbox_room(q) == 0)
		return DPA_EMPTY; /* no room to report a refusal: leave it queued */
	struct sw_descriptor desc;
	if (!ring_take(&p->tx_sq[sq], &desc))
		return DPA_EMPTY;
	/* pod_check.h, as lib/podreg's take_tx; the mmap's range is the hardware's check */
	int why = dpumesh_tx_check_flags(&desc);
	if (why == DPUMESH_TX_ACCEPT)
		why = dpumesh_tx_check_slot(p->base + p->layout.tx_header_off, &p->geometry.tx_header,
					    desc.header_buf_addr, desc.header_len, 0);
	if (why == DPUMESH_TX_ACCEPT && desc.body_len != 0)
		why = dpumesh_tx_check_slot(p->base + p->layout.tx_body_off, &p->geometry.tx_body,
					    desc.body_buf_addr, desc.body_len, 1);
	if (why != DPUMESH_TX_ACCEPT) {
		count(p, DPA_DOCA_TX_REFUSED + (uint32_t)why);
		struct sw_descriptor e;
		dpumesh_tx_done_report(&desc, dpumesh_tx_refusal_flags(why), &e);
		/* posted by the RX kernel, the RX SQ's one producer (room was checked above) */
		if (inbox_put(q, h, &e))
			wake_rx(d, d->pair);
		else
			thread_stat(d, DPA_DOCA_ST_INBOX_FULL);
		return DPA_REFUSED;
	}
	count(p, DPA_DOCA_TX_TAKEN);
	thread_stat(d, DPA_DOCA_ST_TX_TAKEN);
	desc_copy(&out->desc, &desc);
	out->src = h;
	out->mmap = p->mmap;
	return DPA_OK;
}

/* ---- hbufs and network bodies (the DPU mmap) ---- */

uint32_t dpa_hbuf_size(struct dpa_dev *d) { return d->hbuf_size; }

int dpa_hbuf_alloc(struct dpa_dev *d, uint64_t *addr)
{
	struct sw_descriptor h;
	if (!ring_take(&d->hbuf_free, &h) || h.header_buf_addr == 0)
		return DPA_FULL;
	*addr = h.header_buf_addr;
	return DPA_OK;
}

static void give_back_to_arm(struct dpa_dev *d, uint64_t hbuf, uint64_t body)
{
	struct sw_descriptor b;
	desc_zero(&b);
	b.header_buf_addr = hbuf;
	b.body_buf_addr = body;
	b.flags = hbuf ? DPA_DOCA_BACK_HBUF : DPA_DOCA_BACK_BODY;
	if (!ring_put(&d->back, &b))
		thread_stat(d, DPA_DOCA_ST_BACK_FULL); /* the Arm sizes it for every hbuf and body */
}

void dpa_hbuf_free(struct dpa_dev *d, uint64_t addr) { give_back_to_arm(d, addr, 0); }

uint32_t dpa_local_body_next(struct dpa_dev *d, uint64_t body, uint64_t *cursor, uint64_t *addr)
{
	if (*cursor == UINT64_MAX)
		return 0;
	const struct dpa_doca_body *b = (const struct dpa_doca_body *)window(d->dpu_mmap, body);
	const uint32_t n = !b ? 0 : b->nb_pieces < DPA_DOCA_BODY_PIECES ? b->nb_pieces : DPA_DOCA_BODY_PIECES;
	for (uint64_t i = *cursor; i < n; i++) {
		if (b->piece[i].len == 0)
			continue; /* empty pieces are skipped */
		*addr = b->piece[i].addr;
		*cursor = i + 1 < n ? i + 1 : UINT64_MAX;
		return b->piece[i].len;
	}
	*cursor = UINT64_MAX;
	return 0;
}

void dpa_local_body_release(struct dpa_dev *d, uint64_t body) { give_back_to_arm(d, 0, body); }

/* ---- queues to and from the Arm ---- */

int dpa_sidecar_tx_post(struct dpa_dev *d, const struct sw_descriptor *desc)
{
	if (!ring_put(&d->sidecar, desc))
		return DPA_FULL;
	thread_stat(d, DPA_DOCA_ST_TX_POSTED);
	return DPA_OK;
}

uint32_t dpa_sidecar_rx_take(struct dpa_dev *d, struct sw_descriptor *out, uint32_t max)
{
	if (__atomic_load_n(&node_of(d)->drain, __ATOMIC_ACQUIRE))
		return 0;
	uint32_t n = 0;
	while (n < max && ring_take(&d->sidecar, &out[n]))
		n++;
	return n;
}

int dpa_notify_arm(struct dpa_dev *d, const struct sw_descriptor *note)
{
	if (!ring_put(&d->notify, note))
		return DPA_FULL;
	thread_stat(d, DPA_DOCA_ST_HANDED_BACK);
	return DPA_OK;
}

uint32_t dpa_notify_room(struct dpa_dev *d)
{
	uint32_t n = 0;
	while (n < 64 && n <= d->notify.mask && ring_valid_at(&d->notify, n) == 0)
		n++;
	return n;
}

/* ---- destinations and senders (RX kernel) ---- */

static void spare_push(struct dpa_doca_pod *p, int body, uint64_t addr)
{
	uint32_t *nb = body ? &p->nb_spare_body : &p->nb_spare_header;
	const uint32_t slots = body ? p->geometry.rx_body.slots : p->geometry.rx_header.slots;
	if (*nb >= DPA_DOCA_SPARES || *nb >= slots) {
		count(p, DPA_DOCA_SPARES_LOST);
		return;
	}
	(body ? p->spare_body : p->spare_header)[(*nb)++] = addr;
}

/* A validated refill slot (spares first); 0 when none. Bounded: one ring's worth of bad
 * descriptors per call, each counted (pod_check.h, as lib/podreg's take_refill). */
static uint64_t take_refill(struct dpa_doca_pod *p, int body)
{
	uint32_t *nb = body ? &p->nb_spare_body : &p->nb_spare_header;
	if (*nb > 0)
		return (body ? p->spare_body : p->spare_header)[--(*nb)];
	struct dpa_doca_ring *ring = body ? &p->refill_body : &p->refill_header;
	const struct dpumesh_pool_geometry *pool = body ? &p->geometry.rx_body : &p->geometry.rx_header;
	const uint64_t pool_base = p->base + (body ? p->layout.rx_body_off : p->layout.rx_header_off);
	struct sw_descriptor d;
	for (uint32_t tries = 0; tries <= ring->mask; tries++) {
		if (!ring_take(ring, &d))
			return 0;
		uint64_t addr = 0;
		const int why = dpumesh_refill_check(&d, p->generation, pool_base, pool, body, &addr);
		if (why == DPUMESH_REFILL_ACCEPT)
			return addr;
		count(p, DPA_DOCA_REFILL_REFUSED + (uint32_t)why);
	}
	return 0;
}

uint32_t dpa_rx_slots_take(struct dpa_dev *d, uint32_t dst, uint32_t header_len,
			   uint32_t body_len, struct dpa_rx_slots *out)
{
	struct dpa_doca_pod *p = live_pod(d, dst);
	if (!p)
		return DPUMESH_STATUS_DEST_GONE;
	if (!dpumesh_rx_fits(&p->geometry, header_len, body_len))
		return DPUMESH_STATUS_TOO_LARGE;
	if (ring_valid_at(&p->rx_sq, 0) != 0) {
		count(p, DPA_DOCA_RX_SQ_FULL);
		return DPUMESH_STATUS_DEST_FULL;
	}
	uint64_t ha = 0, ba = 0;
	if (header_len > 0 && (ha = take_refill(p, 0)) == 0) {
		count(p, DPA_DOCA_RX_NO_SLOT);
		return DPUMESH_STATUS_DEST_FULL;
	}
	if (body_len > 0 && (ba = take_refill(p, 1)) == 0) {
		if (ha)
			spare_push(p, 0, ha);
		count(p, DPA_DOCA_RX_NO_SLOT);
		return DPUMESH_STATUS_DEST_FULL;
	}
	out->header_addr = ha;
	out->body_addr = ba;
	out->mmap = p->mmap;
	out->reserved = 0;
	return DPUMESH_STATUS_OK;
}

void dpa_rx_slots_return(struct dpa_dev *d, uint32_t dst, const struct dpa_rx_slots *slots)
{
	struct dpa_doca_pod *p = live_pod(d, dst);
	if (!p)
		return;
	if (slots->header_addr)
		spare_push(p, 0, slots->header_addr);
	if (slots->body_addr)
		spare_push(p, 1, slots->body_addr);
}

uint32_t dpa_deliver(struct dpa_dev *d, uint32_t dst, const struct sw_descriptor *desc)
{
	struct dpa_doca_pod *p = live_pod(d, dst);
	if (!p)
		return DPUMESH_STATUS_DEST_GONE;
	if (!post_rx(d, p, dst, desc))
		return DPUMESH_STATUS_DEST_FULL;
	count(p, DPA_DOCA_RX_DELIVERED);
	thread_stat(d, DPA_DOCA_ST_RX_DELIVERED);
	return DPUMESH_STATUS_OK;
}

uint32_t dpa_tx_complete(struct dpa_dev *d, uint32_t src, const struct sw_descriptor *orig,
			 uint32_t status)
{
	const uint32_t owner = owner_of(d, src);
	struct sw_descriptor e;
	dpumesh_tx_done_report(orig, dpumesh_tx_done_flags(orig->flags, status), &e);
	if (d->role == DPA_DOCA_RX && owner == d->pair) {
		struct dpa_doca_pod *p = live_pod(d, src);
		if (!p) {
			thread_stat(d, DPA_DOCA_ST_TX_COMPLETIONS);
			return DPUMESH_STATUS_DEST_GONE;
		}
		if (post_rx(d, p, src, &e)) {
			count(p, DPA_DOCA_TX_DONE_POSTED);
			thread_stat(d, DPA_DOCA_ST_TX_COMPLETIONS);
			return DPUMESH_STATUS_OK;
		}
		/* its RX SQ is full: through our inbox, on a later activation */
	} else if (owner != d->pair) {
		thread_stat(d, DPA_DOCA_ST_REMOTE_COMPLETIONS);
	}
	if (!inbox_put(inbox_of(d, owner), src, &e)) {
		thread_stat(d, DPA_DOCA_ST_INBOX_FULL);
		return DPUMESH_STATUS_DEST_FULL;
	}
	wake_rx(d, owner);
	return DPUMESH_STATUS_OK;
}

/* Entry points (dpacc exports them; the host names them in doca_dpa_thread_set_func_arg).
 * The kernel state is the thread's local storage. */
__dpa_global__ void dpumesh_dpa_tx_entry(uint64_t arg)
{
	struct dpa_dev *d = (struct dpa_dev *)(uintptr_t)arg;
	d->entered = __atomic_load_n(&node_of(d)->membership, __ATOMIC_ACQUIRE);
	dpa_tx_kernel(d, (struct dpa_tx_state *)(uintptr_t)doca_dpa_dev_thread_get_local_storage());
}

__dpa_global__ void dpumesh_dpa_rx_entry(uint64_t arg)
{
	struct dpa_dev *d = (struct dpa_dev *)(uintptr_t)arg;
	d->entered = __atomic_load_n(&node_of(d)->membership, __ATOMIC_ACQUIRE);
	drain_inbox(d);
	dpa_rx_kernel(d, (struct dpa_rx_state *)(uintptr_t)doca_dpa_dev_thread_get_local_storage());
}

/* The Arm's doorbell to a DPA thread (doca_dpa_rpc from backend/doca's dpa_runtime::notify):
 * a thread's first activation, and the RX kernel after the Arm posted commands while it was
 * parked. An RPC runs on the DPA outside the kernels' threads and only notifies (UNVERIFIED:
 * docs/doca.md, the choice between this and a comch producer on the Arm). */
__dpa_rpc__ uint64_t dpumesh_dpa_notify_rpc(uint64_t notification)
{
	doca_dpa_dev_thread_notify(notification);
	return 0;
}
