/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DOCA mapping of dpa_dev.h's thread, copy and memory functions: compiled by dpacc with
 * the kernels (docs/doca.md). Each function is one doca_dpa_dev_* call or a short sequence;
 * the cookie FIFO lives here, in the thread's argument block in DPA memory. The security
 * core's functions (dpa_tx_take, dpa_rx_slots_take, dpa_deliver, ...) are not mapped yet.
 * Checked here only by the freestanding RISC-V build (dpa_kernels_riscv_freestanding).
 */
#include "doca_dev_api.h"
#include "dpumesh/kernels/dpa_dev.h"

/* The thread's argument block (DPA memory, written by backend/doca's dpa_runtime). */
struct dpa_dev {
	uint64_t async_ops;    /* doca_dpa_dev_async_ops_t */
	uint64_t completion;   /* doca_dpa_dev_completion_t */
	uint64_t notification; /* its own notification completion */
	uint64_t table;        /* pod_lookup_table */
	uint32_t dpu_mmap;
	uint32_t stop;
	/* the runtime's cookie FIFO: indices only grow; slot = index % DPA_ASYNC_QUEUE */
	uint32_t head, covered, tail, reserved;
	uint64_t cookie[DPA_ASYNC_QUEUE];
	uint8_t reported[DPA_ASYNC_QUEUE];
};

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
void dpa_thread_reschedule(struct dpa_dev *d)
{
	(void)d;
	doca_dpa_dev_thread_reschedule();
}
void dpa_thread_finish(struct dpa_dev *d)
{
	(void)d;
	doca_dpa_dev_thread_finish();
}
int dpa_thread_stop_requested(struct dpa_dev *d)
{
	return __atomic_load_n(&d->stop, __ATOMIC_ACQUIRE) != 0;
}

/* Entry points (dpacc exports them; the host names them in doca_dpa_thread_set_func_arg).
 * The kernel state follows the argument block in the thread's local storage. */
__dpa_global__ void dpumesh_dpa_tx_entry(uint64_t arg)
{
	struct dpa_dev *d = (struct dpa_dev *)(uintptr_t)arg;
	dpa_tx_kernel(d, (struct dpa_tx_state *)(uintptr_t)doca_dpa_dev_thread_get_local_storage());
}

__dpa_global__ void dpumesh_dpa_rx_entry(uint64_t arg)
{
	struct dpa_dev *d = (struct dpa_dev *)(uintptr_t)arg;
	dpa_rx_kernel(d, (struct dpa_rx_state *)(uintptr_t)doca_dpa_dev_thread_get_local_storage());
}
