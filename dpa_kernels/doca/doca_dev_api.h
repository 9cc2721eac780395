/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * doca_dev_api.h - the DOCA DPA device calls the mapping (dpa_dev_doca.c) uses, declared by
 * this project from the DOCA 2.10 / 3.3 API reference (never NVIDIA's headers). Under dpacc
 * with DOCA installed (DPUMESH_DOCA_REAL) NVIDIA's device headers are used instead. Marked
 * UNVERIFIED: the exact prototype of get_external_ptr and the value of the successful
 * completion type were not in the reference excerpts at hand; the real build checks them.
 * The sync event call is the pods' doorbell (docs/doca.md: which object carries it is a
 * choice the reference leaves open).
 */
#ifndef DPUMESH_DOCA_DEV_API_H
#define DPUMESH_DOCA_DEV_API_H

#ifdef DPUMESH_DOCA_REAL
#include <doca_dpa_dev.h>
#include <doca_dpa_dev_buf.h>
#include <doca_dpa_dev_sync_event.h>
#include <dpaintrin.h>
#define DPUMESH_DOCA_COMP_OK DOCA_DPA_DEV_COMP_SUCCESS
#else

#include <stddef.h>
#include <stdint.h>

typedef uint64_t doca_dpa_dev_uintptr_t;
typedef uint64_t doca_dpa_dev_async_ops_t;
typedef uint64_t doca_dpa_dev_completion_t;
typedef uint64_t doca_dpa_dev_completion_element_t;
typedef uint64_t doca_dpa_dev_notification_completion_t;
typedef uint32_t doca_dpa_dev_mmap_t;
typedef uint64_t doca_dpa_dev_sync_event_t;
typedef int doca_dpa_dev_completion_type_t;

#define DOCA_DPA_DEV_SUBMIT_FLAG_FLUSH (1u << 0)
#define DOCA_DPA_DEV_SUBMIT_FLAG_OPTIMIZE_REPORTS (1u << 1)
#define DPUMESH_DOCA_COMP_OK 0 /* UNVERIFIED */
#define __dpa_global__
#define __dpa_rpc__

void doca_dpa_dev_post_memcpy(doca_dpa_dev_async_ops_t async_ops, doca_dpa_dev_mmap_t dst_mmap,
			      uint64_t dst_addr, doca_dpa_dev_mmap_t src_mmap, uint64_t src_addr,
			      size_t length, uint32_t flags);
int doca_dpa_dev_get_completion(doca_dpa_dev_completion_t comp,
				doca_dpa_dev_completion_element_t *elem);
doca_dpa_dev_completion_type_t doca_dpa_dev_get_completion_type(doca_dpa_dev_completion_element_t elem);
void doca_dpa_dev_completion_ack(doca_dpa_dev_completion_t comp, uint64_t num);
void doca_dpa_dev_completion_request_notification(doca_dpa_dev_completion_t comp);
void doca_dpa_dev_thread_notify(doca_dpa_dev_notification_completion_t nc);
void doca_dpa_dev_thread_reschedule(void);
void doca_dpa_dev_thread_finish(void);
doca_dpa_dev_uintptr_t doca_dpa_dev_thread_get_local_storage(void);
/* UNVERIFIED prototype */
int doca_dpa_dev_mmap_get_external_ptr(doca_dpa_dev_mmap_t mmap, uint64_t addr, uint64_t *ptr);
void __dpa_thread_window_writeback(void);
void doca_dpa_dev_sync_event_update_add(doca_dpa_dev_sync_event_t event, uint64_t value);

#endif /* DPUMESH_DOCA_REAL */
#endif /* DPUMESH_DOCA_DEV_API_H */
